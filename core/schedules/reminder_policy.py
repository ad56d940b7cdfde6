"""An account's payment reminder policy: the steps (days from an invoice's due date, each with its
e-mail), whether it is on, and an optional late fee. Read and replaced whole (`GET`/`PUT
/reminder-policy`, the dashboard's settings); the reminders themselves are core.schedules.reminders."""

from __future__ import annotations

import re
import uuid
from decimal import Decimal
from typing import Annotated, Literal

from pydantic import Field, Strict, StrictBool, WithJsonSchema, field_validator, model_validator
from sqlmodel import Session

from core.access import accounts
from core.base.api_types import Timestamp
from core.base.clock import iso, now
from core.base.errors import InvalidState
from core.base.validation import MULTI_LINE, FieldValueError, Input, MinorUnits
from core.models import ReminderPolicy

PLACEHOLDERS = {
    "number": "the invoice number", "amount_due": "what is due, with its currency", "due_date": "the due date",
    "days_overdue": "days past the due date (0 before it)", "link": "the invoice's public page",
    "customer": "the customer's name", "business": "your business's name",
}
PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
BRACED = re.compile(r"\{([^{}]*)\}")  # anything in braces, which must be a placeholder
STEPS_MAX = 10
SUBJECT_MAX, BODY_MAX = 200, 5000
# Directive 2011/7/EU: the reference rate plus at least 8 percentage points, and a fixed 40 EUR.
STATUTORY_POINTS = Decimal(8)
STATUTORY_COMPENSATION_EUR = 4000


def _known_placeholders(text: str) -> str:
    unknown = sorted({name for name in BRACED.findall(text) if name not in PLACEHOLDERS})
    if unknown:
        raise ValueError(f"unknown placeholder {{{unknown[0]}}}: use " + ", ".join(f"{{{name}}}" for name in PLACEHOLDERS))
    return text


class ReminderStep(Input):
    """One reminder: when, relative to the due date, and its e-mail."""

    days: Annotated[int, Strict(), Field(ge=-60, le=365)] = Field(
        description="Days after the due date (negative: before it; 0: on it)", examples=[7])
    subject: str = Field(min_length=1, max_length=SUBJECT_MAX, description="The e-mail's subject; placeholders "
                                                                            "allowed", examples=["Invoice {number} is overdue"])
    body: Annotated[str, MULTI_LINE] = Field(min_length=1, max_length=BODY_MAX, description=(
        "The e-mail's text. Placeholders: " + ", ".join(f"`{{{name}}}` ({what})" for name, what in PLACEHOLDERS.items())))
    late_fee: StrictBool = Field(default=False, description="Charge the policy's late fee with this reminder (a step after "
                                                      "the due date; at most one fee per invoice)")

    _placeholders = field_validator("subject", "body")(_known_placeholders)


class LateFee(Input):
    """A late fee, issued as an invoice of its own that names the overdue one."""

    kind: Literal["fixed", "statutory"] = Field(description="`fixed`: `amount` in the overdue invoice's currency; "
                                                            "`statutory`: interest at the reference rate plus 8 points "
                                                            "a year on what is due, for the days overdue, and the "
                                                            "fixed 40 EUR compensation on EUR invoices (Directive "
                                                            "2011/7/EU)")
    amount: MinorUnits | None = Field(default=None, description="`fixed` only: the fee in minor units")

    @model_validator(mode="after")
    def _amount_for_fixed(self) -> LateFee:
        if self.kind == "fixed" and not self.amount:
            raise FieldValueError("amount", "a fixed late fee needs an amount above 0")
        if self.kind == "statutory" and self.amount is not None:
            raise FieldValueError("amount", "a statutory late fee is computed, not given")
        return self


ReferenceRate = Annotated[Decimal, Field(ge=-10, le=50, max_digits=8, decimal_places=4)]
ReferenceRateOut = Annotated[Decimal, WithJsonSchema({"type": "number", "minimum": -10, "maximum": 50})]


