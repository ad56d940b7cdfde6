"""Webhook delivery: the background job that sends the outbox rows (core/outbox.py).

One attempt is: claim a due row, POST the event to the endpoint, record the outcome.

* Claiming takes the row in a short transaction (`FOR UPDATE SKIP LOCKED` on PostgreSQL, so
  concurrent workers never take the same row; SQLite's `BEGIN IMMEDIATE` serializes claims),
  counts the attempt and leases the row by moving `next_attempt_at` LEASE ahead. The request
  itself runs outside any transaction. A worker that dies mid-attempt leaves the row to be
  claimed again when the lease ends (the lost attempt counts as a failed one).
* The POST goes through `netguard.safe_post`: the address is checked again at every attempt and
  the connection goes to the checked address. A refused address is a failed attempt.
* Headers: `webhook-id` (the event id, the same for every endpoint and every retry),
  `webhook-timestamp`, `webhook-signature` (Standard Webhooks, core/signing.py), `content-type`.
* A 2xx answer is a success. Anything else is retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h
  and 10 h (8 attempts in all), then the row is `failed`.
* The endpoint's `failure_count` counts consecutive failed attempts and resets on success. When
  its failures have gone on for 5 days without a success, the endpoint is disabled (`active`
  false, `disabled_at` set) and its pending rows are failed: it gets no further deliveries.
* Modes (INVOICING_WEBHOOK_DELIVERY): `immediate` sends a row as soon as it is due (the job polls
  every second). `daily` holds FIRST attempts until the next 03:00 UTC; retries of an attempt
  made at 03:00 keep their own schedule (03:00:05, 03:05, …), so a receiver that was briefly down
  is not made to wait another day.
* Concurrency and fairness: a worker makes up to `SLOTS` attempts at once, at most one per
  endpoint (an endpoint's `available_at` holds the attempt's lease, for every worker), so an
  endpoint's events arrive in order; accounts take turns, and no account holds more than
  `SLOTS_PER_ACCOUNT`, so one whose endpoints all hang delays the others by no more than a poll.
  An endpoint whose attempt timed out or could not connect is not tried again, for any of its
  rows, until that row's retry is due: it holds no slot meanwhile.
"""

from __future__ import annotations

import logging
import ssl
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta
from time import monotonic

import httpx
from sqlalchemy import and_, case, literal, or_, update
from sqlmodel import select

from config.settings import get_settings
from core.base import metrics
from core.base.clock import now
from core.base.db import transaction
from core.base.jsonout import dumps
from core.models import InvoiceEvent, WebhookDelivery, WebhookEndpoint
from core.outbound import netguard
from core.webhooks.signing import sign

log = logging.getLogger("invoicing.webhooks")

RETRY_DELAYS = (timedelta(seconds=5), timedelta(minutes=5), timedelta(minutes=30), timedelta(hours=2),
                timedelta(hours=5), timedelta(hours=10), timedelta(hours=10))
MAX_ATTEMPTS = len(RETRY_DELAYS) + 1
REQUEST_TIMEOUT_SECONDS = 15.0
LEASE = timedelta(minutes=2)  # well above the request timeout
DISABLE_AFTER = timedelta(days=5)
DAILY_AT = time(3, 0)
POLL_SECONDS = 1.0
SLOTS = 8  # attempts in flight at once per worker
SLOTS_PER_ACCOUNT = SLOTS // 2
# Bounds of one job run, so the worker's other jobs get their turn.
MAX_PER_RUN = 200
RUN_BUDGET_SECONDS = 30.0
ERROR_MAX = 1000


@dataclass(frozen=True)
class DeliveryOptions:
    """What the job depends on from outside; tests replace the clock, resolver and mode."""

    clock: Callable[[], datetime] = now
    mode: str | None = None  # "immediate" or "daily"; None reads the settings
    allow_hosts: frozenset[str] | None = None  # None reads the settings
    resolver: netguard.Resolver | None = None
    timeout: float = REQUEST_TIMEOUT_SECONDS
    verify: ssl.SSLContext | bool = True

    def delivery_mode(self) -> str:
        return self.mode or get_settings().webhook_delivery

    def hosts(self) -> frozenset[str]:
        return get_settings().allow_hosts if self.allow_hosts is None else self.allow_hosts


@dataclass(frozen=True)
class Claim:
    delivery_id: uuid.UUID
    endpoint_id: uuid.UUID
    account_id: uuid.UUID
    attempt: int  # 1 for the first attempt
    attempted_at: datetime
    url: str
    secret: str
    msg_id: str
    body: bytes = field(repr=False)
    request_id: str | None = None  # of the request that caused the event: joins the logs


@dataclass(frozen=True)
class Outcome:
    ok: bool
    status_code: int | None = None
    error: str | None = None
    held_a_slot: bool = False  # no answer in time, or no connection: the endpoint backs off


