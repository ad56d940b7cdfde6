"""The tools run the same operations as the REST API: a whole journey, errors with the REST codes,
idempotency keys, event meta, formatted money, and parity with REST."""

import pytest

from tests.api.invoicing import adhoc, customer, price, stored_events
from tests.mcp.jsonrpc import call, error_of, post, structured


def test_a_customer_to_paid_invoice_journey(client, tenant):
    created = structured(client, tenant.key, "create_customer", name="Acme Ltd", email="ap@acme.example")
    found = structured(client, tenant.key, "list_customers", query="acme")
    assert [c["id"] for c in found["data"]] == [created["id"]]
    draft = structured(client, tenant.key, "create_invoice", customer=created["id"],
                       items=[{"description": "Design", "unit_amount": 250000}], idempotency_key="d-1")
    assert draft["status"] == "draft" and draft["total"] == 250000
    with_line = structured(client, tenant.key, "add_invoice_item", invoice=draft["id"], description="Hosting",
                           unit_amount=1000, quantity=2)
    assert with_line["total"] == 252000 and len(with_line["lines"]["data"]) == 2
    finalized = structured(client, tenant.key, "finalize_invoice", invoice=draft["id"])
    assert finalized["status"] == "open" and finalized["number"] == "INV-0001"
    paid = structured(client, tenant.key, "mark_invoice_paid", invoice=draft["id"], reference="wire 42")
    assert paid["status"] == "paid" and paid["amount_due"] == 0
    kinds = [e["type"] for e in structured(client, tenant.key, "list_invoice_events", invoice=draft["id"])["data"]]
    assert kinds == ["invoice.paid", "payment.recorded", "invoice.finalized", "invoice.updated", "invoice.created"]


def test_money_comes_formatted_too(client, tenant):
    invoice = structured(client, tenant.key, "create_invoice", customer=customer(tenant)["id"],
                         items=[{"description": "Design", "unit_amount": 250000}])
    assert invoice["formatted"]["total"] == "2,500.00 USD"
    assert invoice["lines"]["data"][0]["formatted"]["unit_amount"] == "2,500.00 USD"


@pytest.mark.parametrize(("currency", "amount", "shown"), [("JPY", 5000, "5,000 JPY"), ("BHD", 1250, "1.250 BHD")])
def test_money_is_formatted_in_the_currency_s_own_minor_unit(client, tenant, currency, amount, shown):
    invoice = structured(client, tenant.key, "create_invoice", customer=customer(tenant)["id"], currency=currency,
                         items=[{"description": "Item", "unit_amount": amount}])
    assert invoice["formatted"]["total"] == shown


def test_a_result_has_a_text_content_too(client, tenant):
    result = call(client, tenant.key, "get_business")
    assert result["content"][0]["type"] == "text" and '"legal_name"' in result["content"][0]["text"]


def test_validation_errors_carry_the_rest_code_and_paths(client, tenant):
    result = call(client, tenant.key, "create_invoice", customer=customer(tenant)["id"],
                  items=[{"description": "Bad", "unit_amount": 1.5}])
    error = error_of(result)
    assert error["code"] == "validation"
    assert [e["path"] for e in error["errors"]] == ["items.0.unit_amount"]


def test_an_unknown_argument_is_a_validation_error(client, tenant):
    error = error_of(call(client, tenant.key, "get_invoice", invoice="in_x", colour="red"))
    assert error["code"] == "validation" and error["errors"][0]["path"] == "colour"


def test_a_missing_id_is_a_validation_error_at_its_argument(client, tenant):
    error = error_of(call(client, tenant.key, "get_customer"))
    assert error["code"] == "validation" and error["errors"][0]["path"] == "customer"


def test_another_account_s_invoice_is_not_found(client, tenant, other_tenant):
    theirs = structured(client, other_tenant.key, "create_invoice", customer=customer(other_tenant)["id"])
    assert error_of(call(client, tenant.key, "get_invoice", invoice=theirs["id"]))["code"] == "not_found"


