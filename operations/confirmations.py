"""What a person is asked before an assistant moves money or tells a customer: finalize, send, mark
paid, void. One question per action, in the account's formatting, worded as what will happen:
"Finalize the draft for Globex Corp, 2,500.00 USD due 24 Dec 2026? It gets the next number and can
no longer be edited." Every surface that asks (elicitation in either protocol generation, the
invoice view inside the assistant) asks this question. A send's question shows everything that
reaches the customer: every recipient, that the PDF is attached, and the note in full.

There is no question when the action would fail anyway (no such invoice, the wrong state, no
address to send to, input it refuses): the operation runs and fails with its usual error, rather
than asking a person to approve something that cannot happen. Each question carries the digest of
what it showed (`core.billing.confirmations`), which the action checks under its own lock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from babel.dates import format_date

from core.access.principal import Principal
from core.base import executor
from core.base.db import new_session
from core.base.errors import DomainError, ValidationFailed
from core.base.money import format_money
from core.base.validation import parse
from core.billing import delegated_actions, invoices
from core.billing.confirmations import Confirmed, digest
from core.billing.invoice_inputs import PayInput, VoidInput
from core.billing.presentation import document_locale
from core.billing.sending import SendInput, email_note, recipients

ACTIONS = {"finalize_invoice": "finalize", "send_invoice": "send", "mark_invoice_paid": "pay", "void_invoice": "void"}
INPUTS = {"send": SendInput, "pay": PayInput, "void": VoidInput}  # what each action takes beside the invoice
NOT_INPUT = ("invoice", "idempotency_key")  # the tools' arguments that are not the action's input
CONFIRM_FIELD = "confirm"


@dataclass(frozen=True)
class Question:
    action: str  # finalize, send, pay or void
    message: str
    invoice: str  # the invoice's id, in_…
    view: dict  # the invoice as it stands (`view_invoice`), for a view that shows what is asked about
    confirmed: Confirmed  # what a "yes" to this question approves: the digest of what it showed

    @property
    def requested_schema(self) -> dict:
        """The form an elicitation shows: one box to tick (a flat schema every client can draw)."""
        return {"type": "object", "required": [CONFIRM_FIELD], "properties": {CONFIRM_FIELD: {
            "type": "boolean", "title": f"Yes, {self.action} it", "description": self.message, "default": False}}}


def confirmed(action: str | None, content: dict | None) -> bool:
    """Whether an elicitation's answer approves: accepted, with the box ticked."""
    return action == "accept" and (content or {}).get(CONFIRM_FIELD) is True


def question_for(tool: str, principal: Principal, invoice_ref: object, arguments: dict) -> Question | None:
    """The question to ask before `tool` acts on the invoice, or None (nothing to confirm, or it would fail)."""
    action = ACTIONS.get(tool)
    if action is None or not isinstance(invoice_ref, str) or not invoice_ref:
        return None
    session = new_session(read_only=True)
    try:
        inputs = _inputs(action, arguments)
        view = executor.within(session, invoices.view_invoice, principal.account_id, invoice_ref)
        if executor.within(session, delegated_actions.would_refuse, principal, action, invoices.get_invoice(
                session, principal.account_id, invoice_ref)):
            return None  # beyond what the person allowed this app: refused without asking
    except DomainError:
        return None
    finally:
        session.close()
    message = _WORDING[action](view, inputs)
    if not message:
        return None
    return Question(action, message, view["id"], view, Confirmed(digest(view, action, inputs)))


def _inputs(action: str, arguments: dict):
    """The action's input as the operation will read it (ValidationFailed where it will refuse it)."""
    model = INPUTS.get(action)
    rest = {name: value for name, value in arguments.items() if name not in NOT_INPUT}
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
    if view["status"] not in ("open", "overdue"):
        return None
    details = [_money(view)]
    if inputs.reference:
        details.append(f"reference {inputs.reference}")
    if inputs.paid_on is not None:
        details.append(f"paid on {_day(view, inputs.paid_on.date())}")
    return f"Mark {view['number']} paid ({', '.join(details)})? No money moves; paid is final."


def _void(view: dict, inputs: VoidInput) -> str | None:
    if view["status"] not in ("open", "overdue"):
        return None
    reason = f", reason: {inputs.reason}" if inputs.reason else ""
    return f"Void {view['number']} ({_money(view)}{reason})? It keeps its number and can no longer be paid."


_WORDING = {"finalize": _finalize, "send": _send, "pay": _pay, "void": _void}
