"""What a person is asked before an assistant moves money or tells a customer: finalize, send, mark
paid, void an invoice, or e-mail a payment reminder of one; issue, send, void a credit note; record,
reverse a payment; create or cancel an invoice schedule (recurring invoices made without anyone asking
again). One question per
action, in the account's formatting, worded as what will happen: "Finalize the draft for Globex Corp,
2,500.00 USD due 24 Dec 2026? It gets the next number and can no longer be edited." Every surface that asks (elicitation in
either protocol generation, the invoice view inside the assistant) asks this question. A send's question shows everything that
reaches the customer: every recipient, that the PDF is attached, and the note in full.

There is no question when the action would fail anyway (no such invoice, the wrong state, no
address to send to, input it refuses): the operation runs and fails with its usual error, rather
than asking a person to approve something that cannot happen. Each question carries the digest of
what it showed (`core.billing.confirmations`), which the action checks under its own lock.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import date, datetime
from zoneinfo import ZoneInfo

from babel.dates import format_date
from sqlmodel import select

from core.access.principal import Principal
from core.base import executor
from core.base.clock import today
from core.base.db import new_session
from core.base.errors import DomainError, ValidationFailed
from core.base.jsonout import jsonable
from core.base.money import format_money
from core.base.validation import parse
from core.billing import credit_notes, delegated_actions, invoices, payments
from core.billing.confirmations import NOTHING_ASKED, Confirmed, digest
from core.billing.credit_note_inputs import CreditNoteCreate
from core.billing.invoice_inputs import PayInput, VoidInput
from core.billing.payment_inputs import PaymentCreate, PaymentReverse
from core.billing.payment_render import payment_to_api
from core.billing.presentation import document_locale
from core.billing.sending import SendInput, email_note, recipients
from core.models import BusinessProfile
from core.schedules import recurrence, schedules
from core.schedules.reminder_inputs import RemindInput
from core.schedules.schedule_inputs import ScheduleCreate
from operations.bulk import REPEATS, inputs_of

# Each tool's action: the name its digest is taken under (core's, for payments: `record_payment`, `reverse_payment`).
ACTIONS = {"finalize_invoice": "finalize", "send_invoice": "send", "mark_invoice_paid": "pay", "void_invoice": "void",
           "create_credit_note": "credit", "send_credit_note": "send_credit", "void_credit_note": "void_credit",
           "record_payment": "record_payment", "reverse_payment": "reverse_payment",
           "create_invoice_schedule": "schedule", "cancel_invoice_schedule": "cancel_schedule",
           "send_reminder": "remind", "send_invoices": "send_each", "send_reminders": "remind_each"}
# What each action takes beside what it acts on (issuing a credit note, recording a payment: all of it, the
# invoice included).
INPUTS = {"send": SendInput, "pay": PayInput, "void": VoidInput, "credit": CreditNoteCreate, "send_credit": SendInput,
          "record_payment": PaymentCreate, "reverse_payment": PaymentReverse, "schedule": ScheduleCreate,
          "remind": RemindInput}
# The argument naming what each action acts on: the invoice, the credit note, the payment, the customer
# a schedule bills, or the schedule.
SUBJECT = {"send_credit": "credit_note", "void_credit": "credit_note", "reverse_payment": "payment",
           "schedule": "customer", "cancel_schedule": "schedule"}
# Actions whose input names the invoice itself (a body field, part of what the digest covers).
SUBJECT_IN_INPUT = ("credit", "record_payment", "schedule")
# The box to tick, where "Yes, {action} it" would not read.
AGREEMENTS = {"send_credit": "Yes, send it", "void_credit": "Yes, void it", "record_payment": "Yes, record it",
              "reverse_payment": "Yes, reverse it", "schedule": "Yes, schedule them",
              "cancel_schedule": "Yes, cancel it", "remind": "Yes, send it", "send_each": "Yes, send them",
              "remind_each": "Yes, send them"}
IDEMPOTENCY_ARGUMENT = "idempotency_key"
CONFIRM_FIELD = "confirm"


@dataclass(frozen=True)
class Question:
    action: str  # finalize, send, pay, void, credit, send_credit, void_credit, record_payment, reverse_payment,
    # schedule, cancel_schedule or remind
    message: str
    invoice: str  # what it acts on: the invoice's id (in_…), the credit note's (cn_…), the payment's (py_…), the
    # customer a new schedule bills (cus_…) or the schedule's (sched_…)
    view: dict  # the invoice (credit note, payment, a schedule's first invoice, the schedule) as it stands, for a
    # view that shows what is asked about
    confirmed: Confirmed  # what a "yes" to this question approves: the digest of what it showed
    # A bulk question's invoices, as given, each with the question its single action asks (None: it would fail).
    items: tuple[tuple[str, Question | None], ...] = ()

    def confirmation_of(self, invoice: str) -> Confirmed:
        """What a "yes" to this list approves for one of its invoices (nothing asked: it looked bound to fail)."""
        asked = dict(self.items).get(invoice)
        return asked.confirmed if asked is not None else NOTHING_ASKED

    @property
    def requested_schema(self) -> dict:
        """The form an elicitation shows: one box to tick (a flat schema every client can draw)."""
        return {"type": "object", "required": [CONFIRM_FIELD], "properties": {CONFIRM_FIELD: {
            "type": "boolean", "title": AGREEMENTS.get(self.action, f"Yes, {self.action} it"),
            "description": self.message, "default": False}}}


def confirmed(action: str | None, content: dict | None) -> bool:
    """Whether an elicitation's answer approves: accepted, with the box ticked."""
    return action == "accept" and (content or {}).get(CONFIRM_FIELD) is True


