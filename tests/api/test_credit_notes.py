"""Credit notes through REST: every money path, partial and full, over-crediting refused at the field,
void undoing effects, the customer balance applied to the next invoice, numbers and idempotency."""

from __future__ import annotations

import uuid

import pytest

from tests.api.invoicing import (
    add_webhook_endpoint,
    adhoc,
    customer,
    history,
    open_invoice,
    outbox_rows,
    paid_part,
    pay,
    void,
)

# 3 × 10.00 at 20 % and 1 × 5.00 at 0 %: 30.00 + 6.00 tax, 5.00: total 41.00.
ITEMS = [adhoc("Consulting", 1000, quantity=3, tax_rate=20), adhoc("Travel", 500)]


def invoice_with_lines(tenant, **fields) -> dict:
    invoice = open_invoice(tenant, items=fields.pop("items", ITEMS), **fields)
    return tenant.get(f"/invoices/{invoice['id']}").json()["data"]


def line_ids(invoice: dict) -> list[str]:
    return [line["id"] for line in invoice["lines"]["data"]]


def credit(tenant, body: dict, *, key: str | None = None):
    return tenant.post("/credit-notes", json=body, idem=key or True)


def issued(tenant, body: dict) -> dict:
    response = credit(tenant, body)
    assert response.status_code == 201, response.text
    return response.json()["data"]


def invoice_now(tenant, invoice_id: str) -> dict:
    return tenant.get(f"/invoices/{invoice_id}").json()["data"]


def error_paths(response) -> list[str]:
    return [error["path"] for error in response.json().get("errors", [])]


# --- what a credit note credits ---------------------------------------------------------------


def test_whole_invoice_is_credited_when_no_lines_are_given(tenant):
    invoice = invoice_with_lines(tenant)
    note = issued(tenant, {"invoice": invoice["id"]})
    assert (note["subtotal"], note["tax"], note["total"]) == (3500, 600, 4100)
    assert note["total"] == invoice["total"]
    assert note["credit_amount"] == 4100
    assert [line["invoice_line"] for line in note["lines"]["data"]] == line_ids(invoice)


def test_credit_note_names_the_invoice_and_its_own_number(tenant):
    invoice = invoice_with_lines(tenant)
    note = issued(tenant, {"invoice": invoice["id"], "reason": "order_change", "memo": "Two hours less"})
    assert note["id"].startswith("cn_") and note["object"] == "credit_note"
    assert note["number"] == "CN-0001"
    assert (note["invoice"], note["invoice_number"]) == (invoice["id"], invoice["number"])
    assert note["invoice_issue_date"] == invoice["issue_date"]
    assert (note["reason"], note["memo"], note["status"]) == ("order_change", "Two hours less", "issued")
    assert note["customer_details"] == invoice["customer_details"]


def test_part_of_a_line_by_quantity_at_its_rate(tenant):
    invoice = invoice_with_lines(tenant)
    note = issued(tenant, {"invoice": invoice["id"], "lines": [{"invoice_line": line_ids(invoice)[0], "quantity": 1}]})
    line = note["lines"]["data"][0]
    assert (line["quantity"], line["amount"], line["tax_rate"], line["tax_amount"]) == (1, 1000, 20, 200)
    assert note["total"] == 1200


def test_part_of_a_line_by_amount_at_its_rate(tenant):
    invoice = invoice_with_lines(tenant)
    note = issued(tenant, {"invoice": invoice["id"], "lines": [{"invoice_line": line_ids(invoice)[0], "amount": 250}]})
    line = note["lines"]["data"][0]
    assert (line["quantity"], line["amount"], line["tax_amount"]) == (None, 250, 50)


def test_a_line_of_its_own(tenant):
    invoice = invoice_with_lines(tenant)
    note = issued(tenant, {"invoice": invoice["id"],
                           "lines": [{"description": "Goodwill", "amount": 700, "tax_rate": 20}]})
    line = note["lines"]["data"][0]
    assert (line["type"], line["invoice_line"], line["description"]) == ("custom", None, "Goodwill")
    assert (line["amount"], line["tax_amount"], note["total"]) == (700, 140, 840)


