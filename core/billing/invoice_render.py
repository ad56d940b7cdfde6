"""The API shape of invoices and their lines, shared by REST, MCP, webhooks and history.

Drafts show the live customer and business profile; finalized invoices show the snapshots
frozen when they were finalized.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, Field, WithJsonSchema
from sqlmodel import Session, select

from core.base import ids
from core.base.api_types import EmailText, Timestamp, UriText
from core.base.clock import iso
from core.base.clock import today as utc_today
from core.billing.business import BusinessOutModel, business_to_api, find_profile
from core.billing.presentation import public_pdf_url, public_url
from core.catalog.customers import ADDRESS_KEYS, AddressOut
from core.models import Customer, Invoice, InvoiceLine

# The statuses an invoice shows; `overdue` is computed from an open invoice's due date, never stored.
InvoiceStatus = Literal["draft", "open", "paid", "overdue", "void"]
INVOICE_STATUSES: tuple[str, ...] = get_args(InvoiceStatus)
# Exact decimals are rendered as JSON numbers (core.jsonout), so document them as numbers.
Quantity = Annotated[Decimal, WithJsonSchema({"type": "number", "exclusiveMinimum": 0})]
PercentOut = Annotated[Decimal, WithJsonSchema({"type": "number", "minimum": 0, "maximum": 100})]


def status_of(invoice: Invoice, today: date | None = None) -> str:
    """The status as the API shows it: an open invoice past its due date is `overdue`."""
    if invoice.status == "open" and invoice.due_date is not None and invoice.due_date < (today or utc_today()):
        return "overdue"
    return invoice.status


def lines_of(session: Session, invoice: Invoice) -> list[InvoiceLine]:
    query = select(InvoiceLine).where(InvoiceLine.invoice_id == invoice.id)
    return list(session.exec(query.order_by(InvoiceLine.position, InvoiceLine.created, InvoiceLine.id)))


class InvoiceItemOut(BaseModel):
    """A line of an invoice: priced (from a catalog price) or ad hoc."""

    id: str = Field(description="Unique identifier, `ii_…`")
    object: Literal["invoiceitem"] = Field("invoiceitem", description="Always `invoiceitem`")
    invoice: str = Field(description="The invoice it belongs to, `in_…`")
    price: str | None = Field(description="The price billed, `price_…`; null for an ad-hoc line")
    product: str | None = Field(description="The price's product, `prod_…`; null for an ad-hoc line")
    description: str = Field(description="What is billed; a priced line defaults to the product name")
    quantity: Quantity = Field(description="Quantity, above 0, exact as entered (1.5 stays 1.5)")
    unit: str = Field(description="Unit code: NOS, PCS, KGS, GMS, LTR, MTR, SQF, SQM, HRS, DAY, MON, BOX, SET or OTH")
    unit_amount: int = Field(description="Price of one unit in minor units")
    amount: int = Field(description="Line total after discount, before tax: "
                                    "round(unit_amount × quantity × (1 − discount_percent/100))")
    discount_percent: PercentOut = Field(description="Discount percent, 0 to 100")
    tax_rate: PercentOut = Field(description="Tax percent, 0 to 100")
    tax_amount: int = Field(description="round(amount × tax_rate / 100), in minor units")
    tax_category: str | None = Field(default=None, description="VAT category for e-invoices (EN 16931): S, Z, E, AE, K, "
                                                               "G or O as chosen; null: S above 0 %, else Z (or O "
                                                               "when the business has no VAT number)")
    tax_exemption_reason: str | None = Field(default=None, description="Why a line of category E, AE, K, G or O bears "
                                                                       "no VAT, as chosen")


class CustomerDetailsOut(BaseModel):
    """The customer as printed on the invoice: live on a draft, frozen when finalized."""

    name: str = Field(description="Full or legal name")
    email: EmailText | None = Field(description="Billing e-mail")
    address: AddressOut = Field(description="Billing address")
    tax_id: str | None = Field(description="Tax or VAT id")
    peppol_id: str | None = Field(default=None, description="Electronic address for e-invoices, `scheme:identifier`")


class LinesOut(BaseModel):
    """Every line of the invoice, in order (not paginated)."""

    data: list[InvoiceItemOut] = Field(description="The lines")


class InvoicePeriod(BaseModel):
    """The days an invoice bills (EN 16931 BG-14), both included."""

    start: date = Field(description="First day, YYYY-MM-DD")
    end: date = Field(description="Last day, YYYY-MM-DD")


class _InvoiceFields(BaseModel):
    id: str = Field(description="Unique identifier, `in_…`")
    object: Literal["invoice"] = Field("invoice", description="Always `invoice`")
    number: str | None = Field(description="`{invoice_prefix}-0001`, consecutive per account, assigned on finalize; "
                                           "null while draft; never reused, even after void")
    status: InvoiceStatus = Field(description="draft, open, paid, overdue (an open invoice past its due date) or void")
    customer: str = Field(description="The customer, `cus_…`")
    currency: str = Field(description="ISO 4217 code of every amount on the invoice")
    collection_method: str = Field(description="`send_invoice` or `charge_automatically`")
    issue_date: date = Field(description="Date of issue")
    due_date: date | None = Field(description="Date payment is due; null when none")
    description: str | None = Field(description="Notes printed in the invoice body")
    footer: str | None = Field(description="Text at the bottom, typically payment terms")
    buyer_reference: str | None = Field(default=None, description="The customer's reference for this purchase")
    order_reference: str | None = Field(default=None, description="The customer's purchase order number")
    subtotal: int = Field(description="Sum of round(unit_amount × quantity) over the lines, before discounts and tax")
    discount: int = Field(description="Total discount of the lines: subtotal − taxable")
    taxable: int = Field(description="Sum of the line amounts (after discount): subtotal − discount")
    tax: int = Field(description="Sum of the lines' tax_amount")
    total: int = Field(description="taxable + tax")
    amount_credited: int = Field(default=0, description="What credit notes took off what is due (their "
                                                        "credit_amount), in minor units")
    balance_applied: int = Field(default=0, description="The customer's credit balance in this currency applied when "
                                                        "it was finalized, in minor units (paid in advance; part of "
                                                        "amount_paid)")
    amount_paid: int = Field(default=0, description="What has been paid, in minor units: the balance applied and the "
                                                    "payments recorded and not reversed. Above 0 on an open invoice: "
                                                    "part-paid")
    amount_due: int = Field(description="total − amount_credited − amount_paid while open or overdue; 0 for draft, "
                                        "paid and void")
    amount_in_words: str | None = Field(description="The total in English words with the currency's name")
    public_url_token: str | None = Field(description="Secret token of the customer's public link; null until finalized")
    public_url: UriText | None = Field(description="The customer's page for the invoice, `{origin}/i/{token}`; "
                                                   "null until finalized. Anyone with the link can view it")
    public_pdf_url: UriText | None = Field(description="The customer's PDF download, `{origin}/i/{token}/pdf`; "
                                                       "null until finalized")
    finalized_at: Timestamp | None = Field(description="When it was finalized; null while draft")
    paid_at: Timestamp | None = Field(description="When it was paid: the date of the payment that settled it (or when a "
                                                  "credit note or the customer's balance did); null while anything is "
                                                  "due")
    voided_at: Timestamp | None = Field(description="When it was voided")
    void_reason: str | None = Field(description="Why it was voided")
    schedule: str | None = Field(default=None, description="The invoice schedule (sched_ id) that made it; null when "
                                                           "made otherwise")
    period: InvoicePeriod | None = Field(default=None, description="The period it bills, when a schedule made it")
    reminders_paused: bool = Field(default=False, description="Whether the account's payment reminders are paused "
                                                              "for this invoice")
    late_fee_for: str | None = Field(default=None, description="On a late fee's invoice: the overdue invoice it "
                                                               "charges for (in_ id)")
    created: Timestamp = Field(description="When the draft was created")
    updated: Timestamp = Field(description="When it last changed")


class InvoiceOut(_InvoiceFields):
    """An invoice without its lines (as lists, pay, void and webhooks show it)."""

    customer_details: CustomerDetailsOut = Field(description="The customer as printed on the invoice")
    issuer: BusinessOutModel | None = Field(description="The business profile as printed on the invoice; "
                                                        "null before onboarding")


class InvoiceWithLinesOut(InvoiceOut):
    """An invoice with every line."""

    lines: LinesOut = Field(description="The lines, in order")


class DeletedInvoiceOut(BaseModel):
    """A draft that was deleted."""

    id: str = Field(description="The deleted draft, `in_…`")
    object: Literal["invoice"] = Field("invoice", description="Always `invoice`")
    deleted: Literal[True] = Field(True, description="Always true")


def line_to_api(line: InvoiceLine) -> dict:
    """A line as `InvoiceItemOut` renders it (a plain dict: the hot read path builds no models; a
    test checks the two agree). `line` is a row of `invoice_lines`, ORM object or Core row."""
    return {
        "id": ids.public_id("invoiceitem", line.id), "object": "invoiceitem",
        "invoice": ids.public_id("invoice", line.invoice_id),
        "price": ids.public_id("price", line.price_id) if line.price_id else None,
        "product": ids.public_id("product", line.product_id) if line.product_id else None,
        "description": line.description, "quantity": line.quantity, "unit": line.unit,
        "unit_amount": line.unit_amount, "amount": line.amount, "discount_percent": line.discount_percent,
        "tax_rate": line.tax_rate, "tax_amount": line.tax_amount, "tax_category": line.tax_category,
        "tax_exemption_reason": line.tax_exemption_reason,
    }


def customer_details(customer: Customer) -> dict:
    """The customer as printed on an invoice (and frozen into it at finalize)."""
    address = customer.address or {}
    return {"name": customer.name, "email": customer.email, "tax_id": customer.tax_id,
            "address": {key: address.get(key) for key in ADDRESS_KEYS}, "peppol_id": customer.peppol_id}


def issuer_details(session: Session, invoice: Invoice) -> dict | None:
    """The business profile as GET /business renders it; None before onboarding."""
    profile = find_profile(session, invoice.account_id)
    return business_to_api(profile) if profile is not None else None


_NOT_READ = object()


def _live_or_frozen(session: Session, invoice: Invoice, issuer: object = _NOT_READ) -> tuple[dict, dict | None]:
    if is_frozen(invoice):
        return invoice.customer_snapshot, invoice.issuer_snapshot
    customer = session.get(Customer, invoice.customer_id)
    return customer_details(customer), issuer_details(session, invoice) if issuer is _NOT_READ else issuer


def is_frozen(invoice: Invoice) -> bool:
    return invoice.status != "draft" and invoice.customer_snapshot is not None


def amount_due(invoice: Invoice) -> int:
    """What an open invoice still asks for: its total less credit notes' credit and what was paid (the
    customer balance applied to it and its payments not reversed)."""
    return invoice.total - invoice.amount_credited - invoice.amount_paid


def invoice_fields(invoice: Invoice, today: date | None = None) -> dict:
    """The invoice's own fields as `_InvoiceFields` renders them, in its order (a plain dict, as
    `line_to_api`). `invoice` is a row of `invoices`, ORM object or Core row."""
    status = status_of(invoice, today)
    token = invoice.public_url_token
    return {
        "id": ids.public_id("invoice", invoice.id), "object": "invoice", "number": invoice.number, "status": status,
        "customer": ids.public_id("customer", invoice.customer_id), "currency": invoice.currency,
        "collection_method": invoice.collection_method, "issue_date": invoice.issue_date,
        "due_date": invoice.due_date, "description": invoice.description, "footer": invoice.footer,
        "buyer_reference": invoice.buyer_reference, "order_reference": invoice.order_reference,
        "subtotal": invoice.subtotal, "discount": invoice.discount, "taxable": invoice.taxable, "tax": invoice.tax,
        "total": invoice.total, "amount_credited": invoice.amount_credited, "balance_applied": invoice.balance_applied,
        "amount_paid": invoice.amount_paid, "amount_due": amount_due(invoice) if status in ("open", "overdue") else 0,
        "amount_in_words": invoice.amount_in_words, "public_url_token": token,
        "public_url": public_url(token) if token else None, "public_pdf_url": public_pdf_url(token) if token else None,
        "finalized_at": iso(invoice.finalized_at), "paid_at": iso(invoice.paid_at), "voided_at": iso(invoice.voided_at),
        "void_reason": invoice.void_reason,
        "schedule": ids.public_id("invoice_schedule", invoice.schedule_id) if invoice.schedule_id else None,
        "period": ({"start": invoice.period_start, "end": invoice.period_end} if invoice.period_start else None),
        "reminders_paused": bool(invoice.reminders_paused),
        "late_fee_for": ids.public_id("invoice", invoice.late_fee_for_id) if invoice.late_fee_for_id else None,
        "created": iso(invoice.created), "updated": iso(invoice.updated),
    }


def invoice_to_api(session: Session, invoice: Invoice, *, with_lines: bool, issuer: object = _NOT_READ,
                   lines: list[InvoiceLine] | None = None) -> dict:
    """`issuer`: the account's issuer details when the caller read them already (a list); `lines`:
    the lines when they are not (yet) stored, as in a preview."""
    customer, issuer = _live_or_frozen(session, invoice, issuer)
    rows = (lines if lines is not None else lines_of(session, invoice)) if with_lines else None
    return assembled(invoice_fields(invoice), customer, issuer, rows)


def assembled(fields: dict, customer: dict, issuer: dict | None, lines: list | None) -> dict:
    """An invoice's API object from its fields, the customer and issuer as printed (snapshots shown
    exactly as they were frozen, not re-validated against today's models) and, when given, its lines."""
    data: dict = {}
    for key, value in fields.items():
        data[key] = value
        if key == "customer":
            data["customer_details"], data["issuer"] = customer, issuer
    if lines is not None:
        data["lines"] = {"data": [line_to_api(line) for line in lines]}
    return data


