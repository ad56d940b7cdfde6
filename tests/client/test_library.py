"""The Python client library (`clients/python`, `invoicing_client`) against a live server: every
resource (payments, receivables, invoice schedules, payment reminders, members and invitations among
them), pagination, each error class, retries that keep one idempotency key, the async client, and
webhook verification of a real delivery."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import hashlib
import hmac
import io
import json
import time
import uuid
import zipfile
from decimal import Decimal

import httpx
import pytest
from invoicing_client import (
    APIConnectionError,
    AsyncInvoicingClient,
    AuthenticationError,
    ConflictError,
    InvoicingClient,
    InvoicingError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    UpstreamError,
    ValidationError,
    WebhookVerificationError,
    __version__,
    webhooks,
)
from invoicing_client._http import Call
from invoicing_client.models import (
    Business,
    CreditNote,
    CreditNoteLine,
    CreditNotePreview,
    Customer,
    EInvoiceExport,
    EInvoiceExportSkipped,
    Invitation,
    Invoice,
    InvoiceItem,
    InvoiceSchedule,
    LateFee,
    Member,
    Payment,
    Receivables,
    Refund,
    RemindedInvoice,
    ReminderPolicy,
    ReminderStep,
    RemovedMember,
    ScheduleRun,
    SentCreditNote,
    SentInvoice,
)

from tests.conftest import make_tenant, second_business
from tests.e2e.conftest import LiveServers, free_port, wait_for
from tests.members import join

pytestmark = pytest.mark.e2e

LINES = [{"description": "Design", "quantity": 2, "unit_amount": 80000},
         {"description": "Hosting", "quantity": "1.5", "unit_amount": 1000, "tax_rate": 20}]


@pytest.fixture
def api(origin, account):
    with InvoicingClient(api_key=account.key, base_url=origin) as client:
        yield client


def customer_of(api) -> Customer:
    return api.customers.create(name="Globex Corp", email="ap@globex.example")


def test_the_version_is_0x():
    assert __version__.startswith("0.")


# --- every resource -------------------------------------------------------------------------------

def test_customers_are_created_read_changed_listed_archived_and_restored(api):
    created = api.customers.create(name="Globex Corp", email="ap@globex.example", phone="+1 555 0100",
                                   address={"city": "Springfield", "country": "US"})
    assert created.id.startswith("cus_") and created.address.city == "Springfield"
    assert api.customers.retrieve(created.id) == created
    changed = api.customers.update(created.id, email="billing@globex.example", phone=None)  # None clears
    assert (changed.email, changed.phone) == ("billing@globex.example", None)
    assert [c.id for c in api.customers.list(query="globex")] == [created.id]
    assert api.customers.archive(created.id).deleted is True
    assert list(api.customers.list()) == []
    assert api.customers.restore(created.id).deleted is False


def test_products_and_prices(api):
    product = api.products.create(name="Design day", description="Eight hours")
    assert api.products.update(product.id, name="Design days").name == "Design days"
    price = api.prices.create(product=product.id, unit_amount=80000, currency="eur", tax_rate=Decimal("19"))
    assert (price.unit_amount, price.currency, price.tax_rate) == (80000, "EUR", Decimal("19"))
    assert api.prices.retrieve(price.id).product == product.id
    assert api.prices.update(price.id, nickname="Day rate").nickname == "Day rate"
    assert [p.id for p in api.prices.list(product=product.id)] == [price.id]
    assert api.prices.archive(price.id).active is False and api.prices.restore(price.id).active is True
    assert [p.id for p in api.products.list(active=True)] == [product.id]
    assert api.products.archive(product.id).active is False and api.products.restore(product.id).active is True


def test_an_invoice_from_draft_to_paid_with_its_lines_pdf_and_events(api, mailbox):
    customer = customer_of(api)
    preview = api.invoices.preview(customer=customer.id, items=LINES)
    assert preview.id is None and preview.total == 160000 + 1800
    draft = api.invoices.create(customer=customer.id, items=LINES, description="November")
    assert isinstance(draft, Invoice) and draft.status == "draft" and draft.total == preview.total
    assert [line.quantity for line in draft.lines.data] == [Decimal(2), Decimal("1.5")]
    assert api.invoices.update(draft.id, footer="Thank you").footer == "Thank you"

    with_line = api.invoice_items.create(invoice=draft.id, description="Travel", unit_amount=5000)
    added = with_line.lines.data[-1]
    assert isinstance(api.invoice_items.retrieve(added.id), InvoiceItem)
    assert len(list(api.invoice_items.list(invoice=draft.id))) == 3
    assert api.invoice_items.delete(added.id).total == draft.total

    final = api.invoices.finalize(draft.id)
    assert final.status == "open" and final.number
    sent = api.invoices.send(draft.id, message="Thanks for your business")
    assert isinstance(sent, SentInvoice) and sent.emailed_to == "ap@globex.example"
    wait_for(lambda: mailbox[0].received)
    assert api.invoices.pdf(draft.id).startswith(b"%PDF-")
    assert api.invoices.pay(draft.id, paid_on="2026-11-20", reference="BACS 7").status == "paid"
    kinds = [event.type for event in api.invoices.events(draft.id)]
    assert kinds[0] == "invoice.paid" and "invoice.finalized" in kinds and kinds[-1] == "invoice.created"
    assert [i.id for i in api.invoices.list(status="paid")] == [draft.id]


def test_an_e_invoice_in_each_format(api):
    buyer = api.customers.create(name="Northwind Ltd", tax_id="GB987654321", address={"city": "Leeds", "country": "GB"})
    invoice = api.invoices.finalize(api.invoices.create(customer=buyer.id, items=LINES[:1]).id)
    assert api.invoices.e_invoice(invoice.id, format="peppol").startswith(b"<?xml")
    assert api.invoices.e_invoice(invoice.id, format="facturx").startswith(b"%PDF-")
    with pytest.raises(ValidationError) as raised:
        api.invoices.e_invoice(invoice.id, format="xrechnung")
    assert raised.value.errors[0]["path"] == "format"


def test_void_and_delete(api):
    customer = customer_of(api)
    opened = api.invoices.finalize(api.invoices.create(customer=customer.id, items=LINES[:1]).id)
    assert api.invoices.void(opened.id, reason="Issued twice").void_reason == "Issued twice"
    draft = api.invoices.create(customer=customer.id, items=LINES[:1])
    assert api.invoices.delete(draft.id).deleted is True
    with pytest.raises(NotFoundError):
        api.invoices.retrieve(draft.id)


def test_the_business_profile(api):
    business = api.business.retrieve()
    assert business.legal_name and business.credit_note_prefix == "CN"


def test_unknown_fields_of_a_newer_server_are_kept():
    customer = Customer.from_api({"id": "cus_1", "object": "customer", "name": "N", "email": None, "phone": None,
                                  "tax_id": None, "address": {}, "deleted": False, "created": "2026-11-25T10:00:00Z",
                                  "loyalty_tier": "gold"})
    assert customer.loyalty_tier == "gold" and customer.to_dict()["loyalty_tier"] == "gold"


# --- credit notes ---------------------------------------------------------------------------------

def open_invoice(api, customer: str | None = None, items=LINES) -> Invoice:
    """A finalized invoice, with its lines (LINES: 1,600.00 untaxed and 15.00 at 20 %: 1,618.00)."""
    invoice = api.invoices.finalize(api.invoices.create(customer=customer or customer_of(api).id, items=items).id)
    return api.invoices.retrieve(invoice.id)


def test_a_credit_note_previewed_issued_listed_and_voided(api):
    invoice = open_invoice(api)
    design = invoice.lines.data[0]
    asked = {"invoice": invoice.id, "lines": [{"invoice_line": design.id, "quantity": Decimal(1)}],
             "reason": "order_change", "memo": "One day less"}
    preview = api.credit_notes.preview(**asked)
    assert isinstance(preview, CreditNotePreview) and (preview.id, preview.number, preview.created) == (None, None, None)
    assert preview.total == 80000 and preview.lines.data[0].id is None
    assert list(api.credit_notes.list()) == []  # nothing issued

    note = api.credit_notes.create(**asked)
    assert isinstance(note, CreditNote) and note.id.startswith("cn_") and note.number == "CN-0001"
    assert (note.status, note.total, note.credit_amount, note.refund_amount, note.balance_amount, note.refund) == \
        ("issued", preview.total, 80000, 0, 0, None)
    assert (note.invoice, note.invoice_number, note.invoice_issue_date) == (invoice.id, invoice.number, invoice.issue_date)
    assert (note.reason, note.memo, note.customer_details.name) == ("order_change", "One day less", "Globex Corp")
    [line] = note.lines.data
    assert isinstance(line, CreditNoteLine) and line.id.startswith("cnli_")
    assert (line.type, line.invoice_line, line.quantity, line.amount, line.tax_amount) == \
        ("invoice_line", design.id, Decimal(1), 80000, 0)
    assert api.credit_notes.retrieve(note.id).to_dict() == note.to_dict()

    credited = api.invoices.retrieve(invoice.id)
    assert (credited.amount_credited, credited.amount_due, credited.status) == (80000, invoice.total - 80000, "open")
    assert [n.id for n in api.credit_notes.list_for_invoice(invoice.id)] == [note.id]
    assert [n.id for n in api.credit_notes.list(invoice=invoice.id)] == [note.id]
    assert [n.id for n in api.credit_notes.list(customer=invoice.customer)] == [note.id]

    voided = api.credit_notes.void(note.id)
    assert voided.status == "void" and voided.voided_at is not None
    restored = api.invoices.retrieve(invoice.id)
    assert (restored.amount_credited, restored.amount_due) == (0, invoice.total)
    kinds = [event.type for event in api.invoices.events(invoice.id)]
    assert kinds[0] == "credit_note.voided" and "credit_note.created" in kinds
    with pytest.raises(ConflictError) as raised:
        api.credit_notes.void(note.id)
    assert raised.value.code == "invalid_state"


def test_a_whole_invoice_credited_is_paid_and_the_credit_note_sent_and_downloaded(api, mailbox):
    buyer = api.customers.create(name="Northwind Ltd", email="ap@northwind.example", tax_id="GB987654321",
                                 address={"city": "Leeds", "country": "GB"})
    invoice = open_invoice(api, buyer.id)
    note = api.credit_notes.create(invoice=invoice.id)  # no lines: all that remains of the invoice
    assert note.total == invoice.total == note.credit_amount
    assert [line.invoice_line for line in note.lines.data] == [line.id for line in invoice.lines.data]
    settled = api.invoices.retrieve(invoice.id)
    assert (settled.status, settled.amount_due, settled.amount_credited) == ("paid", 0, invoice.total)

    sent = api.credit_notes.send(note.id, message="As agreed")
    assert isinstance(sent, SentCreditNote) and (sent.id, sent.emailed_to) == (note.id, "ap@northwind.example")
    wait_for(lambda: mailbox[0].received)
    assert "credit_note.emailed" in [event.type for event in api.invoices.events(invoice.id)]

    assert api.credit_notes.pdf(note.id).startswith(b"%PDF-")
    peppol = api.credit_notes.e_invoice(note.id)
    assert peppol.startswith(b"<?xml") and b"CreditNote" in peppol and invoice.number.encode() in peppol
    assert api.credit_notes.e_invoice(note.id, format="cii").startswith(b"<?xml")
    assert api.credit_notes.e_invoice(note.id, format="facturx").startswith(b"%PDF-")
    with pytest.raises(ValidationError) as raised:
        api.credit_notes.e_invoice(note.id, format="xrechnung")
    assert raised.value.errors[0]["path"] == "format"


def test_a_paid_invoice_is_refunded_and_its_balance_goes_to_the_next_invoice(api):
    invoice = open_invoice(api)
    api.invoices.pay(invoice.id)
    note = api.credit_notes.create(invoice=invoice.id, refund_amount=100000, refund_reference="SEPA-RET-77",
                                   refunded_on=dt.date(2026, 11, 20), balance_amount=invoice.total - 100000)
    assert note.refund == Refund(reference="SEPA-RET-77", refunded_on=dt.date(2026, 11, 20))
    assert (note.credit_amount, note.balance_amount, note.balance_remaining) == (0, 61800, 61800)
    later = api.invoices.finalize(api.invoices.create(customer=invoice.customer, items=[
        {"description": "Retainer", "unit_amount": 100000}]).id)
    assert (later.balance_applied, later.amount_due, later.status) == (61800, 100000 - 61800, "open")
    assert api.credit_notes.retrieve(note.id).balance_remaining == 0
    with pytest.raises(ConflictError):  # its balance was used: it can no longer be undone
        api.credit_notes.void(note.id)


def test_a_line_of_its_own_and_over_crediting_refused_at_the_field(api):
    invoice = open_invoice(api)
    api.payments.create(invoice=invoice.id, amount=840)  # the balance is refunded money: it must have been paid
    own = api.credit_notes.create(invoice=invoice.id, lines=[{"description": "Goodwill", "amount": 700,
                                                                "tax_rate": Decimal("20")}], balance_amount=840)
    [line] = own.lines.data
    assert (line.type, line.invoice_line, line.unit_amount, line.tax_amount, own.total) == ("custom", None, None, 140, 840)
    with pytest.raises(ValidationError) as raised:
        api.credit_notes.create(invoice=invoice.id, lines=[{"invoice_line": invoice.lines.data[0].id, "quantity": 3}])
    assert [error["path"] for error in raised.value.errors] == ["lines.0.quantity"]
    with pytest.raises(NotFoundError):
        api.credit_notes.retrieve("cn_00000000000000000000000000000000")


def test_credit_notes_page_through_every_page(api):
    invoice = open_invoice(api)
    made = [api.credit_notes.create(invoice=invoice.id, lines=[{"description": f"n{n}", "amount": 1}]).id
            for n in range(3)]
    assert [n.id for n in api.credit_notes.list(limit=2)] == made[::-1]
    assert [len(page.data) for page in api.credit_notes.list(limit=2).pages()] == [2, 1]
    assert [n.id for n in api.credit_notes.list_for_invoice(invoice.id, limit=2)] == made[::-1]
    first = api.credit_notes.list_page(limit=2)
    assert first.has_more and not api.credit_notes.list_page(limit=2, cursor=first.next_cursor).has_more


def test_issuing_and_voiding_carry_an_idempotency_key_and_a_lost_answer_issues_once(api, origin, account):
    invoice = open_invoice(api)
    transport = LosesTheFirstAnswer()
    with InvoicingClient(api_key=account.key, base_url=origin, http_client=httpx.Client(transport=transport)) as client:
        note = client.credit_notes.create(invoice=invoice.id, lines=[{"description": "Goodwill", "amount": 100}])
        client.credit_notes.void(note.id, idempotency_key="void-once")
    assert transport.keys[0] == transport.keys[1] and transport.keys[0] is not None  # the retry of the lost answer
    assert transport.keys[2] == "void-once"
    assert [n.id for n in api.credit_notes.list()] == [note.id]


def test_issuing_needs_the_credit_notes_scope_and_previewing_does_not(origin):
    scoped = make_tenant(None, scopes=["invoices:read", "invoices:write", "invoices:finalize", "clients:write"])
    with InvoicingClient(api_key=scoped.key, base_url=origin) as client:
        invoice = open_invoice(client)
        assert client.credit_notes.preview(invoice=invoice.id).total == invoice.total
        with pytest.raises(PermissionDeniedError) as raised:
            client.credit_notes.create(invoice=invoice.id)
        assert list(client.credit_notes.list()) == []
    assert raised.value.code == "forbidden" and "credit_notes:write" in raised.value.message
    assert (raised.value.required_scope, raised.value.by_role, raised.value.role) == ("credit_notes:write", False, None)


def test_a_refusal_by_the_role_says_so_and_names_it(account, origin):
    with InvoicingClient(api_key=join(account, "viewer").key, base_url=origin) as viewer:
        with pytest.raises(PermissionDeniedError) as raised:
            viewer.customers.create(name="Globex")
    assert (raised.value.required_scope, raised.value.by_role, raised.value.role) == ("clients:write", True, "viewer")


def test_another_accounts_invoice_and_credit_note_are_not_found(api, origin):
    theirs = make_tenant(None)
    with InvoicingClient(api_key=theirs.key, base_url=origin) as other:
        foreign = open_invoice(other)
        note = other.credit_notes.create(invoice=foreign.id)
    with pytest.raises(NotFoundError):
        api.credit_notes.preview(invoice=foreign.id)
    with pytest.raises(NotFoundError):
        api.credit_notes.retrieve(note.id)
    with pytest.raises(NotFoundError):
        api.credit_notes.void(note.id)


# --- payments -------------------------------------------------------------------------------------

def test_payments_recorded_in_part_then_in_full_listed_and_one_reversed(api):
    invoice = open_invoice(api)  # 1,618.00 USD
    first = api.payments.create(invoice=invoice.id, amount=61800, method="bank_transfer", reference="BACS 7",
                                paid_on=dt.date(2026, 11, 20), note="First instalment")
    assert isinstance(first, Payment) and first.id.startswith("py_") and first.object == "payment"
    assert (first.status, first.amount, first.amount_applied, first.balance_amount, first.balance_remaining) == \
        ("recorded", 61800, 61800, 0, 0)
    assert (first.invoice, first.invoice_number, first.customer, first.currency) == \
        (invoice.id, invoice.number, invoice.customer, "USD")
    assert (first.method, first.reference, first.note, first.paid_on) == \
        ("bank_transfer", "BACS 7", "First instalment", dt.date(2026, 11, 20))
    assert first.paid_at == dt.datetime(2026, 11, 20, tzinfo=dt.UTC) and first.reversed_at is None
    part = api.invoices.retrieve(invoice.id)
    assert (part.status, part.amount_paid, part.amount_due) == ("open", 61800, invoice.total - 61800)

    second = api.payments.create(invoice=invoice.id, amount=part.amount_due, currency="USD")
    assert second.method == "other"
    paid = api.invoices.retrieve(invoice.id)
    assert (paid.status, paid.amount_paid, paid.amount_due) == ("paid", invoice.total, 0)
    assert api.payments.retrieve(first.id).to_dict() == first.to_dict()
    assert [p.id for p in api.payments.list()] == [second.id, first.id]
    assert [p.id for p in api.payments.list_for_invoice(invoice.id)] == [second.id, first.id]
    assert [p.id for p in api.payments.list(invoice=invoice.id, limit=1)] == [second.id, first.id]
    assert [p.id for p in api.payments.list(customer=invoice.customer)] == [second.id, first.id]
    page = api.payments.list_page(limit=1)
    assert [p.id for p in page.data] == [second.id] and page.has_more

    reversed_ = api.payments.reverse(second.id, reason="The transfer bounced")
    assert (reversed_.id, reversed_.status, reversed_.reversal_reason) == (second.id, "reversed", "The transfer bounced")
    assert reversed_.reversed_at is not None
    reopened = api.invoices.retrieve(invoice.id)
    assert (reopened.status, reopened.amount_paid, reopened.amount_due, reopened.paid_at) == \
        ("open", 61800, invoice.total - 61800, None)
    kinds = [event.type for event in api.invoices.events(invoice.id)]
    assert kinds[:4] == ["invoice.reopened", "payment.reversed", "invoice.paid", "payment.recorded"]
    assert [p.status for p in api.payments.list_for_invoice(invoice.id)] == ["reversed", "recorded"]
    with pytest.raises(ConflictError) as raised:
        api.payments.reverse(second.id, reason="Again")
    assert raised.value.code == "invalid_state"


def test_more_than_is_due_is_refused_at_amount_or_put_on_the_customers_balance(api):
    invoice = open_invoice(api)
    with pytest.raises(ValidationError) as raised:
        api.payments.create(invoice=invoice.id, amount=invoice.total + 1)
    assert raised.value.status_code == 422 and raised.value.code == "validation"
    assert [error["path"] for error in raised.value.errors] == ["amount"]
    with pytest.raises(ValidationError) as raised:
        api.payments.create(invoice=invoice.id, amount=0)
    assert [error["path"] for error in raised.value.errors] == ["amount"]
    with pytest.raises(ValidationError) as raised:
        api.payments.create(invoice=invoice.id, amount=100, currency="EUR")
    assert [error["path"] for error in raised.value.errors] == ["currency"]
    assert list(api.payments.list()) == []  # nothing recorded

    over = api.payments.create(invoice=invoice.id, amount=invoice.total + 5000, overpayment="balance")
    assert (over.amount_applied, over.balance_amount, over.balance_remaining) == (invoice.total, 5000, 5000)
    assert api.invoices.retrieve(invoice.id).status == "paid"
    later = api.invoices.finalize(api.invoices.create(customer=invoice.customer, items=[
        {"description": "Retainer", "unit_amount": 100000}]).id)
    assert (later.balance_applied, later.amount_paid, later.amount_due) == (5000, 5000, 95000)
    assert api.payments.retrieve(over.id).balance_remaining == 0
    with pytest.raises(ConflictError):  # its excess paid another invoice: it can no longer be undone
        api.payments.reverse(over.id, reason="A mistake")


def test_a_draft_is_not_paid_and_another_accounts_payment_is_not_found(api, origin):
    draft = api.invoices.create(customer=customer_of(api).id, items=LINES[:1])
    with pytest.raises(ConflictError) as raised:
        api.payments.create(invoice=draft.id, amount=100)
    assert raised.value.code == "invalid_state"
    theirs = make_tenant(None)
    with InvoicingClient(api_key=theirs.key, base_url=origin) as other:
        foreign = other.payments.create(invoice=open_invoice(other).id, amount=100)
    for attempt in (lambda: api.payments.retrieve(foreign.id), lambda: api.payments.reverse(foreign.id, reason="x"),
                    lambda: api.payments.create(invoice=foreign.invoice, amount=100),
                    lambda: list(api.payments.list_for_invoice(foreign.invoice))):
        with pytest.raises(NotFoundError):
            attempt()


def test_recording_and_reversing_carry_an_idempotency_key_and_a_lost_answer_records_once(api, origin, account):
    invoice = open_invoice(api)
    transport = LosesTheFirstAnswer()
    with InvoicingClient(api_key=account.key, base_url=origin, http_client=httpx.Client(transport=transport)) as client:
        payment = client.payments.create(invoice=invoice.id, amount=1000)
        client.payments.reverse(payment.id, reason="Bounced", idempotency_key="reverse-once")
        again = client.payments.reverse(payment.id, reason="Bounced", idempotency_key="reverse-once")  # replayed
    assert transport.keys[0] == transport.keys[1] and transport.keys[0] is not None  # the retry of the lost answer
    assert transport.keys[2:] == ["reverse-once", "reverse-once"] and again.status == "reversed"
    assert [p.id for p in api.payments.list()] == [payment.id]
    assert api.invoices.retrieve(invoice.id).amount_paid == 0


def test_recording_needs_the_payments_scope_and_reading_does_not(origin):
    scoped = make_tenant(None, scopes=["invoices:read", "invoices:write", "invoices:finalize", "clients:write"])
    with InvoicingClient(api_key=scoped.key, base_url=origin) as client:
        invoice = open_invoice(client)
        with pytest.raises(PermissionDeniedError) as raised:
            client.payments.create(invoice=invoice.id, amount=100)
        assert list(client.payments.list()) == [] and client.receivables.retrieve().currencies[0].outstanding == \
            invoice.total
    assert raised.value.code == "forbidden" and "payments:write" in raised.value.message


def test_a_payment_event_is_delivered_and_read_as_a_payment(api, hooks):
    endpoint = api.webhook_endpoints.create(url=hooks.url, events=["payment.recorded", "payment.reversed"])
    payment = api.payments.create(invoice=open_invoice(api).id, amount=2500, method="card")
    api.payments.reverse(payment.id, reason="Charge-back")
    delivered = wait_for(lambda: [webhooks.verify(body, headers, endpoint.secret) for headers, body in hooks.received]
                         if len(hooks.received) >= 2 else None)
    assert sorted(event["type"] for event in delivered) == ["payment.recorded", "payment.reversed"]
    objects = {event["type"]: Payment.from_api(event["data"]["object"]) for event in delivered}
    assert objects["payment.recorded"].id == payment.id and objects["payment.recorded"].method == "card"
    assert (objects["payment.reversed"].status, objects["payment.reversed"].reversal_reason) == ("reversed", "Charge-back")


# --- receivables ----------------------------------------------------------------------------------

def owed(api, customer: str, amount: int, days_past_due: int, currency: str = "USD") -> Invoice:
    """An open invoice of `amount` (no tax), due `days_past_due` days before today (UTC)."""
    today = dt.datetime.now(dt.UTC).date()
    due = today - dt.timedelta(days=days_past_due)
    draft = api.invoices.create(customer=customer, currency=currency, issue_date=min(today, due), due_date=due,
                                items=[{"description": "Work", "unit_amount": amount}])
    return api.invoices.finalize(draft.id)


def test_receivables_per_currency_and_customer_by_age(api):
    globex, initech = customer_of(api), api.customers.create(name="Initech")
    owed(api, globex.id, 10000, -5)  # not yet due
    late = owed(api, globex.id, 20000, 10)
    api.payments.create(invoice=late.id, amount=5000)  # 150.00 of it remains
    owed(api, initech.id, 40000, 45)
    owed(api, initech.id, 700, 100, currency="EUR")
    paid = owed(api, initech.id, 99900, 200)
    api.invoices.pay(paid.id)  # owes nothing

    receivables = api.receivables.retrieve()
    assert isinstance(receivables, Receivables) and receivables.as_of == dt.datetime.now(dt.UTC).date()
    assert [row.currency for row in receivables.currencies] == ["EUR", "USD"]
    usd = receivables.currency("usd")
    assert (usd.outstanding, usd.invoices, usd.overdue, usd.overdue_invoices) == (65000, 3, 55000, 2)
    assert [(b.bucket, b.amount, b.invoices) for b in usd.buckets] == [
        ("current", 10000, 1), ("days_1_30", 15000, 1), ("days_31_60", 40000, 1), ("days_61_90", 0, 0),
        ("days_over_90", 0, 0)]
    assert receivables.currency("EUR").bucket("days_over_90").amount == 700 and receivables.currency("JPY") is None
    assert [(row.customer, row.name, row.currency, row.outstanding, row.overdue) for row in receivables.customers] == [
        (initech.id, "Initech", "USD", 40000, 40000), (globex.id, "Globex Corp", "USD", 25000, 15000),
        (initech.id, "Initech", "EUR", 700, 700)]
    assert not receivables.has_more and receivables.next_cursor is None

    first = api.receivables.get(limit=2)
    assert len(first.customers) == 2 and first.has_more and len(first.currencies) == 2  # every currency on every page
    rest = api.receivables.retrieve(limit=2, cursor=first.next_cursor)
    assert [row.currency for row in rest.customers] == ["EUR"] and not rest.has_more
    every = api.receivables.customers(limit=2)
    assert [(row.name, row.currency) for row in every] == [("Initech", "USD"), ("Globex Corp", "USD"), ("Initech", "EUR")]
    assert [len(page.data) for page in api.receivables.customers(limit=2).pages()] == [2, 1]

    eur = api.receivables.retrieve(currency="eur")
    assert [row.currency for row in eur.currencies] == ["EUR"] and [row.customer for row in eur.customers] == [initech.id]
    with pytest.raises(ValidationError) as raised:
        api.receivables.retrieve(currency="ABC")
    assert [error["path"] for error in raised.value.errors] == ["currency"]


RECEIVABLES = {"data": {"object": "receivables", "as_of": "2026-12-20", "currencies": [
    {"currency": "GBP", "outstanding": 281900, "overdue": 233900, "invoices": 3, "overdue_invoices": 2, "buckets": [
        {"bucket": "current", "amount": 48000, "invoices": 1}, {"bucket": "days_1_30", "amount": 100000, "invoices": 1},
        {"bucket": "days_31_60", "amount": 0, "invoices": 0}, {"bucket": "days_61_90", "amount": 0, "invoices": 0},
        {"bucket": "days_over_90", "amount": 133900, "invoices": 1}], "share": 0.98}],
    "customers": [{"customer": "cus_1", "name": "Globex", "currency": "GBP", "outstanding": 233900, "overdue": 233900,
                   "invoices": 2, "overdue_invoices": 2, "buckets": [
                       {"bucket": "days_1_30", "amount": 100000, "invoices": 1},
                       {"bucket": "days_over_90", "amount": 133900, "invoices": 1}]}]},
    "next_cursor": "cur_2"}


def test_receivables_are_parsed_with_the_cursor_of_their_customers():
    http, calls = scripted(httpx.Response(200, json=RECEIVABLES))
    with InvoicingClient(api_key="k", base_url="http://api.test", http_client=http) as client:
        receivables = client.receivables.retrieve(currency="gbp", limit=1)
    assert calls[0].url.path == "/api/v1/receivables" and dict(calls[0].url.params) == {"currency": "gbp", "limit": "1"}
    gbp = receivables.currency("gbp")
    assert (receivables.as_of, gbp.outstanding, gbp.overdue_invoices) == (dt.date(2026, 12, 20), 281900, 2)
    assert gbp.share == 0.98  # a field of a newer server is kept
    [globex] = receivables.customers
    assert globex.bucket("days_over_90").invoices == 1 and globex.bucket("current").amount == 0  # not sent: empty
    with pytest.raises(KeyError):
        globex.bucket("days_1_60")
    assert receivables.has_more and receivables.to_dict() == {**RECEIVABLES["data"], "next_cursor": "cur_2"}


def test_receivables_of_another_shape_are_an_invoicing_error():
    http, _ = scripted(httpx.Response(200, json={"data": {"object": "receivables", "currencies": []}}))
    with InvoicingClient(api_key="k", base_url="http://api.test", http_client=http) as client, \
            pytest.raises(InvoicingError, match="not what the Invoicing API sends"):
        client.receivables.retrieve()


# --- pagination -----------------------------------------------------------------------------------

# --- invoice schedules -------------------------------------------------------------------------------

RETAINER = [{"description": "Retainer", "unit_amount": 250000}]


def first_of_a_later_month(months: int = 2) -> dt.date:
    """The 1st of a month at least a month away: no run of the live worker falls due during a test."""
    today = dt.datetime.now(dt.UTC).date()
    month = today.month - 1 + months
    return dt.date(today.year + month // 12, month % 12 + 1, 1)


def schedule_of(api, customer: str | None = None, **fields) -> InvoiceSchedule:
    arguments = {"items": RETAINER, "currency": "EUR", "interval": "month", "start_date": first_of_a_later_month(),
                 "time_zone": "Europe/Berlin", **fields}
    return api.invoice_schedules.create(customer=customer or customer_of(api).id, **arguments)


def test_a_schedule_is_created_read_paused_resumed_run_now_and_cancelled(api):
    start = first_of_a_later_month()
    who = customer_of(api)
    schedule = api.invoice_schedules.create(
        customer=who.id, items=[*RETAINER, {"description": "Hosting", "quantity": "1.5", "unit_amount": 1000,
                                            "tax_rate": 20}],
        currency="EUR", days_until_due=14, description="Monthly retainer", interval="month", start_date=start,
        count=3, run_at=dt.time(9, 30), time_zone="Europe/Berlin")
    assert isinstance(schedule, InvoiceSchedule) and schedule.id.startswith("sched_")
    assert (schedule.object, schedule.status, schedule.mode, schedule.customer) == \
        ("invoice_schedule", "active", "draft", who.id)
    assert (schedule.recurrence.interval, schedule.recurrence.interval_count, schedule.recurrence.start_date,
            schedule.recurrence.count, schedule.recurrence.run_at) == ("month", 1, start, 3, "09:30")
    assert (schedule.invoice.currency, schedule.invoice.days_until_due, schedule.invoice.description) == \
        ("EUR", 14, "Monthly retainer")
    hosting = schedule.invoice.items[1]
    assert (hosting.quantity, hosting.unit_amount, hosting.tax_rate) == (Decimal("1.5"), 1000, Decimal(20))
    assert schedule.invoice.items[0].discount_percent == Decimal(0)
    assert schedule.summary == f"on the 1st of every month, from {start.isoformat()}, 3 times"
    assert schedule.next_period.start == start and schedule.next_run.date() == start
    assert (schedule.invoices_made, schedule.periods_done, schedule.periods_remaining) == (0, 0, 3)
    assert schedule.created_by.actor == "api_key" and schedule.last_failure is None
    assert api.invoice_schedules.retrieve(schedule.id).to_dict() == schedule.to_dict()
    assert [s.id for s in api.invoice_schedules.list()] == [schedule.id]
    assert [s.id for s in api.invoice_schedules.list(customer=who.id, status="active")] == [schedule.id]

    paused = api.invoice_schedules.pause(schedule.id, reason="Client away")
    assert (paused.status, paused.pause_reason, paused.next_run) == ("paused", "Client away", None)
    assert paused.paused_at is not None
    assert [s.id for s in api.invoice_schedules.list(status="paused")] == [schedule.id]
    assert list(api.invoice_schedules.list(status="active")) == []
    for refused in (lambda: api.invoice_schedules.pause(schedule.id), lambda: api.invoice_schedules.run(schedule.id)):
        with pytest.raises(ConflictError) as raised:
            refused()
        assert raised.value.code == "invalid_state"
    resumed = api.invoice_schedules.resume(schedule.id)
    assert (resumed.status, resumed.next_period.start) == ("active", start) and resumed.next_run is not None

    run = api.invoice_schedules.run(schedule.id)
    assert isinstance(run, ScheduleRun) and run.id.startswith("schrun_") and run.object == "schedule_run"
    assert (run.schedule, run.status, run.period_index, run.period.start, run.email) == \
        (schedule.id, "invoiced", 0, start, None)
    invoice = api.invoices.retrieve(run.invoice)
    assert (invoice.schedule, invoice.period.start, invoice.period.end) == \
        (schedule.id, start, first_of_a_later_month(3) - dt.timedelta(days=1))
    assert (invoice.status, invoice.currency, invoice.customer, invoice.description) == \
        ("draft", "EUR", who.id, "Monthly retainer")
    assert invoice.total == 250000 + 1500 + 300 and invoice.due_date == invoice.issue_date + dt.timedelta(days=14)
    assert [r.id for r in api.invoice_schedules.runs(schedule.id)] == [run.id]
    after = api.invoice_schedules.retrieve(schedule.id)
    assert (after.invoices_made, after.periods_remaining, after.next_period.start) == (1, 2, first_of_a_later_month(3))

    cancelled = api.invoice_schedules.cancel(schedule.id)
    assert (cancelled.status, cancelled.next_run) == ("cancelled", None) and cancelled.cancelled_at is not None
    for refused in (lambda: api.invoice_schedules.cancel(schedule.id),
                    lambda: api.invoice_schedules.resume(schedule.id), lambda: api.invoice_schedules.run(schedule.id)):
        with pytest.raises(ConflictError):
            refused()
    assert api.invoices.retrieve(run.invoice).status == "draft"  # the invoices made stay


def test_the_apis_nested_shape_and_a_weekly_schedule_with_an_end(api):
    start = first_of_a_later_month()
    schedule = api.invoice_schedules.create(
        customer=customer_of(api).id, invoice={"items": RETAINER, "currency": "EUR", "footer": "Net 14"},
        recurrence={"interval": "week", "interval_count": 2, "start_date": start.isoformat(),
                    "end_date": start + dt.timedelta(days=70)},
        mode="finalize", catch_up="latest", max_attempts=5, day_of_month=None, time_zone="UTC")
    assert (schedule.recurrence.interval, schedule.recurrence.interval_count, schedule.recurrence.end_date) == \
        ("week", 2, start + dt.timedelta(days=70))
    assert (schedule.mode, schedule.catch_up, schedule.max_attempts, schedule.invoice.footer) == \
        ("finalize", "latest", 5, "Net 14")
    assert schedule.periods_remaining is None and schedule.summary.startswith(f"on {start.strftime('%A')} every 2 weeks")
    run = api.invoice_schedules.run(schedule.id)
    assert api.invoices.retrieve(run.invoice).status == "open"  # finalize mode: numbered at once


def test_the_last_day_of_the_month_and_lists_page_through_every_page(api):
    who = customer_of(api)
    first = schedule_of(api, who.id, day_of_month="last")
    second = schedule_of(api, who.id, interval="quarter", count=4)
    assert first.recurrence.day_of_month == "last" and "on the last day of every month" in first.summary
    assert second.recurrence.day_of_month is None and "every quarter" in second.summary
    assert [s.id for s in api.invoice_schedules.list(limit=1)] == [second.id, first.id]
    page = api.invoice_schedules.list_page(limit=1)
    assert [s.id for s in page.data] == [second.id] and page.has_more
    runs = [api.invoice_schedules.run(second.id) for _ in range(3)]
    assert [r.period_index for r in api.invoice_schedules.runs(second.id, limit=2)] == [2, 1, 0]
    assert [r.id for r in api.invoice_schedules.runs_page(second.id, limit=2).data] == [runs[2].id, runs[1].id]
    assert api.invoice_schedules.retrieve(second.id).periods_remaining == 1
    api.invoice_schedules.run(second.id)
    assert api.invoice_schedules.retrieve(second.id).status == "completed"
    with pytest.raises(ConflictError):
        api.invoice_schedules.run(second.id)  # no period is left


@pytest.mark.parametrize(("change", "path"), [
    ({"start_date": dt.date(2020, 1, 1)}, "recurrence.start_date"),
    ({"day_of_month": 32}, "recurrence.day_of_month"),
    ({"interval": "fortnight"}, "recurrence.interval"),
    ({"run_at": "25:00"}, "recurrence.run_at"),
    ({"count": 0}, "recurrence.count"),
    ({"time_zone": "Mars/Olympus"}, "time_zone"),
    ({"items": []}, "invoice.items"),
    ({"items": [{"description": "Retainer"}]}, "invoice.items.0.unit_amount"),
    ({"mode": "send"}, "mode"),
    ({"max_attempts": 0}, "max_attempts"),
])
def test_invalid_schedules_are_validation_errors_at_their_fields(api, change, path):
    with pytest.raises(ValidationError) as raised:
        schedule_of(api, **change)
    assert raised.value.status_code == 422 and raised.value.code == "validation"
    paths = [error["path"] for error in raised.value.errors]
    # A field of several types has its failed type after its path (`recurrence.day_of_month.constrained-int`).
    assert any(found == path or found.startswith(path + ".") for found in paths), paths


def test_an_archived_customer_and_another_accounts_schedule(api, origin):
    archived = api.customers.archive(customer_of(api).id)
    with pytest.raises(ValidationError) as raised:
        schedule_of(api, archived.id)
    assert [error["path"] for error in raised.value.errors] == ["customer"]
    theirs = make_tenant(None)
    with InvoicingClient(api_key=theirs.key, base_url=origin) as other:
        foreign = schedule_of(other)
    for attempt in (lambda: api.invoice_schedules.retrieve(foreign.id), lambda: api.invoice_schedules.pause(foreign.id),
                    lambda: api.invoice_schedules.resume(foreign.id), lambda: api.invoice_schedules.cancel(foreign.id),
                    lambda: api.invoice_schedules.run(foreign.id), lambda: list(api.invoice_schedules.runs(foreign.id)),
                    lambda: schedule_of(api, foreign.customer)):
        with pytest.raises(NotFoundError):
            attempt()
    assert list(api.invoice_schedules.list()) == []


def test_a_mode_needs_its_scopes(origin):
    scoped = make_tenant(None, scopes=["invoices:read", "invoices:write", "invoices:finalize", "clients:write"])
    with InvoicingClient(api_key=scoped.key, base_url=origin) as client:
        with pytest.raises(PermissionDeniedError) as raised:
            schedule_of(client, mode="finalize_and_send")
        assert schedule_of(client, mode="finalize").status == "active"
    assert raised.value.code == "forbidden" and "invoices:send" in raised.value.message


def test_creating_and_running_carry_an_idempotency_key_and_a_lost_answer_makes_one(api, origin, account):
    who = customer_of(api)
    transport = LosesTheFirstAnswer()
    with InvoicingClient(api_key=account.key, base_url=origin, http_client=httpx.Client(transport=transport)) as client:
        schedule = schedule_of(client, who.id)
        run = client.invoice_schedules.run(schedule.id, idempotency_key="run-once")
        again = client.invoice_schedules.run(schedule.id, idempotency_key="run-once")  # replayed
    assert transport.keys[0] == transport.keys[1] and transport.keys[0] is not None  # the retry of the lost answer
    assert transport.keys[2:] == ["run-once", "run-once"] and again.id == run.id
    assert [s.id for s in api.invoice_schedules.list()] == [schedule.id]
    assert [r.id for r in api.invoice_schedules.runs(schedule.id)] == [run.id]
    assert [i.id for i in api.invoices.list()] == [run.invoice]


# --- payment reminders -------------------------------------------------------------------------------

def reminder_step(days: int, **fields) -> dict:
    return {"days": days, "subject": f"Step {days}: invoice {{number}}",
            "body": "Hello {customer}, {amount_due} was due on {due_date}. {link}", **fields}


def open_invoice_for(api, email: str) -> Invoice:
    """An open invoice of a customer with an address of its own (the mailbox is the module's)."""
    who = api.customers.create(name="Globex Corp", email=email)
    return api.invoices.finalize(api.invoices.create(customer=who.id, items=LINES[:1]).id)


def reminders_to(mailbox, address: str) -> list:
    return [received.message for received in mailbox[0].received if address in received.rcpt_tos]


def test_the_policy_is_off_with_three_default_steps_until_set(api):
    policy = api.reminders.policy()
    assert isinstance(policy, ReminderPolicy) and policy.object == "reminder_policy"
    assert (policy.active, policy.updated, policy.late_fee, policy.reference_rate) == (False, None, None, None)
    assert [step.days for step in policy.steps] == [-3, 7, 30]
    assert all(isinstance(step, ReminderStep) and step.late_fee is False for step in policy.steps)
    assert "{number}" in policy.steps[1].subject and "{link}" in policy.steps[1].body


def test_a_policy_is_set_read_back_and_turned_off_keeping_its_steps(api):
    policy = api.reminders.set_policy(
        active=True, steps=[ReminderStep(days=-1, subject="Due tomorrow: {number}", body="Hello {customer}. {link}"),
                            reminder_step(14, late_fee=True)],
        late_fee=LateFee(kind="statutory"), reference_rate=Decimal("2.15"))
    assert policy.active is True and isinstance(policy.updated, dt.datetime)
    assert [(step.days, step.late_fee) for step in policy.steps] == [(-1, False), (14, True)]
    assert policy.steps[0].subject == "Due tomorrow: {number}"
    assert (policy.late_fee.kind, policy.late_fee.amount, policy.reference_rate) == ("statutory", None, Decimal("2.15"))
    assert api.reminders.policy().to_dict() == policy.to_dict()

    off = api.reminders.set_active(False)
    assert off.active is False and off.updated >= policy.updated
    assert [s.model_dump() for s in off.steps] == [s.model_dump() for s in policy.steps]
    assert (off.late_fee, off.reference_rate) == (policy.late_fee, Decimal("2.15"))
    assert api.reminders.set_active(True).active is True

    fixed = api.reminders.set_policy(active=True, steps=[reminder_step(7, late_fee=True)],
                                     late_fee={"kind": "fixed", "amount": 2500})
    assert (fixed.late_fee.kind, fixed.late_fee.amount, fixed.reference_rate) == ("fixed", 2500, None)
    emptied = api.reminders.set_policy(active=False, steps=[])  # the whole policy: no steps, no fee
    assert (emptied.steps, emptied.late_fee) == ([], None)


@pytest.mark.parametrize(("change", "path"), [
    ({"steps": [reminder_step(7, body="Pay {foo} now")]}, "steps.0.body"),
    ({"steps": [reminder_step(7, subject="{number.__class__}")]}, "steps.0.subject"),
    ({"steps": [reminder_step(7), reminder_step(7)]}, "steps"),
    ({"steps": [reminder_step(400)]}, "steps.0.days"),
    ({"steps": [reminder_step(7, late_fee=True)]}, "late_fee"),
    ({"steps": [reminder_step(7)], "late_fee": {"kind": "statutory"}}, "reference_rate"),
    ({"steps": [reminder_step(7)], "late_fee": {"kind": "fixed"}}, "late_fee"),
])
def test_an_invalid_policy_is_a_validation_error_at_its_field(api, change, path):
    with pytest.raises(ValidationError) as raised:
        api.reminders.set_policy(active=True, **change)
    assert raised.value.status_code == 422 and raised.value.code == "validation"
    paths = [error["path"] for error in raised.value.errors]
    assert any(found == path or found.startswith(path + ".") for found in paths), paths
    assert api.reminders.policy().updated is None  # nothing was changed


def test_an_unknown_placeholder_names_itself_and_the_known_ones(api):
    with pytest.raises(ValidationError) as raised:
        api.reminders.set_policy(active=False, steps=[reminder_step(7, body="Pay {foo} now")])
    [error] = raised.value.errors
    assert error["path"] == "steps.0.body" and "{foo}" in error["message"] and "{amount_due}" in error["message"]
    assert "steps.0.body" in str(raised.value)


def test_steps_must_be_a_list_before_anything_is_sent(api):
    with pytest.raises(TypeError, match="list of steps"):
        api.reminders.set_policy(active=True, steps=reminder_step(7))


def test_setting_the_policy_needs_the_send_scope_and_turning_it_on_a_verified_address(origin):
    scoped = make_tenant(None, scopes=["invoices:read", "invoices:write"])
    with InvoicingClient(api_key=scoped.key, base_url=origin) as client:
        assert client.reminders.policy().active is False
        with pytest.raises(PermissionDeniedError) as raised:
            client.reminders.set_policy(active=False, steps=[])
    assert raised.value.code == "forbidden" and "invoices:send" in raised.value.message
    unverified = make_tenant(None, verified=False)
    with InvoicingClient(api_key=unverified.key, base_url=origin) as client:
        with pytest.raises(ConflictError) as conflict:
            client.reminders.set_active(True)
        assert client.reminders.set_active(False).active is False  # off is always allowed
    assert conflict.value.code == "invalid_state" and "verif" in conflict.value.message


def test_a_reminder_now_is_emailed_with_the_policys_words(api, mailbox):
    address = f"ap-{uuid.uuid4().hex[:8]}@globex.example"
    invoice = open_invoice_for(api, address)
    reminded = api.invoices.remind(invoice.id, message="Any news on this one?")
    assert isinstance(reminded, RemindedInvoice) and isinstance(reminded, Invoice)
    assert (reminded.id, reminded.status, reminded.emailed_to, reminded.amount_due) == \
        (invoice.id, "open", address, invoice.amount_due)
    [message] = wait_for(lambda: reminders_to(mailbox, address))
    # Due in 30 days: the default step nearest, three days before the due date.
    assert message["Subject"].startswith(f"Invoice {invoice.number} is due on ")
    text = message.get_body(("plain",)).get_content()
    assert text.startswith("Any news on this one?") and invoice.public_url in text
    assert "invoice.reminder_sent" in [event.type for event in api.invoices.events(invoice.id)]
    assert reminded.to_dict()["emailed_to"] == address


def test_a_reminder_carries_an_idempotency_key_and_a_lost_answer_sends_one(api, origin, account, mailbox):
    address = f"ap-{uuid.uuid4().hex[:8]}@globex.example"
    invoice = open_invoice_for(api, address)
    transport = LosesTheFirstAnswer()
    with InvoicingClient(api_key=account.key, base_url=origin, http_client=httpx.Client(transport=transport)) as client:
        reminded = client.invoices.remind(invoice.id)
        once = client.invoices.remind(invoice.id, idempotency_key="remind-once")
        again = client.invoices.remind(invoice.id, idempotency_key="remind-once")  # replayed, not sent again
    assert transport.keys[0] == transport.keys[1] and transport.keys[0] is not None  # the retry of the lost answer
    assert transport.keys[2:] == ["remind-once", "remind-once"]
    assert reminded.emailed_to == once.emailed_to == again.emailed_to == address
    wait_for(lambda: len(reminders_to(mailbox, address)) >= 2)
    time.sleep(0.5)
    assert len(reminders_to(mailbox, address)) == 2  # the lost answer's and remind-once's: no third
    with pytest.raises(InvoicingError) as raised:  # what the library never does: no key at all
        api.request(Call("POST", f"/invoices/{invoice.id}/remind", body={}))
    assert (raised.value.status_code, raised.value.code) == (428, "idempotency_key_required")


def test_only_an_open_invoice_with_something_due_is_reminded(api, mailbox):
    address = f"ap-{uuid.uuid4().hex[:8]}@globex.example"
    who = api.customers.create(name="Globex Corp", email=address)
    draft = api.invoices.create(customer=who.id, items=LINES[:1])
    paid = api.invoices.pay(api.invoices.finalize(api.invoices.create(customer=who.id, items=LINES[:1]).id).id)
    for invoice in (draft, paid):
        with pytest.raises(ConflictError) as raised:
            api.invoices.remind(invoice.id)
        assert raised.value.status_code == 409 and raised.value.code == "invalid_state"
    with pytest.raises(NotFoundError):
        api.invoices.remind("in_" + "0" * 32)
    silent = api.customers.create(name="No Address Ltd")
    with pytest.raises(ValidationError) as raised:
        api.invoices.remind(api.invoices.finalize(api.invoices.create(customer=silent.id, items=LINES[:1]).id).id)
    assert [error["path"] for error in raised.value.errors] == ["customer"]
    assert reminders_to(mailbox, address) == []


def test_an_invoices_reminders_are_paused_and_resumed(api, origin):
    invoice = open_invoice_for(api, "ap@globex.example")
    assert invoice.reminders_paused is False and invoice.late_fee_for is None
    paused = api.invoices.pause_reminders(invoice.id)
    assert isinstance(paused, Invoice) and (paused.id, paused.reminders_paused, paused.status) == (invoice.id, True, "open")
    assert api.invoices.retrieve(invoice.id).reminders_paused is True
    assert api.invoices.pause_reminders(invoice.id).reminders_paused is True  # pausing again changes nothing
    assert api.invoices.resume_reminders(invoice.id).reminders_paused is False
    assert api.invoices.retrieve(invoice.id).reminders_paused is False
    theirs = make_tenant(None)
    with InvoicingClient(api_key=theirs.key, base_url=origin) as other:
        for attempt in (lambda: other.invoices.pause_reminders(invoice.id), lambda: other.invoices.remind(invoice.id)):
            with pytest.raises(NotFoundError):
                attempt()


def test_list_pages_through_every_page_newest_first(api):
    made = [api.customers.create(name=f"Customer {n}").id for n in range(7)]
    assert [c.id for c in api.customers.list(limit=3)] == made[::-1]
    assert [len(page.data) for page in api.customers.list(limit=3).pages()] == [3, 3, 1]


def test_one_page_at_a_time(api):
    made = [api.customers.create(name=f"Customer {n}").id for n in range(3)]
    first = api.customers.list_page(limit=2)
    assert first.has_more and [c.id for c in first.data] == made[:0:-1]
    second = api.customers.list_page(limit=2, cursor=first.next_cursor)
    assert [c.id for c in second.data] == made[:1] and not second.has_more


# --- errors ---------------------------------------------------------------------------------------

def test_an_unknown_key_is_an_authentication_error(origin):
    with InvoicingClient(api_key="inv_live_nope", base_url=origin) as client, \
            pytest.raises(AuthenticationError) as raised:
        client.customers.list_page()
    error = raised.value
    assert (error.status_code, error.code) == (401, "unauthorized")
    assert error.request_id.startswith("req_") and "INVOICING_API_KEY" in str(error)


def test_no_key_anywhere_says_where_to_get_one(monkeypatch):
    monkeypatch.delenv("INVOICING_API_KEY", raising=False)
    with pytest.raises(AuthenticationError, match="Settings → API keys"):
        InvoicingClient(base_url="http://127.0.0.1:1")


def test_a_missing_scope_is_permission_denied(origin):
    reader = make_tenant(None, scopes=["clients:read"])
    with InvoicingClient(api_key=reader.key, base_url=origin) as client, pytest.raises(PermissionDeniedError) as raised:
        client.customers.create(name="Globex")
    assert (raised.value.status_code, raised.value.code) == (403, "forbidden")
    assert "clients:write" in raised.value.message


def test_another_accounts_id_is_not_found(api, origin):
    theirs = make_tenant(None)
    with InvoicingClient(api_key=theirs.key, base_url=origin) as other:
        foreign = other.customers.create(name="Theirs")
    with pytest.raises(NotFoundError) as raised:
        api.customers.retrieve(foreign.id)
    assert raised.value.code == "not_found"


def test_the_wrong_state_is_a_conflict(api):
    draft = api.invoices.create(customer=customer_of(api).id, items=LINES[:1])
    with pytest.raises(ConflictError) as raised:
        api.invoices.pay(draft.id)
    assert (raised.value.status_code, raised.value.code) == (409, "invalid_state")


def test_invalid_fields_are_a_validation_error_with_their_paths(api):
    with pytest.raises(ValidationError) as raised:
        api.invoices.create(customer=customer_of(api).id, items=[{"description": "Design", "unit_amount": -5}])
    assert raised.value.status_code == 422
    assert [e["path"] for e in raised.value.errors] == ["items.0.unit_amount"]


def test_a_rate_limit_says_when_to_try_again(test_settings, tmp_path, account):
    servers = LiveServers(test_settings, tmp_path)
    try:
        strict = servers(RATE_LIMIT_REQUESTS="2")
        with InvoicingClient(api_key=account.key, base_url=strict, max_retries=0) as client:
            client.customers.list_page()
            client.customers.list_page()
            with pytest.raises(RateLimitError) as raised:
                client.customers.list_page()
    finally:
        servers.stop_all()
    assert raised.value.code == "rate_limited" and 0 < raised.value.retry_after <= 60


def test_an_unreachable_server_is_a_connection_error():
    with InvoicingClient(api_key="k", base_url=f"http://127.0.0.1:{free_port()}", max_retries=0) as client, \
            pytest.raises(APIConnectionError, match="could not be reached"):
        client.business.retrieve()


# --- retries --------------------------------------------------------------------------------------

class LosesTheFirstAnswer(httpx.HTTPTransport):
    """Sends every request to the server, but loses the answer to the first: as a dropped connection."""

    def __init__(self) -> None:
        super().__init__()
        self.keys: list[str | None] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.keys.append(request.headers.get("Idempotency-Key"))
        response = super().handle_request(request)
        if len(self.keys) == 1:
            response.read()
            raise httpx.ReadError("connection reset", request=request)
        return response


def test_a_lost_answer_is_retried_with_the_same_key_and_makes_one_invoice(origin, account):
    transport = LosesTheFirstAnswer()
    with InvoicingClient(api_key=account.key, base_url=origin, http_client=httpx.Client(transport=transport)) as client:
        customer = client.customers.create(name="Globex")
        invoice = client.invoices.create(customer=customer.id, items=LINES[:1])
        assert [i.id for i in client.invoices.list()] == [invoice.id]
        assert [c.id for c in client.customers.list()] == [customer.id]
    assert transport.keys[0] == transport.keys[1] and transport.keys[0] is not None


def scripted(*answers: httpx.Response):
    """A transport answering in turn; `calls` keeps each request."""
    calls: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return answers[min(len(calls), len(answers)) - 1]
    return httpx.Client(transport=httpx.MockTransport(answer)), calls


def problem(status: int, code: str, **headers: str) -> httpx.Response:
    return httpx.Response(status, headers=headers, json={"status": status, "code": code, "detail": f"{code} here",
                                                        "instance": "req_1"})


CUSTOMER = {"data": {"id": "cus_1", "object": "customer", "name": "N", "address": {}, "deleted": False,
                     "created": "2026-11-25T10:00:00Z"}}


def test_429_is_retried_after_retry_after_with_the_same_key():
    http, calls = scripted(problem(429, "rate_limited", **{"Retry-After": "0"}), httpx.Response(201, json=CUSTOMER))
    with InvoicingClient(api_key="k", base_url="http://api.test", http_client=http) as client:
        assert client.customers.create(name="N").id == "cus_1"
    assert len(calls) == 2 and calls[0].headers["Idempotency-Key"] == calls[1].headers["Idempotency-Key"]


@pytest.mark.parametrize("failure", [httpx.Response(502, text="Bad gateway"), problem(503, "upstream_failed")])
def test_a_gateway_failure_is_retried(failure):
    http, calls = scripted(failure, httpx.Response(200, json=CUSTOMER))
    with InvoicingClient(api_key="k", base_url="http://api.test", http_client=http) as client:
        client.customers.retrieve("cus_1")
    assert len(calls) == 2


def test_after_max_retries_the_upstream_error_is_raised():
    http, calls = scripted(problem(503, "upstream_failed"))
    with InvoicingClient(api_key="k", base_url="http://api.test", http_client=http, max_retries=2) as client, \
            pytest.raises(UpstreamError) as raised:
        client.customers.retrieve("cus_1")
    assert len(calls) == 3 and raised.value.status_code == 503


def test_the_apis_own_502_is_not_retried_but_a_gateways_is():
    http, calls = scripted(problem(502, "upstream_failed"))
    with InvoicingClient(api_key="k", base_url="http://api.test", http_client=http) as client, \
            pytest.raises(UpstreamError):
        client.invoices.send("in_1")
    assert len(calls) == 1  # the server released the key: a retry would e-mail again
    http, calls = scripted(httpx.Response(502, text="Bad gateway"), httpx.Response(200, json=CUSTOMER))
    with InvoicingClient(api_key="k", base_url="http://api.test", http_client=http) as client:
        client.customers.retrieve("cus_1")
    assert len(calls) == 2


def test_an_answer_of_another_shape_is_an_invoicing_error():
    http, _ = scripted(httpx.Response(200, json={"data": {"id": 1}}, headers={"X-Request-Id": "req_9"}))
    with InvoicingClient(api_key="k", base_url="http://api.test", http_client=http) as client, \
            pytest.raises(InvoicingError, match="not what the Invoicing API sends") as raised:
        client.customers.retrieve("cus_1")
    assert raised.value.request_id == "req_9"


def test_a_key_with_a_line_break_is_refused_before_anything_is_sent():
    with pytest.raises(AuthenticationError, match="copy it again"):
        InvoicingClient(api_key="inv_live_x\ny", base_url="http://api.test")


def test_a_request_that_cannot_be_made_is_not_retried():
    calls = []

    def broken(request):
        calls.append(request)
        raise httpx.UnsupportedProtocol("no such scheme", request=request)
    with InvoicingClient(api_key="k", base_url="http://api.test",
                         http_client=httpx.Client(transport=httpx.MockTransport(broken))) as client, \
            pytest.raises(InvoicingError):
        client.customers.retrieve("cus_1")
    assert len(calls) == 1


def test_a_list_is_an_iterator(api):
    made = api.customers.create(name="Globex")
    assert next(api.customers.list()).id == made.id


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 422, 500])
def test_other_errors_are_not_retried(status):
    http, calls = scripted(problem(status, "x"))
    with InvoicingClient(api_key="k", base_url="http://api.test", http_client=http) as client, \
            pytest.raises(Exception):  # noqa: B017 (the class is each status's; tested above)
        client.customers.create(name="N")
    assert len(calls) == 1