def test_pieces_that_complete_a_line_add_up_to_exactly_its_amount_and_tax(tenant):
    # 3 × 3.35 at 10 %: 10.05 + 1.01 tax (1.005 rounds up); one unit at a time would be 3 × 0.34 = 1.02.
    invoice = invoice_with_lines(tenant, items=[adhoc("Part", 335, quantity=3, tax_rate=10)])
    line_id = line_ids(invoice)[0]
    notes = [issued(tenant, {"invoice": invoice["id"], "lines": [{"invoice_line": line_id, "quantity": 1}]})
             for _ in range(3)]
    assert sum(note["tax"] for note in notes) == invoice["tax"] == 101
    assert sum(note["total"] for note in notes) == invoice["total"]
    assert invoice_now(tenant, invoice["id"])["status"] == "paid"


# --- over-crediting -----------------------------------------------------------------------------


def test_more_quantity_than_the_line_has_is_422_at_the_quantity(tenant):
    invoice = invoice_with_lines(tenant)
    response = credit(tenant, {"invoice": invoice["id"], "lines": [{"invoice_line": line_ids(invoice)[0], "quantity": 4}]})
    assert response.status_code == 422
    assert error_paths(response) == ["lines.0.quantity"]


def test_more_than_remains_after_an_earlier_credit_note_is_422(tenant):
    invoice = invoice_with_lines(tenant)
    first = line_ids(invoice)[0]
    issued(tenant, {"invoice": invoice["id"], "lines": [{"invoice_line": first, "quantity": 2}]})
    response = credit(tenant, {"invoice": invoice["id"], "lines": [{"invoice_line": first, "quantity": 2}]})
    assert response.status_code == 422
    assert error_paths(response) == ["lines.0.quantity"]


def test_more_amount_than_the_line_has_is_422_at_the_amount(tenant):
    invoice = invoice_with_lines(tenant)
    response = credit(tenant, {"invoice": invoice["id"], "lines": [{"invoice_line": line_ids(invoice)[1], "amount": 501}]})
    assert response.status_code == 422
    assert error_paths(response) == ["lines.0.amount"]


def test_free_lines_beyond_what_the_invoice_can_still_be_credited_are_422_at_lines(tenant):
    invoice = invoice_with_lines(tenant)
    response = credit(tenant, {"invoice": invoice["id"], "lines": [{"description": "Too much", "amount": 4101}]})
    assert response.status_code == 422
    assert error_paths(response) == ["lines"]


def test_credit_amount_above_amount_due_is_422_at_credit_amount(tenant):
    # The customer's balance paid 41.00 of the next invoice: 59.00 is due, though 100.00 can be credited.
    buyer = customer(tenant)
    first = invoice_with_lines(tenant, customer=buyer["id"])
    assert pay(tenant, first["id"]).status_code == 200
    issued(tenant, {"invoice": first["id"], "balance_amount": 4100})
    second = open_invoice(tenant, customer=buyer["id"], items=[adhoc("Retainer", 10000)])
    assert second["amount_due"] == 5900
    response = credit(tenant, {"invoice": second["id"], "credit_amount": 10000})
    assert response.status_code == 422 and error_paths(response) == ["credit_amount"]
    assert issued(tenant, {"invoice": second["id"], "credit_amount": 5900, "balance_amount": 4100})["total"] == 10000


def test_amounts_that_do_not_add_up_to_the_total_are_422(tenant):
    invoice = invoice_with_lines(tenant)
    response = credit(tenant, {"invoice": invoice["id"], "credit_amount": 100, "balance_amount": 100})
    assert response.status_code == 422
    assert error_paths(response) == ["credit_amount"]


def test_a_line_of_another_invoice_is_422_at_invoice_line(tenant):
    invoice, other = invoice_with_lines(tenant), invoice_with_lines(tenant)
    response = credit(tenant, {"invoice": invoice["id"], "lines": [{"invoice_line": line_ids(other)[0]}]})
    assert response.status_code == 422
    assert error_paths(response) == ["lines.0.invoice_line"]


def test_quantity_and_amount_together_are_422(tenant):
    invoice = invoice_with_lines(tenant)
    response = credit(tenant, {"invoice": invoice["id"],
                               "lines": [{"invoice_line": line_ids(invoice)[0], "quantity": 1, "amount": 100}]})
    assert response.status_code == 422
    assert error_paths(response) == ["lines.0.amount"]


