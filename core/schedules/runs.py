"""The runs of invoice schedules: each period's invoice made exactly once, its e-mail sent at most once,
by the worker's `schedules` job, whatever number of processes run it.

* **A period is one transaction.** The schedule's row is locked (`FOR UPDATE SKIP LOCKED` on
  PostgreSQL, so a second worker passes on to other schedules; SQLite's `BEGIN IMMEDIATE` serializes
  writers), read again under the lock, and only a schedule still due is run: the invoice is created
  (and finalized) by the same core functions as `POST /invoices` and `/finalize`, acting as the
  schedule's creator; the run row is inserted, unique per (schedule, period); the schedule moves to
  its next period. A process killed midway commits nothing, and the next pass makes that period:
  no gap, no double.
* **Missed periods** (the worker down, the clock jumping ahead) are made one per pass, oldest first,
  or, with `catch_up: latest`, the older ones are recorded as skipped and only the latest is made.
  A clock that steps back runs nothing until it reaches the next run again.
* **A run that fails** is rolled back whole, and its reason recorded on the schedule with an
  `invoice_schedule.run_failed` event. A refusal of the credential (revoked, a scope or an app's limit
  missing) pauses the schedule at once; anything else (a customer archived, a price gone) is tried
  again after 1 hour, 6 hours, then daily, and after `max_attempts` the schedule pauses. Nothing loops.
* **E-mail** (`finalize_and_send`): after the invoice's commit, the run's e-mail is claimed
  (`pending` → `sending`, committed) before the send, which goes through `core.billing.sending` with
  its limits. Sent, it is `sent`; refused by an hourly cap, `pending` again until the cap resets
  (deferred, never dropped); refused otherwise, `failed`. A process that stops while sending leaves
  `sending`, which becomes `unknown` after a lease: never sent again, so never sent twice.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from core.access.principal import Principal
from core.base import executor, ids, lookup, metrics
from core.base.clock import now
from core.base.db import new_session, transaction
from core.base.errors import (
    Conflict,
    DomainError,
    Forbidden,
    GrantLimitExceeded,
    InternalError,
    InvalidState,
    RateLimited,
    Unauthorized,
    UpstreamFailed,
)
from core.billing import finalization, invoices, sending
from core.models import InvoiceSchedule, ScheduleRun
from core.schedules import acting, recurrence, schedules
from core.schedules.schedule_inputs import InvoiceTemplate

log = logging.getLogger("invoicing.schedules")

POLL_SECONDS = 5.0
MAX_PER_PASS = 50  # periods made in one pass of the job, so the worker's other jobs get their turn
RETRY_AFTER = (timedelta(hours=1), timedelta(hours=6), timedelta(hours=24))
EMAIL_RETRY_AFTER = (timedelta(minutes=5), timedelta(minutes=30), timedelta(hours=2), timedelta(hours=6))
EMAIL_ATTEMPTS = len(EMAIL_RETRY_AFTER) + 1
EMAIL_LEASE = timedelta(minutes=10)  # far above a send's time: a run still `sending` after it was cut short
REFUSALS = (acting.CredentialGone, Forbidden, GrantLimitExceeded, Unauthorized)


@dataclass
class Pass:
    """What one pass of the job did, for the metrics and tests."""

    made: list[uuid.UUID] = field(default_factory=list)  # invoices made
    failed: int = 0
    emails_sent: int = 0
    emails_deferred: int = 0
    emails_failed: int = 0


def run_due(clock=now) -> Pass:
    """The job: every schedule due at `clock()` runs its next period (one per schedule and pass), then
    the runs' e-mails due are sent, and e-mails cut short are given up."""
    moment, done = clock(), Pass()
    for schedule_id in due_schedules(moment):
        try:
            with transaction() as session:
                run = run_period(session, schedule_id, moment)
            if run is not None:
                done.made.append(run.invoice_id)
                metrics.schedule_run("made", (moment - run.scheduled_for).total_seconds())
            continue
        except IntegrityError:
            # Another process made this period first (the schedule has moved on: nothing is recorded), or
            # something else clashed: recorded as a failure like any other.
            error: DomainError = Conflict("The period's run could not be recorded: it clashed with another row.")
        except DomainError as refused:
            error = refused
        except Exception:  # a fault of ours, or of the host (a time zone gone): this schedule only
            log.exception("Schedule %s: the run of its next period failed.", schedule_id)
            error = InternalError("The run failed unexpectedly; it is tried again later.")
        if record_failure(schedule_id, error, moment):
            done.failed += 1
            metrics.schedule_run("failed", None)
    send_due_emails(moment, done)
    give_up_interrupted(moment)
    return done