def question_for(tool: str, principal: Principal, arguments: dict) -> Question | None:
    """The question to ask before `tool` acts on the invoice (or credit note) its arguments name, or None
    (nothing to confirm, or it would fail)."""
    action = ACTIONS.get(tool)
    if action in BULK_ACTIONS:
        return _bulk_question(tool, principal, arguments)
    subject = arguments.get(SUBJECT.get(action, "invoice"))
    if action is None or not isinstance(subject, str) or not subject:
        return None
    session = new_session(read_only=True)
    try:
        inputs = _inputs(action, arguments)
        if action in CREDIT_NOTE_ACTIONS:
            return _credit_note_question(session, principal, action, subject, inputs)
        if action == "reverse_payment":
            return _reversal_question(session, principal, subject, inputs)
        if action == "schedule":
            return _schedule_question(session, principal, inputs)
        if action == "cancel_schedule":
            return _cancel_schedule_question(session, principal, subject)
        view = executor.within(session, invoices.view_invoice, principal.account_id, subject)
        # What an app's `max_amount` is compared with: the total, or the payment (`pay`: what is due).
        amount = {"pay": view["amount_due"], "record_payment": getattr(inputs, "amount", None)}.get(action)
        if executor.within(session, functools.partial(delegated_actions.would_refuse, amount=amount), principal,
                           LIMITED_AS.get(action, action), invoices.get_invoice(session, principal.account_id, subject)):
            return None  # beyond what the person allowed this app: refused without asking
    except DomainError:
        return None
    finally:
        session.close()
    message = _WORDING[action](view, inputs)
    if not message:
        return None
    return Question(action, message, view["id"], view, Confirmed(digest(view, action, inputs)))


CREDIT_NOTE_ACTIONS = ("credit", "send_credit", "void_credit")
# An app's limits: the action they are set for, where it is not the action's own name.
LIMITED_AS = {"credit": "credit", "void_credit": "credit", "send_credit": "send", "record_payment": "pay",
              "reverse_payment": "pay", "remind": "send"}


def _credit_note_question(session, principal: Principal, action: str, subject: str, inputs) -> Question | None:
    """A question about issuing, sending or voiding a credit note; its digest covers what is shown: the
    credit note as it would be issued, or as it stands."""
    if action == "credit":
        shown = credit_notes.preview_credit_note(session, principal, inputs)
        invoice = invoices.get_invoice(session, principal.account_id, subject)
    else:
        note = credit_notes.get_credit_note(session, principal.account_id, subject)
        shown = credit_notes.view_credit_note(session, note)
        invoice = invoices.get_invoice(session, principal.account_id, str(note.invoice_id))
    if executor.within(session, functools.partial(delegated_actions.would_refuse, amount=shown["total"]), principal,
                       LIMITED_AS[action], invoice):
        return None
    message = _WORDING[action](shown, inputs)
    if not message:
        return None
    return Question(action, message, shown["id"] or shown["invoice"], shown, Confirmed(digest(shown, action, inputs)))