def test_the_callers_key_and_client_are_used_and_left_open(origin, account):
    seen: list[httpx.Request] = []
    http = httpx.Client(event_hooks={"request": [seen.append]})
    with InvoicingClient(api_key=account.key, base_url=origin, http_client=http) as client:
        client.customers.create(name="Globex", idempotency_key="my-key-1")
        assert client.last_request_id.startswith("req_")
    assert seen[0].headers["Idempotency-Key"] == "my-key-1" and not http.is_closed
    http.close()


def test_the_environment_gives_the_key_and_the_server(origin, account, monkeypatch):
    monkeypatch.setenv("INVOICING_API_KEY", account.key)
    monkeypatch.setenv("INVOICING_BASE_URL", origin)  # a bare origin means its /api/v1
    with InvoicingClient() as client:
        assert client.base_url == f"{origin}/api/v1" and client.business.retrieve().legal_name


# --- async ------------------------------------------------------------------------------------------

def test_the_async_client_has_the_same_shape(origin, account):
    async def work():
        async with AsyncInvoicingClient(api_key=account.key, base_url=origin) as client:
            made = [(await client.customers.create(name=f"Customer {n}")).id for n in range(3)]
            listed = [c.id async for c in client.customers.list(limit=2)]
            draft = await client.invoices.create(customer=made[0], items=LINES)
            final = await client.invoices.finalize(draft.id)
            document = await client.invoices.pdf(draft.id)
            events = await client.invoices.events(draft.id).to_list()
            with pytest.raises(NotFoundError):
                await client.invoices.retrieve("in_0000")
            return made, listed, final, document, events
    made, listed, final, document, events = asyncio.run(work())
    assert listed == made[::-1] and final.status == "open" and document.startswith(b"%PDF-")
    assert [e.type for e in events][0] == "invoice.finalized"


