"""Credit notes: the lawful way to correct an issued invoice (Directive 2006/112/EC art. 219): a
document of its own, with a number of its own series, that names the invoice it corrects.

What a credit note credits:
- part of an invoice line, by quantity (at the line's unit price, discount and tax rate) or by
  amount (before tax, at the line's tax rate), or all that remains of it;
- a line of its own (a description, an amount and a tax rate), such as a goodwill gesture.

Tax is computed per line with the invoice's own rates and rounding (`money.compute_line`); the part
that completes a line takes exactly what remains of its amount and tax, so crediting an invoice in
pieces adds up to exactly its total. A credit note never credits more than the invoice can still be
credited: its total less earlier credit notes (void ones do not count).

Where the money goes, adding up to the total:
- `credit_amount` lowers what is still due on an open invoice (at most its `amount_due`); credited
  to zero, the invoice is paid (by credit);
- `refund_amount` was refunded outside the service (a reference, a date);
- `balance_amount` is the customer's credit in that currency, applied to their next invoice in
  that currency when it is finalized (`customer_balance`).

A paid invoice has nothing due: only refund and balance, which give back money paid, so all of an
invoice's credit notes refund or keep on the balance at most what it has been paid
(`payments`). Voiding a credit note undoes its effects (a paid invoice reopens for what it credited),
unless its balance was applied to another invoice already.
"""

from __future__ import annotations

import functools
import secrets
import uuid
from dataclasses import dataclass
from decimal import Decimal

from sqlalchemy import func
from sqlmodel import Session, select

from core.access.principal import Principal
from core.base import executor, ids, money
from core.base.clock import now, today
from core.base.errors import FieldError, InvalidState, ValidationFailed
from core.base.lookup import owned
from core.base.validation import MAX_SAFE_INTEGER, failed
from core.billing import confirmations, customer_balance, delegated_actions, events, numbering, payments
from core.billing.attached import list_attached
from core.billing.business import business_to_api, find_profile
from core.billing.confirmations import Confirmed
from core.billing.credit_note_inputs import CreditNoteCreate, CreditNoteLineInput, CreditNoteListQuery
from core.billing.credit_note_render import credit_note_to_api
from core.billing.invoice_lines import check_tax_categories
from core.billing.invoice_render import amount_due, lines_of, status_of
from core.billing.presentation import exact_number
from core.mechanisms.pagination import Page
from core.models import CreditNote, CreditNoteLine, Invoice, InvoiceLine


@dataclass
class Credited:
    """What earlier credit notes (not void) took of an invoice line."""

    amount: int = 0
    tax: int = 0
    quantity: Decimal = Decimal(0)
    by_amount: bool = False  # some of it was credited by amount: its quantity no longer tells what remains


@dataclass(frozen=True)
class Remaining:
    """What an invoice line still has to credit: before tax, tax, and units (None once part of it was
    credited by amount: its quantity no longer tells what remains)."""

    amount: int
    tax: int
    quantity: Decimal | None

    @property
    def done(self) -> bool:
        return self.amount <= 0 and self.tax <= 0


def remaining_of(source: InvoiceLine, taken: Credited) -> Remaining:
    """What remains of the invoice line `source` after what its credit notes took (`taken`)."""
    return Remaining(source.amount - taken.amount, source.tax_amount - taken.tax,
                     None if taken.by_amount else Decimal(source.quantity) - taken.quantity)


# --- look-ups ------------------------------------------------------------------------------


def get_credit_note(session: Session, account_id: uuid.UUID, id_text: str, *, lock: bool = False) -> CreditNote:
    return owned(session, CreditNote, "credit_note", account_id, id_text, noun="credit note", lock=lock)


def lines_of_note(session: Session, note: CreditNote) -> list[CreditNoteLine]:
    query = select(CreditNoteLine).where(CreditNoteLine.credit_note_id == note.id)
    return list(session.exec(query.order_by(CreditNoteLine.position, CreditNoteLine.id)))


def view_credit_note(session: Session, note: CreditNote) -> dict:
    """The credit note as the API shows it."""
    return credit_note_to_api(note, lines_of_note(session, note))