def due_schedules(moment: datetime) -> list[uuid.UUID]:
    with transaction() as session:
        return list(session.exec(select(InvoiceSchedule.id).where(
            InvoiceSchedule.status == "active", InvoiceSchedule.next_run_at <= moment)
            .order_by(InvoiceSchedule.next_run_at).limit(MAX_PER_PASS)))


def _locked(session: Session, schedule_id: uuid.UUID) -> InvoiceSchedule | None:
    """The schedule under its lock, or None while another process holds it (it is running it)."""
    return lookup.locked(session, InvoiceSchedule, schedule_id, skip_locked=True)


def run_period(session: Session, schedule_id: uuid.UUID, moment: datetime, *, forced: bool = False) -> ScheduleRun | None:
    """Make the schedule's next period's invoice in `session`'s transaction, if it is due at `moment` (or
    `forced`: run now), acting as its creator; the run, or None when there was nothing to do. A
    DomainError leaves the transaction to be rolled back."""
    schedule = _locked(session, schedule_id)
    if schedule is None or schedule.status != "active":
        return None
    if not forced and (schedule.next_run_at is None or schedule.next_run_at > moment):
        return None
    principal = acting.acting_principal(session, schedule)
    for scope in schedules.required_scopes(schedule.mode):
        principal.require(scope)
    if schedule.catch_up == "latest" and not forced:
        schedules.skip_passed(session, schedule, moment, keep_latest=True)
    rule = recurrence.from_stored(schedule.recurrence)
    bounds = recurrence.period(rule, schedule.next_index)
    if bounds is None:
        schedules.complete(session, schedule, principal.event_meta())
        return None
    start, end = bounds
    principal = dataclasses.replace(
        principal, request_id=f"{ids.public_id('invoice_schedule', schedule.id)}/{schedule.next_index}")
    # Issued the day it is made, in the schedule's time zone: the period's first day when on time.
    issue_date = moment.astimezone(ZoneInfo(schedule.time_zone)).date()
    data = InvoiceTemplate.model_validate(schedule.template).invoice_input(
        ids.public_id("customer", schedule.customer_id), issue_date)
    drafted = executor.within(session, invoices.create_invoice, principal, data, (schedule.id, start, end))
    invoice_id = drafted.invoice.id
    if schedule.mode != "draft":
        executor.within(session, finalization.finalize, principal, ids.public_id("invoice", invoice_id))
    sends = schedule.mode == "finalize_and_send"
    run = ScheduleRun(account_id=schedule.account_id, schedule_id=schedule.id, period_index=schedule.next_index,
                      period_start=start, period_end=end, scheduled_for=recurrence.run_moment(rule, schedule.time_zone, start),
                      status="invoiced", invoice_id=invoice_id, email_status="pending" if sends else None,
                      email_next_at=moment if sends else None)
    session.add(run)
    _advance(session, schedule, rule, principal.event_meta())
    session.flush()  # the unique period: a second maker fails here, before anything is committed
    return run


