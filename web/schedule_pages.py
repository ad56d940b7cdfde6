"""Invoice schedules (recurring invoices) in the dashboard: the list, a new schedule (its customer, lines,
recurrence, time zone, run time and mode on one form), a schedule's page (what each run makes, the next
runs, the runs so far, its latest failure) with pause, resume, cancel (confirmed first) and run now.
Every read and change runs an operation of `operations.schedules` as the signed-in person (web.acting);
only the amount a run would come to is asked of the core directly, read-only, as live totals are."""

from __future__ import annotations

import re
from contextlib import closing
from dataclasses import dataclass
from datetime import date, datetime
from urllib.parse import urlencode
from zoneinfo import ZoneInfo, available_timezones

from starlette.responses import Response
from starlette.routing import Route

from core.base.clock import now
from core.base.db import new_session, transaction
from core.base.errors import DomainError, FieldError, NotFound, ValidationFailed
from core.base.money import format_money
from core.base.validation import failed
from core.billing import invoices as core_invoices
from core.billing.business import find_profile
from core.billing.invoice_lines import UNIT_CODES
from core.schedules import recurrence
from core.schedules import schedules as core_schedules
from core.schedules.schedule_inputs import InvoiceTemplate
from operations import customers as customer_operations
from operations import products as product_operations
from operations import schedules as schedule_operations
from pages.routing import Visit, errors_at, errors_of, page, redirect
from web.acting import act, new_form_key, principal_of
from web.invoice_pages import PICKER_LIMIT, customer_choices, typed_money
from web.rendering import not_found, notice_of, render

STATUS_TABS = (("", "All"), ("active", "Active"), ("paused", "Paused"), ("completed", "Completed"),
               ("cancelled", "Cancelled"))
MODE_LABELS = {"draft": "Draft for review", "finalize": "Finalize", "finalize_and_send": "Finalize and send"}
MODE_HINTS = {
    "draft": "Each invoice waits as a draft for you to review and finalize it.",
    "finalize": "Each invoice is finalized (numbered) when it is made; you send it yourself.",
    "finalize_and_send": "Each invoice is finalized and e-mailed to the customer when it is made.",
}
# What running a schedule of each mode takes (making, pausing, resuming, cancelling or running one): the
# pages offer those actions, and the modes, only to a role that allows them.
MODE_SCOPES = {mode: core_schedules.required_scopes(mode) for mode in MODE_LABELS}
CATCH_UP_LABELS = {"all": "Make every missed invoice, oldest first", "latest": "Make only the latest missed invoice"}
FREQUENCIES = (("week", "Weekly"), ("weeks", "Every N weeks"), ("month", "Monthly"), ("quarter", "Quarterly"),
               ("year", "Yearly"))
ENDS = (("never", "Never (until cancelled)"), ("date", "On a date"), ("count", "After a number of invoices"))
DAY_CHOICES = [("", "The start date's day"), *((str(day), str(day)) for day in range(1, 32)),
               ("last", "The last day of the month")]
EMAIL_LABELS = {"pending": "Waiting to be sent", "sending": "Sending", "sent": "Sent", "failed": "Failed",
                "unknown": "Unknown (sending stopped)"}
NEXT_RUNS_SHOWN = 6
LINES_ON_FORM = 3  # the rows a new form shows; "Add a line" shows one more
LINES_ON_FORM_MAX = 20  # a form holds at most pages.routing.MAX_FORM_FIELDS fields: five a line and the rest
LINE_FIELDS = ("price", "description", "quantity", "unit", "unit_amount", "tax_rate")
FORM_FIELDS = ("customer", "invoice.currency", "invoice.days_until_due", "invoice.description", "invoice.footer",
               "frequency", "recurrence.interval_count", "recurrence.day_of_month", "recurrence.start_date", "ends",
               "recurrence.end_date", "recurrence.count", "recurrence.run_at", "time_zone", "mode", "catch_up")