def e_invoice_view(session: Session, account_id: uuid.UUID, id_text: str) -> dict:
    """The credit note as its e-invoices are made from it (`core.documents.export.e_invoice`): as the
    API shows it, with the invoice it corrects (`corrected_invoice`: its number, issue date and the
    buyer's references it carried)."""
    note = get_credit_note(session, account_id, id_text)
    invoice = session.get(Invoice, note.invoice_id)
    shown = view_credit_note(session, note)
    shown["corrected_invoice"] = {"number": invoice.number, "issue_date": invoice.issue_date,
                                  "buyer_reference": invoice.buyer_reference,
                                  "order_reference": invoice.order_reference, "due_date": invoice.due_date}
    return shown


def notes_of_invoice(session: Session, invoice_id: uuid.UUID) -> list[CreditNote]:
    """The invoice's credit notes, oldest first."""
    query = select(CreditNote).where(CreditNote.invoice_id == invoice_id)
    return list(session.exec(query.order_by(CreditNote.created, CreditNote.id)))


def list_credit_notes(session: Session, account_id: uuid.UUID, q: CreditNoteListQuery) -> Page:
    """The account's credit notes, newest first, optionally of one invoice or customer."""
    return list_attached(session, CreditNote, "credit_notes", account_id, q)


def credited_of_lines(session: Session, invoice_id: uuid.UUID) -> dict[uuid.UUID, Credited]:
    """What the invoice's credit notes (not void) took of each of its lines."""
    credited: dict[uuid.UUID, Credited] = {}
    query = (select(CreditNoteLine).join(CreditNote, CreditNote.id == CreditNoteLine.credit_note_id)
             .where(CreditNote.invoice_id == invoice_id, CreditNote.status == "issued",
                    CreditNoteLine.invoice_line_id.is_not(None)))
    for line in session.exec(query):
        taken = credited.setdefault(line.invoice_line_id, Credited())
        taken.amount += line.amount
        taken.tax += line.tax_amount
        if line.quantity is None:
            taken.by_amount = True
        else:
            taken.quantity += line.quantity
    return credited


def credited_by_rate(session: Session, invoice_id: uuid.UUID) -> dict[Decimal, list[int]]:
    """What the invoice's credit notes (not void) credited at each tax rate: [amount before tax, tax]."""
    by_rate: dict[Decimal, list[int]] = {}
    query = (select(CreditNoteLine.tax_rate, CreditNoteLine.amount, CreditNoteLine.tax_amount)
             .join(CreditNote, CreditNote.id == CreditNoteLine.credit_note_id)
             .where(CreditNote.invoice_id == invoice_id, CreditNote.status == "issued"))
    for rate, amount, tax in session.exec(query):
        sums = by_rate.setdefault(Decimal(rate), [0, 0])
        sums[0], sums[1] = sums[0] + amount, sums[1] + tax
    return by_rate


def what_remains(session: Session, account_id: uuid.UUID, invoice_id_text: str) -> tuple[dict[str, Remaining], int]:
    """What each line of the account's invoice still has to credit (by `ii_…` id), and what the invoice
    as a whole can still be credited: the figures a form to credit it shows (read-only)."""
    invoice = owned(session, Invoice, "invoice", account_id, invoice_id_text, noun="invoice")
    taken = credited_of_lines(session, invoice.id)
    remains = {ids.public_id("invoiceitem", source.id): remaining_of(source, taken.get(source.id, Credited()))
               for source in lines_of(session, invoice)}
    return remains, invoice.total - credited_total(session, invoice.id)


def credited_total(session: Session, invoice_id: uuid.UUID) -> int:
    """The totals of the invoice's credit notes (not void)."""
    return session.exec(select(func.coalesce(func.sum(CreditNote.total), 0)).where(
        CreditNote.invoice_id == invoice_id, CreditNote.status == "issued")).one()


# --- computing a credit note ---------------------------------------------------------------


