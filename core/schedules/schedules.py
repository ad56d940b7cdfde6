"""Invoice schedules: create, read, list, pause, resume and cancel a recurring invoice, and its history.

A schedule acts as the credential that created it (core.schedules.acting); resuming it makes it act
as whoever resumed it. Its events are recorded in the history table beside invoices' (keyed by the
schedule's id) and go to webhooks like them, `data.object` the schedule.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

from sqlalchemy import func
from sqlmodel import Session, select

from core.access.principal import Principal
from core.base import executor, ids, lookup
from core.base.clock import iso, now
from core.base.errors import DomainError, FieldError, InvalidState, ValidationFailed
from core.base.jsonout import jsonable
from core.base.validation import failed
from core.billing import events, invoices
from core.billing.confirmations import Confirmed, check
from core.mechanisms.pagination import Page, paginate
from core.models import BusinessProfile, InvoiceSchedule, Price, ScheduleRun
from core.schedules import acting, recurrence
from core.schedules.schedule_inputs import (
    MODE_SCOPES,
    ScheduleCreate,
    ScheduleListQuery,
    SchedulePause,
    ScheduleResume,
)

NOUN = "invoice schedule"


def required_scopes(mode: str) -> tuple[str, ...]:
    return ("invoices:write", *MODE_SCOPES[mode])


def _require_mode(principal: Principal, mode: str) -> None:
    for scope in MODE_SCOPES[mode]:
        principal.require(scope)


def _under(prefix: str, error: DomainError) -> DomainError:
    """A validation failure of the template, its paths under `prefix` (`invoice.items.0.price`)."""
    if isinstance(error, ValidationFailed) and error.errors:
        return failed([FieldError(f"{prefix}.{item.path}", item.message) for item in error.errors])
    return error


def default_time_zone(session: Session, account_id: uuid.UUID) -> str:
    """The business's country's main time zone (UTC before a business profile exists)."""
    country = session.exec(select(BusinessProfile.country_code).where(BusinessProfile.account_id == account_id)).first()
    return recurrence.main_time_zone(country)


def what_it_makes(session: Session, principal: Principal, data: ScheduleCreate) -> dict:
    """What creating the schedule `data` would do, as a person asked about it is shown it: the input,
    the first run's invoice (as `POST /invoices/preview` computes it for the start date), the time zone,
    the first run's moment and period. Refuses (DomainError) as creating it would."""
    _require_mode(principal, data.mode)
    executor.within(session, invoices.billable_customer, principal.account_id, data.customer)
    time_zone = data.time_zone or default_time_zone(session, principal.account_id)
    rule = data.recurrence
    if rule.start_date < now().astimezone(ZoneInfo(time_zone)).date():
        raise ValidationFailed.at("recurrence.start_date", "is in the past: start today or later (run a period at "
                                                            "once with POST /invoice-schedules/{id}/run)")
    try:
        first = invoices.preview_invoice(session, principal, data.invoice.invoice_input(data.customer, rule.start_date))
    except DomainError as error:
        raise _under("invoice", error) from None
    _recurring_prices_agree(session, principal.account_id, data)
    start, end = recurrence.period(rule, 0)
    return {"input": data.model_dump(mode="json", warnings=False),
            "first_invoice": {name: value for name, value in first.items() if name not in ("created", "updated")},
            "time_zone": time_zone, "first_run": iso(recurrence.next_run(rule, time_zone, 0)),
            "first_period": {"start": start.isoformat(), "end": end.isoformat()}}


def create_schedule(session: Session, principal: Principal, data: ScheduleCreate, *,
                    confirmed: Confirmed | None = None) -> InvoiceSchedule:
    """A new active schedule, its first run at the start date's `run_at`; the template is checked now
    as an invoice would be (customer billable, prices of the account). `confirmed`: what the person was
    asked (`what_it_makes`), when a surface asked."""
    shown = what_it_makes(session, principal, data)
    if confirmed is not None:
        check(confirmed, shown, "schedule", None)
    rule, time_zone = data.recurrence, shown["time_zone"]
    schedule = InvoiceSchedule(
        account_id=principal.account_id, customer_id=ids.parse("customer", shown["first_invoice"]["customer"]),
        mode=data.mode, template=data.invoice.stored(), recurrence=rule.stored(), time_zone=time_zone,
        catch_up=data.catch_up, max_attempts=data.max_attempts, next_run_at=recurrence.next_run(rule, time_zone, 0),
        **acting.creator_fields(principal))
    session.add(schedule)
    record(session, schedule, "invoice_schedule.created", principal.event_meta())
    return schedule