MULTI_LINE_FIELDS = ("invoice.description", "invoice.footer")
LABELS = {
    "customer": "Customer", "invoice.currency": "Currency", "invoice.days_until_due": "Days until due",
    "invoice.description": "Notes", "invoice.footer": "Footer", "invoice.items": "Lines", "invoice": "Invoice",
    "frequency": "How often", "recurrence.interval": "How often", "recurrence.interval_count": "Every how many weeks",
    "recurrence.day_of_month": "Day of the month", "recurrence.start_date": "Start date", "ends": "Ends",
    "recurrence.end_date": "End date", "recurrence.count": "Number of invoices", "recurrence.run_at": "Run time",
    "recurrence": "Recurrence", "time_zone": "Time zone", "mode": "Mode", "catch_up": "Missed runs",
}
NOTICES = {
    "created": "The schedule is created. Its first invoice is made at the first run below.",
    "paused": "The schedule is paused: nothing runs until you resume it.",
    "resumed": "The schedule is active again.",
    "cancelled": "The schedule is cancelled: it makes no more invoices. The invoices it made stay.",
    "run": "The next period's invoice is made: it is the newest run below.",
}


def schedule_id_of(visit: Visit) -> str:
    return visit.path_params["schedule_id"]


def schedule_url(schedule_id: str, notice: str | None = None) -> str:
    return f"/schedules/{schedule_id}" + (f"?notice={notice}" if notice else "")


def load_schedule(visit: Visit) -> dict:
    return act(visit, schedule_operations.get_invoice_schedule, params={"id": schedule_id_of(visit)})


# --- what a schedule reads as -------------------------------------------------------------------

def local_time(moment: datetime | str | None, time_zone: str) -> str:
    """A moment in the schedule's time zone: `2027-01-01 08:00 CET`."""
    if not moment:
        return ""
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    local = moment.astimezone(ZoneInfo(time_zone))
    return f"{local:%Y-%m-%d %H:%M} {local.tzname()}"


def amount_per_run(visit: Visit, schedule: dict) -> tuple[int, str] | None:
    """What each run's invoice would total (tax included) and its currency, as the core would make it
    today (read-only, nothing saved); None when it cannot be made now (a price gone, a customer archived)."""
    try:
        template = InvoiceTemplate.model_validate(schedule["invoice"])
        data = template.invoice_input(schedule["customer"], now().date())
        with closing(new_session(read_only=True)) as session:
            preview = core_invoices.preview_invoice(session, principal_of(visit), data)
    except (DomainError, ValueError):
        return None
    return preview["total"], preview["currency"]


def money_per_run(visit: Visit, schedule: dict) -> str:
    amount = amount_per_run(visit, schedule)
    return format_money(*amount) if amount is not None else "—"


def customer_names(visit: Visit, wanted: set[str]) -> dict[str, str]:
    """Customer id → name, archived ones included."""
    names = {row["id"]: row["name"] for row in customer_choices(visit, include_archived=True)}
    for customer_id in wanted - names.keys():  # beyond the first page of customers
        try:
            names[customer_id] = act(visit, customer_operations.get_customer, params={"id": customer_id})["name"]
        except DomainError:
            names[customer_id] = customer_id
    return names


@dataclass(frozen=True)
class NextRun:
    """A period still to come: the days it bills and when its invoice is made (the schedule's local time)."""

    index: int
    start: date
    end: date
    runs_at: str


def next_runs(schedule: dict, shown: int = NEXT_RUNS_SHOWN) -> list[NextRun]:
    """The next `shown` periods of an active or paused schedule (fewer when it ends before)."""
    if schedule["status"] not in ("active", "paused"):
        return []
    rule = recurrence.from_stored(schedule["recurrence"])
    found = []
    for index in range(schedule["periods_done"], schedule["periods_done"] + shown):
        bounds = recurrence.period(rule, index)
        if bounds is None:
            break
        moment = recurrence.run_moment(rule, schedule["time_zone"], bounds[0])
        found.append(NextRun(index, bounds[0], bounds[1], local_time(moment, schedule["time_zone"])))
    return found


