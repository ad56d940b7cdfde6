"""Settings → Reminders: the account's payment reminder policy on one form (on or off, the steps with
their e-mails, the late fee and the reference rate), read with `get_reminder_policy` and saved whole
with `replace_reminder_policy`, run as the signed-in person (web.acting) like REST's PUT. Adding or
removing a step shows the form again with one row more or less, saving nothing."""

from __future__ import annotations

import re

from starlette.responses import Response
from starlette.routing import Route

from core.base.db import transaction
from core.base.errors import DomainError, ValidationFailed
from core.base.money import format_money
from core.billing.business import find_profile
from core.schedules.reminder_policy import (
    BODY_MAX,
    PLACEHOLDERS,
    STATUTORY_COMPENSATION_EUR,
    STATUTORY_POINTS,
    STEPS_MAX,
    SUBJECT_MAX,
)
from operations import reminders as reminder_operations
from pages.routing import Visit, errors_at, page, redirect
from web.acting import act
from web.invoice_pages import major_text, typed_money
from web.rendering import notice_of, render

PATH = "/settings/reminders"
FEE_KINDS = ("none", "fixed", "statutory")
STEP_FIELDS = ("days", "subject", "body")
WHOLE_DAYS = re.compile(r"^[+-]?\d{1,4}$")
NOTICES = {"saved": "The reminder policy is saved."}
STATUTORY_EXPLAINED = (
    f"Statutory (EU Late Payment Directive 2011/7/EU): interest at the reference rate plus "
    f"{STATUTORY_POINTS:f} percentage points a year on what is due, for each day overdue, and a fixed "
    f"compensation of {format_money(STATUTORY_COMPENSATION_EUR, 'EUR')} for recovery costs on EUR invoices.")


def _currency(visit: Visit) -> str:
    """The business's currency, in which a fixed fee is typed."""
    with transaction() as session:
        profile = find_profile(session, visit.account_id)
    return profile.currency if profile else "EUR"


def _values_of(policy: dict, currency: str) -> dict:
    """The form as the saved (or default) policy fills it."""
    fee = policy.get("late_fee") or {}
    return {
        "active": bool(policy["active"]),
        "steps": [{"days": str(step["days"]), "subject": step["subject"], "body": step["body"],
                   "late_fee": bool(step["late_fee"])} for step in policy["steps"]],
        "late_fee.kind": fee.get("kind") or "none",
        "late_fee.amount": major_text(fee.get("amount"), currency) if fee.get("amount") else "",
        "reference_rate": policy.get("reference_rate") or "",
    }


def _blank_step() -> dict:
    return {"days": "", "subject": "", "body": "", "late_fee": False}


def _submitted(visit: Visit) -> dict:
    count = visit.text("step_count", 10)
    count = min(int(count), STEPS_MAX + 1) if count.isdigit() else 0
    steps = [{"days": visit.text(f"steps.{index}.days", 20), "subject": visit.text(f"steps.{index}.subject",
                                                                                    SUBJECT_MAX + 1),
              "body": visit.text(f"steps.{index}.body", BODY_MAX + 1, strip=False),
              "late_fee": visit.text(f"steps.{index}.late_fee", 10) == "true"} for index in range(count)]
    kind = visit.text("late_fee.kind", 20)
    return {"active": visit.text("active", 10) == "true", "steps": steps,
            "late_fee.kind": kind if kind in FEE_KINDS else "none",
            "late_fee.amount": visit.text("late_fee.amount", 40), "reference_rate": visit.text("reference_rate", 40)}


def _filled(step: dict) -> bool:
    return bool(step["days"] or step["subject"] or step["body"].strip())


def _body(values: dict, currency: str, rows: list[int]) -> dict:
    """The form as `PUT /reminder-policy` takes it; `rows` gets, for each step sent, the form row it came
    from (empty rows are left out), to put an error back beside it."""
    steps = []
    for index, step in enumerate(values["steps"]):
        if not _filled(step):
            continue
        days = step["days"]
        steps.append({"days": int(days) if WHOLE_DAYS.match(days) else days, "subject": step["subject"],
                      "body": step["body"], "late_fee": step["late_fee"]})
        rows.append(index)
    kind = values["late_fee.kind"]
    fee = None
    if kind == "fixed":
        amount = values["late_fee.amount"]
        fee = {"kind": "fixed", "amount": typed_money(amount, currency, "late_fee.amount") if amount else None}
    elif kind == "statutory":
        fee = {"kind": "statutory"}
    return {"active": values["active"], "steps": steps, "late_fee": fee,
            "reference_rate": values["reference_rate"] or None}


STEP_PATH = re.compile(r"^steps(?:\.|\[)(\d+)\]?\.?(\w*)")


def _field_of(path: str, rows: list[int]) -> str:
    """The form field an error belongs beside: `steps.0.body` is the text of the form row that became
    step 0; a fee's kind is the fee's choice."""
    match = STEP_PATH.match(path)
    if match:
        index, name = int(match.group(1)), match.group(2)
        row = rows[index] if index < len(rows) else index
        return f"steps.{row}.{name if name in (*STEP_FIELDS, 'late_fee') else 'days'}"
    if path == "late_fee.kind":
        return "late_fee"
    return path


def _labels(values: dict) -> dict[str, str]:
    labels = {"active": "Send reminders", "steps": "Steps", "late_fee": "Late fee",
              "late_fee.amount": "Fixed late fee", "reference_rate": "Reference rate"}
    names = {"days": "days from the due date", "subject": "subject", "body": "text",
             "late_fee": "charge the late fee"}
    for index in range(len(values["steps"])):
        labels |= {f"steps.{index}.{name}": f"Step {index + 1}: {label}" for name, label in names.items()}
    return labels


def _form_page(visit: Visit, values: dict, errors: dict, currency: str, *, updated: str | None = None,
               status_code: int = 200) -> Response:
    return render(visit.request, "reminders_settings.html", status_code=status_code, values=values, errors=errors,
                  labels=_labels(values), currency=currency, placeholders=PLACEHOLDERS, steps_max=STEPS_MAX,
                  subject_max=SUBJECT_MAX, body_max=BODY_MAX, statutory_explained=STATUTORY_EXPLAINED,
                  updated=updated, notice=notice_of(visit, NOTICES))


def reminder_settings(visit: Visit) -> Response:
    policy = act(visit, reminder_operations.get_reminder_policy)
    currency = _currency(visit)
    return _form_page(visit, _values_of(policy, currency), {}, currency, updated=policy["updated"])


def save_reminder_settings(visit: Visit) -> Response:
    values = _submitted(visit)
    currency = _currency(visit)
    action = visit.text("step", 20)
    if action == "add":  # one more row, nothing saved
        if len(values["steps"]) < STEPS_MAX:
            values["steps"].append(_blank_step())
        return _form_page(visit, values, {}, currency)
    if action.startswith("remove:") and action[7:].isdigit():
        index = int(action[7:])
        values["steps"] = [step for position, step in enumerate(values["steps"]) if position != index]
        return _form_page(visit, values, {}, currency)
    rows: list[int] = []
    try:
        if len(values["steps"]) > STEPS_MAX:
            raise ValidationFailed.at("steps", f"at most {STEPS_MAX} steps")
        act(visit, reminder_operations.replace_reminder_policy, body=_body(values, currency, rows))
    except DomainError as exc:
        return _form_page(visit, values, errors_at(exc, lambda path: _field_of(path, rows)), currency, status_code=exc.status)
    return redirect(f"{PATH}?notice=saved")


def routes() -> list[Route]:
    return [page(PATH, get=reminder_settings, post=save_reminder_settings)]