def _interval_length(unit: str, count: int) -> tuple[str, int]:
    """An interval in days or months, so that equal intervals compare equal (a year is 12 months)."""
    days = {"day": 1, "week": 7}
    if unit in days:
        return "day", days[unit] * count
    return "month", {"month": 1, "quarter": 3, "year": 12}[unit] * count


def _recurring_prices_agree(session: Session, account_id: uuid.UUID, data: ScheduleCreate) -> None:
    """A recurring price bills per its own interval: the schedule must run at that interval (as a
    subscription's prices share its interval), else the invoice would bill a month for a week."""
    runs_every = _interval_length(data.recurrence.interval, data.recurrence.interval_count)
    for index, item in enumerate(data.invoice.items):
        price_id = ids.try_parse("price", item.price) if item.price else None
        price = session.get(Price, price_id) if price_id else None
        if price is None or price.account_id != account_id or price.type != "recurring" or not price.recurring_interval:
            continue
        count = price.recurring_interval_count or 1
        if _interval_length(price.recurring_interval, count) != runs_every:
            every = price.recurring_interval if count == 1 else f"{count} {price.recurring_interval}s"
            raise ValidationFailed.at(f"invoice.items.{index}.price", (
                f"is a recurring price billed every {every}, not at this schedule's interval: use a price of the "
                "schedule's interval, a one-time price, or a line of your own"))


def get_schedule(session: Session, account_id: uuid.UUID, id_text: str, *, lock: bool = False) -> InvoiceSchedule:
    return lookup.owned(session, InvoiceSchedule, "invoice_schedule", account_id, id_text, noun=NOUN, lock=lock)


def list_schedules(session: Session, account_id: uuid.UUID, query: ScheduleListQuery) -> Page:
    statement = select(InvoiceSchedule).where(InvoiceSchedule.account_id == account_id)
    filters: dict = {}
    if query.customer:
        customer = executor.within(session, invoices.account_customer, account_id, query.customer)
        statement = statement.where(InvoiceSchedule.customer_id == customer.id)
        filters["customer"] = str(customer.id)
    if query.status:
        statement = statement.where(InvoiceSchedule.status == query.status)
        filters["status"] = query.status
    return paginate(session, statement, InvoiceSchedule, kind="invoice_schedules", account_id=account_id,
                    filters=filters, cursor=query.cursor, limit=query.limit)


def list_runs(session: Session, account_id: uuid.UUID, id_text: str, cursor: str | None, limit: int | None) -> Page:
    """A schedule's periods made or skipped so far, newest first."""
    schedule = get_schedule(session, account_id, id_text)
    statement = select(ScheduleRun).where(ScheduleRun.account_id == account_id, ScheduleRun.schedule_id == schedule.id)
    return paginate(session, statement, ScheduleRun, kind="schedule_runs", account_id=account_id,
                    filters={"schedule": str(schedule.id)}, cursor=cursor, limit=limit, created_column="created_at")


def _require_status(schedule: InvoiceSchedule, allowed: tuple[str, ...], action: str) -> None:
    if schedule.status not in allowed:
        raise InvalidState(f"Invoice schedule {ids.public_id('invoice_schedule', schedule.id)} is {schedule.status}: "
                           f"only {' or '.join(allowed)} schedules can be {action}.")


def pause(session: Session, principal: Principal, id_text: str, data: SchedulePause | None = None) -> InvoiceSchedule:
    schedule = get_schedule(session, principal.account_id, id_text, lock=True)
    _require_status(schedule, ("active",), "paused")
    _require_mode(principal, schedule.mode)  # stopping what a schedule sends takes what sending takes
    reason = (data.reason or "").strip() if data and data.reason else None
    set_paused(session, schedule, reason or "Paused by request.", principal.event_meta())
    return schedule