def _reversal_question(session, principal: Principal, subject: str, inputs: PaymentReverse) -> Question | None:
    """A question about reversing a payment; its digest covers the payment and its invoice's state as
    they stand (`payments.reversal_shown`, core's check), and it names the invoice, which reopens when
    it was paid."""
    payment = payments.get_payment(session, principal.account_id, subject)
    invoice = invoices.get_invoice(session, principal.account_id, str(payment.invoice_id))
    shown = jsonable(payment_to_api(payment))  # as a result shows it (a date as text)
    if (payment.status != "recorded" or payment.balance_remaining != payment.balance_amount
            or payments.refunded_or_kept(session, invoice.id) > invoice.amount_paid - payment.amount_applied):
        return None  # reversed already, its excess spent, or refunded by credit notes: refused (payments.reverse_payment)
    if executor.within(session, functools.partial(delegated_actions.would_refuse, amount=payment.amount), principal,
                       LIMITED_AS["reverse_payment"], invoice):
        return None
    view = executor.within(session, invoices.view_invoice, principal.account_id, str(invoice.id))
    message = _reverse_payment(shown, inputs, view)
    return Question("reverse_payment", message, shown["id"], shown,
                    Confirmed(digest(payments.reversal_shown(payment, invoice), "reverse_payment", inputs)))


def _inputs(action: str, arguments: dict):
    """The action's input as the operation will read it (ValidationFailed where it will refuse it)."""
    model = INPUTS.get(action)
    not_input = ({IDEMPOTENCY_ARGUMENT} if action in SUBJECT_IN_INPUT
                 else {IDEMPOTENCY_ARGUMENT, SUBJECT.get(action, "invoice")})
    rest = {name: value for name, value in arguments.items() if name not in not_input}
    if model is None:
        if rest:
            raise ValidationFailed.at(next(iter(rest)), "unknown field")
        return None
    return parse(model, rest)


def _money(view: dict, amount_field: str = "total") -> str:
    return format_money(view[amount_field], view["currency"])


def _day(view: dict, value: object) -> str:
    """24 Dec 2026 (en_GB), Dec 24, 2026 (en_US): the issuer's country's way."""
    return format_date(date.fromisoformat(str(value)[:10]), "medium", locale=document_locale(view))


def _finalize(view: dict, _inputs: None) -> str | None:
    if view["status"] != "draft" or not view["lines"]["data"]:
        return None
    due = f" due {_day(view, view['due_date'])}" if view.get("due_date") else " with no due date"
    return (f"Finalize the draft for {view['customer_details']['name']}, {_money(view)}{due}? "
            f"It gets the next number and can no longer be edited.")


def _send(view: dict, inputs: SendInput) -> str | None:
    to, cc = recipients(view, inputs)
    if view["status"] in ("paid", "void") or not to:
        return None
    copies = f" (a copy to {', '.join(cc)})" if cc else ""
    note = email_note(inputs.message)
    attached = " and the note below" if note else ""
    what = (f"the draft for {view['customer_details']['name']} ({_money(view)})" if view["status"] == "draft"
            else f"{view['number']} ({_money(view)})")
    question = f"E-mail {what} to {to}{copies}, with the PDF attached{attached}?"
    if view["status"] == "draft":
        question += " It is finalized first: it gets the next number and can no longer be edited."
    return f"{question}\n\n{note}" if note else question


