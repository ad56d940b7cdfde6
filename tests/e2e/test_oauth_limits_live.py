"""Limited grants against two live server processes: the SDK's MCP client and a REST client are
served under the limit and refused over it, for the capped currency and another one, with the day's
count shared by both processes."""

from __future__ import annotations

import json
import uuid

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import make_tenant
from tests.oauth_flow import authorize_query, exchange, pkce_pair, redirect_params, register, sign_in, submit_consent

pytestmark = pytest.mark.e2e
LIMITS = [{"type": "invoice_actions", "actions": ["finalize"], "max_amount": {"currency": "USD", "amount": 100000},
           "max_per_day": 2}]


def limited_token(origin: str, email: str, resource: str) -> str:
    with httpx.Client(base_url=origin) as browser:
        sign_in(browser, email)
        app = register(browser, token_endpoint_auth_method="none", client_name="Limited assistant")
        verifier, challenge = pkce_pair()
        consent = submit_consent(browser, authorize_query(
            app["client_id"], challenge, resource=resource, scope="invoices:read invoices:finalize",
            authorization_details=json.dumps(LIMITS)), scopes=["invoices:read", "invoices:finalize"])
        token = exchange(browser, app["client_id"], redirect_params(consent)["code"][0], verifier, resource=resource)
        assert token.status_code == 200, token.text
        assert token.json()["authorization_details"] == LIMITS
        return token.json()["access_token"]


def draft(origin: str, key: str, amount: int, currency: str = "USD") -> str:
    api = httpx.Client(base_url=f"{origin}/api/v1", headers={"Authorization": f"Bearer {key}"})
    customer = api.post("/customers", json={"name": "Globex Corp"}).json()["data"]
    return api.post("/invoices", headers={"Idempotency-Key": uuid.uuid4().hex}, json={
        "customer": customer["id"], "currency": currency,
        "items": [{"description": "Work", "unit_amount": amount}]}).json()["data"]["id"]


ORIGIN = "http://127.0.0.1:8999"  # the public origin both processes serve (as behind one load balancer)


@pytest.fixture(scope="module")
def servers(test_settings, tmp_path_factory):
    from tests.e2e.conftest import LiveServers
    processes = LiveServers(test_settings, tmp_path_factory.mktemp("limits-servers"))
    try:
        yield processes.start_many(2, origin=ORIGIN)
    finally:
        processes.stop_all()


def test_a_rest_client_is_held_to_its_limits_on_every_process(servers):
    tenant = make_tenant(None)
    token = limited_token(servers[0], tenant.user_email, f"{ORIGIN}/api/v1")

    def finalize(origin: str, invoice_id: str) -> httpx.Response:
        return httpx.post(f"{origin}/api/v1/invoices/{invoice_id}/finalize", headers={
            "Authorization": f"Bearer {token}", "Idempotency-Key": uuid.uuid4().hex})

    over = finalize(servers[1], draft(servers[0], tenant.key, 250000))
    assert over.status_code == 403 and over.json()["code"] == "grant_limit_exceeded"
    other_currency = finalize(servers[1], draft(servers[0], tenant.key, 5000, "EUR"))
    assert other_currency.status_code == 403
    assert [finalize(origin, draft(servers[0], tenant.key, 5000)).status_code
            for origin in (servers[0], servers[1], servers[0])] == [200, 200, 403]  # two a day, across processes


def test_the_sdk_client_gets_a_structured_denial_over_the_limit(servers):
    tenant = make_tenant(None)
    token = limited_token(servers[0], tenant.user_email, f"{ORIGIN}/mcp")
    under, over, euros = (draft(servers[0], tenant.key, 5000), draft(servers[0], tenant.key, 250000),
                          draft(servers[0], tenant.key, 5000, "EUR"))

    async def main():
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
            async with Client(streamable_http_client(f"{servers[1]}/mcp", http_client=http), mode="2026-07-28") as client:
                return [await client.call_tool("finalize_invoice", {"invoice": invoice}) for invoice in (under, over, euros)]

    served, refused, foreign = anyio.run(main)
    assert served.structured_content["status"] == "open"
    for result in (refused, foreign):
        assert result.is_error and json.loads(result.content[0].text)["code"] == "grant_limit_exceeded"
        denial = result.meta["io.modelcontextprotocol/authorization"]
        assert denial["reason"] == "insufficient_authorization" and denial["url"].startswith(ORIGIN + "/settings/apps/")