def price_names(visit: Visit) -> dict[str, str]:
    """Price id → `Consulting · 150.00 USD / month`, every price of the account (archived ones too, so a
    schedule's lines read even once its price is gone from the catalogue)."""
    products = {p["id"]: p["name"] for p in act(visit, product_operations.list_products,
                                                query={"limit": PICKER_LIMIT})["data"]}
    prices = act(visit, product_operations.list_prices, query={"limit": PICKER_LIMIT})["data"]
    return {price["id"]: " · ".join(filter(None, (
        products.get(price["product"], "Product"), price["nickname"],
        format_money(price["unit_amount"], price["currency"])
        + (f" / {price['recurring']['interval']}" if price["recurring"] else "")))) for price in prices}


def active_price_options(visit: Visit) -> list[tuple[str, str]]:
    """The prices a new schedule's lines can bill: active ones of active products."""
    products = {p["id"]: p["name"] for p in act(visit, product_operations.list_products,
                                                query={"active": "true", "limit": PICKER_LIMIT})["data"]}
    prices = act(visit, product_operations.list_prices, query={"active": "true", "limit": PICKER_LIMIT})["data"]
    return [(price["id"], " · ".join(filter(None, (
        products[price["product"]], price["nickname"],
        format_money(price["unit_amount"], price["currency"])
        + (f" / {price['recurring']['interval']}" if price["recurring"] else "")))))
        for price in prices if price["product"] in products]


# --- the list ------------------------------------------------------------------------------------

def schedule_list(visit: Visit) -> Response:
    params = visit.request.query_params
    status = params.get("status", "")[:20]
    cursor = params.get("cursor", "")[:2000]
    errors: dict[str, str] = {}
    try:
        result = act(visit, schedule_operations.list_invoice_schedules, query={"status": status, "cursor": cursor})
    except ValidationFailed as exc:
        result, errors = {"data": [], "next_cursor": None}, errors_of(exc)
    rows = result["data"]
    names = customer_names(visit, {row["customer"] for row in rows}) if rows else {}
    chosen = {"status": status} if status else {}
    next_url = "/schedules?" + urlencode(chosen | {"cursor": result["next_cursor"]}) if result["next_cursor"] else None
    first_url = "/schedules" + (f"?{urlencode(chosen)}" if chosen else "") if cursor else None
    tabs = [(label, "/schedules?" + urlencode({"status": value}) if value else "/schedules", value == status)
            for value, label in STATUS_TABS]
    shown = [{"schedule": row, "customer": names.get(row["customer"], row["customer"]),
              "amount": money_per_run(visit, row),
              "next_run": local_time(row["next_run"], row["time_zone"])} for row in rows]
    return render(visit.request, "schedules.html", rows=shown, tabs=tabs, status=status, errors=errors,
                  mode_labels=MODE_LABELS, next_url=next_url, first_url=first_url, notice=notice_of(visit, NOTICES))


# --- a new schedule ------------------------------------------------------------------------------

def _default_time_zone(visit: Visit) -> str:
    with transaction() as session:
        return core_schedules.default_time_zone(session, visit.account_id)


def _new_values(visit: Visit, time_zone: str) -> dict:
    customer = visit.request.query_params.get("customer", "")[:100]
    start = now().astimezone(ZoneInfo(time_zone)).date()
    values = {name: "" for name in FORM_FIELDS} | {
        "customer": customer, "frequency": "month", "recurrence.interval_count": "2", "recurrence.start_date":
        start.isoformat(), "ends": "never", "recurrence.run_at": "08:00", "time_zone": time_zone, "mode": "draft",
        "catch_up": "all", "invoice.days_until_due": "30"}
    values["lines"] = [_blank_line() for _ in range(LINES_ON_FORM)]
    return values


def _blank_line() -> dict[str, str]:
    return {name: "" for name in LINE_FIELDS} | {"quantity": "1", "unit": "NOS"}