def test_editing_a_finalized_invoice_is_invalid_state(client, tenant):
    draft = structured(client, tenant.key, "create_invoice", customer=customer(tenant)["id"], items=[adhoc()])
    structured(client, tenant.key, "finalize_invoice", invoice=draft["id"])
    error = error_of(call(client, tenant.key, "update_invoice", invoice=draft["id"], footer="Thanks"))
    assert error["code"] == "invalid_state"


def test_a_retry_with_the_same_idempotency_key_creates_one_invoice(client, tenant):
    customer_id = customer(tenant)["id"]
    first = structured(client, tenant.key, "create_invoice", customer=customer_id, idempotency_key="retry-1")
    again = structured(client, tenant.key, "create_invoice", customer=customer_id, idempotency_key="retry-1")
    assert again["id"] == first["id"]
    assert len(structured(client, tenant.key, "list_invoices")["data"]) == 1


def test_the_same_key_with_other_arguments_is_a_mismatch(client, tenant):
    customer_id = customer(tenant)["id"]
    structured(client, tenant.key, "create_invoice", customer=customer_id, idempotency_key="retry-2")
    error = error_of(call(client, tenant.key, "create_invoice", customer=customer_id, footer="x",
                          idempotency_key="retry-2"))
    assert error["code"] == "idempotency_mismatch"


def test_events_record_the_api_key_and_a_request_id(client, tenant):
    invoice = structured(client, tenant.key, "create_invoice", customer=customer(tenant)["id"])
    (event,) = [e for e in stored_events(tenant.account_id) if e.payload["data"]["object"]["id"] == invoice["id"]]
    assert event.meta["actor"] == "api_key" and event.meta["api_key_id"] == str(tenant.key_id)
    assert event.meta["request_id"].startswith("req_")


def test_list_tools_page_with_limit_and_cursor(client, tenant):
    for name in ("A", "B", "C"):
        structured(client, tenant.key, "create_customer", name=name)
    first = structured(client, tenant.key, "list_customers", limit=2)
    second = structured(client, tenant.key, "list_customers", limit=2, cursor=first["next_cursor"])
    assert [c["name"] for c in first["data"] + second["data"]] == ["C", "B", "A"]
    assert second["next_cursor"] is None


def test_list_prices_filters_like_rest(client, tenant):
    usd = price(tenant, 1000, "USD")
    price(tenant, 2000, "EUR")
    assert [p["id"] for p in structured(client, tenant.key, "list_prices", currency="usd")["data"]] == [usd["id"]]


def test_delete_draft_invoice(client, tenant):
    draft = structured(client, tenant.key, "create_invoice", customer=customer(tenant)["id"])
    deleted = structured(client, tenant.key, "delete_draft_invoice", invoice=draft["id"])
    assert deleted == {"id": draft["id"], "object": "invoice", "deleted": True}


def test_remove_invoice_item(client, tenant):
    draft = structured(client, tenant.key, "create_invoice", customer=customer(tenant)["id"], items=[adhoc(), adhoc()])
    line = draft["lines"]["data"][0]["id"]
    updated = structured(client, tenant.key, "remove_invoice_item", item=line)
    assert [li["id"] for li in updated["lines"]["data"]] == [draft["lines"]["data"][1]["id"]]


def test_void_invoice(client, tenant):
    draft = structured(client, tenant.key, "create_invoice", customer=customer(tenant)["id"], items=[adhoc()])
    structured(client, tenant.key, "finalize_invoice", invoice=draft["id"])
    voided = structured(client, tenant.key, "void_invoice", invoice=draft["id"], reason="Duplicate")
    assert voided["status"] == "void" and voided["void_reason"] == "Duplicate"


# --- parity with REST ---------------------------------------------------------------------------

def _comparable(invoice: dict) -> dict:
    skip = {"id", "created", "updated", "customer", "formatted", "number", "public_url_token", "public_url",
            "public_pdf_url", "finalized_at"}
    lines = [{k: v for k, v in line.items() if k not in ("id", "invoice", "formatted")}
             for line in invoice.get("lines", {}).get("data", [])]
    return {**{k: v for k, v in invoice.items() if k not in skip | {"lines", "customer_details"}}, "lines": lines}


