"""The API shape of payments, shared by REST, MCP, webhooks and the pages."""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, Field

from core.base import ids
from core.base.api_types import Timestamp
from core.base.clock import iso
from core.billing.payment_inputs import PaymentMethod, PaymentStatus
from core.models import Payment


class PaymentOut(BaseModel):
    """Money received for an invoice outside the service."""

    id: str = Field(description="Unique identifier, `py_…`")
    object: Literal["payment"] = Field("payment", description="Always `payment`")
    status: PaymentStatus = Field(description="`recorded`, or `reversed` once undone (it stays in the history)")
    invoice: str = Field(description="The invoice it pays, `in_…`")
    invoice_number: str = Field(description="That invoice's number")
    customer: str = Field(description="The invoice's customer, `cus_…`")
    currency: str = Field(description="The invoice's currency: every amount is in it")
    amount: int = Field(description="What was received, in minor units")
    amount_applied: int = Field(description="Of amount, what it took off the invoice's amount due")
    balance_amount: int = Field(description="Of amount, the excess put on the customer's credit balance")
    balance_remaining: int = Field(description="Of balance_amount, what is not yet applied to a later invoice")
    paid_on: date = Field(description="When it was received (UTC date)")
    paid_at: Timestamp = Field(description="When it was received, as given (a date is midnight UTC)")
    method: PaymentMethod = Field(description="bank_transfer, card, cash, cheque, direct_debit or other")
    reference: str | None = Field(description="The payment's reference")
    note: str | None = Field(description="Internal note")
    reversed_at: Timestamp | None = Field(description="When it was reversed")
    reversal_reason: str | None = Field(description="Why it was reversed")
    created: Timestamp = Field(description="When it was recorded")
    updated: Timestamp = Field(description="When it last changed")


def payment_to_api(payment: Payment) -> dict:
    """A payment as `PaymentOut` renders it (a plain dict)."""
    return {
        "id": ids.public_id("payment", payment.id), "object": "payment", "status": payment.status,
        "invoice": ids.public_id("invoice", payment.invoice_id), "invoice_number": payment.invoice_number,
        "customer": ids.public_id("customer", payment.customer_id), "currency": payment.currency,
        "amount": payment.amount, "amount_applied": payment.amount_applied,
        "balance_amount": payment.balance_amount, "balance_remaining": payment.balance_remaining,
        "paid_on": payment.paid_at.date(), "paid_at": iso(payment.paid_at), "method": payment.method,
        "reference": payment.reference, "note": payment.note, "reversed_at": iso(payment.reversed_at),
        "reversal_reason": payment.reversal_reason, "created": iso(payment.created), "updated": iso(payment.updated),
    }