def _submitted(visit: Visit) -> dict:
    values: dict = {name: visit.text(name, 5001, strip=name not in MULTI_LINE_FIELDS) for name in FORM_FIELDS}
    count = visit.text("line_count", 10)
    count = min(int(count), LINES_ON_FORM_MAX) if count.isdigit() and int(count) > 0 else LINES_ON_FORM
    values["lines"] = [{name: visit.text(f"items.{index}.{name}", 5001, strip=name != "description")
                        for name in LINE_FIELDS} for index in range(count)]
    return values


def _line_filled(line: dict[str, str]) -> bool:
    return bool(line["price"] or line["description"].strip() or line["unit_amount"])


def _item(line: dict[str, str], index: int, currency: str) -> dict:
    item: dict = {}
    for name in ("price", "description", "unit", "quantity", "tax_rate"):
        if line[name].strip():
            item[name] = line[name]
    if line["unit_amount"]:
        item["unit_amount"] = typed_money(line["unit_amount"], currency, f"items.{index}.unit_amount")
    return item


def _body(values: dict, currency: str, rows: list[int]) -> dict:
    """The form as `POST /invoice-schedules` takes it; `rows` gets, for each item sent, the form row it
    came from (blank rows are left out), to put an error back beside it."""
    problems: list[FieldError] = []
    items = []
    for index, line in enumerate(values["lines"]):
        if not _line_filled(line):
            continue
        try:
            items.append(_item(line, index, currency))
        except ValidationFailed as exc:
            problems += exc.errors
        rows.append(index)
    if problems:
        raise failed(problems)
    if not items:
        raise ValidationFailed.at("invoice.items", "add at least one line: a price, or a description and an amount")
    invoice: dict = {"items": items}
    for name in ("currency", "days_until_due", "description", "footer"):
        value = values[f"invoice.{name}"]
        if value.strip():
            invoice[name] = int(value) if name == "days_until_due" and value.isdigit() else value
    frequency = values["frequency"]
    rule: dict = {"interval": "week" if frequency == "weeks" else frequency,
                  "start_date": values["recurrence.start_date"] or None}
    if frequency == "weeks":
        count = values["recurrence.interval_count"]
        rule["interval_count"] = int(count) if count.isdigit() else count
    elif frequency in ("month", "quarter", "year") and values["recurrence.day_of_month"]:
        day = values["recurrence.day_of_month"]
        rule["day_of_month"] = int(day) if day.isdigit() else day
    if values["ends"] == "date":
        rule["end_date"] = values["recurrence.end_date"] or None
        if rule["end_date"] is None:
            raise ValidationFailed.at("recurrence.end_date", "give the day after which no period starts")
    elif values["ends"] == "count":
        count = values["recurrence.count"]
        if not count:
            raise ValidationFailed.at("recurrence.count", "give how many invoices to make")
        rule["count"] = int(count) if count.isdigit() else count
    if values["recurrence.run_at"]:
        rule["run_at"] = values["recurrence.run_at"]
    return {"customer": values["customer"], "invoice": invoice, "recurrence": rule, "mode": values["mode"],
            "time_zone": values["time_zone"] or None, "catch_up": values["catch_up"] or "all"}


ITEM_PATH = re.compile(r"^(?:invoice\.)?items(?:\.|\[)(\d+)\]?\.?(\w*)")


def _field_of(path: str, rows: list[int]) -> str:
    """The form field an error belongs beside: `invoice.items.0.price` (or `invoice.items[0].price`) is the
    price of the form row that became item 0; `recurrence.interval` is the frequency."""
    match = ITEM_PATH.match(path)
    if match:
        index, name = int(match.group(1)), match.group(2) or "description"
        row = rows[index] if path.startswith("invoice.") and index < len(rows) else index
        return f"items.{row}.{name if name in LINE_FIELDS else 'description'}"
    if path == "recurrence.interval":
        return "frequency"
    if path == "customer":
        return "customer"
    return path