def test_the_same_draft_through_rest_and_mcp_is_identical(client, tenant):
    body = {"currency": "EUR", "footer": "Net 30",
            "items": [adhoc("Design", 123456, quantity=1.5, discount_percent=10, tax_rate=20), adhoc("Ops", 99)]}
    via_rest = tenant.post("/invoices", json={"customer": customer(tenant)["id"], **body}, idem=True).json()["data"]
    via_mcp = structured(client, tenant.key, "create_invoice", customer=customer(tenant)["id"], **body)
    assert _comparable(via_mcp) == _comparable(via_rest)


@pytest.mark.parametrize(("tool", "arguments", "method", "path", "body"), [
    ("get_invoice", {"invoice": "in_nope"}, "GET", "/invoices/in_nope", None),
    ("get_customer", {"customer": "cus_nope"}, "GET", "/customers/cus_nope", None),
    ("create_customer", {"name": ""}, "POST", "/customers", {"name": ""}),
    ("create_invoice", {"customer": "cus_nope"}, "POST", "/invoices", {"customer": "cus_nope"}),
    ("finalize_invoice", {"invoice": "in_nope"}, "POST", "/invoices/in_nope/finalize", None),
    ("mark_invoice_paid", {"invoice": "in_nope"}, "POST", "/invoices/in_nope/pay", None),
    ("list_invoices", {"customer": "cus_nope"}, "GET", "/invoices?customer=cus_nope", None),
    ("record_payment", {"invoice": "in_nope", "amount": 100}, "POST", "/payments", {"invoice": "in_nope", "amount": 100}),
    ("record_payment", {"invoice": "in_nope", "amount": 0}, "POST", "/payments", {"invoice": "in_nope", "amount": 0}),
    ("reverse_payment", {"payment": "py_nope", "reason": "x"}, "POST", "/payments/py_nope/reverse", {"reason": "x"}),
    ("reverse_payment", {"payment": "py_nope"}, "POST", "/payments/py_nope/reverse", {}),
    ("list_payments", {"invoice": "in_nope"}, "GET", "/payments?invoice=in_nope", None),
    ("get_receivables", {"currency": "XXQ"}, "GET", "/receivables?currency=XXQ", None),
])
def test_errors_have_the_same_code_through_rest_and_mcp(client, tenant, tool, arguments, method, path, body):
    rest = tenant.request(method, path, json=body, idem=method == "POST").json()
    mcp = error_of(call(client, tenant.key, tool, **arguments))
    assert mcp["code"] == rest["code"]
    assert mcp.get("errors") == rest.get("errors")


def test_an_invoice_finalized_through_mcp_shows_in_rest(client, tenant):
    draft = structured(client, tenant.key, "create_invoice", customer=customer(tenant)["id"], items=[adhoc()])
    structured(client, tenant.key, "finalize_invoice", invoice=draft["id"])
    assert tenant.get(f"/invoices/{draft['id']}").json()["data"]["status"] == "open"


def test_sending_over_the_per_key_limit_is_a_rate_limited_tool_error(client, tenant):
    from core.mechanisms import ratelimit
    from tests.limits import spend

    draft = structured(client, tenant.key, "create_invoice", customer=customer(tenant)["id"], items=[adhoc()])
    spend(ratelimit.sends_per_key(), f"key:{tenant.key_id}", 10)
    error = error_of(call(client, tenant.key, "send_invoice", invoice=draft["id"]))
    assert error["code"] == "rate_limited" and error["retry_after_seconds"] >= 1
    assert structured(client, tenant.key, "get_invoice", invoice=draft["id"])["status"] == "draft"


def test_sending_e_mails_the_invoice(client, tenant):
    draft = structured(client, tenant.key, "create_invoice", customer=customer(tenant)["id"], items=[adhoc()])
    sent = structured(client, tenant.key, "send_invoice", invoice=draft["id"], idempotency_key="send-1")
    assert sent["emailed_to"] == "jane@example.com" and sent["data"]["status"] == "open"