def test_the_async_client_has_credit_notes(origin, account, mailbox):
    async def work():
        async with AsyncInvoicingClient(api_key=account.key, base_url=origin) as client:
            who = await client.customers.create(name="Globex", email="ap@globex.example", address={"country": "GB"})
            invoice = await client.invoices.finalize((await client.invoices.create(customer=who.id, items=LINES)).id)
            preview = await client.credit_notes.preview(invoice=invoice.id, credit_amount=invoice.total)
            note = await client.credit_notes.create(invoice=invoice.id, lines=[{"description": "Goodwill",
                                                                                "amount": 500}])
            page = await client.credit_notes.list_page(limit=1)
            listed = [n.id async for n in client.credit_notes.list(invoice=invoice.id)]
            of_invoice = await client.credit_notes.list_for_invoice(invoice.id).to_list()
            sent = await client.credit_notes.send(note.id, to="books@globex.example")
            document = await client.credit_notes.pdf(note.id)
            xml = await client.credit_notes.e_invoice(note.id, format="cii")
            voided = await client.credit_notes.void(note.id)
            again = await client.credit_notes.retrieve(note.id)
            return invoice, preview, note, page, listed, of_invoice, sent, document, xml, voided, again
    invoice, preview, note, page, listed, of_invoice, sent, document, xml, voided, again = asyncio.run(work())
    assert preview.id is None and preview.total == invoice.total
    assert [n.id for n in page.data] == listed == [n.id for n in of_invoice] == [note.id]
    assert isinstance(sent, SentCreditNote) and sent.emailed_to == "books@globex.example"
    assert document.startswith(b"%PDF-") and xml.startswith(b"<?xml")
    assert voided.status == again.status == "void"