def test_a_free_line_needs_description_and_amount(tenant):
    invoice = invoice_with_lines(tenant)
    response = credit(tenant, {"invoice": invoice["id"], "lines": [{"tax_rate": 20}]})
    assert response.status_code == 422
    assert sorted(error_paths(response)) == ["lines.0.amount", "lines.0.description"]


# --- which invoices -------------------------------------------------------------------------------


@pytest.mark.parametrize("state", ["draft", "void"])
def test_drafts_and_void_invoices_are_not_credited(tenant, state):
    from tests.api.invoicing import draft
    invoice = draft(tenant) if state == "draft" else open_invoice(tenant)
    if state == "void":
        assert void(tenant, invoice["id"]).status_code == 200
    response = credit(tenant, {"invoice": invoice["id"]})
    assert response.status_code == 409
    assert response.json()["code"] == "invalid_state"


def test_another_accounts_invoice_is_404(tenant, other_tenant):
    invoice = invoice_with_lines(other_tenant)
    assert credit(tenant, {"invoice": invoice["id"]}).status_code == 404


def test_another_accounts_credit_note_is_404(tenant, other_tenant):
    note = issued(other_tenant, {"invoice": invoice_with_lines(other_tenant)["id"]})
    assert tenant.get(f"/credit-notes/{note['id']}").status_code == 404
    assert tenant.post(f"/credit-notes/{note['id']}/void", idem=True).status_code == 404


# --- where the money goes -------------------------------------------------------------------------


def test_credit_lowers_amount_due_and_shows_as_credited(tenant):
    invoice = invoice_with_lines(tenant)
    issued(tenant, {"invoice": invoice["id"], "lines": [{"invoice_line": line_ids(invoice)[1]}]})
    now = invoice_now(tenant, invoice["id"])
    assert (now["amount_credited"], now["amount_due"], now["status"]) == (500, 3600, "open")


def test_an_open_invoice_credited_to_zero_is_paid(tenant):
    invoice = invoice_with_lines(tenant)
    issued(tenant, {"invoice": invoice["id"]})
    now = invoice_now(tenant, invoice["id"])
    assert (now["status"], now["amount_due"]) == ("paid", 0)
    assert now["paid_at"] is not None
    kinds = [event["type"] for event in history(tenant, invoice["id"])]
    assert kinds[:2] == ["invoice.paid", "credit_note.created"]


def test_a_paid_invoice_takes_refund_and_balance_only(tenant):
    invoice = invoice_with_lines(tenant)
    assert pay(tenant, invoice["id"]).status_code == 200
    refused = credit(tenant, {"invoice": invoice["id"], "credit_amount": 4100})
    assert refused.status_code == 422 and error_paths(refused) == ["credit_amount"]
    unsaid = credit(tenant, {"invoice": invoice["id"]})
    assert unsaid.status_code == 422 and error_paths(unsaid) == ["refund_amount"]
    note = issued(tenant, {"invoice": invoice["id"], "refund_amount": 2100, "balance_amount": 2000,
                           "refund_reference": "SEPA-RET-77", "refunded_on": "2026-11-20"})
    assert note["refund"] == {"reference": "SEPA-RET-77", "refunded_on": "2026-11-20"}
    assert (note["balance_amount"], note["balance_remaining"]) == (2000, 2000)


def test_refund_details_without_a_refund_are_422(tenant):
    invoice = invoice_with_lines(tenant)
    response = credit(tenant, {"invoice": invoice["id"], "refund_reference": "X"})
    assert response.status_code == 422


def test_mixed_credit_refund_and_balance_on_an_open_invoice(tenant):
    invoice = invoice_with_lines(tenant)
    paid_part(tenant, invoice["id"], 2100)
    note = issued(tenant, {"invoice": invoice["id"], "credit_amount": 1020, "refund_amount": 1000,
                           "balance_amount": 1100, "lines": [{"invoice_line": line_ids(invoice)[0], "amount": 2600}]})
    assert note["total"] == 3120
    now = invoice_now(tenant, invoice["id"])
    assert (now["amount_paid"], now["amount_credited"], now["amount_due"]) == (2100, 1020, 980)


