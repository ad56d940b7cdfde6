"""Payments through REST: instalments to paid, overpayment refused or put on the balance, reversal
reopening the invoice, every refusal at its field or state, limits of scope and idempotency, and
concurrent payments never passing what is due."""

from __future__ import annotations

import threading

import pytest
from sqlmodel import select

from core.access.principal import Principal
from core.access.scopes import ALL_SCOPES
from core.base import db
from core.base.errors import ValidationFailed
from core.billing import payments
from core.billing.payment_inputs import PaymentCreate
from core.models import Payment
from tests.api.invoicing import (
    add_webhook_endpoint,
    adhoc,
    customer,
    draft,
    history,
    open_invoice,
    outbox_rows,
    paid_part,
    pay,
    record_payment,
    stored_events,
    void,
)

# 100.00 USD.
ITEMS = [adhoc("Consulting", 10000)]


def invoice_of(tenant, **fields) -> dict:
    return open_invoice(tenant, items=fields.pop("items", ITEMS), **fields)


def invoice_now(tenant, invoice_id: str) -> dict:
    response = tenant.get(f"/invoices/{invoice_id}")
    assert response.status_code == 200, response.text
    return response.json()["data"]


def reverse(tenant, payment_id: str, reason: str = "The transfer bounced", **kw):
    return tenant.post(f"/payments/{payment_id}/reverse", json={"reason": reason}, idem=True, **kw)


def error_paths(response) -> list[str]:
    return [error["path"] for error in response.json().get("errors", [])]


# --- recording ----------------------------------------------------------------------------------


def test_a_part_payment_lowers_what_is_due_and_keeps_the_invoice_open(tenant):
    invoice = invoice_of(tenant)
    payment = paid_part(tenant, invoice["id"], 3000, method="bank_transfer", reference="TRF-1",
                        paid_on="2026-11-20")
    assert payment["id"].startswith("py_") and payment["object"] == "payment"
    assert (payment["amount"], payment["amount_applied"], payment["balance_amount"]) == (3000, 3000, 0)
    assert (payment["method"], payment["reference"], payment["paid_on"]) == ("bank_transfer", "TRF-1", "2026-11-20")
    assert (payment["invoice"], payment["invoice_number"], payment["currency"]) == (invoice["id"], invoice["number"],
                                                                                  "USD")
    now = invoice_now(tenant, invoice["id"])
    assert (now["status"], now["amount_paid"], now["amount_due"], now["paid_at"]) == ("open", 3000, 7000, None)


def test_instalments_that_reach_the_total_make_the_invoice_paid_on_the_latest_date(tenant):
    invoice = invoice_of(tenant)
    paid_part(tenant, invoice["id"], 4000, paid_on="2026-11-25")
    paid_part(tenant, invoice["id"], 6000, paid_on="2026-11-21T09:15:00Z")
    now = invoice_now(tenant, invoice["id"])
    assert (now["status"], now["amount_paid"], now["amount_due"]) == ("paid", 10000, 0)
    assert now["paid_at"] == "2026-11-25T00:00:00.000Z"


def test_each_payment_is_recorded_in_the_history_and_the_settling_one_pays(tenant):
    invoice = invoice_of(tenant)
    first = paid_part(tenant, invoice["id"], 4000)
    second = paid_part(tenant, invoice["id"], 6000, reference="TRF-2")
    events = history(tenant, invoice["id"])
    assert [event["type"] for event in events[:3]] == ["invoice.paid", "payment.recorded", "payment.recorded"]
    assert events[0]["meta"]["payment"] == second["id"] and events[0]["meta"]["reference"] == "TRF-2"
    assert first["id"] != second["id"]


def test_payment_events_carry_the_payment_to_webhooks(tenant):
    add_webhook_endpoint(tenant.account_id)
    invoice = invoice_of(tenant)
    payment = paid_part(tenant, invoice["id"], 2500)
    [event] = [e for e in stored_events(tenant.account_id) if e.type == "payment.recorded"]
    assert event.payload["data"]["object"]["id"] == payment["id"]
    assert event.payload["data"]["object"]["object"] == "payment"
    assert [kind for kind, _ in outbox_rows(tenant.account_id)].count("payment.recorded") == 1


