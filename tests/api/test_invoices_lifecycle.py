"""Finalize, pay and void: every transition and refusal of the spec's States table, with history,
webhook outbox rows, numbering and frozen snapshots."""

import re
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import null, update
from sqlmodel import select

from core.base import db
from core.base.clock import today
from core.models import Invoice
from tests.api.invoicing import (
    add_webhook_endpoint,
    adhoc,
    create,
    customer,
    draft,
    finalize,
    history,
    open_invoice,
    outbox_rows,
    pay,
    profile_of,
    stored_events,
    void,
)
from tests.conftest import TEST_ORIGIN


def _set(invoice_id: str, **values) -> None:
    """Change stored columns directly (to make an invoice overdue without waiting)."""
    with db.transaction() as session:
        row = session.exec(select(Invoice).where(Invoice.id == uuid.UUID(invoice_id[3:]))).one()
        for key, value in values.items():
            setattr(row, key, value)
        session.add(row)


def overdue_invoice(tenant) -> dict:
    invoice = open_invoice(tenant)
    _set(invoice["id"], due_date=today() - timedelta(days=1))
    data = tenant.get(f"/invoices/{invoice['id']}").json()["data"]
    assert data["status"] == "overdue"
    return data


def paid_invoice(tenant) -> dict:
    invoice = open_invoice(tenant)
    assert pay(tenant, invoice["id"]).status_code == 200
    return invoice


def void_invoice(tenant) -> dict:
    invoice = open_invoice(tenant)
    assert void(tenant, invoice["id"]).status_code == 200
    return invoice


STATES = {"draft": draft, "open": open_invoice, "overdue": overdue_invoice, "paid": paid_invoice,
          "void": void_invoice}


# --- finalize ------------------------------------------------------------------------------


def test_finalize_opens_the_draft_without_lines_in_the_response(tenant):
    invoice = draft(tenant, items=[adhoc(unit_amount=2500)])
    response = finalize(tenant, invoice["id"])
    assert response.status_code == 200
    data = response.json()["data"]
    assert "lines" not in data
    assert data["status"] == "open" and data["number"] == "INV-0001"
    assert data["finalized_at"] is not None and data["amount_due"] == 2500
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", data["public_url_token"])


def test_finalize_gives_the_public_links_on_the_service_origin(tenant):
    data = finalize(tenant, draft(tenant, items=[adhoc()])["id"]).json()["data"]
    assert data["public_url"] == f"{TEST_ORIGIN}/i/{data['public_url_token']}"
    assert data["public_pdf_url"] == f"{TEST_ORIGIN}/i/{data['public_url_token']}/pdf"
    assert tenant.client.get(data["public_url"].removeprefix(TEST_ORIGIN)).status_code == 200
    assert tenant.client.get(data["public_pdf_url"].removeprefix(TEST_ORIGIN)).headers["content-type"] == "application/pdf"


def test_numbers_are_consecutive_per_account(tenant, other_tenant):
    numbers = [open_invoice(tenant)["number"] for _ in range(3)]
    assert numbers == ["INV-0001", "INV-0002", "INV-0003"]
    assert open_invoice(other_tenant)["number"] == "INV-0001"


def test_void_keeps_the_number_and_it_is_never_reused(tenant):
    first = open_invoice(tenant)
    void(tenant, first["id"])
    assert tenant.get(f"/invoices/{first['id']}").json()["data"]["number"] == "INV-0001"
    assert open_invoice(tenant)["number"] == "INV-0002"


def test_deleted_drafts_take_no_number(tenant):
    doomed = draft(tenant)
    tenant.delete(f"/invoices/{doomed['id']}")
    assert open_invoice(tenant)["number"] == "INV-0001"


def test_a_refused_finalize_takes_no_number(tenant):
    empty = draft(tenant, items=[])
    assert finalize(tenant, empty["id"]).status_code == 422
    assert open_invoice(tenant)["number"] == "INV-0001"


def test_the_number_uses_the_business_prefix(tenant_factory):
    from tests.conftest import BUSINESS
    tenant = tenant_factory(business={**BUSINESS, "invoice_prefix": "ACME"})
    assert open_invoice(tenant)["number"] == "ACME-0001"


def test_finalize_without_lines_is_422_at_lines(tenant):
    invoice = draft(tenant, items=[])
    response = finalize(tenant, invoice["id"])
    assert response.status_code == 422
    assert response.json()["errors"] == [
        {"path": "lines", "message": "a draft needs at least one line to be finalized"}]
    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["status"] == "draft"