def first_attempts_due_by(moment: datetime, mode: str) -> datetime:
    """Rows whose first attempt was due at or before this instant may be sent at `moment`."""
    if mode != "daily":
        return moment
    todays = datetime.combine(moment.date(), DAILY_AT, tzinfo=moment.tzinfo)
    return todays if moment >= todays else todays - timedelta(days=1)


def retry_delay(attempt: int) -> timedelta | None:
    """How long after failed attempt number `attempt` the next one is due; None after the last."""
    return RETRY_DELAYS[attempt - 1] if attempt < MAX_ATTEMPTS else None


# --- one attempt ------------------------------------------------------------------------------


def claim_next(options: DeliveryOptions, *, full_accounts: frozenset[uuid.UUID] = frozenset(),
               busy_accounts: frozenset[uuid.UUID] = frozenset()) -> Claim | None:
    """Take the next due row for one attempt, or None when nothing is due: of an endpoint with no
    attempt in flight, of no account in `full_accounts`, accounts in `busy_accounts` last."""
    with transaction() as session:
        moment = options.clock()
        due = or_(
            and_(WebhookDelivery.attempts == 0,
                 WebhookDelivery.next_attempt_at <= first_attempts_due_by(moment, options.delivery_mode())),
            and_(WebhookDelivery.attempts > 0, WebhookDelivery.next_attempt_at <= moment),
        )
        available = or_(WebhookEndpoint.available_at.is_(None), WebhookEndpoint.available_at <= moment)
        query = (
            select(WebhookDelivery, WebhookEndpoint, InvoiceEvent)
            .join(WebhookEndpoint, WebhookEndpoint.id == WebhookDelivery.endpoint_id)
            .join(InvoiceEvent, InvoiceEvent.id == WebhookDelivery.event_id)
            .where(WebhookDelivery.status == "pending", WebhookEndpoint.active.is_(True), available, due)
        )
        if full_accounts:
            query = query.where(WebhookEndpoint.account_id.not_in(full_accounts))
        turn = case((WebhookEndpoint.account_id.in_(busy_accounts), 1), else_=0) if busy_accounts else literal(0)
        found = session.exec(
            query.order_by(turn, WebhookDelivery.next_attempt_at, InvoiceEvent.created_at, WebhookDelivery.id)
            .limit(1)
            .with_for_update(skip_locked=True, of=[WebhookDelivery, WebhookEndpoint])
        ).first()
        if found is None:
            return None
        delivery, endpoint, event = found
        delivery.attempts += 1
        delivery.last_attempt_at = moment
        delivery.next_attempt_at = moment + LEASE
        endpoint.available_at = moment + LEASE  # one attempt at a time per endpoint, whichever worker
        session.add(delivery)
        session.add(endpoint)
        return Claim(delivery_id=delivery.id, endpoint_id=endpoint.id, account_id=endpoint.account_id,
                     attempt=delivery.attempts,
                     attempted_at=moment, url=endpoint.url, secret=endpoint.secret, msg_id=str(event.id),
                     body=dumps(event.payload).encode(), request_id=(event.meta or {}).get("request_id"))


def send(claim: Claim, options: DeliveryOptions) -> Outcome:
    """POST the event once; every failure becomes an Outcome, never an exception."""
    timestamp = int(options.clock().timestamp())
    headers = {
        "content-type": "application/json",
        "user-agent": "invoicing-webhooks/1",
        "webhook-id": claim.msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(claim.secret, claim.msg_id, timestamp, claim.body),
    }
    try:
        response = netguard.safe_post(claim.url, content=claim.body, headers=headers, timeout=options.timeout,
                                      allow_hosts=options.hosts(), resolver=options.resolver,
                                      verify=options.verify)
    except netguard.UnsafeAddress as exc:
        return Outcome(False, error=f"address refused: {exc}")
    except httpx.TimeoutException:
        return Outcome(False, error=f"no answer within {options.timeout:g} seconds", held_a_slot=True)
    except (httpx.ConnectError, OSError) as exc:
        return Outcome(False, error=f"request failed: {exc.__class__.__name__}: {exc}", held_a_slot=True)
    except httpx.HTTPError as exc:
        return Outcome(False, error=f"request failed: {exc.__class__.__name__}: {exc}")
    except Exception as exc:  # a fault of ours must not stall the queue: count it, log it
        log.exception("Webhook delivery %s: unexpected error while sending", claim.delivery_id)
        return Outcome(False, error=f"internal error while sending: {exc.__class__.__name__}")
    if 200 <= response.status_code < 300:
        return Outcome(True, status_code=response.status_code)
    return Outcome(False, status_code=response.status_code, error=f"HTTP {response.status_code}")