def test_pay_still_records_one_payment_of_all_that_is_due(tenant):
    invoice = invoice_of(tenant)
    paid_part(tenant, invoice["id"], 3000)
    response = pay(tenant, invoice["id"], {"reference": "REST-OF-IT", "paid_on": "2026-11-26"})
    assert response.status_code == 200, response.text
    assert (response.json()["data"]["status"], response.json()["data"]["amount_paid"]) == ("paid", 10000)
    listed = tenant.get(f"/invoices/{invoice['id']}/payments").json()["data"]
    assert [(p["amount"], p["method"], p["reference"]) for p in listed] == [(7000, "other", "REST-OF-IT"),
                                                                          (3000, "other", None)]


def test_amount_above_what_is_due_is_refused_at_amount(tenant):
    invoice = invoice_of(tenant)
    paid_part(tenant, invoice["id"], 9000)
    response = record_payment(tenant, invoice["id"], 1001)
    assert response.status_code == 422 and error_paths(response) == ["amount"]
    assert "10.00 USD" in response.json()["errors"][0]["message"]
    assert invoice_now(tenant, invoice["id"])["amount_paid"] == 9000


def test_an_overpayment_to_the_balance_pays_the_invoice_and_credits_the_customer(tenant):
    buyer = customer(tenant)
    invoice = invoice_of(tenant, customer=buyer["id"])
    payment = paid_part(tenant, invoice["id"], 12500, overpayment="balance")
    assert (payment["amount_applied"], payment["balance_amount"], payment["balance_remaining"]) == (10000, 2500, 2500)
    assert invoice_now(tenant, invoice["id"])["status"] == "paid"
    following = open_invoice(tenant, customer=buyer["id"], items=[adhoc("Retainer", 4000)])
    assert (following["balance_applied"], following["amount_paid"], following["amount_due"]) == (2500, 2500, 1500)
    assert tenant.get(f"/payments/{payment['id']}").json()["data"]["balance_remaining"] == 0


def test_an_overpayment_covering_the_next_invoice_pays_it_at_once(tenant):
    buyer = customer(tenant)
    invoice = invoice_of(tenant, customer=buyer["id"])
    paid_part(tenant, invoice["id"], 15000, overpayment="balance")
    following = open_invoice(tenant, customer=buyer["id"], items=[adhoc("Small", 3000)])
    assert (following["status"], following["amount_due"], following["amount_paid"]) == ("paid", 0, 3000)


def test_the_balance_is_used_oldest_first_across_credit_notes_and_payments(tenant):
    buyer = customer(tenant)
    first = invoice_of(tenant, customer=buyer["id"])
    early = paid_part(tenant, first["id"], 11000, overpayment="balance")  # 10.00 on the balance
    second = invoice_of(tenant, customer=buyer["id"])
    assert pay(tenant, second["id"]).status_code == 200
    tenant.post("/credit-notes", json={"invoice": second["id"], "balance_amount": 10000}, idem=True)
    third = open_invoice(tenant, customer=buyer["id"], items=[adhoc("Retainer", 1500)])
    assert third["balance_applied"] == 1500
    assert tenant.get(f"/payments/{early['id']}").json()["data"]["balance_remaining"] == 0


def test_a_currency_other_than_the_invoices_is_refused_at_currency(tenant):
    invoice = invoice_of(tenant)
    response = record_payment(tenant, invoice["id"], 1000, currency="eur")
    assert response.status_code == 422 and error_paths(response) == ["currency"]
    assert record_payment(tenant, invoice["id"], 1000, currency="usd").status_code == 201


@pytest.mark.parametrize("amount", [0, -5, 10.5, "100", None, 9007199254740992])
def test_an_amount_that_is_not_a_positive_integer_is_refused_at_amount(tenant, amount):
    invoice = invoice_of(tenant)
    response = record_payment(tenant, invoice["id"], amount)
    assert response.status_code == 422 and error_paths(response) == ["amount"]