class InvoicePreviewLineOut(InvoiceItemOut):
    """A line as it would be created."""

    id: None = Field(None, description="Null: a preview creates nothing")
    invoice: None = Field(None, description="Null: a preview creates nothing")


class InvoicePreviewOut(InvoiceWithLinesOut):
    """The draft invoice `create_invoice` would create with the same input: its lines and totals,
    computed as creating computes them, with nothing saved, numbered or recorded."""

    id: None = Field(None, description="Null: a preview creates nothing")
    object: Literal["invoice_preview"] = Field("invoice_preview", description="Always `invoice_preview`")
    lines: PreviewLinesOut = Field(description="The lines, in order")


class PreviewLinesOut(BaseModel):
    """Every line the draft would have, in order."""

    data: list[InvoicePreviewLineOut] = Field(description="The lines")


InvoicePreviewOut.model_rebuild()


def preview_to_api(session: Session, invoice: Invoice, lines: list[InvoiceLine]) -> dict:
    """A draft built in memory (`core.billing.invoices.preview_invoice`) as `InvoicePreviewOut`."""
    data = invoice_to_api(session, invoice, with_lines=True, lines=lines)
    data.update(id=None, object="invoice_preview")
    data["lines"]["data"] = [{**line, "id": None, "invoice": None} for line in data["lines"]["data"]]
    return data
