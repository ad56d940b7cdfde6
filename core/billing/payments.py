"""Payments: money received for an invoice outside the service (no money moves here), in part or in
full, by bank transfer, card, cash, cheque, direct debit or otherwise.

Recording one takes its amount off what the invoice has due (`amount_paid` rises, `amount_due` falls);
the payment that brings `amount_due` to 0 makes the invoice paid, its `paid_at` the latest payment's
date. An amount above what is due is refused (422 at `amount`) unless `overpayment: "balance"` puts
the excess on the customer's credit balance in that currency (`customer_balance`, the balance credit
notes use), applied to their next invoice. `POST /invoices/{id}/pay` (`mark_paid`) records one payment
of all that is due.

Reversing a payment (a bounced transfer) undoes it: the invoice is owed that part again (a paid one
reopens, `invoice.reopened`); the payment stays in the history as `reversed`. Refused when its
excess was already applied to another invoice, or when the invoice's credit notes refunded or put on
the balance more than would remain paid (void those first).

Every writer locks the invoice's row first, then the account's (an app's limits), then what the
balance holds: two payments of one invoice never pass what is due together. An app's payments and
reversals are its `pay` action: within `max_amount` (the payment's amount) and `max_per_day`.
"""

from __future__ import annotations

import functools
import uuid

from sqlalchemy import func
from sqlmodel import Session, select

from core.access.principal import Principal
from core.base import executor, ids, money
from core.base.clock import now
from core.base.errors import InvalidState, ValidationFailed
from core.base.lookup import owned
from core.billing import confirmations, customer_balance, delegated_actions, events
from core.billing.attached import list_attached
from core.billing.confirmations import Confirmed, require_as_confirmed
from core.billing.invoice_inputs import PayInput
from core.billing.invoice_render import amount_due, status_of
from core.billing.payment_inputs import PaymentCreate, PaymentListQuery, PaymentReverse
from core.billing.payment_render import payment_to_api
from core.mechanisms.pagination import Page
from core.models import CreditNote, Invoice, Payment

# --- look-ups ------------------------------------------------------------------------------


def get_payment(session: Session, account_id: uuid.UUID, id_text: str, *, lock: bool = False) -> Payment:
    return owned(session, Payment, "payment", account_id, id_text, noun="payment", lock=lock)


def list_payments(session: Session, account_id: uuid.UUID, q: PaymentListQuery) -> Page:
    """The account's payments, newest first, optionally of one invoice or customer; reversed ones included."""
    return list_attached(session, Payment, "payments", account_id, q)


def payments_of_invoice(session: Session, invoice_id: uuid.UUID) -> list[Payment]:
    """The invoice's payments, reversed ones included, oldest first."""
    query = select(Payment).where(Payment.invoice_id == invoice_id)
    return list(session.exec(query.order_by(Payment.paid_at, Payment.created, Payment.id)))


def has_payments(session: Session, invoice_id: uuid.UUID) -> bool:
    """Whether the invoice has payments not reversed."""
    return session.exec(select(func.count()).select_from(Payment).where(
        Payment.invoice_id == invoice_id, Payment.status == "recorded")).one() > 0


def refunded_or_kept(session: Session, invoice_id: uuid.UUID) -> int:
    """What the invoice's credit notes (not void) refunded or put on the customer's balance: money that
    was paid and went back, so at most what the invoice has been paid."""
    return session.exec(select(func.coalesce(func.sum(CreditNote.refund_amount + CreditNote.balance_amount), 0))
                        .where(CreditNote.invoice_id == invoice_id, CreditNote.status == "issued")).one()


# --- recording -----------------------------------------------------------------------------


def _payable(session: Session, account_id: uuid.UUID, id_text: str) -> Invoice:
    invoice = owned(session, Invoice, "invoice", account_id, id_text, noun="invoice", lock=True)
    if invoice.status != "open":
        raise InvalidState(f"Invoice {ids.public_id('invoice', invoice.id)} is {status_of(invoice)}: only an open or "
                           "overdue invoice can be paid.")
    if amount_due(invoice) <= 0:  # an invoice of 0 is open with nothing to pay
        raise InvalidState(f"Invoice {invoice.number} has nothing due: there is nothing to pay.")
    return invoice


def _received(invoice: Invoice, data: PaymentCreate) -> Payment:
    """The payment `data` describes on `invoice`, checked: its part of what is due and any excess."""
    if data.currency is not None and data.currency != invoice.currency:
        raise ValidationFailed.at("currency", f"invoice {invoice.number} is in {invoice.currency}, not {data.currency}")
    due = amount_due(invoice)
    if data.amount > due and data.overpayment != "balance":
        raise ValidationFailed.at("amount", f"{money.format_money(data.amount, invoice.currency)} is more than invoice "
                                            f"{invoice.number} has due ({money.format_money(due, invoice.currency)}); "
                                            "record what is due, or set overpayment to \"balance\" to put the excess "
                                            "on the customer's balance")
    applied = min(data.amount, due)
    return Payment(account_id=invoice.account_id, invoice_id=invoice.id, invoice_number=invoice.number,
                   customer_id=invoice.customer_id, currency=invoice.currency, amount=data.amount,
                   amount_applied=applied, balance_amount=data.amount - applied,
                   balance_remaining=data.amount - applied, paid_at=data.paid_on or now(), method=data.method,
                   reference=data.reference, note=data.note)