def _creditable_invoice(session: Session, account_id: uuid.UUID, id_text: str, *, lock: bool) -> Invoice:
    invoice = owned(session, Invoice, "invoice", account_id, id_text, noun="invoice", lock=lock)
    if invoice.status not in ("open", "paid"):
        raise InvalidState(f"Invoice {ids.public_id('invoice', invoice.id)} is {status_of(invoice)}: only an open, "
                           "overdue or paid invoice can be credited.")
    return invoice


def _line_problems(item: CreditNoteLineInput, path: str) -> list[FieldError]:
    problems = []
    if item.invoice_line is not None:
        if item.quantity is not None and item.amount is not None:
            problems.append(FieldError(f"{path}.amount", "give quantity or amount, not both"))
        problems += [FieldError(f"{path}.{name}", "is the invoice line's own: leave it out")
                     for name in ("description", "tax_rate", "tax_category", "tax_exemption_reason")
                     if getattr(item, name) is not None]
    else:
        if item.quantity is not None:
            problems.append(FieldError(f"{path}.quantity", "is for crediting an invoice line: name it in invoice_line"))
        problems += [FieldError(f"{path}.{name}", "is required for a line of its own")
                     for name in ("description", "amount") if getattr(item, name) is None]
    if item.amount == 0:
        problems.append(FieldError(f"{path}.amount", "must be above 0"))
    return problems


def _from_invoice_line(note: CreditNote, item: CreditNoteLineInput | None, source: InvoiceLine, taken: Credited,
                       path: str) -> CreditNoteLine:
    """The part of `source` that `item` credits (None: all that remains of it)."""
    remains = remaining_of(source, taken)
    remaining_amount, remaining_tax = remains.amount, remains.tax
    line = CreditNoteLine(account_id=note.account_id, credit_note_id=note.id, type="invoice_line",
                          invoice_line_id=source.id, description=source.description, unit=source.unit,
                          unit_amount=source.unit_amount, discount_percent=source.discount_percent,
                          tax_rate=source.tax_rate, tax_category=source.tax_category,
                          tax_exemption_reason=source.tax_exemption_reason)
    if remains.done:
        raise ValidationFailed.at(path, f"invoice line {ids.public_id('invoiceitem', source.id)} is credited in full "
                                        "already")
    if item is None or (item.quantity is None and item.amount is None):
        line.amount, line.tax_amount, line.quantity = remaining_amount, remaining_tax, remains.quantity
        return line
    if item.quantity is not None:
        left = remains.quantity
        if left is None:
            raise ValidationFailed.at(f"{path}.quantity", "part of the invoice line was credited by amount: credit "
                                                          "the rest by amount too")
        if item.quantity > left:
            raise ValidationFailed.at(f"{path}.quantity", f"is more than remains of the invoice line "
                                                          f"({exact_number(left)})")
        line.quantity = item.quantity
        if item.quantity == left:
            line.amount, line.tax_amount = remaining_amount, remaining_tax
            return line
        computed = money.compute_line(money.LineInput(unit_amount=source.unit_amount, quantity=item.quantity,
                                                      discount_percent=source.discount_percent,
                                                      tax_rate=source.tax_rate))
        line.amount, line.tax_amount = computed.amount, min(computed.tax_amount, remaining_tax)
        if line.amount > remaining_amount:
            raise ValidationFailed.at(f"{path}.quantity", "credits more than remains of the invoice line's amount")
        return line
    if item.amount > remaining_amount:
        raise ValidationFailed.at(f"{path}.amount", f"is more than remains of the invoice line's amount "
                                                    f"({money.format_money(remaining_amount, note.currency)})")
    line.amount = item.amount
    line.tax_amount = (remaining_tax if item.amount == remaining_amount
                       else min(_tax(item.amount, source.tax_rate), remaining_tax))
    return line


def _tax(amount: int, rate: Decimal) -> int:
    return money.compute_line(money.LineInput(unit_amount=amount, quantity=Decimal(1), tax_rate=rate)).tax_amount