def test_finalize_requires_an_idempotency_key(tenant):
    invoice = draft(tenant)
    response = tenant.post(f"/invoices/{invoice['id']}/finalize")
    assert response.status_code == 428 and response.json()["code"] == "idempotency_key_required"


def test_finalize_retried_with_the_same_key_replays(tenant):
    invoice = draft(tenant)
    first = tenant.post(f"/invoices/{invoice['id']}/finalize", idem="fin-1")
    second = tenant.post(f"/invoices/{invoice['id']}/finalize", idem="fin-1")
    assert second.status_code == 200 and second.json() == first.json()
    assert second.headers["Idempotent-Replayed"] == "true"


def test_finalize_needs_the_finalize_scope(tenant):
    invoice = draft(tenant)
    writer = tenant.as_key(tenant.key_with(["invoices:write"]))
    response = finalize(writer, invoice["id"])
    assert response.status_code == 403 and "invoices:finalize" in response.json()["detail"]


def test_finalize_freezes_customer_and_issuer(tenant):
    cus = customer(tenant, name="Before", tax_id="T-1")
    invoice = open_invoice(tenant, customer_id=cus["id"])
    business = profile_of(tenant)
    tenant.patch(f"/customers/{cus['id']}", json={"name": "After", "tax_id": "T-2", "address": {"city": "Rome"}})
    from core.billing.business import BusinessInput, set_profile
    from tests.conftest import BUSINESS
    with db.transaction() as session:
        set_profile(session, tenant.account_id, BusinessInput.model_validate({**BUSINESS, "legal_name": "Renamed"}))
    data = tenant.get(f"/invoices/{invoice['id']}").json()["data"]
    assert data["customer_details"]["name"] == "Before" and data["customer_details"]["tax_id"] == "T-1"
    assert data["customer_details"]["address"]["city"] is None
    assert data["issuer"] == business and data["issuer"]["legal_name"] == "Acme Trading Ltd"


def test_finalize_bills_the_amounts_the_draft_shows(tenant):
    from tests.api.invoicing import price
    p = price(tenant, 1000)
    invoice = draft(tenant, items=[{"price": p["id"]}])
    tenant.patch(f"/prices/{p['id']}", json={"unit_amount": 5000})
    assert finalize(tenant, invoice["id"]).json()["data"]["total"] == 1000


def test_finalized_invoice_keeps_its_amount_when_the_price_changes(tenant):
    from tests.api.invoicing import price
    p = price(tenant, 1000)
    invoice = draft(tenant, items=[{"price": p["id"]}])
    finalize(tenant, invoice["id"])
    tenant.patch(f"/prices/{p['id']}", json={"unit_amount": 5000})
    data = tenant.get(f"/invoices/{invoice['id']}").json()["data"]
    assert data["total"] == 1000 and data["lines"]["data"][0]["unit_amount"] == 1000


# --- pay -----------------------------------------------------------------------------------


@pytest.mark.parametrize("state", ["open", "overdue"])
def test_pay_marks_open_and_overdue_invoices_paid(tenant, state):
    invoice = STATES[state](tenant)
    response = pay(tenant, invoice["id"], {"reference": "wire 42"})
    assert response.status_code == 200
    data = response.json()["data"]
    assert "lines" not in data
    assert data["status"] == "paid" and data["amount_due"] == 0 and data["paid_at"] is not None


def test_pay_defaults_paid_at_to_now(tenant):
    invoice = open_invoice(tenant)
    data = pay(tenant, invoice["id"]).json()["data"]
    assert data["paid_at"][:10] == today().isoformat()


@pytest.mark.parametrize("paid_on, paid_at", [
    ("2026-01-15", "2026-01-15T00:00:00.000Z"),
    ("2026-01-15T10:20:30Z", "2026-01-15T10:20:30.000Z"),
    ("2026-01-15T10:20:30.123456+02:00", "2026-01-15T08:20:30.123Z"),
    ("2026-01-15T10:20:30", "2026-01-15T10:20:30.000Z"),
])
def test_pay_accepts_a_date_or_timestamp(tenant, paid_on, paid_at):
    invoice = open_invoice(tenant)
    assert pay(tenant, invoice["id"], {"paid_on": paid_on}).json()["data"]["paid_at"] == paid_at


@pytest.mark.parametrize("body, path", [
    ({"paid_on": "yesterday"}, "paid_on"), ({"paid_on": "2026-13-01"}, "paid_on"), ({"paid_on": 5}, "paid_on"),
    ({"reference": "x" * 201}, "reference"), ({"amount": 5}, "amount"),
])
def test_pay_validation(tenant, body, path):
    invoice = open_invoice(tenant)
    response = pay(tenant, invoice["id"], body)
    assert response.status_code == 422
    assert response.json()["errors"][0]["path"] == path