def test_the_async_client_has_payments_and_receivables(origin, account):
    async def work():
        async with AsyncInvoicingClient(api_key=account.key, base_url=origin) as client:
            who = await client.customers.create(name="Globex")
            invoice = await client.invoices.finalize((await client.invoices.create(customer=who.id, items=LINES)).id)
            payment = await client.payments.create(invoice=invoice.id, amount=1800, paid_on=dt.date(2026, 11, 20))
            listed = [p.id async for p in client.payments.list(invoice=invoice.id)]
            of_invoice = await client.payments.list_for_invoice(invoice.id).to_list()
            page = await client.payments.list_page(limit=1)
            receivables = await client.receivables.retrieve()
            rows = await client.receivables.customers(limit=1).to_list()
            reversed_ = await client.payments.reverse(payment.id, reason="Bounced")
            again = await client.payments.retrieve(payment.id)
            return invoice, payment, listed, of_invoice, page, receivables, rows, reversed_, again
    invoice, payment, listed, of_invoice, page, receivables, rows, reversed_, again = asyncio.run(work())
    assert payment.paid_on == dt.date(2026, 11, 20) and listed == [p.id for p in of_invoice] == [payment.id]
    assert [p.id for p in page.data] == [payment.id]
    assert receivables.currency("USD").outstanding == invoice.total - 1800 and [r.name for r in rows] == ["Globex"]
    assert reversed_.status == again.status == "reversed"