@pytest.mark.parametrize("fields, path", [
    ({"method": "bitcoin"}, "method"), ({"overpayment": "keep"}, "overpayment"), ({"reference": "x" * 201}, "reference"),
    ({"paid_on": "yesterday"}, "paid_on"), ({"note": "x" * 5001}, "note"), ({"surprise": 1}, "surprise"),
])
def test_bad_fields_are_refused_at_their_path(tenant, fields, path):
    invoice = invoice_of(tenant)
    response = record_payment(tenant, invoice["id"], 1000, **fields)
    assert response.status_code == 422 and path in error_paths(response)


@pytest.mark.parametrize("state", ["draft", "paid", "void"])
def test_only_an_open_invoice_takes_a_payment(tenant, state):
    invoice = draft(tenant, items=ITEMS) if state == "draft" else invoice_of(tenant)
    if state == "paid":
        pay(tenant, invoice["id"])
    elif state == "void":
        void(tenant, invoice["id"])
    response = record_payment(tenant, invoice["id"], 1000)
    assert response.status_code == 409 and response.json()["code"] == "invalid_state"


@pytest.mark.parametrize("fields", [{}, {"overpayment": "balance"}])
def test_an_open_invoice_of_nothing_takes_no_payment(tenant, fields):
    free = open_invoice(tenant, items=[adhoc("Free sample", 0)])
    response = record_payment(tenant, free["id"], 500, **fields)
    assert response.status_code == 409 and "nothing due" in response.json()["detail"]
    assert pay(tenant, free["id"]).status_code == 409
    assert invoice_now(tenant, free["id"])["status"] == "open"


def test_an_overdue_invoice_takes_a_payment(tenant):
    invoice = invoice_of(tenant, issue_date="2026-01-01", due_date="2026-01-31")
    assert invoice["status"] == "overdue"
    assert record_payment(tenant, invoice["id"], 1000).status_code == 201
    assert invoice_now(tenant, invoice["id"])["status"] == "overdue"


def test_another_accounts_invoice_and_payment_are_not_found(tenant, other_tenant):
    theirs = invoice_of(other_tenant)
    assert record_payment(tenant, theirs["id"], 1000).status_code == 404
    payment = paid_part(other_tenant, theirs["id"], 1000)
    assert tenant.get(f"/payments/{payment['id']}").status_code == 404
    assert reverse(tenant, payment["id"]).status_code == 404
    assert tenant.get("/payments", params={"invoice": theirs["id"]}).status_code == 404


@pytest.mark.parametrize("bad", ["py_123", "nope", "0b5f3c1e-2d4a-4b6c-8e9f-1a2b3c4d5e6f", "in_" + "0" * 32])
def test_a_malformed_or_unknown_payment_id_is_not_found(tenant, bad):
    assert tenant.get(f"/payments/{bad}").status_code == 404


def test_recording_needs_an_idempotency_key_and_a_replay_records_nothing_more(tenant):
    invoice = invoice_of(tenant)
    body = {"invoice": invoice["id"], "amount": 2000}
    assert tenant.post("/payments", json=body).status_code == 428
    first = tenant.post("/payments", json=body, idem="pay-once")
    again = tenant.post("/payments", json=body, idem="pay-once")
    assert first.status_code == again.status_code == 201
    assert again.headers["Idempotent-Replayed"] == "true" and again.json() == first.json()
    assert invoice_now(tenant, invoice["id"])["amount_paid"] == 2000


def test_recording_and_reversing_need_payments_write_and_listing_invoices_read(tenant):
    invoice = invoice_of(tenant)
    payment = paid_part(tenant, invoice["id"], 1000)
    reader = tenant.as_key(tenant.key_with(["invoices:read"]))
    assert reader.get("/payments").status_code == 200
    assert reader.get(f"/payments/{payment['id']}").status_code == 200
    refused = record_payment(reader, invoice["id"], 1000)
    assert refused.status_code == 403 and "payments:write" in refused.json()["detail"]
    assert reverse(reader, payment["id"]).status_code == 403
    writer = tenant.as_key(tenant.key_with(["payments:write"]))
    assert record_payment(writer, invoice["id"], 1000).status_code == 201