def test_reference_of_200_characters_is_accepted_and_in_the_paid_event(tenant):
    invoice = open_invoice(tenant)
    assert pay(tenant, invoice["id"], {"reference": "r" * 200}).status_code == 200
    paid = history(tenant, invoice["id"])[0]
    assert paid["type"] == "invoice.paid" and paid["meta"]["reference"] == "r" * 200


def test_pay_requires_an_idempotency_key(tenant):
    invoice = open_invoice(tenant)
    response = tenant.post(f"/invoices/{invoice['id']}/pay", json={})
    assert response.status_code == 428


def test_pay_needs_payments_write(tenant):
    invoice = open_invoice(tenant)
    finalizer = tenant.as_key(tenant.key_with(["invoices:finalize"]))
    response = pay(finalizer, invoice["id"])
    assert response.status_code == 403 and "payments:write" in response.json()["detail"]


@pytest.mark.parametrize("state", ["draft", "paid", "void"])
def test_pay_is_refused_on_draft_paid_and_void(tenant, state):
    invoice = STATES[state](tenant)
    response = pay(tenant, invoice["id"])
    assert response.status_code == 409 and response.json()["code"] == "invalid_state"


# --- void ----------------------------------------------------------------------------------


@pytest.mark.parametrize("state", ["open", "overdue"])
def test_void_cancels_open_and_overdue_invoices(tenant, state):
    invoice = STATES[state](tenant)
    response = void(tenant, invoice["id"], {"reason": "Issued in error"})
    assert response.status_code == 200
    data = response.json()["data"]
    assert "lines" not in data
    assert data["status"] == "void" and data["amount_due"] == 0 and data["voided_at"] is not None
    assert data["void_reason"] == "Issued in error" and data["paid_at"] is None
    assert data["number"] == invoice["number"]


def test_void_without_a_body(tenant):
    invoice = open_invoice(tenant)
    response = tenant.post(f"/invoices/{invoice['id']}/void", idem=True)
    assert response.status_code == 200 and response.json()["data"]["void_reason"] is None


def test_void_requires_an_idempotency_key(tenant):
    invoice = open_invoice(tenant)
    assert tenant.post(f"/invoices/{invoice['id']}/void").status_code == 428


def test_void_needs_invoices_finalize(tenant):
    invoice = open_invoice(tenant)
    payer = tenant.as_key(tenant.key_with(["payments:write"]))
    assert void(payer, invoice["id"]).status_code == 403


@pytest.mark.parametrize("state", ["draft", "paid", "void"])
def test_void_is_refused_on_draft_paid_and_void(tenant, state):
    invoice = STATES[state](tenant)
    response = void(tenant, invoice["id"])
    assert response.status_code == 409 and response.json()["code"] == "invalid_state"


# --- finalized invoices are immutable ------------------------------------------------------


@pytest.mark.parametrize("state", ["open", "overdue", "paid", "void"])
def test_finalized_invoices_refuse_every_draft_operation(tenant, state):
    invoice = STATES[state](tenant)
    line_id = tenant.get(f"/invoices/{invoice['id']}").json()["data"]["lines"]["data"][0]["id"]
    refusals = [
        tenant.patch(f"/invoices/{invoice['id']}", json={"footer": "x"}),
        tenant.post("/invoice-items", json=adhoc(invoice=invoice["id"]), idem=True),
        tenant.delete(f"/invoice-items/{line_id}"),
        tenant.delete(f"/invoices/{invoice['id']}"),
        finalize(tenant, invoice["id"]),
    ]
    for response in refusals:
        assert response.status_code == 409, response.text
        assert response.json()["code"] == "invalid_state"


# --- overdue -------------------------------------------------------------------------------


def test_overdue_is_computed_at_read_time(tenant):
    invoice = open_invoice(tenant)
    _set(invoice["id"], due_date=today())
    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["status"] == "open"
    _set(invoice["id"], due_date=today() - timedelta(days=1))
    data = tenant.get(f"/invoices/{invoice['id']}").json()["data"]
    assert data["status"] == "overdue" and data["amount_due"] == data["total"]


def test_open_invoice_without_due_date_never_becomes_overdue(tenant):
    invoice = open_invoice(tenant, due_date="")
    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["status"] == "open"