def _pay(view: dict, inputs: PayInput) -> str | None:
    """Marking paid records one payment of what is due (not the total: credit notes and earlier payments
    took their part), which can be reversed."""
    if view["status"] not in ("open", "overdue"):
        return None
    payment = f"a payment of {_money(view, 'amount_due')}"
    if view.get("amount_paid"):
        payment += f", what remains due after {_money(view, 'amount_paid')} paid so far"
    elif view["amount_due"] != view["total"]:
        payment += f", what remains due of its {_money(view)} total"
    details = []
    if inputs.reference:
        details.append(f"reference {inputs.reference}")
    if inputs.paid_on is not None:
        details.append(f"paid on {_day(view, inputs.paid_on.date())}")
    said = f" ({', '.join(details)})" if details else ""
    return (f"Mark {view['number']} paid, recording {payment}{said}? No money moves; the payment can be reversed "
            "later.")


# How a payment came, as the question says it.
METHODS = {"bank_transfer": "by bank transfer", "card": "by card", "cash": "in cash", "cheque": "by cheque",
           "direct_debit": "by direct debit", "other": "by another means"}


def _record_payment(view: dict, inputs: PaymentCreate) -> str | None:
    """Recording a payment: the amount, the invoice and its customer, when, how and the reference; then
    what remains due after it, or that it settles the invoice (and any excess on the customer's balance)."""
    due = view["amount_due"]
    if (view["status"] not in ("open", "overdue") or inputs.currency not in (None, view["currency"])
            or (inputs.amount > due and inputs.overpayment != "balance")):
        return None  # not payable, another currency, or more than is due unasked for: refused (payments._received)
    amount = format_money(inputs.amount, view["currency"])
    received = _day(view, inputs.paid_on.date() if inputs.paid_on is not None else today())
    details = [f"received {received} {METHODS[inputs.method]}"]
    if inputs.reference:
        details.append(f"reference {inputs.reference}")
    question = (f"Record a payment of {amount} on {view['number']} for {view['customer_details']['name']} "
                f"({', '.join(details)})?")
    if inputs.amount < due:
        effect = f" {format_money(due - inputs.amount, view['currency'])} remains due after it."
    elif inputs.amount == due:
        effect = f" It settles {view['number']}."
    else:
        excess = format_money(inputs.amount - due, view["currency"])
        effect = (f" It settles {view['number']} ({_money(view, 'amount_due')} due) and {excess} goes to the customer's "
                  "balance for their next invoice.")
    return f"{question}{effect} No money moves."


def _reverse_payment(payment: dict, inputs: PaymentReverse, invoice: dict) -> str:
    """Reversing a payment: which payment of which invoice, its amount, the reason, and what is undone: the
    invoice owes that part again (a paid one reopens), and any excess leaves the customer's balance."""
    details = [f"received {_day(invoice, payment['paid_on'])} {METHODS[payment['method']]}"]
    if payment["reference"]:
        details.append(f"reference {payment['reference']}")
    number = invoice["number"]
    undone = (f"{number} reopens: {_money(payment, 'amount_applied')} is due again" if invoice["status"] == "paid"
              else f"{_money(payment, 'amount_applied')} is due again on {number}")
    if payment["balance_amount"]:
        undone += f", and {_money(payment, 'balance_amount')} leaves the customer's balance"
    return (f"Reverse the payment of {_money(payment, 'amount')} on {number} for {invoice['customer_details']['name']} "
            f"({', '.join(details)}), reason: {inputs.reason}? {undone}. The payment stays listed as reversed.")


def _void(view: dict, inputs: VoidInput) -> str | None:
    if view["status"] not in ("open", "overdue") or view.get("amount_credited") or view.get("amount_paid"):
        return None  # corrected by credit notes, or paid in part: refused (invoices.void)
    reason = f", reason: {inputs.reason}" if inputs.reason else ""
    return f"Void {view['number']} ({_money(view)}{reason})? It keeps its number and can no longer be paid."


WHERE = (("credit_amount", "off what is due on {invoice}"), ("refund_amount", "refunded to the customer"),
         ("balance_amount", "to the customer's balance for their next invoice"))


def _credit(preview: dict, _inputs: CreditNoteCreate) -> str | None:
    invoice = preview["invoice_number"]
    where = [f"{_money(preview, field)} {words.format(invoice=invoice)}" for field, words in WHERE if preview[field]]
    reason = f", reason: {preview['reason'].replace('_', ' ')}" if preview.get("reason") else ""
    return (f"Issue a credit note on {invoice} for {preview['customer_details']['name']}, {_money(preview)} "
            f"({'; '.join(where)}{reason})? It gets the next credit note number and can only be voided afterwards.")