def _own_line(note: CreditNote, item: CreditNoteLineInput) -> CreditNoteLine:
    rate = item.tax_rate if item.tax_rate is not None else Decimal(0)
    return CreditNoteLine(account_id=note.account_id, credit_note_id=note.id, type="custom",
                          description=item.description, amount=item.amount, tax_rate=rate,
                          tax_amount=_tax(item.amount, rate), tax_category=item.tax_category,
                          tax_exemption_reason=item.tax_exemption_reason or None)


def build(session: Session, account_id: uuid.UUID, data: CreditNoteCreate, invoice: Invoice, *,
          allocate: bool = True) -> tuple[CreditNote, list]:
    """The credit note `data` describes on `invoice` (open or paid), computed and checked in memory,
    nothing saved and no number taken; `allocate=False` leaves where the money goes unchecked and unset
    (`credit_total`)."""
    sources = {line.id: line for line in lines_of(session, invoice)}
    taken = credited_of_lines(session, invoice.id)
    profile = find_profile(session, account_id)
    note = CreditNote(account_id=account_id, invoice_id=invoice.id, customer_id=invoice.customer_id, number="",
                      currency=invoice.currency, reason=data.reason, memo=data.memo, issue_date=today(),
                      invoice_number=invoice.number, invoice_issue_date=invoice.issue_date,
                      customer_snapshot=invoice.customer_snapshot,
                      issuer_snapshot=business_to_api(profile) if profile is not None else invoice.issuer_snapshot,
                      public_url_token="")
    lines: list[CreditNoteLine] = []
    if data.lines is None:
        lines = [_from_invoice_line(note, None, source, taken.get(source.id, Credited()), "lines")
                 for source in sources.values() if not remaining_of(source, taken.get(source.id, Credited())).done]
        if not lines:
            raise ValidationFailed.at("lines", "the invoice is credited in full already")
    else:
        problems = [problem for index, item in enumerate(data.lines) for problem in _line_problems(item, f"lines.{index}")]
        if problems:
            raise failed(problems)
        named: dict[uuid.UUID, int] = {}
        rates = sorted({Decimal(source.tax_rate) for source in sources.values()})
        for index, item in enumerate(data.lines):
            path = f"lines.{index}"
            if item.invoice_line is None:
                if Decimal(item.tax_rate or 0) not in rates:
                    raise ValidationFailed.at(f"{path}.tax_rate", "must be one of the invoice's tax rates: " + ", ".join(
                        f"{exact_number(rate)} %" for rate in rates))
                lines.append(_own_line(note, item))
                continue
            line_id = ids.try_parse("invoiceitem", item.invoice_line)
            if line_id not in sources:
                raise ValidationFailed.at(f"{path}.invoice_line", f"is not a line of invoice {invoice.number}")
            if line_id in named:
                raise ValidationFailed.at(f"{path}.invoice_line", f"is credited by lines.{named[line_id]} already: "
                                                                  "one line of the credit note per invoice line")
            named[line_id] = index
            lines.append(_from_invoice_line(note, item, sources[line_id], taken.get(line_id, Credited()), path))
    check_tax_categories(lines)
    _within_each_rate(session, invoice, sources.values(), lines)
    for position, line in enumerate(lines):
        line.position = position
    note.subtotal = sum(line.amount for line in lines)
    note.tax = sum(line.tax_amount for line in lines)
    note.total = note.subtotal + note.tax
    if note.total > MAX_SAFE_INTEGER:
        raise ValidationFailed.at("lines", "the credit note total is too large")
    if note.total <= 0:
        raise ValidationFailed.at("lines", "a credit note credits an amount above 0")
    can_credit = invoice.total - credited_total(session, invoice.id)
    if note.total > can_credit:
        raise ValidationFailed.at("lines", f"credit {money.format_money(note.total, note.currency)} is more than "
                                           f"invoice {invoice.number} can still be credited "
                                           f"({money.format_money(max(can_credit, 0), note.currency)})")
    if allocate:
        _allocate(session, note, data, invoice)
    note.amount_in_words = money.amount_in_words(note.total, note.currency)
    return note, lines