def test_paid_invoice_past_due_is_not_overdue(tenant):
    invoice = paid_invoice(tenant)
    _set(invoice["id"], due_date=today() - timedelta(days=3))
    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["status"] == "paid"


# --- history and webhook outbox ------------------------------------------------------------


def test_history_records_each_operation_newest_first_with_meta(tenant):
    invoice = draft(tenant)
    tenant.patch(f"/invoices/{invoice['id']}", json={"footer": "x"})
    tenant.post("/invoice-items", json=adhoc(invoice=invoice["id"]), idem=True)
    finalize(tenant, invoice["id"])
    pay(tenant, invoice["id"], {"reference": "REF-1"})
    events = history(tenant, invoice["id"])
    assert [e["type"] for e in events] == ["invoice.paid", "payment.recorded", "invoice.finalized",
                                           "invoice.updated", "invoice.updated", "invoice.created"]
    for event in events:
        assert set(event) == {"id", "type", "meta", "created_at"}
        assert event["meta"]["actor"] == "api_key"
        assert event["meta"]["api_key_id"] == str(tenant.key_id)
        assert event["meta"]["request_id"].startswith("req_")
    assert events[0]["meta"]["reference"] == "REF-1"


def test_event_meta_carries_the_callers_request_id(tenant):
    cus = customer(tenant)
    tenant.post("/invoices", json={"customer": cus["id"]}, idem=True, headers={"X-Request-Id": "my-request-7"})
    [event] = stored_events(tenant.account_id)
    assert event.meta["request_id"] == "my-request-7"


def test_void_records_voided(tenant):
    invoice = open_invoice(tenant)
    void(tenant, invoice["id"], {"reason": "dup"})
    assert history(tenant, invoice["id"])[0]["type"] == "invoice.voided"


def test_event_payload_is_the_invoice_as_listed_without_lines(tenant):
    invoice = open_invoice(tenant)
    listed = tenant.get("/invoices").json()["data"][0]
    finalized = [e for e in stored_events(tenant.account_id) if e.type == "invoice.finalized"][0]
    assert finalized.payload["id"] == str(finalized.id)
    assert finalized.payload["type"] == "invoice.finalized"
    assert finalized.payload["created_at"] == history(tenant, invoice["id"])[0]["created_at"]
    assert finalized.payload["data"]["object"] == listed
    assert "lines" not in finalized.payload["data"]["object"]


def test_events_list_paginates_and_rejects_bad_cursors(tenant):
    invoice = draft(tenant)
    for n in range(4):
        tenant.patch(f"/invoices/{invoice['id']}", json={"footer": str(n)})
    first = tenant.get(f"/invoices/{invoice['id']}/events", params={"limit": 2}).json()
    second = tenant.get(f"/invoices/{invoice['id']}/events", params={"limit": 2, "cursor": first["next_cursor"]}).json()
    third = tenant.get(f"/invoices/{invoice['id']}/events", params={"limit": 2, "cursor": second["next_cursor"]}).json()
    assert len(first["data"]) == len(second["data"]) == 2 and len(third["data"]) == 1
    assert third["next_cursor"] is None
    assert [e["type"] for e in third["data"]] == ["invoice.created"]
    bad = tenant.get(f"/invoices/{invoice['id']}/events", params={"cursor": "garbage"})
    assert bad.status_code == 422 and bad.json()["errors"][0]["path"] == "cursor"
    other = draft(tenant)
    foreign = tenant.get(f"/invoices/{other['id']}/events", params={"cursor": first["next_cursor"]})
    assert foreign.status_code == 422


def test_events_of_unknown_invoice_is_404(tenant):
    assert tenant.get("/invoices/in_nope/events").status_code == 404


def test_no_outbox_rows_without_webhook_endpoints(tenant):
    paid_invoice(tenant)
    assert len(stored_events(tenant.account_id)) == 4  # created, finalized, payment.recorded, paid
    assert outbox_rows(tenant.account_id) == []


def test_every_event_writes_an_outbox_row_per_subscribed_endpoint(tenant):
    everything = add_webhook_endpoint(tenant.account_id)
    paid_only = add_webhook_endpoint(tenant.account_id, events=["invoice.paid"])
    invoice = draft(tenant)
    tenant.patch(f"/invoices/{invoice['id']}", json={"footer": "x"})
    finalize(tenant, invoice["id"])
    pay(tenant, invoice["id"])
    other = open_invoice(tenant)
    void(tenant, other["id"])
    rows = outbox_rows(tenant.account_id)
    assert [kind for kind, endpoint in rows if endpoint == everything] == [
        "invoice.created", "invoice.updated", "invoice.finalized", "payment.recorded", "invoice.paid",
        "invoice.created", "invoice.finalized", "invoice.voided"]
    assert [kind for kind, endpoint in rows if endpoint == paid_only] == ["invoice.paid"]