def record(claim: Claim, outcome: Outcome, options: DeliveryOptions) -> None:
    """Store the outcome on the row and the endpoint, unless the row was meanwhile taken from us."""
    with transaction() as session:
        # Endpoint first, then the row: the same order as `_disable`, so two workers cannot deadlock.
        endpoint = session.exec(select(WebhookEndpoint).where(WebhookEndpoint.id == claim.endpoint_id)
                                .with_for_update()).first()
        delivery = session.exec(select(WebhookDelivery).where(WebhookDelivery.id == claim.delivery_id)
                                .with_for_update()).first()
        if endpoint is None or delivery is None or delivery.status != "pending" or delivery.attempts != claim.attempt:
            return  # endpoint deleted or disabled, or our lease ran out and another worker took over
        # Available again, or once the row's retry is due when the attempt held its slot for nothing.
        delivery.last_status_code = outcome.status_code
        delivery.last_error = outcome.error[:ERROR_MAX] if outcome.error else None
        if outcome.ok:
            delivery.status = "succeeded"
            delivery.next_attempt_at = claim.attempted_at
            endpoint.failure_count = 0
            endpoint.first_failure_at = None
        else:
            _failed(session, delivery, endpoint, claim, options.clock())
        endpoint.available_at = delivery.next_attempt_at if outcome.held_a_slot and delivery.status == "pending" \
            else None
        session.add(delivery)
        session.add(endpoint)
    result = "retrying" if delivery.status == "pending" else delivery.status
    metrics.webhook_attempt(result)
    log.info("Webhook event %s to endpoint %s, attempt %d: %s%s", claim.msg_id, claim.endpoint_id, claim.attempt,
             result, f" ({delivery.last_error})" if delivery.last_error else "",
             extra={"request_id": claim.request_id, "event_id": claim.msg_id, "endpoint_id": str(claim.endpoint_id),
                    "attempt": claim.attempt, "outcome": result, "status": outcome.status_code})


def _failed(session, delivery: WebhookDelivery, endpoint: WebhookEndpoint, claim: Claim, moment: datetime) -> None:
    endpoint.failure_count += 1
    endpoint.first_failure_at = endpoint.first_failure_at or claim.attempted_at
    delay = retry_delay(claim.attempt)
    if delay is None:
        delivery.status = "failed"
    else:
        delivery.next_attempt_at = moment + delay  # counted from the end of the failed attempt
    if moment - endpoint.first_failure_at >= DISABLE_AFTER:
        _disable(session, endpoint, delivery, moment)


def _disable(session, endpoint: WebhookEndpoint, current: WebhookDelivery, moment: datetime) -> None:
    log.warning("Webhook endpoint %s disabled after %d consecutive failed attempts since %s.",
                endpoint.id, endpoint.failure_count, endpoint.first_failure_at.isoformat())
    endpoint.active = False
    endpoint.disabled_at = moment
    current.status = "failed"
    session.exec(update(WebhookDelivery)
                 .where(WebhookDelivery.endpoint_id == endpoint.id, WebhookDelivery.status == "pending",
                        WebhookDelivery.id != current.id)
                 .values(status="failed", last_error="endpoint disabled after 5 days of failed deliveries"))


# --- the job ----------------------------------------------------------------------------------


def deliver_due(options: DeliveryOptions | None = None, *, max_attempts: int = MAX_PER_RUN,
                budget_seconds: float = RUN_BUDGET_SECONDS) -> int:
    """Attempt due rows, up to SLOTS at once, until none is due or a bound is reached
    (`max_attempts`, or `budget_seconds` of wall time, after which the attempts in flight finish);
    returns how many attempts were made."""
    options = options or DeliveryOptions()
    stop_at = monotonic() + budget_seconds
    in_flight: dict[Future, Claim] = {}
    made = 0
    while True:
        while made < max_attempts and monotonic() < stop_at and len(in_flight) < SLOTS:
            claim = _next_in_turn(options, in_flight.values())
            if claim is None:
                break
            in_flight[_POOL.submit(_attempt, claim, options)] = claim
            made += 1
        if not in_flight:
            return made
        done, _ = wait(in_flight, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
        for future in done:
            del in_flight[future]
            future.result()


def _next_in_turn(options: DeliveryOptions, in_flight) -> Claim | None:
    """The next claim, accounts in turn: those with nothing in flight first, and none past its
    share of the slots, even when no other account waits now: one may come within the second."""
    per_account = Counter(claim.account_id for claim in in_flight)
    full = frozenset(account for account, count in per_account.items() if count >= SLOTS_PER_ACCOUNT)
    return claim_next(options, full_accounts=full, busy_accounts=frozenset(per_account))


def _attempt(claim: Claim, options: DeliveryOptions) -> None:
    record(claim, send(claim, options), options)


_POOL = ThreadPoolExecutor(max_workers=SLOTS, thread_name_prefix="webhook-delivery")