def run_now(session: Session, principal: Principal, id_text: str) -> ScheduleRun:
    """Make the schedule's next period at once (`POST /invoice-schedules/{id}/run`): asked by `principal`
    (who needs the scopes of its mode), acting as the schedule's creator, as every run does. A failure is
    the caller's answer and changes nothing on the schedule."""
    schedule = schedules.get_schedule(session, principal.account_id, id_text, lock=True)
    if schedule.status != "active":
        raise InvalidState(f"Invoice schedule {id_text} is {schedule.status}: only an active schedule runs"
                           + (" (resume it first)." if schedule.status == "paused" else "."))
    for scope in schedules.required_scopes(schedule.mode):
        principal.require(scope)
    run = run_period(session, schedule.id, now(), forced=True)
    if run is None:
        raise InvalidState(f"Invoice schedule {id_text} has no period left to make.")
    return run


def _advance(session: Session, schedule: InvoiceSchedule, rule: recurrence.Recurrence, meta: dict) -> None:
    schedule.next_index += 1
    schedule.attempts, schedule.last_error, schedule.last_error_at = 0, None, None
    schedule.next_run_at = recurrence.next_run(rule, schedule.time_zone, schedule.next_index)
    schedule.updated = now()
    session.add(schedule)
    if schedule.next_run_at is None:
        schedules.complete(session, schedule, meta)


def _refusal(error: DomainError) -> bool:
    return isinstance(error, REFUSALS)


def record_failure(schedule_id: uuid.UUID, error: DomainError, moment: datetime) -> bool:
    """A run of the schedule's next period failed with `error` (its work rolled back): say so on the
    schedule, and pause it (a refusal, or the last attempt) or try again later. False when the schedule
    moved on meanwhile (made by another process, resumed, paused): nothing failed then."""
    with transaction() as session:
        schedule = _locked(session, schedule_id)
        if schedule is None or schedule.status != "active" or (schedule.next_run_at and schedule.next_run_at > moment):
            return False
        schedule.attempts += 1
        schedule.last_error, schedule.last_error_at = error.detail[:1000], moment
        meta = {"actor": "schedule", "code": error.code, "reason": schedule.last_error,
                "period_index": schedule.next_index, "attempt": schedule.attempts}
        schedules.record(session, schedule, "invoice_schedule.run_failed", meta)
        if _refusal(error) or schedule.attempts >= schedule.max_attempts:
            why = error.detail if _refusal(error) else f"{schedule.attempts} attempts failed: {error.detail}"
            schedules.set_paused(session, schedule, why, {"actor": "schedule"})
        else:
            schedule.next_run_at = moment + RETRY_AFTER[min(schedule.attempts, len(RETRY_AFTER)) - 1]
            schedule.updated = now()
            session.add(schedule)
        log.warning("Schedule %s: run of period %s failed (%s): %s", schedule_id, schedule.next_index, error.code,
                    error.detail)
    return True


# --- e-mail -----------------------------------------------------------------------------------------


def send_due_emails(moment: datetime, done: Pass) -> None:
    with transaction() as session:
        due = list(session.exec(select(ScheduleRun.id).where(
            ScheduleRun.email_status == "pending", ScheduleRun.email_next_at <= moment)
            .order_by(ScheduleRun.email_next_at).limit(MAX_PER_PASS)))
    for run_id in due:
        try:
            outcome = send_run_email(run_id, moment)
        except Exception:  # one run's fault never stops the others' e-mails
            log.exception("Schedule run %s: its e-mail failed unexpectedly; given up after the lease.", run_id)
            continue
        if outcome == "sent":
            done.emails_sent += 1
        elif outcome == "pending":
            done.emails_deferred += 1
        elif outcome == "failed":
            done.emails_failed += 1


def _claim(run_id: uuid.UUID, moment: datetime) -> bool:
    """The run's e-mail taken by this process (committed before anything is sent), or not pending."""
    with transaction() as session:
        # Stamped with the time of the claim, not of the pass's start (later, by the sends before it): the
        # lease counts from here. (`moment` when the pass runs ahead of the clock: a driven clock in tests.)
        claimed = session.exec(update(ScheduleRun).where(ScheduleRun.id == run_id, ScheduleRun.email_status == "pending",
                                                         ScheduleRun.email_next_at <= moment)
                               .values(email_status="sending", email_next_at=max(now(), moment),
                                       email_attempts=ScheduleRun.email_attempts + 1))
        return claimed.rowcount == 1