# --- listing ------------------------------------------------------------------------------------


def test_payments_list_newest_first_and_filter_by_invoice_and_customer(tenant):
    buyer, other = customer(tenant), customer(tenant)
    mine = invoice_of(tenant, customer=buyer["id"])
    theirs = invoice_of(tenant, customer=other["id"])
    a = paid_part(tenant, mine["id"], 1000)
    b = paid_part(tenant, theirs["id"], 2000)
    c = paid_part(tenant, mine["id"], 3000)
    assert [p["id"] for p in tenant.get("/payments").json()["data"]] == [c["id"], b["id"], a["id"]]
    assert [p["id"] for p in tenant.get("/payments", params={"invoice": mine["id"]}).json()["data"]] == [c["id"],
                                                                                                     a["id"]]
    assert [p["id"] for p in tenant.get("/payments", params={"customer": other["id"]}).json()["data"]] == [b["id"]]
    assert tenant.get("/payments", params={"customer": "cus_" + "0" * 32}).status_code == 404


def test_payments_paginate_with_a_cursor_bound_to_the_filters(tenant):
    invoice = invoice_of(tenant)
    made = [paid_part(tenant, invoice["id"], 100)["id"] for _ in range(3)]
    first = tenant.get("/payments", params={"limit": 2}).json()
    second = tenant.get("/payments", params={"limit": 2, "cursor": first["next_cursor"]}).json()
    assert [p["id"] for p in first["data"] + second["data"]] == made[::-1] and second["next_cursor"] is None
    foreign = tenant.get("/payments", params={"limit": 2, "cursor": first["next_cursor"], "invoice": invoice["id"]})
    assert foreign.status_code == 422 and error_paths(foreign) == ["cursor"]


# --- reversing ----------------------------------------------------------------------------------


def test_reversing_the_last_payment_reopens_the_invoice(tenant):
    invoice = invoice_of(tenant)
    paid_part(tenant, invoice["id"], 4000)
    last = paid_part(tenant, invoice["id"], 6000)
    response = reverse(tenant, last["id"], "Returned by the bank: account closed")
    assert response.status_code == 200, response.text
    reversed_ = response.json()["data"]
    assert (reversed_["status"], reversed_["reversal_reason"]) == ("reversed", "Returned by the bank: account closed")
    assert reversed_["reversed_at"] is not None
    now = invoice_now(tenant, invoice["id"])
    assert (now["status"], now["amount_paid"], now["amount_due"], now["paid_at"]) == ("open", 4000, 6000, None)
    events = history(tenant, invoice["id"])
    assert [e["type"] for e in events[:2]] == ["invoice.reopened", "payment.reversed"]
    assert events[1]["meta"]["reason"] == "Returned by the bank: account closed"


def test_reversing_a_payment_of_an_open_invoice_does_not_reopen_anything(tenant):
    invoice = invoice_of(tenant)
    payment = paid_part(tenant, invoice["id"], 4000)
    assert reverse(tenant, payment["id"]).status_code == 200
    assert invoice_now(tenant, invoice["id"])["amount_due"] == 10000
    assert [e["type"] for e in history(tenant, invoice["id"])][:1] == ["payment.reversed"]


def test_a_reversed_payment_stays_listed_and_is_not_reversed_twice(tenant):
    invoice = invoice_of(tenant)
    payment = paid_part(tenant, invoice["id"], 4000)
    assert reverse(tenant, payment["id"]).status_code == 200
    again = reverse(tenant, payment["id"])
    assert again.status_code == 409 and again.json()["code"] == "invalid_state"
    assert [p["status"] for p in tenant.get("/payments").json()["data"]] == ["reversed"]


@pytest.mark.parametrize("body, path", [({}, "reason"), ({"reason": ""}, "reason"), ({"reason": "  \n "}, "reason"),
                                        ({"reason": "x" * 1001}, "reason")])
