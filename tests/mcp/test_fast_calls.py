"""`tools/call` of get_invoice with an API key in the lane (`mcp_server.fast_calls`) answers byte for
byte as the SDK does (any invoice, each protocol version it takes, found or not), counts once, and
leaves to the gate and the SDK, uncounted and with the body intact, whatever it does not answer."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.base.clock import today
from mcp_server import fast_calls
from tests import hostile
from tests.api.invoicing import adhoc, customer, draft, open_invoice, pay, void
from tests.conftest import make_tenant
from tests.mcp.jsonrpc import HEADERS

texts = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30).filter(str.strip)
lines = st.fixed_dictionaries({
    "description": texts, "unit_amount": st.integers(min_value=0, max_value=10**9),
    "quantity": st.decimals(min_value=Decimal("0.000001"), max_value=Decimal(10**6), places=6).map(str),
    "discount_percent": st.decimals(min_value=0, max_value=100, places=2).map(str),
    "tax_rate": st.sampled_from(["0", "7", "20", "5.5", "0.000001"]),
})


def _body(invoice_ref: str, request_id: int | str = 7) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": "get_invoice", "arguments": {"invoice": invoice_ref}}})


def called(tenant, body: str, **headers):
    return tenant.client.post("/mcp", content=body, headers={**HEADERS, "Authorization": f"Bearer {tenant.key}",
                                                             **headers})


def by_the_sdk(tenant, body: str, monkeypatch, **headers):
    """The same call answered by the gate and the SDK (the lane standing aside)."""
    with monkeypatch.context() as patched:
        patched.setattr(fast_calls, "lane_target", lambda _scope: False)
        return called(tenant, body, **headers)


def remaining(tenant) -> int:
    return int(tenant.get("/business").headers["ratelimit-remaining"])


@settings(max_examples=max(hostile.EXAMPLES // 2, 4), deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(items=st.lists(lines, min_size=1, max_size=4), status=st.sampled_from(["draft", "open", "paid", "void", "overdue"]),
       name=texts, request_id=st.one_of(st.integers(min_value=-10**6, max_value=10**6), texts))
def test_any_invoice_is_answered_byte_for_byte_as_the_sdk_answers(client, monkeypatch, items, status, name, request_id):
    from config.settings import get_settings
    monkeypatch.setattr(get_settings(), "rate_limit_requests", 10**6)
    tenant = make_tenant(client)
    fields = {"items": items, "customer_id": customer(tenant, name=name)["id"]}
    if status == "overdue":
        fields.update(issue_date=(today() - timedelta(days=40)).isoformat(),
                      due_date=(today() - timedelta(days=10)).isoformat())
    invoice = draft(tenant, **fields) if status == "draft" else open_invoice(tenant, **fields)
    if status == "paid":
        assert pay(tenant, invoice["id"]).status_code == 200
    if status == "void":
        assert void(tenant, invoice["id"]).status_code == 200
    body = _body(invoice["id"], request_id)
    answered = called(tenant, body)
    assert answered.status_code == 200
    assert answered.content == by_the_sdk(tenant, body, monkeypatch).content
    assert called(tenant, body).content == answered.content  # again: the result kept


@pytest.mark.parametrize("version", sorted(fast_calls.VERSIONS))
def test_each_protocol_version_it_takes_is_answered_as_the_sdk_answers(tenant, monkeypatch, version):
    invoice = open_invoice(tenant, items=[adhoc("Design", 150000, quantity="1.5", tax_rate="20")])
    body = _body(invoice["id"])
    answered = called(tenant, body, **{"MCP-Protocol-Version": version})
    assert answered.content == by_the_sdk(tenant, body, monkeypatch, **{"MCP-Protocol-Version": version}).content
    assert answered.headers["content-type"] == "application/json" and answered.headers["x-request-id"]


def test_an_invoice_not_found_is_the_sdks_tool_error(tenant, monkeypatch):
    body = _body("in_" + "0" * 32)
    answered = called(tenant, body)
    assert answered.content == by_the_sdk(tenant, body, monkeypatch).content
    assert answered.json()["result"]["isError"] is True


def test_a_call_is_counted_once(tenant):
    invoice = draft(tenant)
    before = remaining(tenant)
    assert called(tenant, _body(invoice["id"])).status_code == 200
    assert remaining(tenant) == before - 2  # the call and the /business read


def test_an_answer_follows_a_change_of_the_invoice(tenant):
    invoice = draft(tenant)
    first = called(tenant, _body(invoice["id"])).json()["result"]["structuredContent"]
    tenant.patch(f"/invoices/{invoice['id']}", json={"footer": "Changed"})
    second = called(tenant, _body(invoice["id"])).json()["result"]["structuredContent"]
    assert first["footer"] != "Changed" and second["footer"] == "Changed"


def _left_to_the_sdk(tenant, body: str, **headers):
    before = remaining(tenant)
    response = called(tenant, body, **headers)
    assert remaining(tenant) == before - 2  # counted once, by the gate
    return response


@pytest.mark.parametrize("headers", [
    {"MCP-Protocol-Version": "2026-07-28"}, {"Mcp-Session-Id": "not-ours"}, {"Content-Type": "application/json; charset=utf-8"},
    {"Origin": "https://evil.example"}, {"Accept": "text/event-stream"},
])
def test_what_the_lane_does_not_take_is_the_sdks_answer_counted_once(tenant, monkeypatch, headers):
    invoice = draft(tenant)
    body = _body(invoice["id"])
    response = _left_to_the_sdk(tenant, body, **headers)
    expected = by_the_sdk(tenant, body, monkeypatch, **headers)
    assert (response.status_code, response.content) == (expected.status_code, expected.content)


@pytest.mark.parametrize("message", [
    {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_invoice", "arguments": {"invoice": "x", "y": 1}}},
    {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_invoices", "arguments": {}}},
    {"jsonrpc": "2.0", "id": True, "method": "tools/call", "params": {"name": "get_invoice", "arguments": {"invoice": "x"}}},
    {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
     "params": {"name": "get_invoice", "arguments": {"invoice": "x"}, "_meta": {"progressToken": 1}}},
    [{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_invoice", "arguments": {"invoice": "x"}}}],
])
def test_other_messages_go_to_the_sdk_with_their_body(tenant, monkeypatch, message):
    body = json.dumps(message)
    assert called(tenant, body).content == by_the_sdk(tenant, body, monkeypatch).content


def test_an_oauth_token_or_a_key_without_the_scope_goes_to_the_gate(client, monkeypatch):
    reader = make_tenant(client, scopes=["business:read"])
    body = _body("in_" + "0" * 32)
    response = called(reader, body)
    assert response.status_code == 403 and "insufficient_scope" in response.headers["www-authenticate"]


def test_a_limit_reached_is_the_gates_answer(client, monkeypatch):
    from config.settings import get_settings
    monkeypatch.setattr(get_settings(), "rate_limit_requests", 2)
    tenant = make_tenant(client)
    statuses = [called(tenant, _body("in_" + "0" * 32)).status_code for _ in range(3)]
    assert statuses[-1] == 429
