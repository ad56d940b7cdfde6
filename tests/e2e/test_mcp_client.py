"""The official MCP SDK client against live `invoicing` servers, with an API key: the 2025-11-25
handshake and the stateless 2026-07-28 generation, a whole journey, step-up refusals, and calls
spread over two server processes."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.conftest import make_tenant

pytestmark = pytest.mark.e2e


def legacy_session(origin: str, key: str):
    """A ClientSession that speaks the 2025-11-25 handshake (`initialize`)."""
    async def run(work):
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http:
            async with streamable_http_client(f"{origin}/mcp", http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    initialized = await session.initialize()
                    return await work(session, initialized)
    return run


def modern_client(origin: str, key: str):
    """The SDK's `Client`, which settles on the stateless 2026-07-28 generation with this server."""
    async def run(work):
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http:
            async with Client(streamable_http_client(f"{origin}/mcp", http_client=http)) as client:
                return await work(client)
    return run


async def journey(session) -> dict:
    customer = (await session.call_tool("create_customer", {"name": "Jane Doe", "email": "jane@example.com"}))
    assert not customer.is_error, customer
    draft = await session.call_tool("create_invoice", {
        "customer": customer.structured_content["id"], "idempotency_key": "live-draft",
        "items": [{"description": "Design", "unit_amount": 250000}]})
    assert not draft.is_error, draft
    invoice_id = draft.structured_content["id"]
    line = await session.call_tool("add_invoice_item", {"invoice": invoice_id, "description": "Hosting",
                                                       "unit_amount": 1000})
    assert line.structured_content["total"] == 251000
    finalized = await session.call_tool("finalize_invoice", {"invoice": invoice_id})
    assert finalized.structured_content["status"] == "open"
    paid = await session.call_tool("mark_invoice_paid", {"invoice": invoice_id, "reference": "wire"})
    return paid.structured_content


def test_the_2025_11_25_handshake_lists_tools_and_runs_a_journey(live_server):
    tenant = make_tenant(None)

    async def work(session, initialized):
        assert initialized.protocol_version == "2025-11-25"
        assert "draft" in (initialized.instructions or "")
        tools = (await session.list_tools()).tools
        assert len(tools) == 41
        return await journey(session)

    paid = anyio.run(legacy_session(live_server, tenant.key), work)
    assert paid["status"] == "paid" and paid["formatted"]["total"] == "2,510.00 USD"


def test_the_stateless_2026_generation_runs_a_journey(live_server):
    tenant = make_tenant(None)

    async def work(client):
        assert len((await client.list_tools()).tools) == 41
        return await journey(client)

    paid = anyio.run(modern_client(live_server, tenant.key), work)
    assert paid["status"] == "paid"


def test_a_domain_error_is_a_tool_error_with_the_rest_code(live_server):
    tenant = make_tenant(None)

    async def work(session, _initialized):
        return await session.call_tool("get_invoice", {"invoice": "in_nope"})

    result = anyio.run(legacy_session(live_server, tenant.key), work)
    assert result.is_error and '"not_found"' in result.content[0].text


def test_a_missing_scope_is_refused_for_step_up(live_server):
    tenant = make_tenant(None, scopes=["business:read", "clients:read", "invoices:read", "clients:write",
                                       "invoices:write"])

    async def work(session, _initialized):
        with pytest.raises(Exception) as refused:
            await session.call_tool("finalize_invoice", {"invoice": "in_nope"})
        return refused.value

    error = anyio.run(legacy_session(live_server, tenant.key), work)
    assert "invoices:finalize" in str(error)


def test_calls_of_one_client_may_land_on_either_process(live_server_pair):
    first, second = live_server_pair
    tenant = make_tenant(None)

    async def create(session, _initialized):
        return (await session.call_tool("create_customer", {"name": "Spread"})).structured_content["id"]

    customer_id = anyio.run(legacy_session(first, tenant.key), create)

    async def read(session, _initialized):
        return (await session.call_tool("get_customer", {"customer": customer_id})).structured_content

    assert anyio.run(legacy_session(second, tenant.key), read)["name"] == "Spread"