def test_the_async_client_has_invoice_schedules(origin, account):
    async def work():
        async with AsyncInvoicingClient(api_key=account.key, base_url=origin) as client:
            who = await client.customers.create(name="Globex")
            schedule = await client.invoice_schedules.create(customer=who.id, items=RETAINER, interval="month",
                                                             start_date=first_of_a_later_month(), count=2)
            listed = [s.id async for s in client.invoice_schedules.list(customer=who.id)]
            page = await client.invoice_schedules.list_page(limit=1)
            paused = await client.invoice_schedules.pause(schedule.id, reason="Away")
            resumed = await client.invoice_schedules.resume(schedule.id, skip_missed=True)
            run = await client.invoice_schedules.run(schedule.id)
            runs = await client.invoice_schedules.runs(schedule.id).to_list()
            first_page = await client.invoice_schedules.runs_page(schedule.id, limit=1)
            cancelled = await client.invoice_schedules.cancel(schedule.id)
            again = await client.invoice_schedules.retrieve(schedule.id)
            return schedule, listed, page, paused, resumed, run, runs, first_page, cancelled, again
    schedule, listed, page, paused, resumed, run, runs, first_page, cancelled, again = asyncio.run(work())
    assert listed == [s.id for s in page.data] == [schedule.id]
    assert (paused.status, paused.pause_reason, resumed.status) == ("paused", "Away", "active")
    assert run.invoice.startswith("in_") and [r.id for r in runs] == [r.id for r in first_page.data] == [run.id]
    assert cancelled.status == again.status == "cancelled" and again.invoices_made == 1