def set_paused(session: Session, schedule: InvoiceSchedule, reason: str, meta: dict) -> None:
    """`schedule` paused, saying why (by a person, or because a run could not act), with its event."""
    schedule.status, schedule.pause_reason, schedule.paused_at = "paused", reason[:1000], now()
    _touched(session, schedule)
    record(session, schedule, "invoice_schedule.paused", {**meta, "reason": schedule.pause_reason})


def resume(session: Session, principal: Principal, id_text: str, data: ScheduleResume | None = None) -> InvoiceSchedule:
    """Active again, acting from now on as `principal`; its next period due at once when its time has
    passed (periods missed meanwhile made as `catch_up` says, or skipped when asked)."""
    schedule = get_schedule(session, principal.account_id, id_text, lock=True)
    _require_status(schedule, ("paused",), "resumed")
    _require_mode(principal, schedule.mode)
    for name, value in acting.creator_fields(principal).items():
        setattr(schedule, name, value)
    schedule.status, schedule.pause_reason, schedule.paused_at, schedule.attempts = "active", None, None, 0
    moment = now()
    if data is not None and data.skip_missed:
        skip_passed(session, schedule, moment, keep_latest=False)
    schedule.next_run_at = recurrence.next_run(recurrence.from_stored(schedule.recurrence), schedule.time_zone,
                                               schedule.next_index)
    _touched(session, schedule)
    record(session, schedule, "invoice_schedule.resumed", principal.event_meta())
    if schedule.next_run_at is None:
        complete(session, schedule, principal.event_meta())
    return schedule


def skip_passed(session: Session, schedule: InvoiceSchedule, moment: datetime, *, keep_latest: bool) -> int:
    """Record as skipped the periods whose run time passed by `moment`: all of them, or (`keep_latest`)
    all but the latest, which is then the one to make. How many were skipped."""
    rule, skipped = recurrence.from_stored(schedule.recurrence), 0
    while True:
        probe = schedule.next_index + (1 if keep_latest else 0)
        due_at = recurrence.next_run(rule, schedule.time_zone, probe)
        bounds = recurrence.period(rule, schedule.next_index)
        if due_at is None or due_at > moment or bounds is None:
            return skipped
        session.add(ScheduleRun(account_id=schedule.account_id, schedule_id=schedule.id,
                                period_index=schedule.next_index, period_start=bounds[0], period_end=bounds[1],
                                scheduled_for=recurrence.run_moment(rule, schedule.time_zone, bounds[0]),
                                status="skipped"))
        schedule.next_index += 1
        skipped += 1


def cancel(session: Session, principal: Principal, id_text: str, *, confirmed: Confirmed | None = None) -> InvoiceSchedule:
    """Cancelled for good. `confirmed`: what the person was asked (the schedule as `schedule_to_api` shows
    it, read under its lock here), when a surface asked."""
    schedule = get_schedule(session, principal.account_id, id_text, lock=True)
    _require_status(schedule, ("active", "paused"), "cancelled")
    _require_mode(principal, schedule.mode)
    if confirmed is not None:
        check(confirmed, jsonable(schedule_to_api(session, schedule)), "cancel_schedule", None)
    schedule.status, schedule.cancelled_at, schedule.next_run_at = "cancelled", now(), None
    _touched(session, schedule)
    record(session, schedule, "invoice_schedule.cancelled", principal.event_meta())
    return schedule


def complete(session: Session, schedule: InvoiceSchedule, meta: dict) -> None:
    """The schedule's last period is made: nothing more to run."""
    schedule.status, schedule.next_run_at = "completed", None
    _touched(session, schedule)
    record(session, schedule, "invoice_schedule.completed", meta)


def _touched(session: Session, schedule: InvoiceSchedule) -> None:
    schedule.updated = now()
    session.add(schedule)


def record(session: Session, schedule: InvoiceSchedule, type: str, meta: dict | None) -> None:
    """An event of the schedule (its history, and webhooks), `data.object` the schedule as it is now."""
    session.flush()
    latest = session.exec(select(events.latest_time(schedule.id))).one()
    event = events.new_event(schedule, type, meta, schedule_to_api(session, schedule), latest)
    executor.within(session, events.write, event)


