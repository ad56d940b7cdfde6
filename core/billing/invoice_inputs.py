"""What callers send to create, edit, list, pay and void invoices and to add lines."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time
from typing import Annotated, Literal

from pydantic import BeforeValidator, ConfigDict, Field, Strict, WithJsonSchema, field_validator

from core.base.validation import (
    LINES_MAX,
    TEXT_MAX,
    Input,
    PageQuery,
    QueryInput,
    empty_is_null,
    known_currency,
    not_null,
)
from core.billing.invoice_lines import ItemFields

CollectionMethod = Literal["send_invoice", "charge_automatically"]
DEFAULT_DAYS_UNTIL_DUE = 30
REFERENCE_MAX = 200
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _iso_date(value: object) -> object:
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not _DATE.fullmatch(value):
        raise ValueError("must be a date in the form YYYY-MM-DD")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValueError("is not a valid calendar date") from None


def _due_date(value: object) -> object:
    return None if value in ("", None) else _iso_date(value)


IsoDate = Annotated[date, BeforeValidator(_iso_date), WithJsonSchema({"type": "string", "format": "date"})]
DueDate = Annotated[date | None, BeforeValidator(_due_date),
                    WithJsonSchema({"type": ["string", "null"], "format": "date",
                                    "description": "YYYY-MM-DD; the empty string or null clears it"})]
DaysUntilDue = Annotated[int, Strict(), Field(ge=0, le=365)]




class InvoiceFields(Input):
    currency: str | None = Field(default=None, description="ISO 4217; default the business currency",
                                 examples=["USD", "JPY", "BHD"])
    collection_method: CollectionMethod | None = Field(default=None, description="Default send_invoice")
    issue_date: IsoDate | None = Field(default=None, description="Default today (UTC)")
    due_date: DueDate = None
    days_until_due: DaysUntilDue | None = Field(
        default=None, description="0 to 365; sets due_date from issue_date; ignored when due_date is sent")
    description: str | None = Field(default=None, max_length=TEXT_MAX, description="Notes; null clears")
    footer: str | None = Field(default=None, max_length=TEXT_MAX, description="Payment terms; null clears")

    _required = field_validator("currency", "collection_method", "issue_date", "days_until_due")(not_null)
    _normalized_currency = field_validator("currency")(known_currency)
    _texts = field_validator("description", "footer")(empty_is_null)


class InvoiceCreate(InvoiceFields):
    customer: str = Field(description="cus_ id or UUID of an active customer",
                          examples=["cus_0b6a3c5e8d2f4e1a9b7c6d5e4f3a2b1c"])
    items: list[ItemFields] = Field(default_factory=list, max_length=LINES_MAX,
                                    description="Lines; may be empty")


class InvoiceUpdate(InvoiceFields):
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
    from_: IsoDate | None = Field(default=None, alias="from", description="Issue date on or after (YYYY-MM-DD)")
    to: IsoDate | None = Field(default=None, description="Issue date on or before (YYYY-MM-DD)")


class ItemAdd(ItemFields):
    invoice: str = Field(description="in_ id or UUID of a draft invoice")


class ItemListQuery(QueryInput):
    invoice: str = Field(description="in_ id or UUID")


class ItemDeleteQuery(QueryInput):
    invoice: str | None = Field(default=None, description="in_ id or UUID; narrows the lookup")


def _paid_on(value: object) -> object:
    """A date (midnight UTC) or an ISO 8601 timestamp (UTC when no offset is given)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError("must be an ISO 8601 date or timestamp")
    if _DATE.fullmatch(value):
        return datetime.combine(_iso_date(value), time(), UTC)
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    except ValueError:
        raise ValueError("must be an ISO 8601 date or timestamp") from None
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


class PayInput(Input):
    paid_on: Annotated[datetime | None, BeforeValidator(_paid_on),
                       WithJsonSchema({"type": "string", "description": "ISO 8601 date or timestamp"})] = Field(
        default=None, description="When the payment was received; default now")
    reference: str | None = Field(default=None, max_length=REFERENCE_MAX,
                                  description="Payment reference, up to 200 characters")


class VoidInput(Input):
    reason: str | None = Field(default=None, max_length=TEXT_MAX, description="Stored in void_reason")