def test_the_async_client_has_payment_reminders(origin, account, mailbox):
    address = f"ap-{uuid.uuid4().hex[:8]}@globex.example"

    async def work():
        async with AsyncInvoicingClient(api_key=account.key, base_url=origin) as client:
            defaults = await client.reminders.policy()
            policy = await client.reminders.set_policy(active=True, steps=[reminder_step(7, late_fee=True)],
                                                       late_fee={"kind": "fixed", "amount": 2500})
            off = await client.reminders.set_active(False)
            with pytest.raises(ValidationError) as raised:
                await client.reminders.set_policy(active=False, steps=[reminder_step(7, body="{foo}")])
            who = await client.customers.create(name="Globex", email=address)
            invoice = await client.invoices.finalize((await client.invoices.create(customer=who.id, items=LINES[:1])).id)
            reminded = await client.invoices.remind(invoice.id, message="Any news?")
            paused = await client.invoices.pause_reminders(invoice.id)
            resumed = await client.invoices.resume_reminders(invoice.id)
            return defaults, policy, off, raised.value, reminded, paused, resumed
    defaults, policy, off, error, reminded, paused, resumed = asyncio.run(work())
    assert (defaults.active, [s.days for s in defaults.steps]) == (False, [-3, 7, 30])
    assert (policy.active, policy.late_fee.amount, off.active, [s.days for s in off.steps]) == (True, 2500, False, [7])
    assert [e["path"] for e in error.errors] == ["steps.0.body"]
    assert isinstance(reminded, RemindedInvoice) and reminded.emailed_to == address
    assert (paused.reminders_paused, resumed.reminders_paused) == (True, False)
    wait_for(lambda: reminders_to(mailbox, address))