def send_run_email(run_id: uuid.UUID, moment: datetime) -> str | None:
    """Send one run's invoice e-mail, at most once; its e-mail status after, or None when another
    process has it."""
    if not _claim(run_id, moment):
        return None
    session = new_session()
    error: DomainError | None = None
    try:
        run = session.get(ScheduleRun, run_id)
        schedule = session.get(InvoiceSchedule, run.schedule_id)
        principal = acting.acting_principal(session, schedule)
        principal.require("invoices:send")
        sending.send_invoice(session, principal, ids.public_id("invoice", run.invoice_id))
        session.commit()
    except DomainError as refused:
        session.rollback()
        error = refused
    finally:
        session.close()
    return _email_outcome(run_id, error, moment)


def _email_outcome(run_id: uuid.UUID, error: DomainError | None, moment: datetime) -> str:
    with transaction() as session:
        run = lookup.locked(session, ScheduleRun, run_id)
        if run.email_status != "sending":  # given up as unknown meanwhile: that stands
            return run.email_status
        if error is None:
            run.email_status, run.email_error, run.email_next_at = "sent", None, None
        elif isinstance(error, RateLimited):  # a cap: after it resets, never dropped
            run.email_status, run.email_error = "pending", error.detail[:1000]
            run.email_next_at = moment + timedelta(seconds=max(1, error.retry_after))
            run.email_attempts -= 1  # waiting for a cap is no attempt
        elif isinstance(error, UpstreamFailed) and run.email_attempts < EMAIL_ATTEMPTS:
            run.email_status, run.email_error = "pending", error.detail[:1000]
            run.email_next_at = moment + EMAIL_RETRY_AFTER[run.email_attempts - 1]
        else:
            run.email_status, run.email_error, run.email_next_at = "failed", error.detail[:1000], None
            _email_failed(session, run, error, moment)
        session.add(run)
        metrics.schedule_email(run.email_status)
        return run.email_status


def _email_failed(session: Session, run: ScheduleRun, error: DomainError, moment: datetime) -> None:
    schedule = lookup.locked(session, InvoiceSchedule, run.schedule_id)
    meta = {"actor": "schedule", "code": error.code, "reason": error.detail[:1000], "period_index": run.period_index,
            "invoice": ids.public_id("invoice", run.invoice_id)}
    schedule.last_error, schedule.last_error_at = error.detail[:1000], moment
    schedules.record(session, schedule, "invoice_schedule.run_failed", meta)
    if _refusal(error) and schedule.status == "active":
        schedules.set_paused(session, schedule, error.detail, {"actor": "schedule"})


def give_up_interrupted(moment: datetime) -> None:
    """Runs still `sending` a lease after their claim: the process sending stopped. Whether the e-mail
    went is not known, so it is never sent again; the run says `unknown` and the schedule's history why."""
    with transaction() as session:
        stuck = list(session.exec(select(ScheduleRun).where(
            ScheduleRun.email_status == "sending", ScheduleRun.email_next_at < moment - EMAIL_LEASE)
            .with_for_update(skip_locked=True)))
        for run in stuck:
            run.email_status = "unknown"
            run.email_error = ("The process sending this e-mail stopped; it may or may not have gone. Check with the "
                               "customer, or send the invoice again by hand.")
            session.add(run)
            schedule = lookup.locked(session, InvoiceSchedule, run.schedule_id)
            schedules.record(session, schedule, "invoice_schedule.run_failed", {
                "actor": "schedule", "code": "email_unknown", "reason": run.email_error,
                "period_index": run.period_index, "invoice": ids.public_id("invoice", run.invoice_id)})