def _labels(values: dict) -> dict[str, str]:
    labels = dict(LABELS)
    names = {"price": "price", "description": "description", "quantity": "quantity", "unit": "unit",
             "unit_amount": "unit price", "tax_rate": "tax rate"}
    for index in range(len(values["lines"])):
        labels |= {f"items.{index}.{name}": f"Line {index + 1}: {label}" for name, label in names.items()}
    return labels


def _form_page(visit: Visit, values: dict, errors: dict, status_code: int = 200) -> Response:
    with transaction() as session:
        account_id = visit.account_id
        profile = find_profile(session, account_id)
        default_zone = core_schedules.default_time_zone(session, account_id)
    return render(visit.request, "schedule_new.html", status_code=status_code, values=values, errors=errors,
                  labels=_labels(values), customers=customer_choices(visit, include_archived=False),
                  price_options=active_price_options(visit), unit_choices=[(code, code) for code in UNIT_CODES],
                  frequencies=FREQUENCIES, ends=ENDS, day_choices=DAY_CHOICES, mode_labels=MODE_LABELS,
                  mode_hints=MODE_HINTS, mode_scopes=MODE_SCOPES, catch_up_labels=CATCH_UP_LABELS, default_zone=default_zone,
                  default_currency=profile.currency if profile else "", zones=sorted(available_timezones()),
                  lines_max=LINES_ON_FORM_MAX, form_key=new_form_key())


def new_schedule(visit: Visit) -> Response:
    return _form_page(visit, _new_values(visit, _default_time_zone(visit)), {})


def create_schedule(visit: Visit) -> Response:
    values = _submitted(visit)
    if visit.text("step", 20) == "add_line":  # one more row, nothing created
        if len(values["lines"]) < LINES_ON_FORM_MAX:
            values["lines"].append(_blank_line())
        return _form_page(visit, values, {})
    rows: list[int] = []
    with transaction() as session:
        profile = find_profile(session, visit.account_id)
    currency = (values["invoice.currency"] or (profile.currency if profile else "") or "USD").upper()[:3]
    try:
        created = act(visit, schedule_operations.create_invoice_schedule, body=_body(values, currency, rows),
                      keyed=True)
    except NotFound as exc:
        return _form_page(visit, values, _not_found_errors(exc, values), status_code=422)
    except DomainError as exc:
        return _form_page(visit, values, errors_at(exc, lambda path: _field_of(path, rows)), status_code=exc.status)
    return redirect(schedule_url(created["id"], "created"))


def _not_found_errors(exc: NotFound, values: dict) -> dict[str, str]:
    """A 404 of the form's ids (it names no field): beside the line whose price it names, else the customer."""
    named = re.search(r"No such price: (\S+)", exc.detail)
    if named:
        for index, line in enumerate(values["lines"]):
            if line["price"] == named.group(1):
                return {f"items.{index}.price": "is not one of your prices"}
    return {"customer": "is not one of your customers"}


# --- one schedule --------------------------------------------------------------------------------

def runs_of(visit: Visit, schedule_id: str, cursor: str) -> dict:
    return act(visit, schedule_operations.list_schedule_runs, params={"id": schedule_id},
               query={"limit": "50", "cursor": cursor})