# --- e-invoice exports -----------------------------------------------------------------------------

JUNE = (dt.date(2026, 6, 1), dt.date(2026, 6, 30))


def issued_in_june(api, **address) -> Invoice:
    buyer = api.customers.create(name="Northwind Ltd", tax_id="GB987654321", address=address)
    draft = api.invoices.create(customer=buyer.id, items=LINES[:1], issue_date=dt.date(2026, 6, 15))
    return api.invoices.finalize(draft.id)


def entries(document: bytes) -> list[str]:
    with zipfile.ZipFile(io.BytesIO(document)) as archive:
        return archive.namelist()


def test_a_period_is_exported_retrieved_and_downloaded_as_a_zip(api):
    invoice = issued_in_june(api, city="Leeds", country="GB")
    nowhere = issued_in_june(api)  # no country: EN 16931 refuses it, so it is left out

    export = api.e_invoice_exports.create(period_start=JUNE[0], period_end="2026-06-30", format="cii")

    assert isinstance(export, EInvoiceExport) and export.id.startswith("exp_") and export.object == "e_invoice_export"
    assert (export.format, export.period.start, export.period.end, export.documents) == ("cii", *JUNE, 1)
    assert [(s.number, type(s)) for s in export.skipped] == [(nowhere.number, EInvoiceExportSkipped)]
    assert "BT-55" in export.skipped[0].detail
    assert export.filename == "e-invoices-2026-06-01-2026-06-30-cii.zip" and export.uri.endswith(export.id)
    assert export.expires_at - export.created == dt.timedelta(hours=24)
    assert api.e_invoice_exports.retrieve(export.id).to_dict() == export.to_dict()
    document = api.e_invoice_exports.download(export.id)
    assert len(document) == export.size and entries(document) == [f"{invoice.number}-cii.xml", "manifest.csv"]


def test_an_export_carries_an_idempotency_key_and_a_period_the_wrong_way_round_is_refused(api):
    first = api.e_invoice_exports.create(period_start=JUNE[0], period_end=JUNE[1], idempotency_key="june-once")
    again = api.e_invoice_exports.create(period_start=JUNE[0], period_end=JUNE[1], idempotency_key="june-once")
    assert again.id == first.id and first.format == "peppol" and first.documents == 0
    with pytest.raises(ValidationError) as raised:
        api.e_invoice_exports.create(period_start=JUNE[1], period_end=JUNE[0])
    assert [e["path"] for e in raised.value.errors] == ["period_end"]


def test_an_export_needs_invoices_read_and_another_accounts_is_not_found(api, origin):
    narrow = make_tenant(None, scopes=["clients:read", "products:read"])
    with InvoicingClient(api_key=narrow.key, base_url=origin) as client, pytest.raises(PermissionDeniedError) as raised:
        client.e_invoice_exports.create(period_start=JUNE[0], period_end=JUNE[1])
    assert "invoices:read" in raised.value.message
    with InvoicingClient(api_key=make_tenant(None).key, base_url=origin) as other:
        theirs = other.e_invoice_exports.create(period_start=JUNE[0], period_end=JUNE[1])
    with pytest.raises(NotFoundError):
        api.e_invoice_exports.retrieve(theirs.id)
    with pytest.raises(NotFoundError):
        api.e_invoice_exports.download(theirs.id)


def test_the_async_client_has_e_invoice_exports(origin, account):
    async def work():
        async with AsyncInvoicingClient(api_key=account.key, base_url=origin) as client:
            who = await client.customers.create(name="Northwind Ltd", address={"city": "Leeds", "country": "GB"})
            draft = await client.invoices.create(customer=who.id, items=LINES[:1], issue_date="2026-06-15")
            invoice = await client.invoices.finalize(draft.id)
            export = await client.e_invoice_exports.create(period_start="2026-06-01", period_end="2026-06-30",
                                                           format="facturx")
            again = await client.e_invoice_exports.retrieve(export.id)
            document = await client.e_invoice_exports.download(export.id)
            with pytest.raises(NotFoundError):
                await client.e_invoice_exports.retrieve("exp_00000000000000000000000000000000")
            return invoice, export, again, document
    invoice, export, again, document = asyncio.run(work())
    assert isinstance(export, EInvoiceExport) and again.id == export.id and export.documents == 1
    assert entries(document) == [f"{invoice.number}-facturx.pdf", "manifest.csv"]


