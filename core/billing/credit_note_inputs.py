"""What callers send to preview, create, list and void credit notes."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from core.base.validation import (
    LINES_MAX,
    MULTI_LINE,
    TEXT_MAX,
    CalendarDate,
    Input,
    MinorUnits,
    PageQuery,
    Percent,
    empty_is_null,
    not_null,
)
from core.billing.invoice_inputs import REFERENCE_MAX
from core.billing.invoice_lines import EXEMPTION_REASON_MAX, Quantity, TaxCategory

CreditNoteReason = Literal["duplicate", "order_change", "product_unsatisfactory", "fraudulent"]
CREDIT_NOTE_REASONS: tuple[str, ...] = CreditNoteReason.__args__


class CreditNoteLineInput(Input):
    """One line of a credit note: part of an invoice line (`invoice_line` with `quantity` or `amount`,
    or neither for all that remains of it), or a line of its own (`description` and `amount`)."""

    invoice_line: str | None = Field(default=None, description="ii_ id or UUID of a line of the invoice to credit; "
                                                               "omit for a line of its own",
                                     examples=["ii_5d2c8b1a7e6f4a3b9c0d1e2f3a4b5c6d"])
    quantity: Quantity | None = Field(default=None, description="How many units of the invoice line to credit, at its "
                                                                "unit price, discount and tax rate")
    amount: MinorUnits | None = Field(default=None, examples=[5000],
                                      description="Amount to credit before tax, in minor units: part of an invoice "
                                                  "line's amount, or the amount of a line of its own")
    description: Annotated[str | None, MULTI_LINE] = Field(
        default=None, max_length=TEXT_MAX, description="Required for a line of its own; an invoice line's is its own")
    tax_rate: Percent | None = Field(default=None, description="Tax percent of a line of its own, 0 to 100, default 0; "
                                                               "an invoice line's is its own")
    tax_category: TaxCategory | None = Field(default=None, description="VAT category of a line of its own (as on "
                                                                       "invoice lines)")
    tax_exemption_reason: Annotated[str | None, MULTI_LINE] = Field(
        default=None, max_length=EXEMPTION_REASON_MAX, description="Why a line of its own bears no VAT (categories "
                                                                   "E, AE, K, G, O)")


class CreditNoteCreate(Input):
    """A credit note on an open or paid invoice: what it credits (`lines`; omitted, all that remains of
    the invoice) and where the money goes (`credit_amount`, `refund_amount`, `balance_amount`, adding
    up to its total; omitted on an open invoice, all of it lowers what is due)."""

    invoice: str = Field(description="in_ id or UUID of an open or paid invoice",
                         examples=["in_7c1e9a2b4d6f4c8e9a1b3c5d7e9f1a2b"])
    lines: list[CreditNoteLineInput] | None = Field(
        default=None, min_length=1, max_length=LINES_MAX,
        description="What is credited; omit to credit all that remains of every line of the invoice")
    reason: CreditNoteReason | None = Field(default=None, description="duplicate, order_change, "
                                                                      "product_unsatisfactory or fraudulent")
    memo: Annotated[str | None, MULTI_LINE] = Field(default=None, max_length=TEXT_MAX,
                                                    description="Printed on the credit note")
    credit_amount: MinorUnits | None = Field(default=None, description="Taken off what is still due on an open "
                                                                       "invoice; at most its amount_due")
    refund_amount: MinorUnits | None = Field(default=None, description="Refunded to the customer outside the service "
                                                                       "(no money moves here)")
    refund_reference: str | None = Field(default=None, max_length=REFERENCE_MAX,
                                         description="The refund's reference, with refund_amount")
    refunded_on: CalendarDate | None = Field(default=None, description="When it was refunded, with refund_amount; "
                                                                       "default today")
    balance_amount: MinorUnits | None = Field(default=None, description="Credited to the customer's balance in the "
                                                                         "invoice's currency, applied to their next "
                                                                         "invoice in that currency when it is finalized")

    _required = field_validator("lines")(not_null)
    _texts = field_validator("memo", "refund_reference")(empty_is_null)


class CreditNoteListQuery(PageQuery):
    invoice: str | None = Field(default=None, description="in_ id or UUID: only this invoice's credit notes; an "
                                                          "invoice not in the account is 404")
    customer: str | None = Field(default=None, description="cus_ id or UUID; a customer not in the account is 404")