def _detail_page(visit: Visit, *, errors: dict | None = None, status_code: int = 200) -> Response:
    try:
        schedule = load_schedule(visit)
    except NotFound:
        return not_found(visit, "schedule", "/schedules")
    cursor = visit.request.query_params.get("cursor", "")[:2000] if visit.request.method == "GET" else ""
    try:
        runs = runs_of(visit, schedule["id"], cursor)
    except ValidationFailed:
        runs = runs_of(visit, schedule["id"], "")
    names = customer_names(visit, {schedule["customer"]})
    prices = price_names(visit)
    currency = schedule["invoice"].get("currency")
    amount = amount_per_run(visit, schedule)
    due_days = schedule["invoice"].get("days_until_due")
    return render(visit.request, "schedule.html", status_code=status_code, schedule=schedule,
                  customer=names.get(schedule["customer"], schedule["customer"]), prices=prices,
                  amount=format_money(*amount) if amount else None, currency=amount[1] if amount else currency,
                  due_days=30 if due_days is None else due_days,
                  next_runs=next_runs(schedule), runs=runs["data"],
                  next_runs_url=schedule_url(schedule["id"]) + "?" + urlencode({"cursor": runs["next_cursor"]})
                  if runs["next_cursor"] else None, paged=bool(cursor),
                  next_run=local_time(schedule["next_run"], schedule["time_zone"]),
                  failure_at=local_time(schedule["last_failure"]["at"], schedule["time_zone"])
                  if schedule["last_failure"] else "",
                  paused_at=local_time(schedule["paused_at"], schedule["time_zone"]),
                  cancelled_at=local_time(schedule["cancelled_at"], schedule["time_zone"]),
                  mode_labels=MODE_LABELS, mode_hints=MODE_HINTS, mode_scopes=MODE_SCOPES, catch_up_labels=CATCH_UP_LABELS,
                  email_labels=EMAIL_LABELS, errors=errors or {}, form_key=new_form_key(),
                  notice=notice_of(visit, NOTICES))


def schedule_detail(visit: Visit) -> Response:
    return _detail_page(visit)


def _action(visit: Visit, operation, body: dict | None, notice: str) -> Response:
    try:
        act(visit, operation, params={"id": schedule_id_of(visit)}, body=body, keyed=True)
    except NotFound:
        return not_found(visit, "schedule", "/schedules")
    except DomainError as exc:
        return _detail_page(visit, errors=errors_of(exc), status_code=exc.status)
    return redirect(schedule_url(schedule_id_of(visit), notice))


def pause_schedule(visit: Visit) -> Response:
    reason = visit.text("reason", 1001)
    return _action(visit, schedule_operations.pause_invoice_schedule, {"reason": reason or None}, "paused")


def resume_schedule(visit: Visit) -> Response:
    skip = visit.text("skip_missed", 10) == "true"
    return _action(visit, schedule_operations.resume_invoice_schedule, {"skip_missed": skip}, "resumed")


def run_schedule(visit: Visit) -> Response:
    return _action(visit, schedule_operations.run_invoice_schedule, None, "run")


def _cancel_page(visit: Visit, schedule: dict, errors: dict, status_code: int = 200) -> Response:
    names = customer_names(visit, {schedule["customer"]})
    return render(visit.request, "schedule_cancel.html", status_code=status_code, schedule=schedule,
                  customer=names.get(schedule["customer"], schedule["customer"]), errors=errors,
                  mode_scopes=MODE_SCOPES, form_key=new_form_key())


def confirm_cancel(visit: Visit) -> Response:
    try:
        schedule = load_schedule(visit)
    except NotFound:
        return not_found(visit, "schedule", "/schedules")
    if schedule["status"] not in ("active", "paused"):
        return redirect(schedule_url(schedule["id"]))
    return _cancel_page(visit, schedule, {})


def cancel_schedule(visit: Visit) -> Response:
    try:
        schedule = load_schedule(visit)
    except NotFound:
        return not_found(visit, "schedule", "/schedules")
    try:
        act(visit, schedule_operations.cancel_invoice_schedule, params={"id": schedule["id"]}, keyed=True)
    except DomainError as exc:
        return _cancel_page(visit, schedule, errors_of(exc), status_code=exc.status)
    return redirect(schedule_url(schedule["id"], "cancelled"))


def routes() -> list[Route]:
    return [
        page("/schedules", get=schedule_list),
        page("/schedules/new", get=new_schedule, post=create_schedule),
        page("/schedules/{schedule_id}", get=schedule_detail),
        page("/schedules/{schedule_id}/pause", post=pause_schedule),
        page("/schedules/{schedule_id}/resume", post=resume_schedule),
        page("/schedules/{schedule_id}/run", post=run_schedule),
        page("/schedules/{schedule_id}/cancel", get=confirm_cancel, post=cancel_schedule),
    ]