def _within_each_rate(session: Session, invoice: Invoice, sources, lines: list[CreditNoteLine]) -> None:
    """At each tax rate, what all the invoice's credit notes credit, before tax and in tax, stays within
    what the invoice has at that rate (lines of their own included): a credit note never corrects VAT
    the invoice did not charge."""
    has: dict[Decimal, list[int]] = {}
    for source in sources:
        sums = has.setdefault(Decimal(source.tax_rate), [0, 0])
        sums[0], sums[1] = sums[0] + source.amount, sums[1] + source.tax_amount
    credited = credited_by_rate(session, invoice.id)
    for line in lines:
        sums = credited.setdefault(Decimal(line.tax_rate), [0, 0])
        sums[0], sums[1] = sums[0] + line.amount, sums[1] + line.tax_amount
    for rate, (amount, tax) in credited.items():
        limit = has.get(rate, [0, 0])
        if amount > limit[0] or tax > limit[1]:
            left = max(limit[0] - amount + sum(line.amount for line in lines if Decimal(line.tax_rate) == rate), 0)
            raise ValidationFailed.at("lines", f"credits more at {exact_number(rate)} % than invoice {invoice.number} "
                                               f"has left at that rate ({money.format_money(left, invoice.currency)} "
                                               "before tax)")


def _allocate(session: Session, note: CreditNote, data: CreditNoteCreate, invoice: Invoice) -> None:
    """Where the money goes: the amounts given must add up to the total; none given, on an open invoice
    all of it lowers what is due. What is refunded or put on the balance went back from what was paid,
    so all the invoice's credit notes give back at most what it has been paid."""
    given = {name: getattr(data, name) for name in ("credit_amount", "refund_amount", "balance_amount")}
    if not data.refund_amount:
        problems = [FieldError(name, "goes with a refund_amount above 0")
                    for name in ("refund_reference", "refunded_on") if getattr(data, name) is not None]
        if problems:
            raise failed(problems)
    total_text = money.format_money(note.total, note.currency)
    if all(value is None for value in given.values()):
        if invoice.status == "paid":
            raise ValidationFailed.at("refund_amount", f"invoice {invoice.number} is paid: say where the "
                                                       f"{total_text} go, as refund_amount or balance_amount")
        given["credit_amount"] = note.total
    note.credit_amount, note.refund_amount, note.balance_amount = (given[name] or 0 for name in given)
    if note.credit_amount and invoice.status == "paid":
        raise ValidationFailed.at("credit_amount", f"invoice {invoice.number} is paid: nothing is due to take it off; "
                                                   "use refund_amount or balance_amount")
    due = amount_due(invoice)
    if note.credit_amount > due:
        raise ValidationFailed.at("credit_amount", f"is more than invoice {invoice.number} still has due "
                                                   f"({money.format_money(due, note.currency)})")
    if note.credit_amount + note.refund_amount + note.balance_amount != note.total:
        first = next(name for name, value in given.items() if value is not None)
        raise ValidationFailed.at(first, f"credit_amount + refund_amount + balance_amount must add up to the credit "
                                         f"note's total, {total_text}")
    went_back = note.refund_amount + note.balance_amount
    if went_back:
        paid = invoice.amount_paid - payments.refunded_or_kept(session, invoice.id)
        if went_back > paid:
            first = "refund_amount" if note.refund_amount else "balance_amount"
            raise ValidationFailed.at(first, f"refund_amount + balance_amount is more than invoice {invoice.number} "
                                             f"has been paid and not yet refunded "
                                             f"({money.format_money(max(paid, 0), note.currency)}); record the "
                                             "payment first")
    note.balance_remaining = note.balance_amount
    if note.refund_amount:
        note.refund_reference, note.refunded_on = data.refund_reference, data.refunded_on or today()


# --- acting --------------------------------------------------------------------------------


def preview_credit_note(session: Session, principal: Principal, data: CreditNoteCreate) -> dict:
    """What `create_credit_note` would issue with `data`: the same checks and arithmetic, saving and
    numbering nothing (a read-only session will do)."""
    invoice = _creditable_invoice(session, principal.account_id, data.invoice, lock=False)
    return _preview_of(*build(session, principal.account_id, data, invoice))