def test_refund_and_balance_on_an_open_invoice_are_bounded_by_what_was_paid(tenant):
    invoice = invoice_with_lines(tenant)
    paid_part(tenant, invoice["id"], 1000)
    response = credit(tenant, {"invoice": invoice["id"], "refund_amount": 600, "balance_amount": 500,
                               "credit_amount": 3000})
    assert response.status_code == 422 and error_paths(response) == ["refund_amount"]
    assert issued(tenant, {"invoice": invoice["id"], "refund_amount": 600, "balance_amount": 400,
                           "credit_amount": 3100})["total"] == 4100


def test_refund_on_an_unpaid_invoice_is_refused_until_a_payment_is_recorded(tenant):
    invoice = invoice_with_lines(tenant)
    response = credit(tenant, {"invoice": invoice["id"], "refund_amount": 4100})
    assert response.status_code == 422 and error_paths(response) == ["refund_amount"]
    assert "record the payment" in response.json()["errors"][0]["message"]


def test_the_balance_is_applied_to_the_next_invoice_in_that_currency(tenant):
    buyer = customer(tenant)
    first = invoice_with_lines(tenant, customer=buyer["id"])
    assert pay(tenant, first["id"]).status_code == 200
    issued(tenant, {"invoice": first["id"], "balance_amount": 4100})
    other_currency = open_invoice(tenant, customer=buyer["id"], currency="EUR", items=[adhoc()])
    assert other_currency["balance_applied"] == 0
    second = open_invoice(tenant, customer=buyer["id"], items=[adhoc("Retainer", 10000)])
    assert (second["balance_applied"], second["amount_due"], second["status"]) == (4100, 5900, "open")
    third = open_invoice(tenant, customer=buyer["id"], items=[adhoc()])
    assert third["balance_applied"] == 0


def test_a_balance_that_covers_the_next_invoice_pays_it(tenant):
    buyer = customer(tenant)
    first = invoice_with_lines(tenant, customer=buyer["id"])
    assert pay(tenant, first["id"]).status_code == 200
    issued(tenant, {"invoice": first["id"], "balance_amount": 4100})
    second = open_invoice(tenant, customer=buyer["id"], items=[adhoc("Small", 1000)])
    assert (second["status"], second["balance_applied"], second["amount_due"]) == ("paid", 1000, 0)
    kinds = [event["type"] for event in history(tenant, second["id"])]
    assert kinds[:2] == ["invoice.paid", "invoice.finalized"]


# --- void -----------------------------------------------------------------------------------------


def test_void_undoes_the_credit_and_reopens_an_invoice_it_settled(tenant):
    invoice = invoice_with_lines(tenant)
    note = issued(tenant, {"invoice": invoice["id"]})
    response = tenant.post(f"/credit-notes/{note['id']}/void", idem=True)
    assert response.status_code == 200, response.text
    assert response.json()["data"]["status"] == "void"
    now = invoice_now(tenant, invoice["id"])
    assert (now["status"], now["amount_credited"], now["amount_due"], now["paid_at"]) == ("open", 0, 4100, None)
    kinds = [event["type"] for event in history(tenant, invoice["id"])]
    assert kinds[:2] == ["invoice.reopened", "credit_note.voided"]


def test_a_voided_credit_note_no_longer_counts_against_the_invoice(tenant):
    invoice = invoice_with_lines(tenant)
    note = issued(tenant, {"invoice": invoice["id"]})
    assert tenant.post(f"/credit-notes/{note['id']}/void", idem=True).status_code == 200
    assert issued(tenant, {"invoice": invoice["id"]})["total"] == 4100


def test_void_twice_is_409(tenant):
    note = issued(tenant, {"invoice": invoice_with_lines(tenant)["id"]})
    assert tenant.post(f"/credit-notes/{note['id']}/void", idem=True).status_code == 200
    again = tenant.post(f"/credit-notes/{note['id']}/void", idem=True)
    assert again.status_code == 409 and again.json()["code"] == "invalid_state"


def test_void_is_refused_once_its_balance_was_applied(tenant):
    buyer = customer(tenant)
    first = invoice_with_lines(tenant, customer=buyer["id"])
    assert pay(tenant, first["id"]).status_code == 200
    note = issued(tenant, {"invoice": first["id"], "balance_amount": 4100})
    open_invoice(tenant, customer=buyer["id"], items=[adhoc("Small", 100)])
    response = tenant.post(f"/credit-notes/{note['id']}/void", idem=True)
    assert response.status_code == 409 and response.json()["code"] == "invalid_state"