def record_payment(session: Session, principal: Principal, data: PaymentCreate, *,
                   confirmed: Confirmed | None = None) -> Payment:
    """Record a payment for an open invoice (see the module), with `payment.recorded` (and `invoice.paid`
    when it settles the invoice) in the invoice's history."""
    invoice = _payable(session, principal.account_id, data.invoice)
    payment = _received(invoice, data)
    executor.within(session, functools.partial(delegated_actions.act_for, amount=payment.amount), principal, "pay",
                    invoice)
    require_as_confirmed(session, invoice, "record_payment", data, confirmed)
    return _apply(session, principal, invoice, payment)


def mark_paid(session: Session, principal: Principal, invoice: Invoice, data: PayInput | None = None, *,
              confirmed: Confirmed | None = None) -> Invoice:
    """`POST /invoices/{id}/pay`: one payment of all that `invoice` has due (method `other`)."""
    data = data or PayInput()
    invoice = _payable(session, principal.account_id, ids.public_id("invoice", invoice.id))
    whole = PaymentCreate.model_construct(invoice=ids.public_id("invoice", invoice.id), amount=amount_due(invoice),
                                          paid_on=data.paid_on, reference=data.reference)
    payment = _received(invoice, whole)
    executor.within(session, functools.partial(delegated_actions.act_for, amount=payment.amount), principal, "pay",
                    invoice)
    require_as_confirmed(session, invoice, "pay", data, confirmed)
    _apply(session, principal, invoice, payment)
    return invoice


def _apply(session: Session, principal: Principal, invoice: Invoice, payment: Payment) -> Payment:
    payment.created = payment.updated = now()
    session.add(payment)
    session.flush()
    meta = principal.event_meta()
    events.record(session, invoice, "payment.recorded", meta, payment_to_api(payment))
    invoice.amount_paid += payment.amount_applied
    invoice.updated = now()
    if amount_due(invoice) == 0:
        invoice.status, invoice.paid_at = "paid", _latest_payment(session, invoice.id)
    session.add(invoice)
    session.flush()
    if invoice.status == "paid":
        events.record(session, invoice, "invoice.paid", {**meta, "reference": payment.reference,
                                                         "payment": ids.public_id("payment", payment.id)})
    return payment


def _latest_payment(session: Session, invoice_id: uuid.UUID):
    return session.exec(select(func.max(Payment.paid_at)).where(Payment.invoice_id == invoice_id,
                                                                 Payment.status == "recorded")).one()


# --- reversing -----------------------------------------------------------------------------


def reverse_payment(session: Session, principal: Principal, id_text: str, data: PaymentReverse, *,
                    confirmed: Confirmed | None = None) -> Payment:
    """Undo a recorded payment (see the module), with `payment.reversed` (and `invoice.reopened` when the
    invoice was paid) in the invoice's history."""
    payment = get_payment(session, principal.account_id, id_text)
    # The invoice, the account (an app's limits), then the payment: the order of every writer.
    invoice = owned(session, Invoice, "invoice", principal.account_id, str(payment.invoice_id), noun="invoice",
                    lock=True)
    _refuse_reversal(session, payment, invoice)
    executor.within(session, functools.partial(delegated_actions.act_for, amount=payment.amount), principal, "pay",
                    invoice)
    payment = get_payment(session, principal.account_id, id_text, lock=True)
    _refuse_reversal(session, payment, invoice)
    if confirmed is not None:
        confirmations.check(confirmed, reversal_shown(payment, invoice), "reverse_payment", data)
    payment.status, payment.balance_remaining = "reversed", 0
    payment.reversed_at = payment.updated = now()
    payment.reversal_reason = data.reason
    session.add(payment)
    session.flush()
    meta = {**principal.event_meta(), "reason": data.reason}
    events.record(session, invoice, "payment.reversed", meta, payment_to_api(payment))
    invoice.amount_paid -= payment.amount_applied
    owed_again(session, invoice, {**principal.event_meta(), "payment": ids.public_id("payment", payment.id)})
    return payment


def reversal_shown(payment: Payment, invoice: Invoice) -> dict:
    """What a person asked about reversing `payment` is shown: the payment, and the state of its invoice
    that the reversal changes (a paid invoice reopens; what is due grows), so that a change to either
    makes their answer stale."""
    return {**payment_to_api(payment), "invoice_status": invoice.status, "invoice_amount_due": amount_due(invoice)}


def owed_again(session: Session, invoice: Invoice, meta: dict) -> None:
    """Save `invoice` after what settled part of it was undone (a payment reversed, a credit note
    voided): a paid invoice with something due again reopens, with `invoice.reopened` (`meta`)."""
    invoice.updated = now()
    reopened = invoice.status == "paid" and amount_due(invoice) > 0
    if reopened:
        invoice.status, invoice.paid_at = "open", None
    session.add(invoice)
    session.flush()
    if reopened:
        events.record(session, invoice, "invoice.reopened", meta)


def _refuse_reversal(session: Session, payment: Payment, invoice: Invoice) -> None:
    if payment.status != "recorded":
        raise InvalidState(f"Payment {ids.public_id('payment', payment.id)} is reversed already.")
    if applied := customer_balance.applied_elsewhere(payment):
        raise InvalidState(f"Payment {ids.public_id('payment', payment.id)} cannot be reversed: {applied} of what it "
                           "paid beyond the invoice was applied to another invoice of the customer.")
    went_back = refunded_or_kept(session, invoice.id)
    if went_back > invoice.amount_paid - payment.amount_applied:
        raise InvalidState(f"Payment {ids.public_id('payment', payment.id)} cannot be reversed: credit notes of "
                           f"invoice {invoice.number} refunded or put on the customer's balance "
                           f"{money.format_money(went_back, invoice.currency)} of what was paid; void them first.")
