"""Crash safety: a server killed with SIGKILL in the middle of a load of writes restarts consistent,
and retrying the interrupted requests with their keys applies each at most once.

Two accounts, each with two webhook endpoints (no worker runs, so their outbox rows stay pending)
and drafts. Four lanes per account (a thread and an API key each) walk invoices through chains of
writes: create, PATCH line edits, add a line, finalize, send (SMTP on loopback), pay, void. Every
request carries its own `Idempotency-Key` and `X-Request-Id` (which the events record as
`meta.request_id`, so each request's effect can be found and counted). One more send per account
goes to a `stall-` recipient that the SMTP server holds, so at the kill at least one request is
surely mid-flight, with its draft finalized (committed) and its key claimed. After a random number
of acknowledged writes the server is killed with SIGKILL; a new one starts on the same database.

1. At restart: invoice numbers are consecutive per account (prefix-0001 … with no gap or
   duplicate, matching the counter), totals match the lines, every acknowledged write is there
   (its event once, its effect), every interrupted one took effect entirely or not at all, every
   invoice has each lifecycle event at most once and matching its status, every event has one
   outbox row per subscribed endpoint.
2. Retried before the claims' leases lapse, every interrupted request whose claim was left running
   gets `409 conflict` and changes nothing.
3. With the leases lapsed, every request is sent again with its key and request id: acknowledged
   ones replay byte for byte; interrupted ones run once now or replay; sent once more, the
   interrupted ones only replay. The invariants of 1 hold again, and each request's event exists
   exactly once. (PATCH takes no Idempotency-Key — the service ignores the one sent — so only an
   interrupted PATCH is sent again, and it simply runs again.) An e-mail may go out twice for a
   send cut off between the mail server's acceptance and the commit (at-least-once e-mail),
   never without its event once the send is retried.

The figures of a run (requests sent, acknowledged, interrupted, retried…) are printed (run with
`-s`) and recorded as the `crash_safety` property (junit XML). `CRASH_SAFETY_SEED` replays a seed.
Runs on PostgreSQL and on SQLite alike (SQLite in WAL mode is the default deployment: a killed
process must not lose a commit either).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import ROUND_HALF_UP, Decimal

import httpx
import pytest
from sqlalchemy import update
from sqlmodel import select

from core.access.scopes import ALL_SCOPES
from core.base import db
from core.base.clock import now
from core.base.ids import public_id
from core.models import IdempotencyRecord, InvoiceCounter, WebhookDelivery
from tests.api.invoicing import add_webhook_endpoint, stored_events
from tests.conftest import BUSINESS, Tenant, make_tenant
from tests.smtp import Handler, smtp_server

pytestmark = pytest.mark.e2e

# Sized to stay within the limits through all rounds: at most 6 sends per lane key (+2 for a send
# cut off and run again; 10 an hour allowed), 34 per account (50), about 50 requests per key (120 a minute).
LANES_PER_ACCOUNT = 4
DRAFTS_PER_LANE = 4  # drafts made before the load
CREATES_PER_LANE = 2  # invoices created during the load
REQUEST_TIMEOUT = 30.0
WAIT = 30.0  # the longest any phase may take to reach its point
LEASE_MARGIN = timedelta(seconds=5)  # a claim this close to lapsing is not expected to answer 409

DRAFT_CHAINS = (
    ("patch", "add", "finalize", "pay"),
    ("patch", "add", "send", "pay"),
    ("add", "finalize", "send"),
    ("patch", "finalize", "void"),
    ("add", "send", "pay"),
)
CREATE_CHAINS = (
    ("create", "finalize", "pay"),
    ("create", "add", "send"),
)
# The event each write records, once (a send that finds a draft also records invoice.finalized).
EVENT_OF = {"create": "invoice.created", "patch": "invoice.updated", "add": "invoice.updated",
            "finalize": "invoice.finalized", "send": "invoice.emailed", "pay": "invoice.paid",
            "void": "invoice.voided"}
# The event a write records with its own, in the same transaction (a pay is one payment of what is due).
WITH = {"pay": "payment.recorded"}
WEBHOOK_EVENTS = (None, ["invoice.finalized", "invoice.paid", "invoice.emailed"])  # all kinds, and three


def item(description: str, unit_amount: int, quantity: int, *, discount: int = 0, tax: int = 20) -> dict:
    # Amounts chosen so every line amount and tax is exact: the totals check needs no rounding rule.
    return {"description": description, "unit_amount": unit_amount, "quantity": quantity,
            "discount_percent": discount, "tax_rate": tax}


def chain_description(tag: str) -> str:
    return f"Chain {tag}"


def draft_body(chain: Chain) -> dict:
    return {"customer": chain.customer, "description": chain_description(chain.tag),
            "items": [item(f"{chain.tag} base", 10000, 2)]}


# --- what was sent ----------------------------------------------------------------------------


@dataclass
class Account:
    label: str
    prefix: str
    tenant: Tenant
    customers: list[str] = field(default_factory=list)
    endpoints: list[tuple[str, list[str] | None]] = field(default_factory=list)  # (id, subscribed kinds)
    chains: list[Chain] = field(default_factory=list)

    def subscribers(self, kind: str) -> set[str]:
        return {endpoint for endpoint, kinds in self.endpoints if kinds is None or kind in kinds}


@dataclass(eq=False)
class Sent:
    """One request: what was sent, and the answer of each round (`load`, `A`, `B`, `C`) if one came."""

    chain: Chain
    op: str
    method: str
    path: str
    body: dict | None
    key: str
    request_id: str
    answers: dict[str, httpx.Response] = field(default_factory=dict)
    error: str | None = None  # the transport error of the load, when no answer came

    @property
    def response(self) -> httpx.Response | None:
        return self.answers.get("load")

    @property
    def acknowledged(self) -> bool:
        return self.response is not None and self.response.is_success

    @property
    def interrupted(self) -> bool:
        return self.response is None

    @property
    def keyed(self) -> bool:
        """PATCH /invoices/{id} takes no Idempotency-Key (the specification's "N"): the service
        ignores the one we send, so retrying it is a new edit, not a replay."""
        return self.op != "patch"

    @property
    def final(self) -> httpx.Response | None:
        """The last answer: the one that counts once the retries are done."""
        for name in ("C", "B", "A", "load"):
            if name in self.answers:
                return self.answers[name]
        return None

    def send(self, client: httpx.Client) -> httpx.Response:
        headers = {"X-Request-Id": self.request_id, "Idempotency-Key": self.key}
        return client.request(self.method, self.path, json=self.body, headers=headers)


@dataclass(eq=False)
class Chain:
    """The writes one invoice goes through, in order; a chain stops at its first unanswered or
    refused request."""

    account: Account
    tag: str
    steps: tuple[str, ...]
    customer: str
    invoice: str | None = None
    stall_to: str | None = None  # a send to the SMTP server's held recipient
    sent: list[Sent] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return len(self.sent) == len(self.steps) or bool(self.sent and not self.sent[-1].acknowledged)

    def next_request(self) -> Sent:
        index, tag, invoice = len(self.sent), self.tag, self.invoice
        op = self.steps[index]
        body = None
        if op == "create":
            method, path, body = "POST", "/invoices", draft_body(self)
        elif op == "patch":
            method, path = "PATCH", f"/invoices/{invoice}"
            body = {"footer": f"Edited {tag}", "items": [item(f"{tag} design", 120000, 1, discount=10),
                                                         item(f"{tag} hosting", 1500, 3, tax=0)]}
        elif op == "add":
            method, path = "POST", "/invoice-items"
            body = {"invoice": invoice, "unit": "HRS", **item(f"{tag} extra", 2500, 4, discount=25)}
        elif op == "finalize":
            method, path = "POST", f"/invoices/{invoice}/finalize"
        elif op == "send":
            method, path = "POST", f"/invoices/{invoice}/send"
            body = {"to": self.stall_to} if self.stall_to else {"message": f"Thanks ({tag})"}
        elif op == "pay":
            method, path, body = "POST", f"/invoices/{invoice}/pay", {"reference": f"ref-{tag}"}
        else:
            method, path, body = "POST", f"/invoices/{invoice}/void", {"reason": f"Cancelled {tag}"}
        sent = Sent(self, op, method, path, body, key=f"{tag}-{index}-{op}", request_id=f"crash-{tag}-{index}-{op}")
        self.sent.append(sent)
        return sent

    def learn_invoice(self) -> None:
        """The invoice a create made, from whichever of its answers succeeded."""
        if self.invoice is None and self.sent and self.sent[0].op == "create":
            for answer in self.sent[0].answers.values():
                if answer.is_success:
                    self.invoice = answer.json()["data"]["id"]


@dataclass(eq=False)
class Lane:
    """A thread with an API key of its own, sending the next request of one of its chains."""

    name: str
    account: Account
    key: str
    chains: list[Chain]
    sent: list[Sent] = field(default_factory=list)

    def client(self, origin: str) -> httpx.Client:
        return httpx.Client(base_url=f"{origin}/api/v1", headers={"Authorization": f"Bearer {self.key}"},
                            timeout=REQUEST_TIMEOUT)


# --- the SMTP server, holding one recipient ---------------------------------------------------


@dataclass
class HoldingHandler(Handler):
    """Accepts every message, except that while `holding` a message to a `stall-` recipient is
    held (no answer to DATA) so that its send is in flight when the server is killed."""

    holding: bool = True
    held: set[str] = field(default_factory=set)

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd hook name)
        stalled = [rcpt for rcpt in envelope.rcpt_tos if rcpt.startswith("stall-")]
        if stalled and self.holding:
            self.held.update(stalled)
            deadline = time.monotonic() + 2 * WAIT
            while self.holding and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            return "451 4.3.0 Held until the sender was gone"
        return await super().handle_DATA(server, session, envelope)

    def accepted_by_number(self) -> Counter:
        return Counter(received.message["Subject"].split()[1] for received in self.received)


# --- the load ---------------------------------------------------------------------------------


class Load:
    def __init__(self, origin: str):
        self.origin = origin
        self.acknowledged = 0
        self.changed = threading.Condition()
        self.stop = threading.Event()

    def exchange(self, client: httpx.Client, lane: Lane, chain: Chain) -> bool:
        """Send the chain's next request; False when no answer came (the server is gone)."""
        request = chain.next_request()
        lane.sent.append(request)
        try:
            request.answers["load"] = request.send(client)
        except httpx.TransportError as exc:
            request.error = type(exc).__name__
            return False
        chain.learn_invoice()
        if request.acknowledged:
            with self.changed:
                self.acknowledged += 1
                self.changed.notify_all()
        return True

    def run_lane(self, lane: Lane, rng: random.Random) -> None:
        with lane.client(self.origin) as client:
            while not self.stop.is_set():
                ready = [chain for chain in lane.chains if not chain.done]
                if not ready or not self.exchange(client, lane, rng.choice(ready)):
                    return

    def run_holder(self, lane: Lane, after: int) -> None:
        """Send the held send once `after` writes were acknowledged (so it lands mid-load)."""
        with self.changed:
            self.changed.wait_for(lambda: self.acknowledged >= after or self.stop.is_set(), timeout=WAIT)
        with lane.client(self.origin) as client:
            self.exchange(client, lane, lane.chains[0])


# --- reading the state back -------------------------------------------------------------------


@dataclass
class State:
    """One account as the restarted server and the database show it."""

    invoices: dict[str, dict]  # in_ id -> the invoice with its lines (GET /invoices/{id})
    events: list  # InvoiceEvent rows
    deliveries: dict[str, set[str]]  # event id -> endpoint ids of its outbox rows
    counter: int

    def events_of(self, request: Sent) -> Counter:
        """The kinds of event recorded under the request's id (the events' `meta.request_id`)."""
        return Counter(event.type for event in self.events if (event.meta or {}).get("request_id") == request.request_id)


def observe(origin: str, account: Account) -> State:
    key = account.tenant.key_with(list(ALL_SCOPES))  # a fresh key: reads never eat the lanes' rate limit
    with httpx.Client(base_url=f"{origin}/api/v1", headers={"Authorization": f"Bearer {key}"},
                      timeout=REQUEST_TIMEOUT) as client:
        listed = client.get("/invoices", params={"limit": 100})
        assert listed.status_code == 200, listed.text
        assert listed.json()["next_cursor"] is None
        invoices = {}
        for summary in listed.json()["data"]:
            response = client.get(f"/invoices/{summary['id']}")
            assert response.status_code == 200, response.text
            invoices[summary["id"]] = response.json(parse_float=Decimal)["data"]
    events = stored_events(account.tenant.account_id)
    with db.transaction() as session:
        rows = session.exec(select(WebhookDelivery.event_id, WebhookDelivery.endpoint_id)
                            .where(WebhookDelivery.account_id == account.tenant.account_id)).all()
        counter = session.get(InvoiceCounter, account.tenant.account_id)
    deliveries: dict[str, set[str]] = defaultdict(set)
    for event_id, endpoint_id in rows:
        deliveries[str(event_id)].add(str(endpoint_id))
    return State(invoices, events, deliveries, counter.last_number if counter else 0)


def recompute(line: dict) -> tuple[int, int, int]:
    """Gross, amount and tax of a line by the documented arithmetic (decisions.md, money)."""
    def whole(value: Decimal) -> int:
        return int(value.to_integral_value(rounding=ROUND_HALF_UP))
    base = Decimal(line["unit_amount"]) * Decimal(line["quantity"])
    amount = whole(base * (1 - Decimal(line["discount_percent"]) / 100))
    return whole(base), amount, whole(amount * Decimal(line["tax_rate"]) / 100)


ALLOWED_LINES = (  # line edits are atomic: the PATCH's two lines replace the first entirely, or not at all
    Counter(base=1), Counter(base=1, extra=1), Counter(design=1, hosting=1), Counter(design=1, hosting=1, extra=1))


def check_consistent(account: Account, state: State, accepted: Counter, *, settled: bool) -> None:
    """What must hold whatever moment the kill landed, and again once the retries are done."""
    label = account.label
    chains = {chain_description(chain.tag): chain for chain in account.chains}
    found: dict[str, list[dict]] = defaultdict(list)
    for invoice in state.invoices.values():
        found[invoice["description"]].append(invoice)
    assert set(found) <= set(chains), f"{label}: invoices of no chain: {sorted(set(found) - set(chains))}"
    # An invoice per chain; a create that was cut off made one or none, and its retry made it once.
    for description, chain in chains.items():
        if chain.steps[0] != "create":
            want = {1}
        elif not chain.sent:
            want = {0}
        else:
            want = {1} if chain.sent[0].acknowledged or settled else {0, 1}
        assert len(found[description]) in want, f"{label} {description}: {len(found[description])} invoices"
        if found[description] and chain.invoice is not None:
            assert found[description][0]["id"] == chain.invoice

    # Gapless numbering: prefix-0001 … prefix-n, where n is the counter and the count of finalized invoices.
    finalized = [invoice for invoice in state.invoices.values() if invoice["status"] != "draft"]
    numbers = sorted(invoice["number"] for invoice in finalized)
    assert numbers == [f"{account.prefix}-{n:04d}" for n in range(1, len(finalized) + 1)], (
        f"{label}: numbers are not consecutive: {numbers}")
    assert state.counter == len(finalized), f"{label}: counter at {state.counter}, {len(finalized)} numbers issued"
    assert all(invoice["number"] is None for invoice in state.invoices.values() if invoice["status"] == "draft")

    per_invoice: dict[str, Counter] = defaultdict(Counter)
    for event in state.events:
        per_invoice[public_id("invoice", event.invoice_id)][event.type] += 1
    assert set(per_invoice) <= set(state.invoices), f"{label}: events of invoices that do not exist"

    for invoice in state.invoices.values():
        where = f"{label} {invoice['description']} ({invoice['status']})"
        lines = invoice["lines"]["data"]
        # The totals are the sums of the lines, each line computed from its own fields.
        subtotal = taxable = tax = 0
        for line in lines:
            gross, amount, line_tax = recompute(line)
            assert (line["amount"], line["tax_amount"]) == (amount, line_tax), f"{where}: line {line['description']}"
            subtotal, taxable, tax = subtotal + gross, taxable + amount, tax + line_tax
        assert (invoice["subtotal"], invoice["discount"], invoice["taxable"], invoice["tax"], invoice["total"]) == (
            subtotal, subtotal - taxable, taxable, tax, taxable + tax), f"{where}: totals do not match the lines"
        assert invoice["amount_due"] == (invoice["total"] if invoice["status"] in ("open", "overdue") else 0), where
        tag = invoice["description"].removeprefix("Chain ")
        names = Counter(line["description"].removeprefix(f"{tag} ") for line in lines)
        assert names in ALLOWED_LINES, f"{where}: lines {dict(names)}"
        # Each lifecycle event at most once, and as the status says.
        kinds, status = per_invoice[invoice["id"]], invoice["status"]
        assert kinds["invoice.created"] == 1, f"{where}: {dict(kinds)}"
        assert kinds["invoice.finalized"] == (status != "draft"), f"{where}: {dict(kinds)}"
        assert kinds["invoice.paid"] == (status == "paid"), f"{where}: {dict(kinds)}"
        assert kinds["invoice.voided"] == (status == "void"), f"{where}: {dict(kinds)}"
        # Every e-mail event stands for an accepted message; a message without its event can only
        # come from a send that was cut off (the mail went out, the process died before recording it).
        cut_off = sum(1 for request in chains[invoice["description"]].sent if request.op == "send" and request.interrupted)
        mails = accepted[invoice["number"]] if invoice["number"] else 0
        assert kinds["invoice.emailed"] <= mails <= kinds["invoice.emailed"] + cut_off, (
            f"{where}: {kinds['invoice.emailed']} invoice.emailed events, {mails} messages accepted")

    # The outbox: every event has exactly one row per endpoint subscribed to its kind.
    for event in state.events:
        assert state.deliveries.get(str(event.id), set()) == account.subscribers(event.type), (
            f"{label}: outbox rows of {event.type} {event.id}")
    assert set(state.deliveries) <= {str(event.id) for event in state.events}


def check_requests(account: Account, state: State, *, settled: bool) -> int:
    """Every acknowledged write is there: its event exactly once under its request id, and its
    effect. Before the retries, an interrupted write recorded its event once or not at all; returns
    how many interrupted writes had taken effect (their answer was lost)."""
    took_effect = 0
    for chain in account.chains:
        invoice = state.invoices.get(chain.invoice) if chain.invoice else None
        for request in chain.sent:
            answer = request.final if settled else request.response
            events, kind = state.events_of(request), EVENT_OF[request.op]
            along = {"invoice.finalized", *([WITH[request.op]] if request.op in WITH else [])}
            where = f"{account.label} {request.method} {request.path} ({request.key})"
            if answer is None:  # cut off by the kill; its retry has not been sent yet
                assert events[kind] <= 1 and set(events) <= {kind, *along}, f"{where}: {dict(events)}"
                assert events["invoice.finalized"] <= 1, f"{where}: {dict(events)}"
                took_effect += bool(events)
                continue
            assert answer.is_success, f"{where}: {answer.status_code} {answer.text}"
            if request.op == "patch" and request.interrupted:
                # No key: a PATCH cut off after its commit runs again when retried (by design).
                assert 1 <= events[kind] <= 2, f"{where}: {dict(events)}"
            else:
                assert events[kind] == 1, f"{where}: {dict(events)}"
            finalized_by_send = int(request.op == "send" and "finalize" not in chain.steps)
            assert events["invoice.finalized"] == (1 if kind == "invoice.finalized" else finalized_by_send), where
            assert set(events) <= {kind, *along}, f"{where}: {dict(events)}"
            if request.op in WITH:
                assert events[WITH[request.op]] == 1, f"{where}: {dict(events)}"
            data = answer.json(parse_float=Decimal)["data"]
            assert invoice is not None and data["id"] == invoice["id"], where
            names = {line["description"].removeprefix(f"{chain.tag} ") for line in invoice["lines"]["data"]}
            if request.op == "patch":
                assert {"design", "hosting"} <= names and "base" not in names, f"{where}: lines {names}"
            if request.op == "add":
                assert "extra" in names, f"{where}: lines {names}"
            if request.op in ("add", "finalize", "send", "pay", "void"):  # no line edit follows these
                totals = ("subtotal", "discount", "taxable", "tax", "total")
                assert [invoice[k] for k in totals] == [data[k] for k in totals], f"{where}: totals changed"
            if request.op in ("finalize", "send", "pay", "void"):
                assert invoice["number"] == data["number"] is not None, where
            if request.op == "pay":
                assert (invoice["status"], invoice["paid_at"]) == ("paid", data["paid_at"]), where
            if request.op == "void":
                assert invoice["status"] == "void", where
    return took_effect


# --- retries ----------------------------------------------------------------------------------


def retry(origin: str, lanes: list[Lane], name: str, pick) -> None:
    """Send again, with the same key and request id, every request `pick` chooses, keeping the
    answers as round `name`: the lanes in parallel, each in the order it first sent them."""
    def run(lane: Lane) -> None:
        with lane.client(origin) as client:
            for request in lane.sent:
                if pick(request):
                    request.answers[name] = request.send(client)

    with ThreadPoolExecutor(len(lanes)) as pool:
        list(pool.map(run, lanes))  # (a lane's failure surfaces here)
    for lane in lanes:
        for chain in lane.chains:
            chain.learn_invoice()


def replayed(answer: httpx.Response) -> bool:
    return answer.headers.get("idempotent-replayed") == "true"


def claims_of(requests: list[Sent]) -> dict[Sent, tuple[str, int | None, timedelta] | None]:
    """The idempotency record of each request's key: (state, stored status, lease left)."""
    found = {}
    with db.transaction() as session:
        moment = now()
        for request in requests:
            record = session.exec(select(IdempotencyRecord).where(
                IdempotencyRecord.account_id == request.chain.account.tenant.account_id,
                IdempotencyRecord.method == request.method, IdempotencyRecord.path == f"/api/v1{request.path}",
                IdempotencyRecord.key == request.key)).first()
            found[request] = None if record is None else (
                record.state, record.response_status, record.locked_until - moment)
    return found


def events_by_request(accounts: list[Account]) -> dict[str, Counter]:
    found: dict[str, Counter] = defaultdict(Counter)
    for account in accounts:
        for event in stored_events(account.tenant.account_id):
            found[(event.meta or {}).get("request_id")][event.type] += 1
    return found


# --- the test ---------------------------------------------------------------------------------


def set_up(origin: str, label: str, rng: random.Random) -> tuple[Account, list[Lane], Lane]:
    """An account with a business profile, two webhook endpoints, two customers, the lanes and
    their chains, and a draft for every chain that does not create its own."""
    tenant = make_tenant(None, business={**BUSINESS, "invoice_prefix": f"CR{label}"})
    account = Account(label, f"CR{label}", tenant)
    account.endpoints = [(str(add_webhook_endpoint(tenant.account_id, kinds)), kinds) for kinds in WEBHOOK_EVENTS]
    with httpx.Client(base_url=f"{origin}/api/v1", headers={"Authorization": f"Bearer {tenant.key}"},
                      timeout=REQUEST_TIMEOUT) as client:
        for n in range(2):
            response = client.post("/customers", json={"name": f"Customer {label}{n}",
                                                        "email": f"ap{n}@{label.lower()}.example.com"})
            assert response.status_code == 201, response.text
            account.customers.append(response.json()["data"]["id"])
        lanes = []
        for lane_no in range(LANES_PER_ACCOUNT):
            chains = [Chain(account, f"{label}{lane_no}-{i}", rng.choice(DRAFT_CHAINS if i < DRAFTS_PER_LANE else
                                                                         CREATE_CHAINS), rng.choice(account.customers))
                      for i in range(DRAFTS_PER_LANE + CREATES_PER_LANE)]
            lanes.append(Lane(f"{label}{lane_no}", account, tenant.key_with(list(ALL_SCOPES)), chains))
        held = Chain(account, f"{label}H-0", ("send",), account.customers[0], stall_to=f"stall-{label.lower()}@example.com")
        holder = Lane(f"{label}H", account, tenant.key_with(list(ALL_SCOPES)), [held])
        account.chains = [chain for lane in [*lanes, holder] for chain in lane.chains]
        for chain in account.chains:
            if chain.steps[0] != "create":
                response = client.post("/invoices", json=draft_body(chain), headers={"Idempotency-Key": f"setup-{chain.tag}"})
                assert response.status_code == 201, response.text
                chain.invoice = response.json()["data"]["id"]
    return account, lanes, holder


def kill_mid_load(servers, origin: str, lanes: list[Lane], holders: list[Lane], mailbox: HoldingHandler,
                  rng: random.Random) -> int:
    """Run the load and SIGKILL the server after a random number of acknowledged writes, once both
    held sends are in flight. Returns how many writes had been acknowledged."""
    load = Load(origin)
    planned = sum(len(chain.steps) for lane in lanes for chain in lane.chains)
    kill_after = rng.randint(planned * 35 // 100, planned * 70 // 100)
    try:
        with ThreadPoolExecutor(len(lanes) + len(holders)) as pool:
            running = [pool.submit(load.run_lane, lane, random.Random(rng.random())) for lane in lanes]
            held = [pool.submit(load.run_holder, holder, kill_after // 2) for holder in holders]
            deadline = time.monotonic() + WAIT
            while time.monotonic() < deadline and not (len(mailbox.held) == len(holders) and (
                    load.acknowledged >= kill_after or all(future.done() for future in running))):
                time.sleep(0.005)
            time.sleep(rng.uniform(0, 0.03))  # land anywhere in the requests under way
            load.stop.set()
            acknowledged = load.acknowledged
            servers.kill(origin)
            mailbox.holding = False
            for future in running + held:
                future.result(timeout=WAIT)  # a lane's own failure surfaces here
    finally:
        load.stop.set()
        mailbox.holding = False
    assert len(mailbox.held) == len(holders), f"the held sends did not reach the SMTP server within {WAIT} s"
    return acknowledged


def check_state(origin: str, accounts: list[Account], mailbox: HoldingHandler, *, settled: bool) -> tuple[int, dict]:
    """Every invariant, per account; returns how many interrupted writes had taken effect, and the
    numbers issued per prefix."""
    accepted, took_effect, issued = mailbox.accepted_by_number(), 0, {}
    for account in accounts:
        state = observe(origin, account)
        check_consistent(account, state, accepted, settled=settled)
        took_effect += check_requests(account, state, settled=settled)
        issued[account.prefix] = state.counter
    return took_effect, issued


def retry_before_lapse(origin: str, lanes: list[Lane], accounts: list[Account], keyed: list[Sent]) -> tuple[int, dict]:
    """Retry the interrupted writes while the dead process's claims still hold: a key it left
    claimed answers 409 conflict and nothing runs; a key with a stored answer replays it; a key it
    never claimed runs now. Returns the number of 409s and the keys' states at restart."""
    claims = claims_of(keyed)
    before = events_by_request(accounts)
    retry(origin, lanes, "A", lambda request: request.interrupted and request.keyed)
    after = events_by_request(accounts)
    conflicts = 0
    for request in keyed:
        claim, answer = claims[request], request.answers["A"]
        where = f"{request.method} {request.path} ({request.key}), claim {claim}: {answer.status_code} {answer.text}"
        if claim is None:
            assert answer.is_success and not replayed(answer), where
        elif claim[0] == "done":
            assert replayed(answer) and answer.status_code == claim[1], where
        elif claim[2] > LEASE_MARGIN:  # (a claim about to lapse may be taken over: B checks that case)
            assert answer.status_code == 409 and answer.json()["code"] == "conflict" and not replayed(answer), where
            assert after[request.request_id] == before[request.request_id], f"{where}: it ran"
            conflicts += 1
    return conflicts, dict(Counter(claim[0] if claim else "unclaimed" for claim in claims.values()))


def lapse_claims(accounts: list[Account]) -> int:
    """Make the claims the dead process left lapse. There is no setting for the 30 s lease (a
    constant of core.mechanisms.idempotency, read in another process) and waiting it out would
    more than double the test's time, so their `locked_until` is moved into the past: exactly what
    a retry would find 30 s later."""
    with db.transaction() as session:
        return session.execute(update(IdempotencyRecord).where(
            IdempotencyRecord.state == "running",
            IdempotencyRecord.account_id.in_([account.tenant.account_id for account in accounts]),
        ).values(locked_until=now() - timedelta(seconds=1))).rowcount


def retry_after_lapse(origin: str, lanes: list[Lane], every: list[Sent]) -> int:
    """Every write again with its key: acknowledged ones replay byte for byte; interrupted ones run
    now (their claim had been left running) or replay what ran before. Returns how many ran."""
    retry(origin, lanes, "B", lambda request: request.keyed or request.interrupted)
    executed = 0
    for request in every:
        if "B" not in request.answers:
            continue
        answer = request.answers["B"]
        where = f"{request.method} {request.path} ({request.key}): {answer.status_code} {answer.text}"
        if not request.keyed:  # an interrupted PATCH: it takes no key, so it is simply done (again)
            assert answer.status_code == 200 and not replayed(answer), where
            executed += 1
        elif request.acknowledged:
            assert replayed(answer) and answer.status_code == request.response.status_code, where
            assert answer.text == request.response.text, f"{where}: the replay differs from the first answer"
        else:
            first = request.answers["A"]
            assert answer.is_success, where
            if first.status_code == 409:
                assert not replayed(answer), where
                executed += 1
            else:
                assert replayed(answer) and answer.text == first.text, where
    return executed


def test_a_server_killed_mid_load_restarts_consistent_and_retries_apply_once(live_server_factory, record_property):
    seed = int(os.environ.get("CRASH_SAFETY_SEED") or random.SystemRandom().randrange(10**6))
    rng = random.Random(seed)
    started = time.monotonic()
    figures: dict[str, object] = {"database": db.get_engine().dialect.name, "seed": seed}
    with smtp_server(HoldingHandler()) as (mailbox, smtp_url):
        origin = live_server_factory(SMTP_URL=smtp_url)
        accounts, lanes, holders = [], [], []
        for label in "AB":
            account, account_lanes, holder = set_up(origin, label, rng)
            accounts.append(account)
            lanes += account_lanes
            holders.append(holder)
        figures["kill_ordered_at_acknowledged"] = kill_mid_load(live_server_factory, origin, lanes, holders, mailbox, rng)
        lanes += holders
        every = [request for lane in lanes for request in lane.sent]
        refused = [f"{r.method} {r.path}: {r.response.status_code} {r.response.text}" for r in every
                   if r.response is not None and not r.response.is_success]
        assert not refused, "writes refused during the load:\n" + "\n".join(refused)
        interrupted = [request for request in every if request.interrupted]
        keyed = [request for request in interrupted if request.keyed]
        figures.update(sent=len(every), acknowledged=sum(r.acknowledged for r in every), interrupted=len(interrupted),
                       interrupted_by_op=dict(Counter(r.op for r in interrupted)))

        # 1. The state the restarted server finds.
        origin = live_server_factory(SMTP_URL=smtp_url)
        figures["interrupted_with_effect_at_restart"], _ = check_state(origin, accounts, mailbox, settled=False)

        # 2. Retries while the dead process's claims hold.
        conflicts, figures["interrupted_keys_at_restart"] = retry_before_lapse(origin, lanes, accounts, keyed)
        figures["conflict_before_lease_lapsed"] = conflicts

        # 3. Retries once they lapsed; then the interrupted ones once more, which must only replay.
        assert lapse_claims(accounts) == sum(1 for request in keyed if request.answers["A"].status_code == 409)
        executed = retry_after_lapse(origin, lanes, every)
        executed += sum(1 for request in keyed if request.answers["A"].is_success and not replayed(request.answers["A"]))
        before = events_by_request(accounts)
        retry(origin, lanes, "C", lambda request: request.interrupted and request.keyed)
        assert events_by_request(accounts) == before
        for request in keyed:
            answer, first = request.answers["C"], request.answers["B"]
            assert replayed(answer) and (answer.status_code, answer.text) == (first.status_code, first.text), request.key

        # The invariants again, now that every write has its answer.
        _, figures["numbers_issued"] = check_state(origin, accounts, mailbox, settled=True)
        retries = [answer for request in every for name, answer in request.answers.items() if name != "load"]
        figures.update(
            retried=len(retries), replayed=sum(replayed(answer) for answer in retries), executed_on_retry=executed,
            emails_accepted=len(mailbox.received),
            emails_duplicated=sum(count - 1 for count in mailbox.accepted_by_number().values() if count > 1),
            seconds=round(time.monotonic() - started, 1),
        )
    print(f"\ncrash safety figures: {json.dumps(figures)}")
    record_property("crash_safety", json.dumps(figures))