def _send_credit(view: dict, inputs: SendInput) -> str | None:
    to, cc = recipients(view, inputs)
    if view["status"] != "issued" or not to:
        return None
    copies = f" (a copy to {', '.join(cc)})" if cc else ""
    note = email_note(inputs.message)
    question = (f"E-mail credit note {view['number']} ({_money(view)}, correcting {view['invoice_number']}) to "
                f"{to}{copies}, with the PDF attached{' and the note below' if note else ''}?")
    return f"{question}\n\n{note}" if note else question


def _void_credit(view: dict, _inputs: None) -> str | None:
    if view["status"] != "issued" or view["balance_remaining"] != view["balance_amount"]:
        return None
    undone = []
    if view["credit_amount"]:
        undone.append(f"{_money(view, 'credit_amount')} is due again on {view['invoice_number']}")
    if view["balance_amount"]:
        undone.append(f"{_money(view, 'balance_amount')} leaves the customer's balance")
    effects = f": {' and '.join(undone)}" if undone else ""
    return f"Void credit note {view['number']} ({_money(view)}){effects}? It keeps its number."


def _remind(view: dict, inputs: RemindInput) -> str | None:
    """A payment reminder now: the invoice, its customer and the address it goes to (the one the invoice
    was issued to), what is due and how late it is, and the note put before the reminder's words, in full."""
    to = (view.get("customer_details") or {}).get("email")
    if view["status"] not in ("open", "overdue") or view["amount_due"] <= 0 or not to:
        return None  # a draft, paid or void invoice, nothing due, nobody to write to: refused (reminders.remind_now)
    note = email_note(inputs.message)
    question = (f"E-mail a payment reminder for {view['number']} to {view['customer_details']['name']} at {to}: "
                f"{_money(view, 'amount_due')} due{_lateness(view)}{', with the note below' if note else ''}?")
    return f"{question}\n\n{note}" if note else question


def _lateness(view: dict) -> str:
    """What follows the amount due: ", 12 days overdue"; " today"; " 24 Dec 2026, not overdue yet"."""
    if not view.get("due_date"):
        return " (no due date)"
    days = (today() - date.fromisoformat(str(view["due_date"])[:10])).days
    if days > 0:
        return f", {days} day{'s' if days != 1 else ''} overdue"
    return " today" if days == 0 else f" {_day(view, view['due_date'])}, not overdue yet"


_WORDING = {"finalize": _finalize, "send": _send, "pay": _pay, "void": _void, "credit": _credit,
            "send_credit": _send_credit, "void_credit": _void_credit, "record_payment": _record_payment,
            "remind": _remind}


# --- invoice schedules ----------------------------------------------------------------------------

SCHEDULE_MODES = {"draft": "as drafts to review (nothing is sent)",
                  "finalize": "each finalized with the next number (not e-mailed)"}


def _schedule_question(session, principal: Principal, data: ScheduleCreate) -> Question | None:
    shown = schedules.what_it_makes(session, principal, data)
    first = shown["first_invoice"]
    return Question("schedule", _schedule(shown, data), first["customer"], first,
                    Confirmed(digest(shown, "schedule", None)))  # the input is part of what is shown


def _schedule(shown: dict, data: ScheduleCreate) -> str:
    """Creating a schedule: the amount, the customer and the recurrence in words, what each run does
    (a draft, finalized, or e-mailed to whom), and the first run: when, the period it bills, its due date."""
    first = shown["first_invoice"]
    customer = first["customer_details"]
    mode = SCHEDULE_MODES.get(data.mode)
    if mode is None:  # finalize_and_send: to the customer's address when each run sends
        mode = (f"each finalized and e-mailed to {customer['email']}" if customer.get("email")
                else "each finalized and e-mailed to the customer, who has no e-mail address yet")
    local = datetime.fromisoformat(shown["first_run"].replace("Z", "+00:00")).astimezone(ZoneInfo(shown["time_zone"]))
    period = shown["first_period"]
    due = f", due {_day(first, first['due_date'])}" if first.get("due_date") else ""
    return (f"Schedule invoices of {_money(first)} to {customer['name']} {recurrence.in_words(data.recurrence)}, "
            f"{mode}? The first is made on {_day(first, local.date())} at {local:%H:%M} ({shown['time_zone']}), "
            f"for {_day(first, period['start'])} to {_day(first, period['end'])}{due}. Each run acts with this "
            "connection's permissions; the schedule can be paused or cancelled later.")