def credit_total(session: Session, account_id: uuid.UUID, data: CreditNoteCreate) -> int:
    """The total `data` would credit, whatever it says of where the money goes: what a form that sends
    all of it one way (the dashboard's) must name as the amount. The checks of `preview_credit_note`
    but those of the amounts; nothing saved (a read-only session will do)."""
    invoice = _creditable_invoice(session, account_id, data.invoice, lock=False)
    return build(session, account_id, data, invoice, allocate=False)[0].total


def _preview_of(note: CreditNote, lines: list) -> dict:
    shown = credit_note_to_api(note, lines)
    for line in shown["lines"]["data"]:
        line["id"] = None
    return shown


def create_credit_note(session: Session, principal: Principal, data: CreditNoteCreate, *,
                       confirmed: Confirmed | None = None) -> tuple[CreditNote, list]:
    """Issue a credit note (see the module): it takes the next number of its series, changes the invoice
    (what is due, its status) and records `credit_note.created` (and `invoice.paid` when it settles the
    invoice) in the invoice's history, in one transaction."""
    invoice = _creditable_invoice(session, principal.account_id, data.invoice, lock=True)
    note, lines = build(session, principal.account_id, data, invoice)
    executor.within(session, functools.partial(delegated_actions.act_for, amount=note.total), principal, "credit", invoice)
    if confirmed is not None:
        confirmations.check(confirmed, _preview_of(note, lines), "credit", data)
    prefix = find_profile(session, principal.account_id).credit_note_prefix
    note.number = executor.within(session, numbering.take_next, principal.account_id, prefix, "credit_note")
    note.public_url_token = secrets.token_urlsafe(32)
    note.created = note.updated = now()
    session.add(note)
    session.flush()
    session.add_all(lines)
    session.flush()
    meta = principal.event_meta()
    events.record(session, invoice, "credit_note.created", meta, credit_note_to_api(note, lines))
    if note.credit_amount:
        invoice.amount_credited += note.credit_amount
        invoice.updated = now()
        if amount_due(invoice) == 0 and invoice.status == "open":
            invoice.status, invoice.paid_at = "paid", now()
            session.add(invoice)
            session.flush()
            events.record(session, invoice, "invoice.paid", {**meta, "credit_note": ids.public_id("credit_note", note.id)})
        session.add(invoice)
        session.flush()
    return note, lines


def void_credit_note(session: Session, principal: Principal, id_text: str, *,
                     confirmed: Confirmed | None = None) -> CreditNote:
    """Void a credit note: what it took off the invoice is due again (a paid invoice reopens: what it
    credited is owed again) and its balance leaves the customer's; refused once that balance was
    applied to another invoice."""
    note = get_credit_note(session, principal.account_id, id_text)
    # The invoice, the account (an app's limits), then the credit note: the order of every writer.
    invoice = owned(session, Invoice, "invoice", principal.account_id, str(note.invoice_id), noun="invoice", lock=True)
    _refuse_void(note)
    executor.within(session, functools.partial(delegated_actions.act_for, amount=note.total), principal, "credit", invoice)
    note = get_credit_note(session, principal.account_id, id_text, lock=True)
    _refuse_void(note)
    if confirmed is not None:
        confirmations.check(confirmed, view_credit_note(session, note), "void_credit", None)
    note.status, note.balance_remaining = "void", 0
    note.voided_at = note.updated = now()
    session.add(note)
    session.flush()
    meta = principal.event_meta()
    events.record(session, invoice, "credit_note.voided", meta, view_credit_note(session, note))
    if note.credit_amount:
        invoice.amount_credited -= note.credit_amount
        payments.owed_again(session, invoice, {**meta, "credit_note": ids.public_id("credit_note", note.id)})
    return note


def _refuse_void(note: CreditNote) -> None:
    if note.status != "issued":
        raise InvalidState(f"Credit note {note.number} is void already.")
    if applied := customer_balance.applied_elsewhere(note):
        raise InvalidState(f"Credit note {note.number} cannot be voided: {applied} of its balance was applied to "
                           "another invoice of the customer.")
