"""The API shape of invoice schedules and their runs, shared by REST, MCP, webhooks and the pages
(`core.schedules.schedules.schedule_to_api` and `run_to_api` make the objects)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from core.base.api_types import Timestamp
from core.billing.invoice_lines import TaxCategory, Unit
from core.billing.invoice_render import InvoicePeriod, PercentOut, Quantity
from core.schedules.recurrence import Recurrence
from core.schedules.schedule_inputs import CatchUp, Mode, ScheduleStatus


class TemplateItemOut(BaseModel):
    """A line of a schedule's invoice, as it was given."""

    price: str | None = Field(default=None, description="The catalog price billed (price_ id), or none for a line of "
                                                        "its own")
    description: str | None = Field(default=None, description="The line's text (a priced line defaults to the "
                                                              "product's name)")
    quantity: Quantity = Field(description="Quantity")
    unit: Unit = Field(description="Unit code")
    unit_amount: int | None = Field(default=None, description="Price of one unit in minor units; none: the price's")
    discount_percent: PercentOut = Field(description="Discount percent")
    tax_rate: PercentOut | None = Field(default=None, description="Tax percent; none: the price's, or 0")
    tax_category: TaxCategory | None = Field(default=None, description="VAT category for e-invoices")
    tax_exemption_reason: str | None = Field(default=None, description="Why the line bears no VAT")


class InvoiceTemplateOut(BaseModel):
    """The invoice each run of a schedule makes."""

    currency: str | None = Field(default=None, description="ISO 4217; none: the business currency")
    collection_method: str | None = Field(default=None, description="send_invoice or charge_automatically")
    days_until_due: int | None = Field(default=None, description="Days from the issue date to the due date; none: 30")
    description: str | None = Field(default=None, description="Notes")
    footer: str | None = Field(default=None, description="Payment terms")
    buyer_reference: str | None = Field(default=None, description="The customer's reference")
    order_reference: str | None = Field(default=None, description="The customer's purchase order number")
    items: list[TemplateItemOut] = Field(description="Its lines")


class ScheduleFailure(BaseModel):
    """The latest failed run of a schedule's next period."""

    reason: str = Field(description="Why the latest run failed")
    at: Timestamp = Field(description="When")
    attempts: int = Field(description="Failed attempts of the next period so far")


class ScheduleCreator(BaseModel):
    """The credential a schedule's runs act as."""

    actor: Literal["api_key", "oauth_app", "user"] = Field(description="Who the runs act as: the credential that "
                                                                       "created (or last resumed) the schedule")
    api_key_id: str | None = Field(default=None, description="The API key's id")
    client_id: str | None = Field(default=None, description="The OAuth app's client id")
    user_id: str | None = Field(default=None, description="The person's id")


class ScheduleOut(BaseModel):
    """A recurring invoice: what each run makes, when, and how far it goes."""

    id: str = Field(description="Unique identifier, `sched_…`")
    object: Literal["invoice_schedule"] = Field("invoice_schedule", description="Always `invoice_schedule`")
    status: ScheduleStatus = Field(description="`active`, `paused` (by a person, or because a run could not act: see "
                                               "`pause_reason`), `cancelled` or `completed` (its last period made)")
    customer: str = Field(description="The customer billed, `cus_…`")
    mode: Mode = Field(description="`draft`, `finalize` or `finalize_and_send`")
    invoice: InvoiceTemplateOut = Field(description="The invoice each run makes")
    recurrence: Recurrence = Field(description="How often, from when, until when")
    time_zone: str = Field(description="IANA time zone of the run times and issue dates")
    catch_up: CatchUp = Field(description="Missed periods: `all` made in order, or only the `latest`")
    max_attempts: int = Field(description="Attempts of a failing period before the schedule pauses")
    summary: str = Field(description="The recurrence in words", examples=["on the 1st of every month, from "
                                                                          "2027-01-01, 12 times"])
    next_run: Timestamp | None = Field(description="When the next period is made (UTC); null unless active")
    next_period: InvoicePeriod | None = Field(description="The period the next run bills")
    invoices_made: int = Field(description="Invoices made so far")
    periods_done: int = Field(description="Periods made or skipped so far")
    periods_remaining: int | None = Field(description="Periods still to come when a count is set; null otherwise")
    last_failure: ScheduleFailure | None = Field(description="The latest failed run of the next period, if any")
    pause_reason: str | None = Field(description="Why it is paused")
    paused_at: Timestamp | None = Field(description="When it was paused")
    cancelled_at: Timestamp | None = Field(description="When it was cancelled")
    created_by: ScheduleCreator = Field(description="Who its runs act as")
    created: Timestamp = Field(description="When it was created")
    updated: Timestamp = Field(description="When it last changed")


class ScheduleRunEmail(BaseModel):
    """The e-mail of a run that sends its invoice."""

    status: Literal["pending", "sending", "sent", "failed", "unknown"] = Field(
        description="`pending` (waiting, also for an hourly cap to reset), `sending`, `sent`, `failed`, or `unknown` "
                    "(the process sending it stopped: never sent again)")
    error: str | None = Field(description="Why it failed or waits")


class ScheduleRunOut(BaseModel):
    """One period of a schedule, made or skipped."""

    id: str = Field(description="Unique identifier, `schrun_…`")
    object: Literal["schedule_run"] = Field("schedule_run", description="Always `schedule_run`")
    schedule: str = Field(description="The schedule, `sched_…`")
    period_index: int = Field(description="0 for the schedule's first period")
    period: InvoicePeriod = Field(description="The days it bills")
    scheduled_for: Timestamp = Field(description="When it was due")
    status: Literal["invoiced", "skipped"] = Field(description="`invoiced`, or `skipped` (missed, with catch_up "
                                                               "`latest`, or on resuming)")
    invoice: str | None = Field(description="The invoice made, `in_…`")
    email: ScheduleRunEmail | None = Field(description="Its e-mail, in `finalize_and_send` mode")
    created: Timestamp = Field(description="When it was made or skipped")
