"""Live invoice status across processes: the official SDK client (2026-07-28) listening on one live
server hears an invoice paid through REST on another within a second (the change feed: NOTIFY on
PostgreSQL, polling on SQLite), and the account's list change when an invoice is created there."""

from __future__ import annotations

import time
import uuid

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated

from tests.conftest import make_tenant

pytestmark = pytest.mark.e2e

LAG_SECONDS = 1.0


def rest(origin: str, key: str, method: str, path: str, body: dict | None = None) -> dict:
    response = httpx.request(method, f"{origin}/api/v1{path}", json=body, timeout=10.0, headers={
        "Authorization": f"Bearer {key}", "Idempotency-Key": uuid.uuid4().hex})
    assert response.status_code in (200, 201), response.text
    return response.json()["data"]


def open_invoice(origin: str, key: str) -> dict:
    customer = rest(origin, key, "POST", "/customers", {"name": "Jane Doe", "email": "jane@example.com"})
    draft = rest(origin, key, "POST", "/invoices", {"customer": customer["id"], "items": [
        {"description": "Design", "unit_amount": 250000}]})
    return rest(origin, key, "POST", f"/invoices/{draft['id']}/finalize")


def test_an_invoice_paid_on_another_process_is_heard_within_a_second(live_server_pair):
    listening, paying = live_server_pair
    tenant = make_tenant(None)
    invoice = open_invoice(paying, tenant.key)
    uri = f"invoice://{invoice['id']}"

    async def main():
        heard = []
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {tenant.key}"}) as http:
            async with Client(streamable_http_client(f"{listening}/mcp", http_client=http),
                              mode="2026-07-28") as client:
                async with client.listen(resource_subscriptions=[uri], resources_list_changed=True) as subscription:
                    assert subscription.honored.resource_subscriptions == [uri]
                    for act, expected in (
                            (lambda: rest(paying, tenant.key, "POST", f"/invoices/{invoice['id']}/pay"),
                             ResourceUpdated(uri=uri)),
                            (lambda: open_invoice(paying, tenant.key), ResourcesListChanged())):
                        await anyio.to_thread.run_sync(act)
                        done = time.monotonic()
                        with anyio.fail_after(5):
                            event = await subscription.__anext__()
                        heard.append((event, expected, time.monotonic() - done))
                    shown = await client.read_resource(uri)
        return heard, shown

    heard, shown = anyio.run(main)
    for event, expected, lag in heard:
        assert event == expected and lag < LAG_SECONDS, (event, lag)
    assert '"status":"paid"' in shown.contents[0].text


def test_a_sixth_stream_is_refused_whichever_process_holds_the_five(live_server_pair):
    first, second = live_server_pair
    tenant = make_tenant(None)

    async def main():
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {tenant.key}"}) as one, \
                create_mcp_http_client(headers={"Authorization": f"Bearer {tenant.key}"}) as other:
            async with Client(streamable_http_client(f"{first}/mcp", http_client=one), mode="2026-07-28") as a, \
                    Client(streamable_http_client(f"{second}/mcp", http_client=other), mode="2026-07-28") as b:
                streams = []
                for n in range(5):
                    opened = (a if n % 2 else b).listen(resources_list_changed=True)
                    await opened.__aenter__()
                    streams.append(opened)
                try:
                    with pytest.raises(MCPError) as refused:
                        async with a.listen(resources_list_changed=True):
                            pass
                finally:
                    for opened in reversed(streams):
                        await opened.__aexit__(None, None, None)
                return refused.value

    refused = anyio.run(main)
    assert (refused.error.code, refused.error.data) == (429, {"code": "rate_limited", "limit": 5})