def test_void_of_an_unused_balance_takes_it_back(tenant):
    buyer = customer(tenant)
    first = invoice_with_lines(tenant, customer=buyer["id"])
    assert pay(tenant, first["id"]).status_code == 200
    note = issued(tenant, {"invoice": first["id"], "balance_amount": 4100})
    assert tenant.post(f"/credit-notes/{note['id']}/void", idem=True).status_code == 200
    assert open_invoice(tenant, customer=buyer["id"], items=[adhoc()])["balance_applied"] == 0


# --- numbers, idempotency, preview, lists, scope ---------------------------------------------------


def test_numbers_are_a_series_of_their_own(tenant):
    invoice = invoice_with_lines(tenant)
    numbers = [issued(tenant, {"invoice": invoice["id"], "lines": [{"description": f"n{i}", "amount": 1}]})["number"]
               for i in range(3)]
    assert numbers == ["CN-0001", "CN-0002", "CN-0003"]
    assert open_invoice(tenant, items=[adhoc()])["number"] == "INV-0002"


def test_a_retried_key_issues_once(tenant):
    invoice = invoice_with_lines(tenant)
    key = f"cn-{uuid.uuid4()}"
    first = credit(tenant, {"invoice": invoice["id"], "lines": [{"invoice_line": line_ids(invoice)[1]}]}, key=key)
    again = credit(tenant, {"invoice": invoice["id"], "lines": [{"invoice_line": line_ids(invoice)[1]}]}, key=key)
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert again.json() == first.json()
    assert len(tenant.get("/credit-notes").json()["data"]) == 1


def test_issuing_requires_an_idempotency_key(tenant):
    invoice = invoice_with_lines(tenant)
    response = tenant.post("/credit-notes", json={"invoice": invoice["id"]})
    assert response.status_code == 428


def test_preview_computes_without_saving(tenant):
    invoice = invoice_with_lines(tenant)
    preview = tenant.post("/credit-notes/preview", json={"invoice": invoice["id"]})
    assert preview.status_code == 200, preview.text
    data = preview.json()["data"]
    assert (data["id"], data["number"], data["total"]) == (None, None, 4100)
    assert tenant.get("/credit-notes").json()["data"] == []
    assert issued(tenant, {"invoice": invoice["id"]})["number"] == "CN-0001"


def test_lists_per_account_and_per_invoice_newest_first(tenant):
    one, two = invoice_with_lines(tenant), invoice_with_lines(tenant)
    a = issued(tenant, {"invoice": one["id"], "lines": [{"description": "a", "amount": 1}]})
    b = issued(tenant, {"invoice": two["id"], "lines": [{"description": "b", "amount": 1}]})
    assert [n["id"] for n in tenant.get("/credit-notes").json()["data"]] == [b["id"], a["id"]]
    assert [n["id"] for n in tenant.get(f"/invoices/{one['id']}/credit-notes").json()["data"]] == [a["id"]]
    assert [n["id"] for n in tenant.get("/credit-notes", params={"invoice": two["id"]}).json()["data"]] == [b["id"]]


def test_list_pages_with_a_cursor(tenant):
    invoice = invoice_with_lines(tenant)
    for i in range(3):
        issued(tenant, {"invoice": invoice["id"], "lines": [{"description": f"n{i}", "amount": 1}]})
    first = tenant.get("/credit-notes", params={"limit": 2}).json()
    second = tenant.get("/credit-notes", params={"limit": 2, "cursor": first["next_cursor"]}).json()
    assert len(first["data"]) == 2 and len(second["data"]) == 1 and second["next_cursor"] is None


def test_issuing_needs_the_credit_notes_scope(tenant_factory):
    tenant = tenant_factory(scopes=["invoices:read", "invoices:write", "invoices:finalize", "clients:write",
                                    "business:read", "clients:read"])
    invoice = invoice_with_lines(tenant)
    response = credit(tenant, {"invoice": invoice["id"]})
    assert response.status_code == 403
    assert "credit_notes:write" in response.json()["detail"]
    assert tenant.post("/credit-notes/preview", json={"invoice": invoice["id"]}).status_code == 200


# --- events ----------------------------------------------------------------------------------------