def test_one_idempotency_key_cannot_act_on_another_invoice(client, tenant):
    first = structured(client, tenant.key, "create_invoice", customer=customer(tenant)["id"], items=[adhoc()])
    second = structured(client, tenant.key, "create_invoice", customer=customer(tenant)["id"], items=[adhoc()])
    structured(client, tenant.key, "finalize_invoice", invoice=first["id"], idempotency_key="fin-1")
    error = error_of(call(client, tenant.key, "finalize_invoice", invoice=second["id"], idempotency_key="fin-1"))
    assert error["code"] == "idempotency_mismatch"
    assert structured(client, tenant.key, "get_invoice", invoice=second["id"])["status"] == "draft"


def test_an_empty_idempotency_key_is_a_validation_error_at_its_argument(client, tenant):
    error = error_of(call(client, tenant.key, "create_customer", name="A", idempotency_key=""))
    assert error["code"] == "validation" and error["errors"][0]["path"] == "idempotency_key"


def test_a_control_character_in_an_idempotency_key_is_a_validation_error_at_its_argument(client, tenant):
    error = error_of(call(client, tenant.key, "create_customer", name="A", idempotency_key="k\x00"))
    assert error["code"] == "validation" and error["errors"][0]["path"] == "idempotency_key"


def test_a_control_character_in_a_tool_argument_is_a_validation_error_at_its_name(client, tenant):
    error = error_of(call(client, tenant.key, "create_customer", name="A\x00"))
    assert error["code"] == "validation" and error["errors"][0]["path"] == "name"


def test_a_control_character_in_an_id_argument_is_not_found_as_any_malformed_id(client, tenant):
    error = error_of(call(client, tenant.key, "get_invoice", invoice="in_\x00"))
    assert error["code"] == "not_found"


@pytest.mark.parametrize("limit", [True, 1.5, "5"])
def test_a_query_argument_of_the_wrong_json_type_is_a_validation_error(client, tenant, limit):
    error = error_of(call(client, tenant.key, "list_invoices", limit=limit))
    assert error["code"] == "validation" and error["errors"][0]["path"] == "limit"


def test_a_query_argument_of_the_right_json_type_is_taken(client, tenant):
    assert structured(client, tenant.key, "list_customers", limit=5, include_deleted=True)["data"] == []


def test_date_and_status_filters_are_taken_over_mcp(client, tenant):
    listed = structured(client, tenant.key, "list_invoices", status="draft", **{"from": "2026-01-01", "to": "2026-12-31"})
    assert listed["data"] == []


# --- preview_invoice ------------------------------------------------------------------------------

def test_preview_shows_the_totals_create_would_make_and_saves_nothing(client, tenant):
    arguments = {"customer": customer(tenant)["id"], "items": [adhoc(), {**adhoc(), "quantity": 2, "tax_rate": 20}]}
    preview = structured(client, tenant.key, "preview_invoice", **arguments)
    created = structured(client, tenant.key, "create_invoice", **arguments)
    for field in ("subtotal", "discount", "taxable", "tax", "total", "currency", "due_date", "formatted"):
        assert preview[field] == created[field], field
    assert [line["amount"] for line in preview["lines"]["data"]] == [line["amount"] for line in created["lines"]["data"]]
    assert preview["id"] is None and preview["object"] == "invoice_preview" and preview["number"] is None
    assert all(line["id"] is None for line in preview["lines"]["data"])
    assert len(tenant.get("/invoices").json()["data"]) == 1  # only the created one
    assert [e["type"] for e in tenant.get(f"/invoices/{created['id']}/events").json()["data"]] == ["invoice.created"]


def test_preview_fails_as_create_fails(client, tenant):
    arguments = {"customer": customer(tenant)["id"], "items": [{"description": "No amount"}]}
    preview, created = (error_of(call(client, tenant.key, tool, **arguments))
                        for tool in ("preview_invoice", "create_invoice"))
    assert preview == created and preview["code"] == "validation"


def test_preview_needs_only_read_access_and_is_read_only(client, tenant):
    reader = tenant.key_with(["invoices:read"])
    preview = structured(client, reader, "preview_invoice", customer=customer(tenant)["id"], items=[adhoc()])
    assert preview["total"] > 0
    listed = {tool["name"]: tool for tool in post(client, "tools/list", key=tenant.key).json()["result"]["tools"]}
    assert listed["preview_invoice"]["annotations"]["readOnlyHint"] is True
