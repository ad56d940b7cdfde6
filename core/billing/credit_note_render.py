"""The API shape of credit notes and their lines, shared by REST, MCP, webhooks and the documents."""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, Field

from core.base import ids
from core.base.api_types import Timestamp, UriText
from core.base.clock import iso
from core.billing.business import BusinessOutModel
from core.billing.credit_note_inputs import CreditNoteReason
from core.billing.invoice_render import CustomerDetailsOut, PercentOut, Quantity
from core.billing.presentation import credit_note_pdf_url, credit_note_url
from core.models import CreditNote, CreditNoteLine

CreditNoteStatus = Literal["issued", "void"]
LineType = Literal["invoice_line", "custom"]


class CreditNoteLineOut(BaseModel):
    """A line of a credit note: part of an invoice line, or a line of its own."""

    id: str | None = Field(description="Unique identifier, `cnli_…`; null in a preview")
    object: Literal["credit_note_line"] = Field("credit_note_line", description="Always `credit_note_line`")
    type: LineType = Field(description="`invoice_line`: part of a line of the invoice; `custom`: a line of its own")
    invoice_line: str | None = Field(description="The invoice line credited, `ii_…`; null for a line of its own")
    description: str = Field(description="What is credited")
    quantity: Quantity | None = Field(description="Units credited, when credited by quantity; else null")
    unit: str = Field(description="Unit code, as on the invoice line")
    unit_amount: int | None = Field(description="Price of one unit on the invoice line, in minor units; null for a "
                                                "line of its own")
    discount_percent: PercentOut = Field(description="The invoice line's discount percent")
    amount: int = Field(description="Amount credited before tax, in minor units")
    tax_rate: PercentOut = Field(description="Tax percent, the invoice line's own")
    tax_category: str | None = Field(description="VAT category for e-invoices, as on the invoice line")
    tax_exemption_reason: str | None = Field(description="Why the line bears no VAT, as on the invoice line")
    tax_amount: int = Field(description="Tax credited, in minor units, rounded as the invoice was")


class CreditNoteLinesOut(BaseModel):
    """Every line of the credit note, in order."""

    data: list[CreditNoteLineOut] = Field(description="The lines")


class RefundOut(BaseModel):
    """The part refunded outside the service."""

    reference: str | None = Field(description="The refund's reference")
    refunded_on: date = Field(description="When it was refunded")


class CreditNoteOut(BaseModel):
    """A credit note: a document of its own, with its own number, that corrects an issued invoice."""

    id: str | None = Field(description="Unique identifier, `cn_…`; null in a preview")
    object: Literal["credit_note"] = Field("credit_note", description="Always `credit_note`")
    number: str | None = Field(description="`{credit_note_prefix}-0001`, consecutive per account in a series of its "
                                           "own; null in a preview")
    status: CreditNoteStatus = Field(description="`issued`, or `void` once voided (its effects undone)")
    invoice: str = Field(description="The invoice it corrects, `in_…`")
    invoice_number: str = Field(description="That invoice's number")
    invoice_issue_date: date = Field(description="That invoice's issue date")
    customer: str = Field(description="The invoice's customer, `cus_…`")
    customer_details: CustomerDetailsOut = Field(description="The customer as printed on the invoice")
    issuer: BusinessOutModel | None = Field(description="The business profile as printed on the credit note")
    currency: str = Field(description="The invoice's currency: every amount is in it")
    reason: CreditNoteReason | None = Field(description="duplicate, order_change, product_unsatisfactory, fraudulent "
                                                        "or null")
    memo: str | None = Field(description="Printed on the credit note")
    issue_date: date = Field(description="Date of issue")
    subtotal: int = Field(description="Sum of the lines' amounts, before tax")
    tax: int = Field(description="Sum of the lines' tax_amount")
    total: int = Field(description="subtotal + tax = credit_amount + refund_amount + balance_amount")
    credit_amount: int = Field(description="Taken off what was due on the invoice")
    refund_amount: int = Field(description="Refunded outside the service")
    refund: RefundOut | None = Field(description="The refund's reference and date; null without a refund")
    balance_amount: int = Field(description="Credited to the customer's balance in this currency")
    balance_remaining: int = Field(description="Of balance_amount, what is not yet applied to a later invoice")
    amount_in_words: str | None = Field(description="The total in English words with the currency's name")
    public_url: UriText | None = Field(description="The customer's page for the credit note; null in a preview")
    public_pdf_url: UriText | None = Field(description="The customer's PDF download; null in a preview")
    voided_at: Timestamp | None = Field(description="When it was voided")
    created: Timestamp | None = Field(description="When it was issued; null in a preview")
    updated: Timestamp | None = Field(description="When it last changed; null in a preview")
    lines: CreditNoteLinesOut = Field(description="The lines, in order")


def line_to_api(line: CreditNoteLine) -> dict:
    return {
        "id": ids.public_id("credit_note_line", line.id) if line.id else None, "object": "credit_note_line",
        "type": line.type,
        "invoice_line": ids.public_id("invoiceitem", line.invoice_line_id) if line.invoice_line_id else None,
        "description": line.description, "quantity": line.quantity, "unit": line.unit,
        "unit_amount": line.unit_amount, "discount_percent": line.discount_percent, "amount": line.amount,
        "tax_rate": line.tax_rate, "tax_category": line.tax_category,
        "tax_exemption_reason": line.tax_exemption_reason, "tax_amount": line.tax_amount,
    }


def credit_note_to_api(note: CreditNote, lines: list[CreditNoteLine]) -> dict:
    """A credit note as `CreditNoteOut` renders it (a plain dict). A preview has no id, number or link."""
    token = note.public_url_token
    refund = ({"reference": note.refund_reference, "refunded_on": note.refunded_on}
              if note.refund_amount else None)
    return {
        "id": ids.public_id("credit_note", note.id) if note.number else None, "object": "credit_note",
        "number": note.number or None, "status": note.status, "invoice": ids.public_id("invoice", note.invoice_id),
        "invoice_number": note.invoice_number, "invoice_issue_date": note.invoice_issue_date,
        "customer": ids.public_id("customer", note.customer_id), "customer_details": note.customer_snapshot,
        "issuer": note.issuer_snapshot, "currency": note.currency, "reason": note.reason, "memo": note.memo,
        "issue_date": note.issue_date, "subtotal": note.subtotal, "tax": note.tax, "total": note.total,
        "credit_amount": note.credit_amount, "refund_amount": note.refund_amount, "refund": refund,
        "balance_amount": note.balance_amount, "balance_remaining": note.balance_remaining,
        "amount_in_words": note.amount_in_words,
        "public_url": credit_note_url(token) if token else None,
        "public_pdf_url": credit_note_pdf_url(token) if token else None,
        "voided_at": iso(note.voided_at), "created": iso(note.created) if note.number else None,
        "updated": iso(note.updated) if note.number else None,
        "lines": {"data": [line_to_api(line) for line in lines]},
    }