# --- members and invitations ---------------------------------------------------------------------------

def member_of(api, email: str) -> Member:
    return next(member for member in api.members.list() if member.email == email)


def test_the_business_says_which_one_the_key_acts_for_and_the_callers_role(api, account, origin):
    business = api.business.retrieve()
    assert (business.object, business.role) == ("business", "owner") and business.account.startswith("acct_")
    second = second_business(None, account)
    with InvoicingClient(api_key=second.key, base_url=origin) as other:
        theirs = other.business.retrieve()
    assert theirs.account != business.account and (theirs.trade_name, theirs.role) == ("Second", "owner")


def test_an_older_servers_business_without_account_or_role_still_parses():
    business = Business.from_api({"id": "bus_1", "legal_name": "Acme Ltd", "trade_name": None, "country_code": "GB",
                                  "currency": "GBP", "tax_id": None, "address": {}, "email": None, "phone": None,
                                  "bank": {}, "invoice_prefix": "INV", "created_at": "2026-11-25T10:00:00Z"})
    assert (business.account, business.role) == (None, None) and business.legal_name == "Acme Ltd"


def test_members_are_listed_oldest_first_with_their_roles(api, account):
    accountant = join(account, "accountant")
    members = api.members.list().to_list()
    assert [(m.email, m.role) for m in members] == [(account.user_email, "owner"), (accountant.user_email, "accountant")]
    assert all(isinstance(m, Member) and m.id.startswith("mem_") and m.object == "member" for m in members)


def test_an_invitation_is_sent_listed_pending_resent_and_revoked(api, mailbox):
    invitation = api.invitations.create(email="jane@example.com", role="accountant")
    assert isinstance(invitation, Invitation) and invitation.id.startswith("invite_")
    assert (invitation.email, invitation.role, invitation.status) == ("jane@example.com", "accountant", "pending")
    assert invitation.accepted_at is None and invitation.revoked_at is None
    assert invitation.expires_at - invitation.sent_at == dt.timedelta(days=14)
    wait_for(lambda: any("jane@example.com" in mail.rcpt_tos for mail in mailbox[0].received))
    assert [(i.id, i.status) for i in api.invitations.list()] == [(invitation.id, "pending")]
    assert api.invitations.resend(invitation.id).sent_at >= invitation.sent_at
    revoked = api.invitations.revoke(invitation.id)
    assert revoked.status == "revoked" and revoked.revoked_at is not None
    assert [(i.id, i.status) for i in api.invitations.list()] == [(invitation.id, "revoked")]


def test_a_members_role_is_changed_then_the_member_removed_with_their_keys(api, account, origin):
    sales = join(account, "sales")
    member = member_of(api, sales.user_email)
    changed = api.members.update(member.id, role="viewer")
    assert (changed.id, changed.role) == (member.id, "viewer")
    with InvoicingClient(api_key=sales.key, base_url=origin) as theirs:
        assert theirs.business.retrieve().role == "viewer"  # on their very next request
        removed = api.members.remove(member.id)
        assert isinstance(removed, RemovedMember) and removed.deleted is True and removed.email == sales.user_email
        with pytest.raises(AuthenticationError):
            theirs.business.retrieve()
    assert [m.email for m in api.members.list()] == [account.user_email]


def test_ownership_is_handed_over_and_the_last_owner_stays(api, account):
    with pytest.raises(PermissionDeniedError) as raised:
        api.members.remove(member_of(api, account.user_email).id)
    assert raised.value.status_code == 403 and "owner" in raised.value.message
    admin = join(account, "admin")
    assert api.members.transfer_ownership(member_of(api, admin.user_email).id).role == "owner"
    assert {m.email: m.role for m in api.members.list()} == {account.user_email: "admin", admin.user_email: "owner"}
    assert api.business.retrieve().role == "admin"


def test_a_viewer_reads_the_members_but_managing_them_is_permission_denied(account, origin):
    viewer = join(account, "viewer")
    with InvoicingClient(api_key=viewer.key, base_url=origin) as client:
        assert client.business.retrieve().role == "viewer"
        assert len(client.members.list().to_list()) == 2
        for attempt in (lambda: client.invitations.create(email="sam@example.com", role="viewer"),
                        lambda: client.invitations.list().to_list(),
                        lambda: client.members.update(member_of(client, viewer.user_email).id, role="admin")):
            with pytest.raises(PermissionDeniedError) as raised:
                attempt()
            assert (raised.value.status_code, raised.value.code) == (403, "forbidden")
            assert "members:manage" in raised.value.message and "viewer" in raised.value.message


def test_an_invitation_carries_an_idempotency_key_and_a_lost_answer_invites_once(api, origin, account):
    transport = LosesTheFirstAnswer()
    with InvoicingClient(api_key=account.key, base_url=origin, http_client=httpx.Client(transport=transport)) as client:
        invitation = client.invitations.create(email="jane@example.com", role="sales")
        client.invitations.revoke(invitation.id, idempotency_key="revoke-once")
    assert transport.keys[0] == transport.keys[1] and transport.keys[0] is not None
    assert transport.keys[2] == "revoke-once"
    assert [(i.id, i.status) for i in api.invitations.list()] == [(invitation.id, "revoked")]


def test_an_unknown_role_is_a_validation_error_at_role(api, account):
    with pytest.raises(ValidationError) as raised:
        api.invitations.create(email="jane@example.com", role="boss")
    assert [e["path"] for e in raised.value.errors] == ["role"]
    with pytest.raises(NotFoundError):
        api.members.update("mem_00000000000000000000000000000000", role="viewer")


def test_the_async_client_has_members_and_invitations(origin, account):
    sales = join(account, "sales")

    async def work():
        async with AsyncInvoicingClient(api_key=account.key, base_url=origin) as client:
            members = await client.members.list().to_list()
            mine = next(m for m in members if m.email == sales.user_email)
            changed = await client.members.update(mine.id, role="accountant")
            invitation = await client.invitations.create(email="jane@example.com", role="viewer")
            listed = await client.invitations.list().to_list()
            revoked = await client.invitations.revoke(invitation.id)
            removed = await client.members.remove(mine.id)
            return members, changed, listed, revoked, removed
    members, changed, listed, revoked, removed = asyncio.run(work())
    assert [m.role for m in members] == ["owner", "sales"] and changed.role == "accountant"
    assert [i.status for i in listed] == ["pending"] and revoked.status == "revoked" and removed.deleted is True


# --- webhooks ---------------------------------------------------------------------------------------

def test_a_real_delivery_verifies_and_a_tampered_one_does_not(api, hooks):
    endpoint = api.webhook_endpoints.create(url=hooks.url, events=["invoice.created"])
    assert endpoint.secret.startswith("whsec_") and [e.id for e in api.webhook_endpoints.list()] == [endpoint.id]
    draft = api.invoices.create(customer=customer_of(api).id, items=LINES[:1])
    headers, body = wait_for(lambda: next(((h, b) for h, b in hooks.received if draft.id.encode() in b), None))
    event = webhooks.verify(body, headers, endpoint.secret)
    assert event["type"] == "invoice.created" and event["data"]["object"]["id"] == draft.id
    with pytest.raises(WebhookVerificationError, match="No signature"):
        webhooks.verify(body.replace(b"invoice.created", b"invoice.paid"), headers, endpoint.secret)
    assert api.webhook_endpoints.delete(endpoint.id).deleted is True


def signed(secret: str, body: bytes, *, timestamp: int | None = None, msg_id: str = "msg_1") -> dict[str, str]:
    sent_at = int(time.time()) if timestamp is None else timestamp
    key = base64.b64decode(secret.removeprefix("whsec_"))
    mac = base64.b64encode(hmac.new(key, f"{msg_id}.{sent_at}.".encode() + body, hashlib.sha256).digest()).decode()
    return {"webhook-id": msg_id, "webhook-timestamp": str(sent_at), "webhook-signature": f"v1,{mac}"}


SECRET = "whsec_" + base64.b64encode(b"k" * 24).decode()
BODY = json.dumps({"id": "evt_1", "type": "invoice.paid", "data": {"object": {}}}).encode()


def test_a_signature_by_the_standard_webhooks_library_verifies():
    from standardwebhooks.webhooks import Webhook
    now = time.time()
    from datetime import UTC, datetime
    signature = Webhook(SECRET).sign("msg_1", datetime.fromtimestamp(now, UTC), BODY.decode())
    headers = {"Webhook-Id": "msg_1", "Webhook-Timestamp": str(int(now)), "Webhook-Signature": signature}
    assert webhooks.verify(BODY, headers, SECRET)["type"] == "invoice.paid"


def test_one_matching_signature_of_several_is_enough_during_rotation():
    headers = signed(SECRET, BODY)
    headers["webhook-signature"] = "v1,AAAA " + headers["webhook-signature"]
    assert webhooks.verify(BODY, headers, SECRET)["id"] == "evt_1"


@pytest.mark.parametrize("change, message", [
    (lambda h: h.pop("webhook-signature"), "webhook-signature header is missing"),
    (lambda h: h.pop("webhook-id"), "webhook-id header is missing"),
    (lambda h: h.update({"webhook-timestamp": "soon"}), "not a Unix time"),
    (lambda h: h.update({"webhook-timestamp": str(int(time.time()) - 301)}), "more than 300 s from now"),
    (lambda h: h.update({"webhook-timestamp": str(int(time.time()) + 301)}), "more than 300 s from now"),
    (lambda h: h.update({"webhook-signature": "v2,abc"}), "No signature"),
    (lambda h: h.update({"webhook-id": "msg_2"}), "No signature"),
])
def test_deliveries_that_do_not_check_out_are_refused(change, message):
    headers = signed(SECRET, BODY)
    change(headers)
    with pytest.raises(WebhookVerificationError, match=message):
        webhooks.verify(BODY, headers, SECRET)


def test_the_tolerance_is_the_callers():
    old = signed(SECRET, BODY, timestamp=int(time.time()) - 3000)
    assert webhooks.verify(BODY, old, SECRET, tolerance=3600)["id"] == "evt_1"


def test_another_secret_does_not_verify():
    with pytest.raises(WebhookVerificationError):
        webhooks.verify(BODY, signed(SECRET, BODY), "whsec_" + base64.b64encode(b"x" * 24).decode())
