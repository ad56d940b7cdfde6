"""What callers send to record, list and reverse payments."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, Strict, field_validator

from core.base.validation import MAX_SAFE_INTEGER, MULTI_LINE, TEXT_MAX, Input, PageQuery, empty_is_null, known_currency
from core.billing.invoice_inputs import REFERENCE_MAX, PaidOn

PaymentMethod = Literal["bank_transfer", "card", "cash", "cheque", "direct_debit", "other"]
PAYMENT_METHODS: tuple[str, ...] = PaymentMethod.__args__
PaymentStatus = Literal["recorded", "reversed"]
REASON_MAX = 1000


class PaymentCreate(Input):
    """A payment received for an open invoice outside the service (no money moves here)."""

    invoice: str = Field(description="in_ id or UUID of an open (or overdue) invoice",
                         examples=["in_7c1e9a2b4d6f4c8e9a1b3c5d7e9f1a2b"])
    amount: Annotated[int, Strict(), Field(gt=0, le=MAX_SAFE_INTEGER)] = Field(
        description="What was received, in minor units of the invoice's currency; at most its amount_due unless "
                    "overpayment is `balance`", examples=[5000])
    currency: str | None = Field(default=None, description="The invoice's currency, to be sure of the unit: another "
                                                           "is refused (422); omit to take the invoice's")
    paid_on: PaidOn = Field(default=None, description="When it was received: a date or a timestamp; default now")
    method: PaymentMethod = Field(default="other", description="bank_transfer, card, cash, cheque, direct_debit or "
                                                               "other (the default)")
    reference: str | None = Field(default=None, max_length=REFERENCE_MAX,
                                 description="The payment's reference, such as the bank transfer's, up to 200 "
                                             "characters")
    note: Annotated[str | None, MULTI_LINE] = Field(default=None, max_length=TEXT_MAX,
                                                    description="An internal note, never shown to the customer")
    overpayment: Literal["refuse", "balance"] = Field(
        default="refuse", description="An amount above what is due: `refuse` (the default, 422 at amount) or "
                                      "`balance` (the excess goes on the customer's credit balance in that currency, "
                                      "applied to their next invoice)")

    _currency = field_validator("currency")(known_currency)
    _texts = field_validator("reference", "note")(empty_is_null)


class PaymentReverse(Input):
    """Why a recorded payment is undone (a bounced transfer, a charge-back, a mistake)."""

    reason: Annotated[str, MULTI_LINE] = Field(min_length=1, max_length=REASON_MAX,
                                               description="Why it is reversed; kept with the payment",
                                               examples=["The transfer bounced"])

    @field_validator("reason")
    @classmethod
    def _said(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must say why the payment is reversed")
        return value.strip()


class PaymentListQuery(PageQuery):
    invoice: str | None = Field(default=None, description="in_ id or UUID: only this invoice's payments; an invoice "
                                                          "not in the account is 404")
    customer: str | None = Field(default=None, description="cus_ id or UUID; a customer not in the account is 404")