# --- how a schedule is shown ---------------------------------------------------------------------


def _period(start, end) -> dict | None:
    return {"start": start.isoformat(), "end": end.isoformat()} if start is not None else None


def _creator(schedule: InvoiceSchedule) -> dict:
    shown: dict = {"actor": schedule.created_by_actor}
    if schedule.created_by_api_key_id:
        shown["api_key_id"] = str(schedule.created_by_api_key_id)
    if schedule.created_by_client_id:
        shown["client_id"] = schedule.created_by_client_id
    if schedule.created_by_user_id:
        shown["user_id"] = str(schedule.created_by_user_id)
    return shown


def invoices_made(session: Session, schedule_ids: list[uuid.UUID]) -> dict[uuid.UUID, int]:
    if not schedule_ids:
        return {}
    rows = session.exec(select(ScheduleRun.schedule_id, func.count()).where(
        ScheduleRun.schedule_id.in_(schedule_ids), ScheduleRun.status == "invoiced").group_by(ScheduleRun.schedule_id))
    return dict(rows.all())


def schedule_to_api(session: Session, schedule: InvoiceSchedule, made: int | None = None) -> dict:
    rule = recurrence.from_stored(schedule.recurrence)
    upcoming = recurrence.period(rule, schedule.next_index) if schedule.status in ("active", "paused") else None
    if made is None:
        made = invoices_made(session, [schedule.id]).get(schedule.id, 0)
    remaining = None
    if rule.count is not None:
        remaining = max(0, rule.count - schedule.next_index) if schedule.status in ("active", "paused") else 0
    return {
        "id": ids.public_id("invoice_schedule", schedule.id), "object": "invoice_schedule", "status": schedule.status,
        "customer": ids.public_id("customer", schedule.customer_id), "mode": schedule.mode,
        "invoice": template_to_api(schedule.template), "recurrence": schedule.recurrence, "time_zone": schedule.time_zone,
        "catch_up": schedule.catch_up, "max_attempts": schedule.max_attempts,
        "summary": recurrence.in_words(rule),
        "next_run": iso(schedule.next_run_at) if schedule.status == "active" else None,
        "next_period": _period(*upcoming) if upcoming else None,
        "invoices_made": made, "periods_done": schedule.next_index, "periods_remaining": remaining,
        "last_failure": ({"reason": schedule.last_error, "at": iso(schedule.last_error_at),
                          "attempts": schedule.attempts} if schedule.last_error else None),
        "pause_reason": schedule.pause_reason, "paused_at": iso(schedule.paused_at),
        "cancelled_at": iso(schedule.cancelled_at), "created_by": _creator(schedule),
        "created": iso(schedule.created), "updated": iso(schedule.updated),
    }


NUMBERS = ("quantity", "discount_percent", "tax_rate")


def template_to_api(template: dict) -> dict:
    """The stored template as the API shows invoices: quantities and percentages as JSON numbers (kept
    as exact decimal text in the database)."""
    items = [{name: Decimal(str(value)) if name in NUMBERS and value is not None else value
              for name, value in item.items()} for item in template.get("items", [])]
    return {**template, "items": items}


def schedules_to_api(session: Session, rows: list[InvoiceSchedule]) -> list[dict]:
    made = invoices_made(session, [row.id for row in rows])
    return [schedule_to_api(session, row, made.get(row.id, 0)) for row in rows]


def run_to_api(run: ScheduleRun) -> dict:
    email = None
    if run.email_status is not None:
        email = {"status": run.email_status, "error": run.email_error}
    return {
        "id": ids.public_id("schedule_run", run.id), "object": "schedule_run",
        "schedule": ids.public_id("invoice_schedule", run.schedule_id), "period_index": run.period_index,
        "period": _period(run.period_start, run.period_end), "scheduled_for": iso(run.scheduled_for),
        "status": run.status, "invoice": ids.public_id("invoice", run.invoice_id) if run.invoice_id else None,
        "email": email, "created": iso(run.created_at),
    }
