"""`tools/call` of get_invoice, through the gate and the SDK, runs REST's operation: any invoice
(hypothesis) is REST's object with its amounts formatted, as text and as structured content, also
when its JSON was kept (PostgreSQL); it follows a change at once, counts once, and refuses as REST."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.base.clock import today
from mcp_server.calls import with_formatted_money
from tests import hostile
from tests.api.invoicing import customer, draft, open_invoice, pay, void
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


def remaining(tenant) -> int:
    return int(tenant.get("/business").headers["ratelimit-remaining"])


@settings(max_examples=max(hostile.EXAMPLES // 2, 4), deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(items=st.lists(lines, min_size=1, max_size=4), status=st.sampled_from(["draft", "open", "paid", "void", "overdue"]),
       name=texts, request_id=st.one_of(st.integers(min_value=-10**6, max_value=10**6), texts))
def test_any_invoice_is_rests_object_with_its_amounts_formatted(client, monkeypatch, items, status, name, request_id):
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
    assert answered.status_code == 200 and answered.json()["id"] == request_id
    result = answered.json()["result"]
    expected = with_formatted_money(tenant.get(f"/invoices/{invoice['id']}").json()["data"])
    assert result["structuredContent"] == expected
    assert json.loads(result["content"][0]["text"]) == expected
    assert called(tenant, body).content == answered.content  # again: the JSON kept


def test_an_invoice_not_found_is_a_tool_error(tenant):
    answered = called(tenant, _body("in_" + "0" * 32))
    assert answered.json()["result"]["isError"] is True
    assert json.loads(answered.json()["result"]["content"][0]["text"])["code"] == "not_found"


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


def test_a_key_without_the_scope_is_refused_by_the_gate(client):
    reader = make_tenant(client, scopes=["business:read"])
    body = _body("in_" + "0" * 32)
    response = called(reader, body)
    assert response.status_code == 403 and "insufficient_scope" in response.headers["www-authenticate"]


def test_a_limit_reached_is_refused(client, monkeypatch):
    from config.settings import get_settings
    monkeypatch.setattr(get_settings(), "rate_limit_requests", 2)
    tenant = make_tenant(client)
    statuses = [called(tenant, _body("in_" + "0" * 32)).status_code for _ in range(3)]
    assert statuses[-1] == 429