def _cancel_schedule_question(session, principal: Principal, subject: str) -> Question | None:
    schedule = schedules.get_schedule(session, principal.account_id, subject)
    if schedule.status not in ("active", "paused"):
        return None  # cancelled or completed already: refused (schedules.cancel)
    shown = jsonable(schedules.schedule_to_api(session, schedule))
    customer = executor.within(session, invoices.account_customer, principal.account_id, shown["customer"])
    issuer = {"issuer": {"country_code": session.exec(select(BusinessProfile.country_code).where(
        BusinessProfile.account_id == principal.account_id)).first()}}
    made = "1 invoice made so far" if shown["invoices_made"] == 1 else f"{shown['invoices_made']} invoices made so far"
    if shown["status"] == "paused":
        made += ", paused"
    elif shown["next_period"]:
        made += f", the next on {_day(issuer, shown['next_period']['start'])}"
    message = (f"Cancel the invoice schedule for {customer.name}, {shown['summary']} ({made})? No further invoices "
               "are made, for good: it cannot be resumed. The invoices made stay.")
    return Question("cancel_schedule", message, shown["id"], shown,
                    Confirmed(digest(shown, "cancel_schedule", None)))


# --- several invoices at once ---------------------------------------------------------------------

BULK_ACTIONS = ("send_each", "remind_each")


def _bulk_question(tool: str, principal: Principal, arguments: dict) -> Question | None:
    """One question for a list: each invoice that would go, with its recipient and amount, and those
    that would not; its digest covers each invoice's own question (what each send checks under its lock)."""
    try:
        inputs = inputs_of(tool, arguments)
    except DomainError:
        return None  # refused as it stands: the call fails with its usual error
    single = REPEATS[tool]
    extra = {"message": inputs.message} if inputs.message is not None else {}
    items = tuple((invoice, question_for(single, principal, {"invoice": invoice, **extra}))
                  for invoice in inputs.invoices)
    going = [question for _invoice, question in items if question is not None]
    if not going:
        return None  # none of them would go: each fails with its own error, nobody is asked
    lines = [f"- {_bulk_line(question)}" for question in going]
    staying = [invoice for invoice, question in items if question is None]
    if staying:
        lines.append(f"Not sent, as they stand (each will say why): {', '.join(staying)}.")
    what = "a payment reminder for " if tool == "send_reminders" else ""
    count = f"{len(going)} invoice{'s' if len(going) != 1 else ''}"
    attached = "" if tool == "send_reminders" else ", each with its PDF attached"
    message = f"E-mail {what}{count}{attached}?\n" + "\n".join(lines)
    if note := email_note(inputs.message):
        message += f"\n\nEach e-mail carries the note below.\n\n{note}"
    shown = [[invoice, question.confirmed.digest if question else None] for invoice, question in items]
    return Question(ACTIONS[tool], message, going[0].invoice, {"invoices": [q.view for q in going]},
                    Confirmed(digest({"items": shown}, ACTIONS[tool], None)), items)


def _bulk_line(question: Question) -> str:
    """INV-0042 to Globex Corp at ap@globex.example: 2,500.00 EUR (a draft: "the draft for Globex Corp …",
    finalized first); a reminder adds how late it is."""
    view = question.view
    name = view["customer_details"]["name"]
    what = view["number"] or f"the draft for {name} (finalized first)"
    if question.action == "remind":
        return (f"{what} to {name} at {view['customer_details']['email']}: {_money(view, 'amount_due')} due"
                f"{_lateness(view)}")
    to, _cc = recipients(view, SendInput())
    return f"{what} to {name} at {to}: {_money(view)}"