def test_a_reversal_needs_a_reason(tenant, body, path):
    invoice = invoice_of(tenant)
    payment = paid_part(tenant, invoice["id"], 4000)
    response = tenant.post(f"/payments/{payment['id']}/reverse", json=body, idem=True)
    assert response.status_code == 422 and error_paths(response) == [path]


def test_a_payment_whose_excess_paid_another_invoice_is_not_reversed(tenant):
    buyer = customer(tenant)
    invoice = invoice_of(tenant, customer=buyer["id"])
    payment = paid_part(tenant, invoice["id"], 12000, overpayment="balance")
    open_invoice(tenant, customer=buyer["id"], items=[adhoc("Retainer", 1000)])
    response = reverse(tenant, payment["id"])
    assert response.status_code == 409 and "applied to another invoice" in response.json()["detail"]


def test_reversing_an_overpayment_takes_its_unused_excess_off_the_balance(tenant):
    buyer = customer(tenant)
    invoice = invoice_of(tenant, customer=buyer["id"])
    payment = paid_part(tenant, invoice["id"], 12000, overpayment="balance")
    assert reverse(tenant, payment["id"]).json()["data"]["balance_remaining"] == 0
    following = open_invoice(tenant, customer=buyer["id"], items=[adhoc("Retainer", 1000)])
    assert following["balance_applied"] == 0


def test_a_payment_refunded_by_a_credit_note_is_not_reversed_until_the_note_is_void(tenant):
    invoice = invoice_of(tenant)
    payment = paid_part(tenant, invoice["id"], 4000)
    note = tenant.post("/credit-notes", json={"invoice": invoice["id"], "refund_amount": 4000, "credit_amount": 6000},
                       idem=True)
    assert note.status_code == 201, note.text
    refused = reverse(tenant, payment["id"])
    assert refused.status_code == 409 and "void them first" in refused.json()["detail"]
    assert tenant.post(f"/credit-notes/{note.json()['data']['id']}/void", idem=True).status_code == 200
    assert reverse(tenant, payment["id"]).status_code == 200


def test_an_invoice_with_payments_is_not_voided_until_they_are_reversed(tenant):
    invoice = invoice_of(tenant)
    payment = paid_part(tenant, invoice["id"], 4000)
    refused = void(tenant, invoice["id"])
    assert refused.status_code == 409 and "payments" in refused.json()["detail"]
    assert reverse(tenant, payment["id"]).status_code == 200
    assert void(tenant, invoice["id"]).status_code == 200


def test_reversing_needs_an_idempotency_key(tenant):
    invoice = invoice_of(tenant)
    payment = paid_part(tenant, invoice["id"], 4000)
    response = tenant.post(f"/payments/{payment['id']}/reverse", json={"reason": "bounced"})
    assert response.status_code == 428


# --- concurrency --------------------------------------------------------------------------------


def _principal(tenant) -> Principal:
    return Principal(account_id=tenant.account_id, granted_scopes=frozenset(ALL_SCOPES), actor="api_key", role="owner",
                     api_key_id=tenant.key_id, request_id="req_test", credential_id="test")


def test_concurrent_payments_never_pass_what_is_due(tenant):
    invoice = invoice_of(tenant)
    count = 8 if db.get_engine().dialect.name == "postgresql" else 4
    barrier = threading.Barrier(count)
    outcomes: list = []

    def pay_some(_index: int) -> None:
        barrier.wait()
        try:
            with db.transaction() as session:
                payments.record_payment(session, _principal(tenant), PaymentCreate(invoice=invoice["id"], amount=3000))
            outcomes.append("recorded")
        except ValidationFailed:
            outcomes.append("refused")
        except Exception as exc:  # SQLite: a writer that finds the database locked
            outcomes.append(type(exc).__name__)

    threads = [threading.Thread(target=pay_some, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert outcomes.count("recorded") == 3
    with db.transaction() as session:
        stored = session.exec(select(Payment.amount).where(Payment.account_id == tenant.account_id)).all()
    assert sum(stored) == 9000
    assert invoice_now(tenant, invoice["id"])["amount_due"] == 1000
