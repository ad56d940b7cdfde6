"""What callers send to create, edit, list, pay and void invoices and to add lines."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Literal

from pydantic import BeforeValidator, ConfigDict, Field, Strict, WithJsonSchema, field_validator

from core.base.validation import (
    LINES_MAX,
    MULTI_LINE,
    TEXT_MAX,
    CalendarDate,
    Input,
    PageQuery,
    QueryInput,
    calendar_date,
    empty_is_null,
    known_currency,
    not_null,
    utc_moment,
)
from core.billing.invoice_lines import ItemFields

CollectionMethod = Literal["send_invoice", "charge_automatically"]
DEFAULT_DAYS_UNTIL_DUE = 30
REFERENCE_MAX = 200
# When a payment was received: a date (midnight UTC) or a timestamp, kept to the millisecond; None: now.
PaidOn = Annotated[datetime | None, BeforeValidator(utc_moment),
                   WithJsonSchema({"type": "string", "description": "ISO 8601 date or timestamp"})]


def _due_date(value: object) -> object:
    return None if value in ("", None) else calendar_date(value)


DueDate = Annotated[date | None, BeforeValidator(_due_date),
                    WithJsonSchema({"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}],
                                    "description": "YYYY-MM-DD; the empty string or null clears it"})]
DaysUntilDue = Annotated[int, Strict(), Field(ge=0, le=365)]




class InvoiceFields(Input):
    currency: str | None = Field(default=None, description="ISO 4217; default the business currency",
                                 examples=["USD", "JPY", "BHD"])
    collection_method: CollectionMethod | None = Field(default=None, description="Default send_invoice")
    issue_date: CalendarDate | None = Field(default=None, description="Default today (UTC)")
    due_date: DueDate = None
    days_until_due: DaysUntilDue | None = Field(
        default=None, description="0 to 365; sets due_date from issue_date; ignored when due_date is sent")
    description: Annotated[str | None, MULTI_LINE] = Field(default=None, max_length=TEXT_MAX, description="Notes; null clears")
    footer: Annotated[str | None, MULTI_LINE] = Field(default=None, max_length=TEXT_MAX, description="Payment terms; null clears")
    buyer_reference: str | None = Field(default=None, max_length=REFERENCE_MAX, examples=["DEPT-42"],
                                        description="The customer's reference for this purchase (a cost centre, a "
                                                    "contact's code), printed and carried by e-invoices; null clears")
    order_reference: str | None = Field(default=None, max_length=REFERENCE_MAX, examples=["PO-2026-0117"],
                                        description="The customer's purchase order number; null clears")

    _required = field_validator("currency", "collection_method", "issue_date", "days_until_due")(not_null)
    _normalized_currency = field_validator("currency")(known_currency)
    _texts = field_validator("description", "footer", "buyer_reference", "order_reference")(empty_is_null)


class InvoiceCreate(InvoiceFields):
    """A new draft; only the customer is required."""

    customer: str = Field(description="cus_ id or UUID of an active customer",
                          examples=["cus_0b6a3c5e8d2f4e1a9b7c6d5e4f3a2b1c"])
    items: list[ItemFields] = Field(default_factory=list, max_length=LINES_MAX,
                                    description="Lines; may be empty")


class InvoiceUpdate(InvoiceFields):
    """Only the fields sent change; `items` replaces every line."""

    customer: str | None = Field(default=None, description="cus_ id or UUID")
    items: list[ItemFields] | None = Field(
        default=None, min_length=1, max_length=LINES_MAX,
        description="Replaces all lines; at least one element; omit to keep the lines")

    _required_too = field_validator("customer", "items")(not_null)


class InvoiceListQuery(PageQuery):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)  # `from_=` works in code

    status: str | None = Field(default=None, description="draft, open, paid, overdue or void; other values "
                                                         "are ignored")
    customer: str | None = Field(default=None, description="cus_ id or UUID; a customer not in the account is 404")
    from_: CalendarDate | None = Field(default=None, alias="from", description="Issue date on or after (YYYY-MM-DD)")
    to: CalendarDate | None = Field(default=None, description="Issue date on or before (YYYY-MM-DD)")
    number: str | None = Field(default=None, max_length=64,
                               description="Invoice number or its beginning, case-insensitive: `INV-00` finds "
                                           "INV-0001 to INV-0099; drafts have no number")


class ItemAdd(ItemFields):
    """A line to add to a draft: priced (`price`) or ad hoc (`description` and `unit_amount`)."""

    invoice: str = Field(description="in_ id or UUID of a draft invoice")


class ItemListQuery(QueryInput):
    invoice: str = Field(description="in_ id or UUID")


class ItemDeleteQuery(QueryInput):
    invoice: str | None = Field(default=None, description="in_ id or UUID; narrows the lookup")


class PayInput(Input):
    """When the invoice was paid in full (outside the service), and the payment's reference: one payment
    of all that is due (`core.billing.payments.mark_paid`)."""

    paid_on: PaidOn = Field(default=None, description="When the payment was received; default now")
    reference: str | None = Field(default=None, max_length=REFERENCE_MAX,
                                  description="Payment reference, up to 200 characters")


class VoidInput(Input):
    """Why the invoice is voided."""

    reason: Annotated[str | None, MULTI_LINE] = Field(default=None, max_length=TEXT_MAX, description="Stored in void_reason")