def test_created_event_carries_the_credit_note_to_webhooks(tenant):
    add_webhook_endpoint(tenant.account_id, ["credit_note.created"])
    invoice = invoice_with_lines(tenant)
    note = issued(tenant, {"invoice": invoice["id"], "lines": [{"invoice_line": line_ids(invoice)[1]}]})
    events = history(tenant, invoice["id"])
    created = next(event for event in events if event["type"] == "credit_note.created")
    assert created["meta"]["actor"] == "api_key"
    assert [kind for kind, _ in outbox_rows(tenant.account_id)] == ["credit_note.created"]
    from tests.api.invoicing import stored_events
    payload = next(e.payload for e in stored_events(tenant.account_id) if e.type == "credit_note.created")
    assert payload["data"]["object"]["id"] == note["id"]
    assert payload["data"]["object"]["invoice"] == invoice["id"]


# --- what the review found --------------------------------------------------------------------------


def test_a_line_of_its_own_takes_one_of_the_invoices_rates(tenant):
    invoice = invoice_with_lines(tenant)  # 20 % and 0 %
    response = credit(tenant, {"invoice": invoice["id"], "lines": [{"description": "VAT", "amount": 100,
                                                                    "tax_rate": 100, "tax_category": "S"}]})
    assert response.status_code == 422 and error_paths(response) == ["lines.0.tax_rate"]


def test_lines_of_their_own_never_credit_more_at_a_rate_than_the_invoice_has(tenant):
    invoice = invoice_with_lines(tenant)  # 5.00 at 0 %
    response = credit(tenant, {"invoice": invoice["id"], "lines": [{"description": "Goodwill", "amount": 501}]})
    assert response.status_code == 422 and error_paths(response) == ["lines"]
    assert "at 0 %" in response.json()["errors"][0]["message"]
    issued(tenant, {"invoice": invoice["id"], "lines": [{"description": "Goodwill", "amount": 500}]})
    again = credit(tenant, {"invoice": invoice["id"], "lines": [{"invoice_line": line_ids(invoice)[1], "amount": 1}]})
    assert again.status_code == 422


def test_a_zero_amount_is_refused(tenant):
    invoice = invoice_with_lines(tenant)
    response = credit(tenant, {"invoice": invoice["id"], "lines": [{"invoice_line": line_ids(invoice)[0], "amount": 0},
                                                                   {"description": "Goodwill", "amount": 100}]})
    assert response.status_code == 422 and error_paths(response) == ["lines.0.amount"]


def test_voiding_a_credit_note_reopens_an_invoice_paid_for_the_rest(tenant):
    invoice = invoice_with_lines(tenant)
    note = issued(tenant, {"invoice": invoice["id"], "lines": [{"invoice_line": line_ids(invoice)[1]}]})
    assert pay(tenant, invoice["id"]).status_code == 200  # paid what remained: 36.00
    assert tenant.post(f"/credit-notes/{note['id']}/void", idem=True).status_code == 200
    now = invoice_now(tenant, invoice["id"])
    assert (now["status"], now["amount_paid"], now["amount_due"], now["paid_at"]) == ("open", 3600, 500, None)
    assert history(tenant, invoice["id"])[0]["type"] == "invoice.reopened"


def test_an_invoice_with_credit_notes_is_not_voided(tenant):
    invoice = invoice_with_lines(tenant)
    payment = paid_part(tenant, invoice["id"], 500)
    note = issued(tenant, {"invoice": invoice["id"], "lines": [{"invoice_line": line_ids(invoice)[1]}],
                           "balance_amount": 500})
    refused = void(tenant, invoice["id"])
    assert refused.status_code == 409 and "credit notes" in refused.json()["detail"]
    assert tenant.post(f"/credit-notes/{note['id']}/void", idem=True).status_code == 200
    assert tenant.post(f"/payments/{payment['id']}/reverse", json={"reason": "bounced"}, idem=True).status_code == 200
    assert void(tenant, invoice["id"]).status_code == 200


def test_an_invoice_paid_in_part_by_the_balance_is_not_voided(tenant):
    buyer = customer(tenant)
    first = invoice_with_lines(tenant, customer=buyer["id"])
    assert pay(tenant, first["id"]).status_code == 200
    issued(tenant, {"invoice": first["id"], "balance_amount": 4100})
    second = open_invoice(tenant, customer=buyer["id"], items=[adhoc("Retainer", 10000)])
    refused = void(tenant, second["id"])
    assert refused.status_code == 409 and "balance" in refused.json()["detail"]
