"""POST /invoices and POST /invoices/{id}/finalize on the one path, both databases: any draft
(hypothesis) reads back as it was answered, its stored reply and JSON columns as written; the order
of checks (401 before counting, 429 before claiming); refusals kept under the key; the claim lost or
a fault after it; numbers without a gap, also for two finalizations at once."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import bindparam, select, text

from core.base import db, ids
from core.base.clock import now, today
from core.billing import invoices
from core.mechanisms import idempotency
from core.models import IdempotencyRecord, Invoice, InvoiceEvent, InvoiceLine, WebhookDelivery, WebhookEndpoint
from operations import pipeline
from tests import hostile
from tests.api.invoicing import add_webhook_endpoint, adhoc, customer, outbox_rows, price, stored_events
from tests.conftest import make_tenant

texts = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30).filter(str.strip)
items = st.fixed_dictionaries({
    "description": texts,
    "unit_amount": st.integers(min_value=0, max_value=10**9),
}, optional={
    "quantity": st.decimals(min_value=Decimal("0.000001"), max_value=Decimal(10**4), places=6).map(str),
    "discount_percent": st.decimals(min_value=0, max_value=100, places=2).map(str),
    "tax_rate": st.sampled_from(["0", "7", "19", "20", "5.5"]),
    "unit": st.sampled_from(["NOS", "HRS", "DAY", "KGS"]),
})
bodies = st.fixed_dictionaries({"items": st.lists(items, min_size=1, max_size=5)}, optional={
    "currency": st.sampled_from(["USD", "EUR", "JPY", "BHD"]),
    "description": texts, "footer": texts, "buyer_reference": texts, "order_reference": texts,
    "days_until_due": st.integers(min_value=0, max_value=90),
    "issue_date": st.dates(min_value=today() - timedelta(days=400), max_value=today()).map(str),
    "collection_method": st.sampled_from(["send_invoice", "charge_automatically"]),
})
def _claim_in(arguments) -> IdempotencyRecord:
    """The claim among the arguments of a step of either path (PostgreSQL's carry it in `_Claimed`)."""
    return next(getattr(value, "claim", value) for value in arguments
                if isinstance(getattr(value, "claim", value), idempotency.Claim))


def remaining(tenant) -> int:
    return int(tenant.get("/business").headers["ratelimit-remaining"])


def _post(tenant, body: dict, key: str | None = None, **headers):
    return tenant.post("/invoices", json=body, idem=key or uuid.uuid4().hex, headers=headers)


# --- the same answer and the same rows ----------------------------------------------------------


def _answer_shape(data: dict) -> dict:
    """The answer with what differs between two creations (ids, moments) taken out."""
    shape = {key: value for key, value in data.items() if key not in ("id", "created", "updated")}
    shape["lines"] = {"data": [{key: value for key, value in line.items() if key not in ("id", "invoice")}
                               for line in data["lines"]["data"]]}
    return shape


def _rows(invoice_id: str) -> dict:
    """Everything the creation wrote, as stored (JSON columns as their text), without its ids and moments."""
    row_id = ids.parse("invoice", invoice_id)
    with db.get_engine().connect() as connection:
        invoice = connection.execute(select(Invoice.__table__).where(Invoice.__table__.c.id == row_id)).one()._asdict()
        lines = [row._asdict() for row in connection.execute(
            select(InvoiceLine.__table__).where(InvoiceLine.__table__.c.invoice_id == row_id)
            .order_by(InvoiceLine.__table__.c.position))]
        event = connection.execute(select(InvoiceEvent.__table__).where(
            InvoiceEvent.__table__.c.invoice_id == row_id)).one()._asdict()
        texts_ = connection.execute(text(
            "SELECT CAST(e.payload AS TEXT), CAST(e.meta AS TEXT), CAST(i.customer_snapshot AS TEXT) FROM invoice_events e "
            "JOIN invoices i ON i.id = e.invoice_id WHERE e.invoice_id = :id").bindparams(_an_id()), {"id": row_id}).one()
        deliveries = connection.execute(select(WebhookDelivery.__table__.c.endpoint_id, WebhookDelivery.__table__.c.status,
                                               WebhookDelivery.__table__.c.attempts)
                                        .where(WebhookDelivery.__table__.c.event_id == event["id"])).all()
    for name in ("id", "created", "updated"):
        invoice.pop(name)
    for line in lines:
        for name in ("id", "invoice_id", "created"):
            line.pop(name)
    payload = event.pop("payload")
    payload["data"]["object"] = _answer_shape({**payload["data"]["object"], "lines": {"data": []}})
    for name in ("id", "invoice_id", "created_at"):
        event.pop(name)
    event["meta"] = {key: value for key, value in event["meta"].items() if key != "request_id"}
    # The JSON columns' text is written as the ORM writes it (`json.dumps`), whoever writes it.
    payload_text, meta_text, snapshot_text = texts_
    stored_as_the_orm_writes = [text_ == json.dumps(json.loads(text_)) for text_ in (payload_text, meta_text)]
    stored_as_the_orm_writes.append(snapshot_text)  # JSON null, not SQL NULL
    return {"invoice": invoice, "lines": lines, "event": event, "payload": {**payload, "id": None, "created_at": None},
            "deliveries": sorted(map(tuple, deliveries)), "json_texts": stored_as_the_orm_writes}


def _an_id():
    return bindparam("id", type_=Invoice.__table__.c.id.type)


def _stored_reply(tenant, key: str) -> tuple:
    with db.transaction() as session:
        record = session.exec(select(IdempotencyRecord).where(IdempotencyRecord.account_id == tenant.account_id,
                                                              IdempotencyRecord.key == key)).one()[0]
        return record.state, record.response_status, record.response_body, record.response_headers


@settings(max_examples=hostile.EXAMPLES, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(body=bodies, name=texts)
def test_any_draft_reads_back_as_answered_and_is_stored_as_written(tenant, monkeypatch, body, name):
    from config.settings import get_settings
    monkeypatch.setattr(get_settings(), "rate_limit_requests", 10**6)  # many examples, one key
    body = {**body, "customer": customer(tenant, name=name, address={"city": name, "country": "DE"})["id"]}
    key = uuid.uuid4().hex
    created = _post(tenant, body, key)
    assert created.status_code == 201, created.text
    data = created.json()["data"]
    assert tenant.get(f"/invoices/{data['id']}").content == created.content
    rows = _rows(data["id"])
    assert rows["payload"]["data"]["object"] == _answer_shape({**data, "lines": {"data": []}})
    assert rows["json_texts"] == [True, True, "null"]  # as the ORM writes them; no snapshot on a draft (JSON null)
    assert rows["event"]["type"] == "invoice.created" and len(rows["lines"]) == len(body["items"])
    state, status, stored, headers = _stored_reply(tenant, key)
    assert (state, status, stored.encode(), headers) == ("done", 201, created.content, {"content-type": "application/json"})


def test_the_draft_takes_the_business_currency_when_none_is_given(tenant):
    response = _post(tenant, {"customer": customer(tenant)["id"], "items": [adhoc(unit_amount=150)]})
    assert response.status_code == 201
    data = response.json()["data"]
    assert data["currency"] == "USD" and data["amount_in_words"] == "One US dollar and fifty cents"


def test_a_retry_with_the_key_gets_the_same_bytes(tenant):
    body = {"customer": customer(tenant)["id"], "items": [adhoc()]}
    first = _post(tenant, body, "retry-me")
    again = _post(tenant, body, "retry-me")
    assert again.status_code == 201 and again.content == first.content
    assert again.headers["idempotent-replayed"] == "true"


def test_the_key_with_another_body_is_the_pipelines_mismatch_counted_once(tenant):
    buyer = customer(tenant)["id"]
    assert _post(tenant, {"customer": buyer, "items": [adhoc()]}, "once").status_code == 201
    before = remaining(tenant)
    response = _post(tenant, {"customer": buyer, "items": [adhoc(unit_amount=5)]}, "once")
    assert response.status_code == 422 and response.json()["code"] == "idempotency_mismatch"
    assert remaining(tenant) == before - 2  # the request and the /business read
    assert int(response.headers["ratelimit-remaining"]) == before - 1


def test_every_request_is_counted_once(tenant):
    body = {"customer": customer(tenant)["id"], "items": [adhoc()]}
    before = remaining(tenant)
    response = _post(tenant, body)
    assert response.status_code == 201 and int(response.headers["ratelimit-remaining"]) == before - 1


# --- what the pipeline answers -----------------------------------------------------------------


def test_an_unknown_customer_is_the_pipelines_404_kept_under_the_key(tenant):
    unknown = "cus_" + "0" * 32
    first = _post(tenant, {"customer": unknown, "items": [adhoc()]}, "no-such-customer")
    assert first.status_code == 404 and first.json()["code"] == "not_found"
    again = _post(tenant, {"customer": unknown, "items": [adhoc()]}, "no-such-customer")
    assert again.status_code == 404 and again.headers["idempotent-replayed"] == "true"


def test_another_accounts_customer_is_not_found(tenant, other_tenant):
    response = _post(other_tenant, {"customer": customer(tenant)["id"], "items": [adhoc()]})
    assert response.status_code == 404


def test_an_archived_customer_is_the_pipelines_422(tenant):
    buyer = customer(tenant)["id"]
    assert tenant.delete(f"/customers/{buyer}").status_code in (200, 204)
    response = _post(tenant, {"customer": buyer, "items": [adhoc()]})
    assert response.status_code == 422 and response.json()["errors"][0]["path"] == "customer"


def test_no_currency_before_onboarding_is_the_pipelines_422(client):
    newcomer = make_tenant(client, business=None)
    response = _post(newcomer, {"customer": customer(newcomer)["id"], "items": [adhoc()]})
    assert response.status_code == 422 and response.json()["errors"][0]["path"] == "currency"


def test_a_body_the_pipeline_refuses_is_its_422_counted_once(tenant):
    before = remaining(tenant)
    response = _post(tenant, {"customer": customer(tenant)["id"], "items": [{"description": "no amount"}]})
    assert response.status_code == 422 and response.json()["errors"][0]["path"] == "items.0.unit_amount"
    assert remaining(tenant) == before - 3  # the customer, the request and the /business read


def test_no_idempotency_key_is_the_pipelines_428(tenant):
    response = tenant.post("/invoices", json={"customer": customer(tenant)["id"], "items": [adhoc()]})
    assert response.status_code == 428 and response.json()["code"] == "idempotency_key_required"


def test_a_priced_line_is_the_pipelines(tenant):
    catalog = price(tenant)
    response = _post(tenant, {"customer": customer(tenant)["id"], "items": [{"price": catalog["id"]}]})
    assert response.status_code == 201 and response.json()["data"]["lines"]["data"][0]["price"] == catalog["id"]


def test_an_unknown_key_is_refused_before_anything_is_counted(tenant):
    buyer = customer(tenant)["id"]
    before = remaining(tenant)
    wrong = tenant.as_key(tenant.key[:-4] + "zzzz")
    assert _post(wrong, {"customer": buyer, "items": [adhoc()]}).status_code == 401
    assert remaining(tenant) == before - 1  # only the /business read itself


def test_a_missing_scope_is_the_pipelines_403_counted_once(tenant):
    buyer = customer(tenant)["id"]
    reader = tenant.as_key(tenant.key_with(["invoices:read"]))
    response = _post(reader, {"customer": buyer, "items": [adhoc()]})
    assert response.status_code == 403 and response.json()["code"] == "forbidden"
    assert int(response.headers["ratelimit-remaining"]) == int(response.headers["ratelimit-limit"]) - 1


def test_the_limit_refuses_before_the_key_is_claimed(client, monkeypatch):
    from config.settings import get_settings
    monkeypatch.setattr(get_settings(), "rate_limit_requests", 1)
    tenant = make_tenant(client)
    body = {"customer": customer(tenant)["id"], "items": [adhoc()]}  # the one request allowed
    refused = _post(tenant, body, "over-the-limit")
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    with db.transaction() as session:
        assert session.exec(select(IdempotencyRecord).where(IdempotencyRecord.key == "over-the-limit")).first() is None


def test_a_malformed_request_id_is_the_pipelines_422(tenant):
    response = _post(tenant, {"customer": customer(tenant)["id"], "items": [adhoc()]}, **{"X-Request-Id": "x" * 300})
    assert response.status_code == 422 and response.json()["errors"][0]["path"] == "X-Request-Id"


# --- webhooks, history and the claim -------------------------------------------------------------


def test_the_event_is_queued_for_the_endpoints_that_subscribe(tenant):
    every = add_webhook_endpoint(tenant.account_id)  # no list: every kind (stored as JSON null)
    created_only = add_webhook_endpoint(tenant.account_id, ["invoice.created"])
    add_webhook_endpoint(tenant.account_id, ["invoice.paid"])
    paused = add_webhook_endpoint(tenant.account_id)
    with db.transaction() as session:  # as the delivery worker leaves an endpoint that keeps failing
        session.get(WebhookEndpoint, paused).active = False
    invoice_id = _post(tenant, {"customer": customer(tenant)["id"], "items": [adhoc()]}).json()["data"]["id"]
    assert sorted(outbox_rows(tenant.account_id)) == sorted([("invoice.created", every),
                                                             ("invoice.created", created_only)])
    event = stored_events(tenant.account_id)[0]
    assert event.invoice_id == ids.parse("invoice", invoice_id) and event.meta["actor"] == "api_key"


def test_a_claim_taken_over_meanwhile_writes_nothing(tenant, monkeypatch):
    """Between the claim and the write a retry took the key over (the lease lapsed): the write stores
    nothing, as the pipeline's `idempotency.finish`, and the answer is its 409."""
    monkeypatch.setattr(pipeline, "handled", _taken_over(pipeline.handled))
    before = _count(Invoice)
    response = _post(tenant, {"customer": customer(tenant)["id"], "items": [adhoc()]})
    assert response.status_code == 409 and response.json()["code"] == "conflict"
    assert _count(Invoice) == before


def test_a_fault_after_the_claim_releases_it(tenant, monkeypatch):
    async def broken(*_arguments):
        raise RuntimeError("boom")

    monkeypatch.setattr(invoices, "create_invoice", broken)
    body = {"customer": customer(tenant)["id"], "items": [adhoc()]}
    assert _post(tenant, body, "after-a-fault").status_code == 500
    monkeypatch.undo()
    assert _post(tenant, body, "after-a-fault").status_code == 201  # a retry runs again


def _take_over(arguments) -> None:
    """A retry takes over the claim among a step's `arguments` (its lease lapsed)."""
    with db.transaction() as session:
        session.get(IdempotencyRecord, _claim_in(arguments).record_id).claim_token = "someone-else"


def _taken_over(step):
    """`step` (a coroutine function), after a retry took the claim among its arguments over."""
    async def taken_over(*arguments):
        _take_over(arguments)
        return await step(*arguments)
    return taken_over


def _count(model) -> int:
    with db.get_engine().connect() as connection:
        return len(connection.execute(select(model.__table__.c.id)).all())


def test_the_new_draft_reads_back_as_answered(tenant):
    created = _post(tenant, {"customer": customer(tenant)["id"], "items": [adhoc(quantity="1.5")]})
    read = tenant.get(f"/invoices/{created.json()['data']['id']}")
    assert read.json() == created.json()
    assert read.json()["data"]["created"] == read.json()["data"]["updated"]
    assert now() - timedelta(minutes=1) < _created_at(read.json()["data"]["id"]) <= now()


def _created_at(invoice_id: str):
    with db.transaction() as session:
        return session.get(Invoice, ids.parse("invoice", invoice_id)).created


# --- POST /invoices/{id}/finalize ----------------------------------------------------------------


FINALIZED_MOMENTS = ("id", "number", "public_url_token", "public_url", "public_pdf_url", "finalized_at", "created",
                     "updated")


def _finalized_rows(invoice_id: str) -> dict:
    row_id = ids.parse("invoice", invoice_id)
    with db.get_engine().connect() as connection:
        invoice = connection.execute(select(Invoice.__table__).where(Invoice.__table__.c.id == row_id)).one()._asdict()
        event = connection.execute(select(InvoiceEvent.__table__).where(
            InvoiceEvent.__table__.c.invoice_id == row_id, InvoiceEvent.__table__.c.type == "invoice.finalized")
        ).one()._asdict()
        texts_ = connection.execute(text(
            "SELECT CAST(i.customer_snapshot AS TEXT), CAST(i.issuer_snapshot AS TEXT), CAST(e.payload AS TEXT) FROM invoices i "
            "JOIN invoice_events e ON e.invoice_id = i.id AND e.type = 'invoice.finalized' WHERE i.id = :id")
            .bindparams(_an_id()), {"id": row_id}).one()
    assert invoice["finalized_at"] == invoice["updated"] and invoice["status"] == "open"
    assert invoice["number"].startswith("INV-") and len(invoice["public_url_token"]) == 43
    payload = event["payload"]
    assert payload["data"]["e_invoices"]["peppol"].endswith(f"/invoices/{invoice_id}/e-invoice?format=peppol")
    for name in ("id", "number", "public_url_token", "finalized_at", "created", "updated"):
        invoice.pop(name)
    customer_text, issuer_text, payload_text = texts_
    return {"invoice": invoice, "type": event["type"], "meta": {k: v for k, v in event["meta"].items() if k != "request_id"},
            "object": {k: v for k, v in payload["data"]["object"].items() if k not in FINALIZED_MOMENTS},
            "texts": [customer_text, issuer_text, payload_text == json.dumps(json.loads(payload_text))]}


def _finalize(tenant, invoice_id: str, key: str | None = None):
    return tenant.post(f"/invoices/{invoice_id}/finalize", idem=key or uuid.uuid4().hex)


def _drafts(tenant, count: int, **fields) -> list[str]:
    buyer = customer(tenant, address={"city": "Köln", "country": "DE"}, tax_id="DE123")["id"]
    return [_post(tenant, {"customer": buyer, "items": [adhoc(quantity="1.5", tax_rate="19")], **fields}
                  ).json()["data"]["id"] for _ in range(count)]


@pytest.mark.parametrize("fields", [{}, {"days_until_due": 0, "issue_date": "2020-01-01"},
                                    {"description": "Thanks — merci", "footer": "IBAN …", "currency": "JPY"}])
def test_a_draft_is_finalized_with_its_number_frozen_parties_and_event(tenant, fields):
    draft_id = _drafts(tenant, 1, **fields)[0]
    key = uuid.uuid4().hex
    finalized = _finalize(tenant, draft_id, key)
    assert finalized.status_code == 200, finalized.text
    data = finalized.json()["data"]
    assert data["number"] == "INV-0001" and data["public_url"].endswith(data["public_url_token"])
    rows = _finalized_rows(draft_id)
    assert rows["type"] == "invoice.finalized" and rows["meta"]["actor"] == "api_key"
    assert rows["object"] == {k: v for k, v in data.items() if k not in FINALIZED_MOMENTS}
    assert rows["texts"][2] is True  # the event's payload as the ORM writes JSON
    assert json.loads(rows["texts"][0])["address"]["city"] == "Köln"  # the customer frozen
    assert _stored_reply(tenant, key)[:3] == ("done", 200, finalized.text)
    read = tenant.get(f"/invoices/{draft_id}").json()["data"]
    read.pop("lines")  # the answer to finalize shows the invoice without its lines
    assert read == data


def test_numbers_follow_on_with_no_gap(tenant):
    drafts = _drafts(tenant, 4)
    assert [_finalize(tenant, draft_id).json()["data"]["number"] for draft_id in drafts] == [
        "INV-0001", "INV-0002", "INV-0003", "INV-0004"]


def test_a_finalize_retried_with_its_key_gets_the_same_bytes(tenant):
    draft_id = _drafts(tenant, 1)[0]
    first = _finalize(tenant, draft_id, "finalize-once")
    again = _finalize(tenant, draft_id, "finalize-once")
    assert again.status_code == 200 and again.content == first.content
    assert again.headers["idempotent-replayed"] == "true"


def test_an_open_invoice_is_the_pipelines_409_counted_once_and_kept(tenant):
    draft_id = _drafts(tenant, 1)[0]
    assert _finalize(tenant, draft_id).status_code == 200
    before = remaining(tenant)
    refused = _finalize(tenant, draft_id, "too-late")
    assert refused.status_code == 409 and refused.json()["code"] == "invalid_state"
    assert int(refused.headers["ratelimit-remaining"]) == before - 1
    assert _finalize(tenant, draft_id, "too-late").headers["idempotent-replayed"] == "true"


def test_a_draft_without_lines_is_the_pipelines_422(tenant):
    draft_id = _drafts(tenant, 1)[0]
    line = tenant.get(f"/invoices/{draft_id}").json()["data"]["lines"]["data"][0]["id"]
    assert tenant.delete(f"/invoice-items/{line}").status_code == 200
    refused = _finalize(tenant, draft_id)
    assert refused.status_code == 422 and refused.json()["errors"][0]["path"] == "lines"
    assert _finalize(tenant, _drafts(tenant, 1)[0]).json()["data"]["number"] == "INV-0001"  # none taken


def test_no_business_profile_is_the_pipelines_409(client):
    newcomer = make_tenant(client, business=None)
    draft_id = _post(newcomer, {"customer": customer(newcomer)["id"], "currency": "EUR",
                                "items": [adhoc()]}).json()["data"]["id"]
    refused = _finalize(newcomer, draft_id)
    assert refused.status_code == 409 and "business profile" in refused.json()["detail"]


def test_an_unknown_or_foreign_invoice_is_not_found(tenant, other_tenant):
    assert _finalize(tenant, "in_" + "0" * 32).status_code == 404
    assert _finalize(other_tenant, _drafts(tenant, 1)[0]).status_code == 404
    assert _finalize(tenant, "in_not-an-id").status_code == 404


def test_a_key_without_the_finalize_scope_is_the_pipelines_403(tenant):
    writer = tenant.as_key(tenant.key_with(["invoices:read", "invoices:write"]))
    refused = _finalize(writer, _drafts(tenant, 1)[0])
    assert refused.status_code == 403


def test_a_lost_claim_gives_the_number_back(tenant, monkeypatch):
    first, second = _drafts(tenant, 2)
    original = pipeline.handled
    monkeypatch.setattr(pipeline, "handled", _taken_over(original))
    refused = _finalize(tenant, first)
    assert refused.status_code == 409 and refused.json()["code"] == "conflict"
    monkeypatch.setattr(pipeline, "handled", original)
    assert tenant.get(f"/invoices/{first}").json()["data"]["status"] == "draft"
    assert _finalize(tenant, second).json()["data"]["number"] == "INV-0001"


def test_two_finalizations_of_one_draft_at_once_take_one_number(tenant):
    import asyncio
    draft_id = _drafts(tenant, 1)[0]

    from operations.invoices import finalize_invoice
    from operations.pipeline import Invocation, execute
    from rest.app import operations
    from rest.framework import EndpointPresenter
    endpoint = next(operation for operation in operations() if operation.name == "finalize_invoice")

    def invocation(key: str) -> Invocation:
        return Invocation(credential=f"Bearer {tenant.key}", resource="http://testserver/api/v1", request_id="req_both",
                          params={"id": draft_id}, idempotency_key=key,
                          idempotency_scope=("POST", f"/api/v1/invoices/{draft_id}/finalize"))

    async def both():
        from core.base import raw
        try:
            return await asyncio.gather(*(execute(finalize_invoice, invocation(key), EndpointPresenter(endpoint, "req_both"))
                                          for key in ("one", "two")))
        finally:
            await raw.close_postgres_connections()

    outcomes = asyncio.run(both())
    assert sorted(outcome.error.code if outcome.error else "ok" for outcome in outcomes) == ["invalid_state", "ok"]
    answer = next(outcome for outcome in outcomes if outcome.error is None)
    assert json.loads(answer.reply.body)["data"]["number"] == "INV-0001"
    assert _finalize(tenant, _drafts(tenant, 1)[0]).json()["data"]["number"] == "INV-0002"


def test_drafts_are_written_on_connections_that_commit_to_disk():
    """The reads' connections commit asynchronously (a count may be lost in a crash); an invoice is
    written on the durable ones."""
    if db.get_engine().dialect.name != "postgresql":
        pytest.skip("the executor's connections are PostgreSQL's")
    import asyncio

    from core.base import raw

    async def settings() -> list[str]:
        try:
            return [(await raw.postgres_connections(durable=durable).fetchrow(
                "SELECT current_setting('synchronous_commit')", []))[0] for durable in (True, False)]
        finally:
            await raw.close_postgres_connections()
    assert asyncio.run(settings()) == ["on", "off"]


def test_a_dropped_connection_is_a_502_and_the_key_runs_again(tenant, monkeypatch):
    if db.get_engine().dialect.name != "postgresql":
        pytest.skip("asyncpg's dropped connections")

    async def dropped(*_arguments):
        raise ConnectionError("the database went away")

    monkeypatch.setattr(invoices, "create_invoice", dropped)
    body = {"customer": customer(tenant)["id"], "items": [adhoc()]}
    refused = _post(tenant, body, "through-a-restart")
    assert refused.status_code == 502 and refused.json()["code"] == "upstream_failed"
    monkeypatch.undo()
    assert _post(tenant, body, "through-a-restart").status_code == 201  # the claim was given back


# --- the route, with its stack or without it (traces on) -------------------------------------------


def test_each_write_notes_the_access_line_of_its_route(tenant, caplog):
    buyer = customer(tenant)["id"]
    with caplog.at_level("INFO", logger="invoicing.access"):
        created = _post(tenant, {"customer": buyer, "items": [adhoc()]})
        finalized = _finalize(tenant, created.json()["data"]["id"])
    assert (created.status_code, finalized.status_code) == (201, 200)
    lines = [(record.route, record.method, record.status) for record in caplog.records
             if record.name == "invoicing.access"]
    assert lines == [("/api/v1/invoices", "POST", 201), ("/api/v1/invoices/{id}/finalize", "POST", 200)]
    assert created.headers["x-request-id"].startswith("req_")


def test_behind_the_stack_a_replay_is_counted_once(tenant, app, monkeypatch):
    """With traces on the application answers every request through its stack (no direct routing)."""
    monkeypatch.setattr(app, "target", lambda _scope: None)
    body = {"customer": customer(tenant)["id"], "items": [adhoc()]}
    assert _post(tenant, body, "twice").status_code == 201
    before = remaining(tenant)
    again = _post(tenant, body, "twice")
    assert again.status_code == 201 and again.headers["idempotent-replayed"] == "true"
    assert remaining(tenant) == before - 2  # the replay and the /business read itself


def test_a_body_over_the_apis_limit_is_the_413_of_the_stack(tenant):
    response = tenant.post("/invoices", content=b"{" + b" " * (8 * 1048576) + b"}", idem="large",
                           headers={"Content-Type": "application/json"})
    assert response.status_code == 413
