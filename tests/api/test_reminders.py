"""Payment reminders: the policy through REST, each step e-mailed once by the job with its clock driven,
only the latest after downtime, none once paid or paused, deferred by the e-mail cap and never dropped,
late fees (fixed and statutory) as invoices of their own, and a reminder now by request."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import delete, select

from core.base import db
from core.models import ActivityEntry, InvoiceEvent, InvoiceReminder, RateLimitLog, RateLimitWindow
from core.schedules import late_fees, reminders
from tests.api.invoicing import adhoc, open_invoice, paid_part, pay
from tests.smtp import mail_settings, smtp_server

DUE = "2027-03-10"  # the business is in London: reminders go from 08:00 there (GMT in March)


@pytest.fixture
def mailbox():
    with smtp_server() as (handler, url), mail_settings(smtp_url=url):
        yield handler


def step(days: int, **fields) -> dict:
    return {"days": days, "subject": f"Step {days}: invoice {{number}}",
            "body": "Hello {customer}, {amount_due} was due on {due_date} ({days_overdue} days). {link}", **fields}


def set_policy(tenant, steps: list[dict], **fields) -> dict:
    response = tenant.request("PUT", "/reminder-policy", json={"active": True, "steps": steps, **fields})
    assert response.status_code == 200, response.text
    return response.json()["data"]


def invoice_due(tenant, amount: int = 100000, currency: str = "EUR") -> dict:
    return open_invoice(tenant, items=[adhoc("Consulting", amount)], currency=currency, due_date=DUE)


def on(day: str, hour: int = 9) -> datetime:
    return datetime.fromisoformat(day).replace(hour=hour, tzinfo=UTC)


def remind_at(moment: datetime) -> reminders.Sent:
    return reminders.send_due(moment)


def reminders_of(invoice_id: str) -> list[tuple[int, str]]:
    from core.base import ids
    with db.transaction() as session:
        rows = session.exec(select(InvoiceReminder).where(InvoiceReminder.invoice_id == ids.parse("invoice", invoice_id))
                            .order_by(InvoiceReminder.step_days)).all()
    return [(row.step_days, row.status) for row in rows]


def messages(mailbox) -> list:
    return [received.message for received in mailbox.received]


def subjects(mailbox) -> list[str]:
    return [message["Subject"] for message in messages(mailbox)]


def text_of(mailbox, index: int) -> str:
    return messages(mailbox)[index].get_body(("plain",)).get_content()


# --- the policy ----------------------------------------------------------------------------------------


def test_the_policy_is_off_with_default_steps_until_set(tenant):
    policy = tenant.get("/reminder-policy").json()["data"]
    assert policy["object"] == "reminder_policy" and policy["active"] is False and policy["updated"] is None
    assert [s["days"] for s in policy["steps"]] == [-3, 7, 30]


def test_a_policy_replaces_the_one_before(tenant):
    set_policy(tenant, [step(7)])
    policy = set_policy(tenant, [step(14), step(-1)])
    assert sorted(s["days"] for s in policy["steps"]) == [-1, 14] and policy["updated"]


@pytest.mark.parametrize(("body", "path"), [
    ({"active": True, "steps": [step(7, body="Pay {amount} now")]}, "steps.0.body"),
    ({"active": True, "steps": [step(7), step(7)]}, "steps"),
    ({"active": True, "steps": [step(0, late_fee=True)], "late_fee": {"kind": "fixed", "amount": 500}}, "steps"),
    ({"active": True, "steps": [step(7, late_fee=True)]}, "late_fee"),
    ({"active": True, "steps": [step(7)], "late_fee": {"kind": "statutory"}}, "reference_rate"),
    ({"active": True, "steps": [step(7)], "late_fee": {"kind": "fixed"}}, "late_fee"),
    ({"active": True, "steps": [step(400)]}, "steps.0.days"),
    ({"active": "yes", "steps": []}, "active"),
])
def test_a_bad_policy_is_a_422_at_its_field(tenant, body, path):
    response = tenant.request("PUT", "/reminder-policy", json=body)
    assert response.status_code == 422, response.text
    paths = [error["path"] for error in response.json()["errors"]]
    assert any(found.startswith(path) for found in paths), paths


def test_placeholders_are_only_the_known_names_never_python_formatting(tenant):
    response = tenant.request("PUT", "/reminder-policy", json={"active": True, "steps": [
        step(7, body="{number.__class__} {0}")]})
    assert response.status_code == 422
    assert reminders.reminder_policy.filled("{number} {0} {x}", {"number": "INV-1"}) == "INV-1 {0} {x}"


# --- sending -------------------------------------------------------------------------------------------


def test_each_step_is_emailed_once_on_its_day_from_eight_in_the_morning(tenant, mailbox):
    set_policy(tenant, [step(-3), step(7)])
    invoice = invoice_due(tenant)
    assert remind_at(on("2027-03-07", 7)).sent == 0  # 07:00 in London: not yet
    assert remind_at(on("2027-03-07", 8)).sent == 1
    assert remind_at(on("2027-03-07", 20)).sent == 0
    assert remind_at(on("2027-03-16")).sent == 0
    assert remind_at(on("2027-03-17")).sent == 1
    assert remind_at(on("2027-04-30")).sent == 0
    assert subjects(mailbox) == [f"Step -3: invoice {invoice['number']}", f"Step 7: invoice {invoice['number']}"]
    text = text_of(mailbox, 1)
    assert "1,000.00 EUR was due on 2027-03-10" in text
    assert "(7 days)" in text and invoice["public_url"] in text
    events = [e for e in tenant.get(f"/invoices/{invoice['id']}/events").json()["data"] if e["type"] == "invoice.reminder_sent"]
    assert len(events) == 2 and events[0]["meta"]["to"] == "jane@example.com"


def test_after_downtime_only_the_latest_due_step_goes(tenant, mailbox):
    set_policy(tenant, [step(-3), step(7), step(30)])
    invoice = invoice_due(tenant)
    assert remind_at(on("2027-04-15")).sent == 1
    assert subjects(mailbox) == [f"Step 30: invoice {invoice['number']}"]
    assert reminders_of(invoice["id"]) == [(-3, "skipped"), (7, "skipped"), (30, "sent")]


def test_a_step_before_the_invoice_was_issued_is_not_sent(tenant, mailbox):
    set_policy(tenant, [step(-30)])
    invoice = open_invoice(tenant, items=[adhoc()], due_date=(datetime.now(UTC) + timedelta(days=5)).date().isoformat())
    assert remind_at(datetime.now(UTC) + timedelta(days=1)).sent == 0
    assert reminders_of(invoice["id"]) == []


@pytest.mark.parametrize("settle", ["pay", "pay_in_part_then_rest", "credit_to_zero", "void", "pause"])
def test_reminders_stop_when_the_invoice_is_settled_voided_or_paused(tenant, mailbox, settle):
    set_policy(tenant, [step(-3), step(7)])
    invoice = invoice_due(tenant)
    assert remind_at(on("2027-03-07")).sent == 1
    if settle == "pay":
        pay(tenant, invoice["id"])
    elif settle == "pay_in_part_then_rest":
        paid_part(tenant, invoice["id"], 40000)
        paid_part(tenant, invoice["id"], 60000)
    elif settle == "credit_to_zero":  # a credit note of the whole invoice, nothing paid: credited to zero
        assert tenant.post("/credit-notes", json={"invoice": invoice["id"]}, idem=True).status_code == 201
    elif settle == "void":
        assert tenant.post(f"/invoices/{invoice['id']}/void", json={"reason": "Wrong"}, idem=True).status_code == 200
    else:
        response = tenant.post(f"/invoices/{invoice['id']}/reminders", json={"paused": True})
        assert response.status_code == 200 and response.json()["data"]["reminders_paused"] is True
    assert remind_at(on("2027-03-20")).sent == 0
    assert len(mailbox.received) == 1


def test_a_part_payment_keeps_reminding_of_what_is_left(tenant, mailbox):
    set_policy(tenant, [step(7)])
    invoice = invoice_due(tenant)
    paid_part(tenant, invoice["id"], 40000)
    assert remind_at(on("2027-03-17")).sent == 1
    text = text_of(mailbox, 0)
    assert "600.00 EUR was due on 2027-03-10" in text  # what is left, not the total


def test_an_inactive_policy_sends_nothing(tenant, mailbox):
    set_policy(tenant, [step(7)], active=False)
    invoice_due(tenant)
    assert remind_at(on("2027-03-17")).sent == 0


def test_the_email_cap_defers_a_reminder_until_it_resets_never_dropping_it(tenant, mailbox):
    from core.mechanisms import ratelimit
    from tests.limits import spend
    set_policy(tenant, [step(7)])
    invoice = invoice_due(tenant)
    spend(ratelimit.emails_per_account(), str(tenant.account_id), 50)
    done = remind_at(on("2027-03-17"))
    assert (done.sent, done.deferred) == (0, 1) and mailbox.received == []
    assert reminders_of(invoice["id"]) == [(7, "pending")]
    assert remind_at(on("2027-03-17", 10)).sent == 0  # the cap still holds
    with db.transaction() as session:
        session.exec(delete(RateLimitWindow))
        session.exec(delete(RateLimitLog))
    assert remind_at(on("2027-03-17", 11)).sent == 1
    assert reminders_of(invoice["id"]) == [(7, "sent")] and len(mailbox.received) == 1


# --- late fees ----------------------------------------------------------------------------------------


def test_a_fixed_late_fee_is_an_invoice_of_its_own_naming_the_overdue_one(tenant, mailbox):
    set_policy(tenant, [step(7, late_fee=True), step(14, late_fee=True)], late_fee={"kind": "fixed", "amount": 2500})
    invoice = invoice_due(tenant)
    remind_at(on("2027-03-17"))
    remind_at(on("2027-03-24"))
    listed = tenant.get("/invoices?limit=10").json()["data"]
    fees = [i for i in listed if i["late_fee_for"] == invoice["id"]]
    assert len(fees) == 1  # at most one fee per invoice
    fee = tenant.get(f"/invoices/{fees[0]['id']}").json()["data"]
    assert (fee["status"], fee["total"], fee["currency"]) == ("open", 2500, "EUR")
    assert fee["lines"]["data"][0]["tax_category"] == "O" and invoice["number"] in fee["lines"]["data"][0]["description"]
    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["total"] == invoice["total"]  # unchanged
    first = text_of(mailbox, 0)
    assert fee["number"] in first and "late payment charge of 25.00 EUR" in first


def test_a_late_fees_invoice_is_recorded_as_the_reminders_doing_not_the_owners(tenant, mailbox):
    set_policy(tenant, [step(7, late_fee=True)], late_fee={"kind": "fixed", "amount": 2500})
    invoice = invoice_due(tenant)
    remind_at(on("2027-03-17"))
    fee = next(i for i in tenant.get("/invoices?limit=10").json()["data"] if i["late_fee_for"] == invoice["id"])
    with db.transaction() as session:
        recorded = session.exec(select(InvoiceEvent.type, InvoiceEvent.meta).where(
            InvoiceEvent.invoice_id == uuid.UUID(fee["id"].removeprefix("in_")))).all()
    assert {kind for kind, _ in recorded} >= {"invoice.created", "invoice.finalized"}
    assert {meta["actor"] for _, meta in recorded} == {"reminders"}


def test_the_statutory_fee_is_the_reference_rate_plus_eight_points_and_forty_euros(tenant, mailbox):
    set_policy(tenant, [step(30, late_fee=True)], late_fee={"kind": "statutory"}, reference_rate="2.15")
    invoice = invoice_due(tenant, amount=100000)
    remind_at(on("2027-04-09"))
    [fee] = [i for i in tenant.get("/invoices").json()["data"] if i["late_fee_for"] == invoice["id"]]
    lines = tenant.get(f"/invoices/{fee['id']}").json()["data"]["lines"]["data"]
    # 1,000.00 EUR × 10.15 % × 30 / 365 = 8.3425 EUR
    assert [line["amount"] for line in lines] == [834, 4000]
    assert "10.15% a year" in lines[0]["description"] and "30 days" in lines[0]["description"]


def test_statutory_interest_rounds_half_up_in_minor_units():
    from decimal import Decimal
    assert late_fees.statutory_interest(100000, 30, Decimal("2.15")) == 834
    assert late_fees.statutory_interest(365, 1, Decimal("42")) == 1  # 0.5 rounds up
    assert late_fees.statutory_interest(100000, 0, Decimal("2.15")) == 0


def test_a_non_euro_invoice_gets_the_interest_without_the_euro_compensation(tenant, mailbox):
    set_policy(tenant, [step(30, late_fee=True)], late_fee={"kind": "statutory"}, reference_rate="4")
    invoice = invoice_due(tenant, amount=100000, currency="USD")
    remind_at(on("2027-04-09"))
    [fee] = [i for i in tenant.get("/invoices").json()["data"] if i["late_fee_for"] == invoice["id"]]
    assert fee["currency"] == "USD" and fee["total"] == late_fees.statutory_interest(100000, 30, 4)


# --- a reminder now ------------------------------------------------------------------------------------


def test_a_reminder_now_goes_at_once_and_is_in_the_history(tenant, mailbox):
    invoice = invoice_due(tenant)
    response = tenant.post(f"/invoices/{invoice['id']}/remind", json={"message": "Any news?"}, idem=True)
    assert response.status_code == 200, response.text
    assert response.json()["emailed_to"] == "jane@example.com"
    assert text_of(mailbox, 0).startswith("Any news?")
    kinds = [e["type"] for e in tenant.get(f"/invoices/{invoice['id']}/events").json()["data"]]
    assert "invoice.reminder_sent" in kinds


def test_a_reminder_now_is_refused_for_a_draft_or_a_paid_invoice_and_without_a_key(tenant, mailbox):
    from tests.api.invoicing import draft
    drafted = draft(tenant)
    assert tenant.post(f"/invoices/{drafted['id']}/remind", idem=True).status_code == 409
    paid = invoice_due(tenant)
    pay(tenant, paid["id"])
    assert tenant.post(f"/invoices/{paid['id']}/remind", idem=True).status_code == 409
    assert tenant.post(f"/invoices/{paid['id']}/remind").status_code == 428
    assert mailbox.received == []


def test_a_reminder_now_needs_the_send_scope(tenant, client):
    invoice = invoice_due(tenant)
    key = tenant.key_with(["invoices:read", "invoices:write"])
    response = client.post(f"/api/v1/invoices/{invoice['id']}/remind",
                           headers={"Authorization": f"Bearer {key}", "Idempotency-Key": "r"})
    assert response.status_code == 403


def test_pausing_an_invoices_reminders_needs_the_send_scope(tenant, client):
    invoice = invoice_due(tenant)
    key = tenant.key_with(["invoices:read", "invoices:write"])
    response = client.post(f"/api/v1/invoices/{invoice['id']}/reminders", json={"paused": True},
                           headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 403 and response.json()["required_scope"] == "invoices:send"
    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["reminders_paused"] is False


def test_pausing_and_resuming_reminders_is_in_the_activity_once_each(tenant):
    invoice = invoice_due(tenant)
    path = f"/invoices/{invoice['id']}/reminders"
    for paused in (True, True, False):
        assert tenant.post(path, json={"paused": paused}).status_code == 200
    with db.transaction() as session:
        summaries = [entry.summary for entry in session.exec(
            select(ActivityEntry).where(ActivityEntry.account_id == tenant.account_id,
                                        ActivityEntry.action.like("invoice.reminders_%"))
            .order_by(ActivityEntry.created_at))]
    assert summaries == [f"Paused the reminders of {invoice['number']}", f"Resumed the reminders of {invoice['number']}"]


def test_another_accounts_invoice_is_404(tenant, other_tenant):
    invoice = invoice_due(tenant)
    assert other_tenant.post(f"/invoices/{invoice['id']}/remind", idem=True).status_code == 404
    assert other_tenant.post(f"/invoices/{invoice['id']}/reminders", json={"paused": True}).status_code == 404


# --- what the review found ------------------------------------------------------------------------------


def fees_for(tenant, invoice_id: str) -> list[dict]:
    return [i for i in tenant.get("/invoices?limit=100").json()["data"] if i["late_fee_for"] == invoice_id]


def test_a_late_fees_own_invoice_is_reminded_but_never_charged_a_fee(tenant, mailbox):
    set_policy(tenant, [step(7, late_fee=True)], late_fee={"kind": "fixed", "amount": 2500})
    invoice = invoice_due(tenant)
    remind_at(on("2027-03-17"))
    [fee] = fees_for(tenant, invoice["id"])
    assert fee["issue_date"] == "2027-03-17" and fee["due_date"] == "2027-03-31"  # the business's day
    day = on("2027-03-18")
    while day < on("2027-06-30"):
        remind_at(day)
        day += timedelta(days=1)
    assert fees_for(tenant, fee["id"]) == []  # no fee on the fee, ever
    assert reminders_of(fee["id"]) == [(7, "sent")]
    assert len(fees_for(tenant, invoice["id"])) == 1


def test_an_unverified_account_cannot_turn_reminders_on_and_sends_none(client, mailbox):
    from core.access import accounts
    from core.models import ReminderPolicy
    from tests.conftest import make_tenant
    tenant = make_tenant(client)
    with db.transaction() as session:
        user = accounts.user_by_email(session, tenant.user_email)
        user.email_verified_at = None
        session.add(user)
    response = tenant.request("PUT", "/reminder-policy", json={"active": True, "steps": [step(7)]})
    assert response.status_code == 409 and "not verified" in response.json()["detail"]
    invoice = invoice_due(tenant)
    with db.transaction() as session:  # a policy turned on before the address changed
        session.add(ReminderPolicy(account_id=tenant.account_id, active=True, steps=[step(7)]))
    assert remind_at(on("2027-03-17")).sent == 0 and mailbox.received == []
    assert reminders_of(invoice["id"]) == []


def test_a_fee_that_cannot_be_issued_leaves_the_reminder_to_go_without_it(tenant, mailbox):
    set_policy(tenant, [step(7, late_fee=True)], late_fee={"kind": "fixed", "amount": 2500})
    invoice = invoice_due(tenant)
    assert tenant.delete(f"/customers/{invoice['customer']}").status_code == 200  # archived: no new invoice
    assert remind_at(on("2027-03-17")).sent == 1
    assert fees_for(tenant, invoice["id"]) == []
    from core.base import ids
    with db.transaction() as session:
        row = session.exec(select(InvoiceReminder).where(
            InvoiceReminder.invoice_id == ids.parse("invoice", invoice["id"]))).one()
    assert row.status == "sent" and row.error.startswith("No late fee was charged: ")


def test_one_failing_invoice_holds_up_no_other(tenant, mailbox, monkeypatch):
    set_policy(tenant, [step(7)])
    first, second = invoice_due(tenant), invoice_due(tenant)
    real = reminders._claim_step

    def broken_for_first(invoice_id, *args):
        if str(invoice_id.hex) in first["id"]:
            raise RuntimeError("boom")
        return real(invoice_id, *args)

    monkeypatch.setattr(reminders, "_claim_step", broken_for_first)
    assert remind_at(on("2027-03-17")).sent == 1
    assert reminders_of(second["id"]) == [(7, "sent")] and reminders_of(first["id"]) == []


def test_a_customer_without_an_address_gets_no_fee_and_no_retry(tenant, mailbox):
    from tests.api.invoicing import customer
    set_policy(tenant, [step(7, late_fee=True)], late_fee={"kind": "fixed", "amount": 2500})
    nameless = customer(tenant, email=None)
    invoice = open_invoice(tenant, customer_id=nameless["id"], items=[adhoc("Consulting", 100000)], currency="EUR",
                           due_date=DUE)
    remind_at(on("2027-03-17"))
    remind_at(on("2027-03-18"))
    assert reminders_of(invoice["id"]) == [(7, "failed")] and fees_for(tenant, invoice["id"]) == []


def test_a_waiting_reminder_is_not_sent_once_the_policy_is_off(tenant, mailbox):
    from core.mechanisms import ratelimit
    from tests.limits import spend
    set_policy(tenant, [step(7)])
    invoice = invoice_due(tenant)
    spend(ratelimit.emails_per_account(), str(tenant.account_id), 50)
    assert remind_at(on("2027-03-17")).deferred == 1
    set_policy(tenant, [step(7)], active=False)
    with db.transaction() as session:
        session.exec(delete(RateLimitWindow))
        session.exec(delete(RateLimitLog))
    assert remind_at(on("2027-03-17", 11)).sent == 0
    assert reminders_of(invoice["id"]) == [(7, "skipped")] and mailbox.received == []
