"""What a person is asked before an assistant moves money or tells a customer: finalize, send, mark
paid, void. One question per action, in the account's formatting, worded as what will happen:
"Finalize the draft for Globex Corp, 2,500.00 USD due 24 Dec 2026? It gets the next number and can
no longer be edited." Every surface that asks (elicitation in either protocol generation, the
invoice view inside the assistant) asks this question.

There is no question when the action would fail anyway (no such invoice, the wrong state, no
address to send to): the operation runs and fails with its usual error, rather than asking a person
to approve something that cannot happen.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from babel.dates import format_date

from core.access.principal import Principal
from core.base.db import new_session
from core.base.errors import DomainError
from core.base.money import format_money
from core.billing import delegated_actions, invoices
from core.billing.presentation import document_locale

ACTIONS = {"finalize_invoice": "finalize", "send_invoice": "send", "mark_invoice_paid": "pay", "void_invoice": "void"}
CONFIRM_FIELD = "confirm"


@dataclass(frozen=True)
class Question:
    action: str  # finalize, send, pay or void
    message: str
    invoice: str  # the invoice's id, in_…
    view: dict  # the invoice as it stands (`view_invoice`), for a view that shows what is asked about

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
        view = invoices.view_invoice(session, principal.account_id, invoice_ref)
        if delegated_actions.would_refuse(session, principal, action, invoices.get_invoice(
                session, principal.account_id, invoice_ref)):
            return None  # beyond what the person allowed this app: refused without asking
    except DomainError:
        return None
    finally:
        session.close()
    message = _WORDING[action](view, arguments)
    return Question(action, message, view["id"], view) if message else None


def _money(view: dict, amount_field: str = "total") -> str:
    return format_money(view[amount_field], view["currency"])


def _day(view: dict, value: object) -> str:
    """24 Dec 2026 (en_GB), Dec 24, 2026 (en_US): the issuer's country's way."""
    return format_date(date.fromisoformat(str(value)[:10]), "medium", locale=document_locale(view))


def _finalize(view: dict, _arguments: dict) -> str | None:
    if view["status"] != "draft" or not view["lines"]["data"]:
        return None
    due = f" due {_day(view, view['due_date'])}" if view.get("due_date") else " with no due date"
    return (f"Finalize the draft for {view['customer_details']['name']}, {_money(view)}{due}? "
            f"It gets the next number and can no longer be edited.")


def _send(view: dict, arguments: dict) -> str | None:
    to = arguments.get("to") or view["customer_details"].get("email")
    if view["status"] in ("paid", "void") or not isinstance(to, str) or not to:
        return None
    cc = [address for address in arguments.get("cc") or [] if isinstance(address, str)]
    copies = f" (a copy to {', '.join(cc)})" if cc else ""
    if view["status"] == "draft":
        return (f"E-mail the draft for {view['customer_details']['name']} ({_money(view)}) to {to}{copies}? "
                f"It is finalized first: it gets the next number and can no longer be edited.")
    return f"E-mail {view['number']} ({_money(view)}) to {to}{copies}?"


def _pay(view: dict, arguments: dict) -> str | None:
    if view["status"] not in ("open", "overdue"):
        return None
    details = [_money(view)]
    if isinstance(arguments.get("reference"), str) and arguments["reference"]:
        details.append(f"reference {arguments['reference']}")
    if isinstance(arguments.get("paid_on"), str) and arguments["paid_on"]:
        details.append(f"paid on {arguments['paid_on'][:10]}")
    return f"Mark {view['number']} paid ({', '.join(details)})? No money moves; paid is final."


def _void(view: dict, arguments: dict) -> str | None:
    if view["status"] not in ("open", "overdue"):
        return None
    reason = f", reason: {arguments['reason']}" if isinstance(arguments.get("reason"), str) and arguments["reason"] else ""
    return f"Void {view['number']} ({_money(view)}{reason})? It keeps its number and can no longer be paid."


_WORDING = {"finalize": _finalize, "send": _send, "pay": _pay, "void": _void}
