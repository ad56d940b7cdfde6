"""Webhook delivery end to end: a real HTTP receiver on loopback, the delivery job, the outbox.

Loopback is reachable only because the test settings list 127.0.0.1 in
INVOICING_UNSAFE_WEBHOOK_ALLOW_HOSTS. Time is controlled through DeliveryOptions.clock, so the
retry schedule runs without sleeping.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from sqlmodel import select
from standardwebhooks.webhooks import Webhook

from core.base import db
from core.base.clock import now, today
from core.base.errors import NotFound
from core.billing import events
from core.models import Customer, Invoice, InvoiceEvent, WebhookDelivery, WebhookEndpoint
from core.outbound import netguard
from core.webhooks import delivery
from core.webhooks import endpoints as webhooks
from core.webhooks.delivery import DeliveryOptions, deliver_due
from service import worker

pytestmark = pytest.mark.e2e

RETRY_DELAYS_SECONDS = [5, 300, 1800, 7200, 18000, 36000, 36000]


# --- a receiver ------------------------------------------------------------------------------


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    base_url: str
    requests: list[Received] = field(default_factory=list)
    status: int = 200
    delay: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)
    active: int = 0  # requests being answered now
    most_active: int = 0

    def url(self, path: str = "/hook") -> str:
        return self.base_url + path

    def ids(self) -> list[str]:
        return [r.headers["webhook-id"] for r in self.requests]


@contextlib.contextmanager
def serving():
    state: dict[str, Receiver] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's naming)
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            rx = state["rx"]
            with rx.lock:
                rx.active += 1
                rx.most_active = max(rx.most_active, rx.active)
            if rx.delay:
                time.sleep(rx.delay)
            with rx.lock:
                rx.active -= 1
                rx.requests.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            self.send_response(rx.status)
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state["rx"] = Receiver(f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state["rx"]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def receiver():
    with serving() as rx:
        yield rx


@pytest.fixture
def hanging_receiver():
    """A receiver that answers only after 3 seconds."""
    with serving() as rx:
        rx.delay = 3.0
        yield rx


# --- helpers ---------------------------------------------------------------------------------


class Clock:
    def __init__(self, start: datetime | None = None) -> None:
        self.value = start or now()

    def __call__(self) -> datetime:
        return self.value

    def advance(self, **delta) -> None:
        self.value += timedelta(**delta)


def options(clock=None, **kw) -> DeliveryOptions:
    return DeliveryOptions(clock=clock or Clock(), mode=kw.pop("mode", "immediate"), **kw)


def register(tenant, url: str, **fields) -> dict:
    response = tenant.post("/webhook-endpoints", json={"url": url, **fields})
    assert response.status_code == 201, response.text
    return response.json()["data"]


def new_invoice(tenant) -> uuid.UUID:
    with db.transaction() as session:
        customer = Customer(account_id=tenant.account_id, name="Jane Doe")
        session.add(customer)
        session.flush()
        invoice = Invoice(account_id=tenant.account_id, customer_id=customer.id, currency="USD", issue_date=today())
        session.add(invoice)
        session.flush()
        return invoice.id


def record_event(invoice_id: uuid.UUID, kind: str) -> str:
    with db.transaction() as session:
        return str(events.record(session, session.get(Invoice, invoice_id), kind, None).id)


def rows(endpoint_id: str | None = None) -> list[WebhookDelivery]:
    with db.transaction() as session:
        query = select(WebhookDelivery)
        if endpoint_id:
            query = query.where(WebhookDelivery.endpoint_id == uuid.UUID(endpoint_id))
        return list(session.exec(query))


def endpoint_row(endpoint_id: str) -> WebhookEndpoint:
    with db.transaction() as session:
        return session.get(WebhookEndpoint, uuid.UUID(endpoint_id))


def verify(secret: str, request: Received) -> dict:
    return Webhook(secret).verify(request.body, request.headers)


def signed_correctly(secret: str, request: Received) -> bool:
    """The signature check without the 5-minute clock tolerance (for attempts at simulated times)."""
    sent_at = datetime.fromtimestamp(int(request.headers["webhook-timestamp"]), UTC)
    expected = Webhook(secret).sign(request.headers["webhook-id"], sent_at, request.body.decode())
    return request.headers["webhook-signature"] == expected


# --- delivery --------------------------------------------------------------------------------


def test_receiver_gets_the_lifecycle_in_order_with_valid_signatures(tenant, receiver):
    endpoint = register(tenant, receiver.url())
    invoice_id = new_invoice(tenant)
    kinds = ["invoice.created", "invoice.updated", "invoice.finalized", "invoice.emailed", "invoice.paid"]
    event_ids = [record_event(invoice_id, kind) for kind in kinds]

    assert deliver_due(options()) == 5

    assert receiver.ids() == event_ids
    for request, kind, event_id in zip(receiver.requests, kinds, event_ids, strict=True):
        assert request.headers["content-type"] == "application/json"
        assert request.headers["webhook-signature"].startswith("v1,")
        payload = verify(endpoint["secret"], request)
        assert payload["id"] == event_id and payload["type"] == kind
        assert payload["data"]["object"]["id"] == f"in_{invoice_id.hex}"
        assert "lines" not in payload["data"]["object"]
    assert {row.status for row in rows()} == {"succeeded"}


def test_an_invoice_lifecycle_through_the_api_arrives_in_order(tenant, receiver):
    from tests.api import invoicing
    endpoint = register(tenant, receiver.url())
    invoice = invoicing.draft(tenant)
    assert invoicing.finalize(tenant, invoice["id"]).status_code == 200
    assert invoicing.pay(tenant, invoice["id"], {"reference": "wire 42"}).status_code == 200

    deliver_due(options())

    payloads = [verify(endpoint["secret"], request) for request in receiver.requests]
    assert [p["type"] for p in payloads] == ["invoice.created", "invoice.finalized", "payment.recorded",
                                             "invoice.paid"]
    assert [p["data"]["object"]["object"] for p in payloads] == ["invoice", "invoice", "payment", "invoice"]
    assert [p["data"]["object"]["status"] for p in payloads] == ["draft", "open", "recorded", "paid"]
    listed = tenant.get("/invoices").json()["data"][0]
    assert payloads[-1]["data"]["object"] == listed  # the list item shape, money in minor units


def test_the_body_is_the_recorded_event_payload(tenant, receiver):
    register(tenant, receiver.url())
    event_id = record_event(new_invoice(tenant), "invoice.created")
    deliver_due(options())
    with db.transaction() as session:
        payload = session.get(InvoiceEvent, uuid.UUID(event_id)).payload
    assert json.loads(receiver.requests[0].body) == payload
    assert set(payload) == {"id", "type", "created_at", "data"}


def test_timestamp_header_is_the_attempt_time_in_unix_seconds(tenant, receiver):
    register(tenant, receiver.url())
    record_event(new_invoice(tenant), "invoice.created")
    clock = Clock()
    deliver_due(options(clock))
    assert receiver.requests[0].headers["webhook-timestamp"] == str(int(clock().timestamp()))


def test_every_endpoint_gets_the_same_event_id_signed_with_its_own_secret(tenant, receiver):
    first = register(tenant, receiver.url("/a"))
    second = register(tenant, receiver.url("/b"))
    event_id = record_event(new_invoice(tenant), "invoice.created")
    deliver_due(options())
    by_path = {r.path: r for r in receiver.requests}
    assert by_path["/a"].headers["webhook-id"] == by_path["/b"].headers["webhook-id"] == event_id
    verify(first["secret"], by_path["/a"])
    verify(second["secret"], by_path["/b"])


def test_an_endpoint_gets_only_the_kinds_it_subscribed_to(tenant, receiver):
    register(tenant, receiver.url(), events=["invoice.paid"])
    invoice_id = new_invoice(tenant)
    record_event(invoice_id, "invoice.created")
    paid = record_event(invoice_id, "invoice.paid")
    deliver_due(options())
    assert receiver.ids() == [paid]


def test_nothing_due_means_no_request(tenant, receiver):
    register(tenant, receiver.url())
    assert deliver_due(options()) == 0
    assert receiver.requests == []


def test_a_delivered_row_is_not_sent_again(tenant, receiver):
    register(tenant, receiver.url())
    record_event(new_invoice(tenant), "invoice.created")
    clock = Clock()
    deliver_due(options(clock))
    clock.advance(days=3)
    assert deliver_due(options(clock)) == 0
    assert len(receiver.requests) == 1


def test_the_delivery_job_is_registered_with_the_worker():
    jobs = {job.name: job for job in worker.default_jobs()}
    assert jobs["webhook-delivery"].function is deliver_due
    assert 1 <= jobs["webhook-delivery"].interval_seconds <= 2


# --- retries -----------------------------------------------------------------------------------


def test_failing_receiver_gets_eight_attempts_on_the_schedule_with_the_same_webhook_id(tenant, receiver):
    endpoint = register(tenant, receiver.url())
    receiver.status = 500
    event_id = record_event(new_invoice(tenant), "invoice.created")
    clock = Clock()
    assert deliver_due(options(clock)) == 1
    for delay in RETRY_DELAYS_SECONDS:
        clock.advance(seconds=delay - 1)
        assert deliver_due(options(clock)) == 0, "retried before it was due"
        clock.advance(seconds=1)
        assert deliver_due(options(clock)) == 1
    assert receiver.ids() == [event_id] * 8
    assert all(signed_correctly(endpoint["secret"], request) for request in receiver.requests)
    assert len({request.headers["webhook-timestamp"] for request in receiver.requests}) == 8
    [row] = rows()
    assert (row.status, row.attempts, row.last_status_code, row.last_error) == ("failed", 8, 500, "HTTP 500")
    clock.advance(days=2)
    assert deliver_due(options(clock)) == 0


def test_a_retry_that_succeeds_ends_the_retries(tenant, receiver):
    register(tenant, receiver.url())
    receiver.status = 503
    record_event(new_invoice(tenant), "invoice.created")
    clock = Clock()
    deliver_due(options(clock))
    receiver.status = 204
    clock.advance(seconds=5)
    deliver_due(options(clock))
    [row] = rows()
    assert (row.status, row.attempts, row.last_status_code, row.last_error) == ("succeeded", 2, 204, None)


def test_the_retry_delay_counts_from_the_end_of_a_slow_attempt(tenant, receiver):
    register(tenant, receiver.url())
    receiver.status, receiver.delay = 500, 0.5
    record_event(new_invoice(tenant), "invoice.created")
    deliver_due(DeliveryOptions(mode="immediate"))  # the real clock
    [row] = rows()
    assert row.next_attempt_at - row.last_attempt_at >= timedelta(seconds=5.4)


@pytest.mark.parametrize("status", [301, 302, 400, 404, 410, 429, 500])
def test_any_status_outside_2xx_is_a_failed_attempt(tenant, receiver, status):
    register(tenant, receiver.url())
    receiver.status = status
    record_event(new_invoice(tenant), "invoice.created")
    deliver_due(options())
    [row] = rows()
    assert (row.status, row.attempts, row.last_status_code) == ("pending", 1, status)


def test_a_receiver_that_does_not_answer_in_time_is_a_failed_attempt(tenant, receiver):
    register(tenant, receiver.url())
    receiver.delay = 1.0
    record_event(new_invoice(tenant), "invoice.created")
    deliver_due(options(timeout=0.3))
    [row] = rows()
    assert row.status == "pending" and row.attempts == 1
    assert row.last_error == "no answer within 0.3 seconds"


def test_an_unreachable_receiver_is_a_failed_attempt(tenant, receiver):
    with ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler) as closed:
        port = closed.server_address[1]  # bound, then closed: nothing listens there
    register(tenant, f"http://127.0.0.1:{port}/hook")
    record_event(new_invoice(tenant), "invoice.created")
    deliver_due(options())
    [row] = rows()
    assert row.attempts == 1 and row.last_error.startswith("request failed: ConnectError")


# --- failure_count and disabling ------------------------------------------------------------------


def test_failure_count_counts_consecutive_failures_and_resets_on_success(tenant, receiver):
    endpoint = register(tenant, receiver.url())
    receiver.status = 500
    record_event(new_invoice(tenant), "invoice.created")
    clock = Clock()
    deliver_due(options(clock))
    assert endpoint_row(endpoint["id"]).failure_count == 1
    clock.advance(seconds=5)
    deliver_due(options(clock))
    assert endpoint_row(endpoint["id"]).failure_count == 2
    receiver.status = 200
    clock.advance(minutes=5)
    deliver_due(options(clock))
    row = endpoint_row(endpoint["id"])
    assert (row.failure_count, row.first_failure_at, row.active) == (0, None, True)
    assert tenant.get("/webhook-endpoints").json()["data"][0]["failure_count"] == 0


def fail_for(tenant, receiver, endpoint, span: timedelta) -> Clock:
    """A failure now, and another one `span` later (on a fresh event)."""
    receiver.status = 500
    invoice_id = new_invoice(tenant)
    record_event(invoice_id, "invoice.created")
    clock = Clock()
    deliver_due(options(clock))
    record_event(invoice_id, "invoice.updated")
    clock.advance(seconds=span.total_seconds())
    deliver_due(options(clock))
    return clock


def test_five_days_of_failures_disable_the_endpoint(tenant, receiver):
    endpoint = register(tenant, receiver.url())
    clock = fail_for(tenant, receiver, endpoint, timedelta(days=5))
    row = endpoint_row(endpoint["id"])
    assert row.active is False and row.disabled_at == clock()
    listed = tenant.get("/webhook-endpoints").json()["data"][0]
    assert listed["active"] is False and listed["disabled_at"] is not None
    assert {r.status for r in rows()} == {"failed"}


def test_failures_for_less_than_five_days_keep_the_endpoint_active(tenant, receiver):
    endpoint = register(tenant, receiver.url())
    fail_for(tenant, receiver, endpoint, timedelta(days=5) - timedelta(seconds=1))
    assert endpoint_row(endpoint["id"]).active is True


def test_a_disabled_endpoint_gets_no_further_deliveries(tenant, receiver):
    endpoint = register(tenant, receiver.url())
    clock = fail_for(tenant, receiver, endpoint, timedelta(days=5))
    attempts = len(receiver.requests)
    receiver.status = 200
    record_event(new_invoice(tenant), "invoice.created")
    clock.advance(days=2)
    assert deliver_due(options(clock)) == 0
    assert len(receiver.requests) == attempts
    assert all(r.status == "failed" for r in rows(endpoint["id"]))


# --- address checks at delivery ----------------------------------------------------------------


def test_dns_rebinding_to_loopback_at_delivery_is_refused(tenant, receiver, monkeypatch):
    # Public when registered...
    monkeypatch.setattr(netguard, "default_resolver", lambda host, port: ["93.184.216.34"])
    register(tenant, "https://rebind.example.com/hook")
    record_event(new_invoice(tenant), "invoice.created")
    # ...loopback when delivered.
    deliver_due(options(resolver=lambda host, port: ["127.0.0.1"]))
    [row] = rows()
    assert (row.status, row.attempts, row.last_status_code) == ("pending", 1, None)
    assert row.last_error.startswith("address refused:")
    assert "loopback" in row.last_error
    assert receiver.requests == []


def test_an_allowed_host_removed_from_the_allow_list_is_refused_at_delivery(tenant, receiver):
    register(tenant, receiver.url())
    record_event(new_invoice(tenant), "invoice.created")
    deliver_due(options(allow_hosts=frozenset()))
    [row] = rows()
    assert row.last_error.startswith("address refused:")
    assert receiver.requests == []


# --- daily mode -----------------------------------------------------------------------------------


def next_three_am(after: datetime) -> datetime:
    candidate = after.replace(hour=3, minute=0, second=0, microsecond=0)
    return candidate if candidate > after else candidate + timedelta(days=1)


def test_daily_mode_holds_first_attempts_until_three_utc(tenant, receiver):
    register(tenant, receiver.url())
    event_id = record_event(new_invoice(tenant), "invoice.created")
    three = next_three_am(now())
    assert deliver_due(options(Clock(three - timedelta(seconds=1)), mode="daily")) == 0
    assert deliver_due(options(Clock(three), mode="daily")) == 1
    assert receiver.ids() == [event_id]


def test_daily_mode_retries_keep_their_own_schedule(tenant, receiver):
    register(tenant, receiver.url())
    receiver.status = 500
    record_event(new_invoice(tenant), "invoice.created")
    clock = Clock(next_three_am(now()))
    deliver_due(options(clock, mode="daily"))
    clock.advance(seconds=5)
    assert deliver_due(options(clock, mode="daily")) == 1
    assert len(receiver.requests) == 2


def test_first_attempts_due_by_in_each_mode():
    moment = datetime.fromisoformat("2026-11-22T02:59:59+00:00")
    assert delivery.first_attempts_due_by(moment, "immediate") == moment
    assert delivery.first_attempts_due_by(moment, "daily") == datetime.fromisoformat("2026-11-21T03:00:00+00:00")
    at_three = datetime.fromisoformat("2026-11-22T03:00:00+00:00")
    assert delivery.first_attempts_due_by(at_three, "daily") == at_three


# --- deleting, dashboard --------------------------------------------------------------------------


def test_deleting_an_endpoint_drops_its_pending_deliveries(tenant, receiver):
    endpoint = register(tenant, receiver.url())
    record_event(new_invoice(tenant), "invoice.created")
    assert tenant.delete(f"/webhook-endpoints/{endpoint['id']}").status_code == 200
    assert rows() == []
    assert deliver_due(options()) == 0


def test_recent_deliveries_show_status_attempts_and_last_error(tenant, other_tenant, receiver):
    endpoint = register(tenant, receiver.url())
    invoice_id = new_invoice(tenant)
    record_event(invoice_id, "invoice.created")
    deliver_due(options())
    receiver.status = 500
    record_event(invoice_id, "invoice.updated")
    deliver_due(options())
    with db.transaction() as session:
        recent = webhooks.recent_deliveries(session, tenant.account_id, endpoint["id"], limit=10)
        with pytest.raises(NotFound):
            webhooks.recent_deliveries(session, other_tenant.account_id, endpoint["id"])
    assert [(d.event_type, d.status, d.attempts, d.last_error) for d in recent] == [
        ("invoice.updated", "pending", 1, "HTTP 500"), ("invoice.created", "succeeded", 1, None)]
    assert recent[0].next_attempt_at is not None and recent[1].next_attempt_at is None


# --- concurrency ----------------------------------------------------------------------------------


def test_two_workers_on_postgresql_deliver_every_row_exactly_once(tenant, receiver):
    if db.get_engine().dialect.name != "postgresql":
        pytest.skip("SKIP LOCKED needs PostgreSQL; SQLite serializes every writer")
    register(tenant, receiver.url("/a"))
    register(tenant, receiver.url("/b"))
    invoice_ids = [new_invoice(tenant) for _ in range(4)]
    for kind in ("invoice.created", "invoice.updated", "invoice.finalized", "invoice.paid", "invoice.voided"):
        for invoice_id in invoice_ids:
            record_event(invoice_id, kind)
    receiver.delay = 0.01
    made: list[int] = []
    start = threading.Barrier(2)

    def run():
        start.wait()
        made.append(deliver_due(options()))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    sent = [(r.path, r.headers["webhook-id"]) for r in receiver.requests]
    assert len(sent) == 40 and len(set(sent)) == 40
    assert sum(made) == 40 and min(made) > 0, made  # both workers took part
    assert {row.status for row in rows()} == {"succeeded"}


def test_one_run_stops_at_its_attempt_bound(tenant, receiver):
    register(tenant, receiver.url())
    invoice_id = new_invoice(tenant)
    for kind in ("invoice.created", "invoice.updated", "invoice.finalized"):
        record_event(invoice_id, kind)
    assert deliver_due(options(), max_attempts=2) == 2
    assert deliver_due(options()) == 1


def test_the_running_worker_delivers_within_seconds_in_immediate_mode(tenant, receiver):
    register(tenant, receiver.url())
    stop = threading.Event()
    job = next(job for job in worker.default_jobs() if job.name == "webhook-delivery")
    thread = threading.Thread(target=worker.run_forever, args=(stop, [job]), daemon=True)
    thread.start()
    try:
        recorded_at = time.monotonic()
        event_id = record_event(new_invoice(tenant), "invoice.created")
        while not receiver.requests and time.monotonic() - recorded_at < 5:
            time.sleep(0.05)
        assert receiver.ids() == [event_id]
        assert time.monotonic() - recorded_at < 3
    finally:
        stop.set()
        thread.join(timeout=5)


def test_an_unexpected_error_while_sending_is_a_failed_attempt(tenant, receiver, monkeypatch):
    register(tenant, receiver.url())
    record_event(new_invoice(tenant), "invoice.created")

    def broken(*args, **kwargs):
        raise RuntimeError("bug")
    monkeypatch.setattr(netguard, "safe_post", broken)
    assert deliver_due(options()) == 1
    [row] = rows()
    assert (row.status, row.attempts, row.last_error) == ("pending", 1, "internal error while sending: RuntimeError")


# --- concurrency and fairness -------------------------------------------------------------------


def run_in_background(**kw) -> threading.Thread:
    thread = threading.Thread(target=deliver_due, args=(DeliveryOptions(mode="immediate", **kw),), daemon=True)
    thread.start()
    return thread


def wait_for_requests(rx: Receiver, count: int, seconds: float) -> float:
    started = time.monotonic()
    while len(rx.requests) < count and time.monotonic() - started < seconds:
        time.sleep(0.02)
    return time.monotonic() - started


def test_one_accounts_hanging_endpoints_do_not_delay_another_accounts(tenant, other_tenant, receiver,
                                                                      hanging_receiver):
    for n in range(4):
        register(tenant, hanging_receiver.url(f"/slow{n}"))
    register(other_tenant, receiver.url())
    record_event(new_invoice(tenant), "invoice.created")  # due first: four rows that hang
    record_event(new_invoice(other_tenant), "invoice.created")
    thread = run_in_background(timeout=10)
    waited = wait_for_requests(receiver, 1, 10)
    thread.join(timeout=20)
    assert len(receiver.requests) == 1
    assert waited < 1.5


def test_an_account_never_holds_every_slot(tenant, hanging_receiver):
    for n in range(delivery.SLOTS):
        register(tenant, hanging_receiver.url(f"/slow{n}"))
    record_event(new_invoice(tenant), "invoice.created")
    run_in_background(timeout=10).join(timeout=30)
    assert hanging_receiver.most_active == delivery.SLOTS_PER_ACCOUNT
    assert len(hanging_receiver.requests) == delivery.SLOTS


def test_an_endpoint_gets_one_attempt_at_a_time_in_order(tenant, receiver):
    register(tenant, receiver.url())
    invoice_id = new_invoice(tenant)
    ids = [record_event(invoice_id, kind) for kind in ("invoice.created", "invoice.updated", "invoice.finalized",
                                                        "invoice.paid")]
    receiver.delay = 0.1
    deliver_due(options())
    assert receiver.ids() == ids
    assert receiver.most_active == 1


def test_endpoints_are_attempted_at_once(tenant, receiver):
    for n in range(4):
        register(tenant, receiver.url(f"/e{n}"))
    receiver.delay = 0.3
    record_event(new_invoice(tenant), "invoice.created")
    started = time.monotonic()
    deliver_due(options())
    assert len(receiver.requests) == 4
    assert receiver.most_active == 4 and time.monotonic() - started < 1.0


def test_an_endpoint_that_times_out_backs_off_for_all_its_rows(tenant, receiver):
    endpoint = register(tenant, receiver.url())
    receiver.delay = 1.0
    invoice_id = new_invoice(tenant)
    for kind in ("invoice.created", "invoice.updated", "invoice.finalized"):
        record_event(invoice_id, kind)
    clock = Clock()
    assert deliver_due(options(clock, timeout=0.3)) == 1  # the other two wait: no slot spent on them
    attempted = [row for row in rows(endpoint["id"]) if row.attempts]
    assert len(attempted) == 1
    assert endpoint_row(endpoint["id"]).available_at == attempted[0].next_attempt_at
    receiver.delay = 0
    clock.advance(seconds=5)
    assert deliver_due(options(clock)) == 3
    assert endpoint_row(endpoint["id"]).available_at is None


def test_an_endpoint_answering_an_error_does_not_hold_back_its_other_rows(tenant, receiver):
    register(tenant, receiver.url())
    receiver.status = 500
    invoice_id = new_invoice(tenant)
    for kind in ("invoice.created", "invoice.updated"):
        record_event(invoice_id, kind)
    assert deliver_due(options()) == 2