def test_a_refused_operation_writes_no_event_and_no_outbox_row(tenant):
    add_webhook_endpoint(tenant.account_id)
    invoice = draft(tenant, items=[])
    finalize(tenant, invoice["id"])
    assert [e.type for e in stored_events(tenant.account_id)] == ["invoice.created"]
    assert len(outbox_rows(tenant.account_id)) == 1


# --- accounts without a business profile, public tokens ------------------------------------


def test_without_a_business_profile_currency_is_required_and_finalize_is_refused(tenant_factory):
    tenant = tenant_factory(business=None)
    response = create(tenant)
    assert response.status_code == 422 and response.json()["errors"][0]["path"] == "currency"
    invoice = draft(tenant, currency="EUR")
    assert invoice["issuer"] is None
    refused = finalize(tenant, invoice["id"])
    assert refused.status_code == 409 and refused.json()["code"] == "invalid_state"


def test_public_token_finds_finalized_invoices_only(tenant):
    from core.base.errors import NotFound
    from core.billing import invoices
    invoice = open_invoice(tenant)
    with db.transaction() as session:
        assert invoices.get_by_public_token(session, invoice["public_url_token"]).number == invoice["number"]
        for token in ("", "x" * 65, "unknown-token"):
            with pytest.raises(NotFound):
                invoices.get_by_public_token(session, token)


def test_a_row_read_under_a_lock_is_known_locked_until_its_transaction_ends(tenant):
    from core.base.lookup import locked_rows
    from core.billing import invoices
    created = draft(tenant)
    with db.transaction() as session:
        invoice = invoices.get_invoice(session, tenant.account_id, created["id"], lock=True)
        assert invoice.id in locked_rows(session)
        session.commit()
        assert invoice.id not in locked_rows(session)  # the commit released the lock: a lifecycle step re-reads it


def test_a_lock_read_sees_the_row_as_it_is_now_though_the_session_read_it_before(tenant):
    from core.billing import invoices
    created = draft(tenant)
    with db.transaction() as session:
        before = invoices.get_invoice(session, tenant.account_id, created["id"])
        session.connection().execute(  # past the session's objects, as another writer would change it
            update(Invoice.__table__).where(Invoice.__table__.c.id == before.id).values(description="changed meanwhile"))
        locked = invoices.get_invoice(session, tenant.account_id, created["id"], lock=True)
        assert locked is before and locked.description == "changed meanwhile"


def test_the_subscription_rule_is_one_sql_condition_for_every_writer(tenant):
    from core.models import WebhookEndpoint
    from core.webhooks import outbox
    from tests.conftest import make_tenant
    every = add_webhook_endpoint(tenant.account_id)  # JSON null: every kind, kinds added later too
    listed = add_webhook_endpoint(tenant.account_id, ["invoice.paid", "invoice.created"])
    add_webhook_endpoint(tenant.account_id, ["invoice.paid"])
    add_webhook_endpoint(tenant.account_id, [])  # nothing at all
    add_webhook_endpoint(tenant.account_id, ["invoice.created.extra", "invoice"])  # not the kind itself
    paused = add_webhook_endpoint(tenant.account_id)
    add_webhook_endpoint(make_tenant(None).account_id)  # another account's
    sql_null = add_webhook_endpoint(tenant.account_id)
    with db.transaction() as session:
        session.get(WebhookEndpoint, paused).active = False
        session.connection().execute(update(WebhookEndpoint.__table__).where(  # SQL NULL, not JSON null
            WebhookEndpoint.__table__.c.id == sql_null).values(events=null()))
    with db.transaction() as session:
        chosen = set(session.connection().execute(outbox.SUBSCRIBED, {
            "account_id": tenant.account_id, "kind": "invoice.created"}).scalars())
    assert chosen == {every, listed, sql_null}


def test_a_lock_taken_in_a_savepoint_rolled_back_is_forgotten(tenant):
    from core.base.lookup import locked_rows
    from core.billing import invoices
    created = draft(tenant)
    with db.transaction() as session:
        savepoint = session.begin_nested()
        invoice = invoices.get_invoice(session, tenant.account_id, created["id"], lock=True)
        savepoint.rollback()  # the row's lock with it, on PostgreSQL
        assert invoice.id not in locked_rows(session)
