"""What callers send to create, list, pause, resume and cancel invoice schedules."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, Strict, StrictBool, field_validator
from pydantic.json_schema import SkipJsonSchema

from core.base.validation import LINES_MAX, Input, PageQuery
from core.billing.invoice_inputs import DaysUntilDue, InvoiceCreate, InvoiceFields
from core.billing.invoice_lines import ItemFields
from core.schedules.recurrence import Recurrence, valid_time_zone

Mode = Literal["draft", "finalize", "finalize_and_send"]
CatchUp = Literal["all", "latest"]
ScheduleStatus = Literal["active", "paused", "cancelled", "completed"]
REASON_MAX = 1000
ATTEMPTS_MAX = 10
# The scopes a schedule's runs use besides `invoices:write`, by mode: checked at creation and at every run.
MODE_SCOPES = {"draft": (), "finalize": ("invoices:finalize",), "finalize_and_send": ("invoices:finalize", "invoices:send")}


class InvoiceTemplate(InvoiceFields):
    """The invoice each run makes: what `POST /invoices` takes, but for the customer (the schedule's)
    and the dates (the issue date is the period's first day; `days_until_due` sets the due date)."""

    items: list[ItemFields] = Field(min_length=1, max_length=LINES_MAX, description="Lines, by price or free; at "
                                                                                     "least one")
    days_until_due: DaysUntilDue | None = Field(default=None, description="0 to 365 days after the issue date; "
                                                                          "default 30")
    issue_date: SkipJsonSchema[None] = None
    due_date: SkipJsonSchema[None] = None

    @field_validator("issue_date", "due_date", mode="before")
    @classmethod
    def _no_dates(cls, _value: object, info) -> object:
        raise ValueError("is not taken: each run's period sets the issue date; days_until_due sets the due date"
                         if info.field_name == "issue_date" else "is not taken: use days_until_due")

    def invoice_input(self, customer: str, issue_date) -> InvoiceCreate:
        """The `POST /invoices` body of a run on `issue_date`."""
        data = self.stored()
        return InvoiceCreate.model_validate({**data, "customer": customer, "issue_date": issue_date.isoformat()})

    def stored(self) -> dict:
        return self.model_dump(exclude_none=True, exclude={"issue_date", "due_date"}, mode="json", warnings=False)


class ScheduleCreate(Input):
    """A recurring invoice: for whom, what, how often, and how far each run goes."""

    customer: str = Field(description="cus_ id or UUID of an active customer",
                          examples=["cus_0b6a3c5e8d2f4e1a9b7c6d5e4f3a2b1c"])
    invoice: InvoiceTemplate = Field(description="The invoice each run makes")
    recurrence: Recurrence = Field(description="How often, from when, until when")
    mode: Mode = Field(default="draft", description="`draft` (each invoice waits for a person to review and finalize "
                                                    "it; the default), `finalize` or `finalize_and_send` (e-mailed "
                                                    "to the customer). Needs `invoices:finalize`, and `invoices:send` "
                                                    "to send, now and at every run")
    time_zone: str | None = Field(default=None, description="IANA time zone of the run times and issue dates; default "
                                                            "the business's country's main zone, else UTC",
                                  examples=["Europe/Berlin"])
    catch_up: CatchUp = Field(default="all", description="After runs were missed (the worker down, the schedule "
                                                         "paused): `all` makes each missed period's invoice, oldest "
                                                         "first; `latest` only the latest period's, the others "
                                                         "skipped")
    max_attempts: Annotated[int, Strict(), Field(ge=1, le=ATTEMPTS_MAX)] = Field(
        default=3, description="Attempts of a period whose run fails (after 1 hour, 6 hours, then daily) before the "
                               "schedule pauses")

    @field_validator("time_zone")
    @classmethod
    def _zone(cls, value: str | None) -> str | None:
        return None if value is None else valid_time_zone(value)


class ScheduleListQuery(PageQuery):
    """Which schedules to list."""

    customer: str | None = Field(default=None, description="Only this customer's schedules")
    status: ScheduleStatus | None = Field(default=None, description="Only schedules in this status")


class SchedulePause(Input):
    """Why a schedule is paused (optional)."""

    reason: str | None = Field(default=None, max_length=REASON_MAX, description="Why, kept on the schedule")


class ScheduleResume(Input):
    """How a paused schedule goes on."""

    skip_missed: StrictBool = Field(default=False, description="Skip every period whose time has passed (the one whose "
                                                               "failure paused it too), instead of making them as "
                                                               "`catch_up` says")
