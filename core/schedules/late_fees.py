"""Late fees of payment reminders: an invoice of its own that names the overdue invoice (a finalized
invoice never changes), either a fixed amount or the statutory interest and compensation of the EU Late
Payment Directive (2011/7/EU): the reference rate plus 8 points a year on what is due, for each day
overdue, and 40 EUR. Late fees are not consideration for a supply: their lines are outside the scope
of VAT (category O)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from sqlalchemy import update
from sqlmodel import Session

from core.access.principal import Principal
from core.base import executor, ids
from core.base.money import format_money, round_half_up
from core.billing import finalization, invoices
from core.billing.invoice_inputs import InvoiceCreate
from core.billing.invoice_render import amount_due
from core.models import Invoice
from core.schedules.reminder_policy import STATUTORY_COMPENSATION_EUR, STATUTORY_POINTS, ReminderPolicyInput

DAYS_IN_YEAR = 365
NOT_SUBJECT = "Late payment charges are not consideration for a supply: outside the scope of VAT"


def statutory_interest(due: int, days_overdue: int, reference_rate: Decimal) -> int:
    """Interest in minor units: what is due × (reference rate + 8) % × days / 365, rounded half up."""
    rate = (reference_rate + STATUTORY_POINTS) / Decimal(100)
    return max(0, round_half_up(Decimal(due) * rate * Decimal(days_overdue) / Decimal(DAYS_IN_YEAR)))


def fee_lines(invoice: Invoice, policy: ReminderPolicyInput, days_overdue: int) -> list[dict]:
    """The fee's lines for the overdue `invoice` (none when it comes to nothing)."""
    fee, number = policy.late_fee, invoice.number
    base = {"quantity": 1, "tax_category": "O", "tax_exemption_reason": NOT_SUBJECT}
    if fee.kind == "fixed":
        return [{**base, "description": f"Late payment fee for invoice {number}", "unit_amount": fee.amount}]
    due, rate = amount_due(invoice), policy.reference_rate
    lines = []
    interest = statutory_interest(due, days_overdue, rate)
    if interest:
        yearly = rate + STATUTORY_POINTS
        lines.append({**base, "unit_amount": interest, "description": (
            f"Interest on late payment of invoice {number}: {format_money(due, invoice.currency)} at {yearly:f}% a year "
            f"(reference rate {rate:f}% + {STATUTORY_POINTS:f} points) for {days_overdue} days since "
            f"{invoice.due_date.isoformat()}")})
    if invoice.currency == "EUR":
        lines.append({**base, "unit_amount": STATUTORY_COMPENSATION_EUR, "description": (
            f"Fixed compensation for recovery costs of invoice {number} (Directive 2011/7/EU, Article 6)")})
    return lines


def issue(session: Session, principal: Principal, invoice: Invoice, policy: ReminderPolicyInput, today: date):
    """The late fee's invoice for the overdue `invoice`, issued `today` (the business's day) and finalized
    in `session`'s transaction, acting as `principal` (the account's owner: the policy is theirs); its
    id, or None when the fee comes to nothing."""
    days_overdue = max(0, (today - invoice.due_date).days)
    lines = fee_lines(invoice, policy, days_overdue)
    if not lines:
        return None
    data = InvoiceCreate.model_validate({
        "customer": ids.public_id("customer", invoice.customer_id), "currency": invoice.currency,
        "description": f"Late payment of invoice {invoice.number}, due {invoice.due_date.isoformat()}.",
        "issue_date": today.isoformat(), "days_until_due": 14, "items": lines})
    drafted = executor.within(session, invoices.create_invoice, principal, data)
    fee_id = drafted.invoice.id
    session.exec(update(Invoice).where(Invoice.id == fee_id).values(late_fee_for_id=invoice.id))
    executor.within(session, finalization.finalize, principal, ids.public_id("invoice", fee_id))
    return fee_id


def explained(fee: dict) -> str:
    """What a reminder says of the late fee's invoice `fee` (its API object)."""
    return (f"As the invoice is overdue, a late payment charge of {format_money(fee['total'], fee['currency'])} is "
            f"invoiced separately as {fee['number']}: {fee['public_url']}")