class ReminderPolicyInput(Input):
    """The whole policy, replacing the one before."""

    active: StrictBool = Field(description="Whether reminders are sent")
    steps: list[ReminderStep] = Field(default_factory=list, max_length=STEPS_MAX,
                                      description=f"Up to {STEPS_MAX} steps, each on a different day")
    late_fee: LateFee | None = Field(default=None, description="Charged by the steps marked `late_fee`")
    reference_rate: ReferenceRate | None = Field(
        default=None, description="The central bank's reference rate in percent a year (the ECB's main refinancing "
                                  "rate for EUR), which you keep up to date; required by a statutory late fee")

    @model_validator(mode="after")
    def _consistent(self) -> ReminderPolicyInput:
        days = [step.days for step in self.steps]
        if len(set(days)) != len(days):
            raise FieldValueError("steps", "two steps on the same day")
        if any(step.late_fee and step.days <= 0 for step in self.steps):
            raise FieldValueError("steps", "a late fee is charged only after the due date (days above 0)")
        if any(step.late_fee for step in self.steps) and self.late_fee is None:
            raise FieldValueError("late_fee", "a step charges it, so it must be set")
        if self.late_fee is not None and self.late_fee.kind == "statutory" and self.reference_rate is None:
            raise FieldValueError("reference_rate", "a statutory late fee needs the reference rate")
        return self


class ReminderPolicyOut(ReminderPolicyInput):
    """The account's payment reminder policy."""

    object: Literal["reminder_policy"] = Field("reminder_policy", description="Always `reminder_policy`")
    reference_rate: ReferenceRateOut | None = Field(description="The reference rate in percent a year, as entered")
    updated: Timestamp | None = Field(description="When it last changed; null while never set")


DEFAULT_STEPS = [
    ReminderStep(days=-3, subject="Invoice {number} is due on {due_date}",
                 body="Hello {customer},\n\na friendly reminder that invoice {number} for {amount_due} is due on "
                      "{due_date}.\n\nView and pay it: {link}\n\n{business}"),
    ReminderStep(days=7, subject="Invoice {number} is overdue",
                 body="Hello {customer},\n\ninvoice {number} for {amount_due} was due on {due_date}, "
                      "{days_overdue} days ago. Please pay it at your earliest convenience.\n\n{link}\n\n{business}"),
    ReminderStep(days=30, subject="Second reminder: invoice {number} is {days_overdue} days overdue",
                 body="Hello {customer},\n\ninvoice {number} for {amount_due}, due on {due_date}, is still unpaid. "
                      "Please pay it now, or reply to tell us when you will.\n\n{link}\n\n{business}"),
]


def stored(session: Session, account_id: uuid.UUID) -> ReminderPolicy | None:
    return session.get(ReminderPolicy, account_id)


def policy_of(session: Session, account_id: uuid.UUID) -> ReminderPolicyInput:
    """The account's policy; the default steps, off, while never set."""
    row = stored(session, account_id)
    if row is None:
        return ReminderPolicyInput(active=False, steps=DEFAULT_STEPS)
    return policy_of_row(row)


def policy_of_row(row: ReminderPolicy) -> ReminderPolicyInput:
    return ReminderPolicyInput.model_validate({"active": row.active, "steps": row.steps, "late_fee": row.late_fee,
                                               "reference_rate": row.reference_rate})


def to_api(session: Session, account_id: uuid.UUID) -> dict:
    """The policy as the API shows it: the reference rate a JSON number, as every exact decimal."""
    row = stored(session, account_id)
    policy = policy_of(session, account_id)
    return {"object": "reminder_policy", **policy.model_dump(mode="json"), "reference_rate": policy.reference_rate,
            "updated": iso(row.updated) if row else None}


def replace(session: Session, account_id: uuid.UUID, data: ReminderPolicyInput) -> dict:
    if data.active and not accounts.account_email_verified(session, account_id):
        raise InvalidState("The account e-mail address is not verified: verify it before turning reminders on.")
    row = stored(session, account_id) or ReminderPolicy(account_id=account_id)
    dumped = data.model_dump(mode="json")
    row.active, row.steps, row.late_fee = data.active, dumped["steps"], dumped["late_fee"]
    row.reference_rate, row.updated = data.reference_rate, now()
    session.add(row)
    session.flush()
    return to_api(session, account_id)


def filled(text: str, values: dict[str, str]) -> str:
    """`text` with its placeholders replaced (only the known names: never Python's format language)."""
    return PLACEHOLDER.sub(lambda match: values.get(match.group(1), match.group(0)), text)
