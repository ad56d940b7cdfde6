"""An invoice's lifecycle in the dashboard: finalize, send, mark paid, void and delete, each on a
page that says what it will do before the person confirms (run through the operations)."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from core.access.accounts import account_of
from core.base.clock import today
from core.base.db import transaction
from core.base.errors import DomainError, NotFound
from core.base.money import format_money
from core.billing import numbering
from core.billing.business import find_profile
from operations import invoices as invoice_operations
from pages.routing import Visit, errors_of, page, redirect
from web.acting import act, new_form_key
from web.invoice_pages import detail_url, load_invoice
from web.rendering import not_found, render


def _label(invoice: dict) -> str:
    return invoice["number"] or f"The draft for {invoice['customer_details']['name']}"


def _finalize_consequence(visit: Visit, invoice: dict) -> str:
    with transaction() as session:
        account_id = account_of(session, visit.user).id
        profile = find_profile(session, account_id)
        number = numbering.upcoming_number(session, account_id, profile.invoice_prefix) if profile else None
    name = f"It will be numbered {number}" if number else "It will get the next invoice number"
    return (f"{_label(invoice)} ({format_money(invoice['total'], invoice['currency'])}). {name} and can no longer be edited; "
            "its public link starts working.")


ACTIONS: dict[str, dict] = {
    "finalize": {"operation": invoice_operations.finalize_invoice, "title": "Finalize", "fields": (),
                 "states": ("draft",), "notice": "finalized", "button": "Finalize"},
    "send": {"operation": invoice_operations.send_invoice, "title": "Send", "fields": ("to", "cc", "message"),
             "states": ("draft", "open", "overdue", "paid"), "notice": "sent", "button": "Send e-mail"},
    "pay": {"operation": invoice_operations.pay_invoice, "title": "Mark paid", "fields": ("paid_on", "reference"),
            "states": ("open", "overdue"), "notice": "paid", "button": "Mark paid"},
    "void": {"operation": invoice_operations.void_invoice, "title": "Void", "fields": ("reason",),
             "states": ("open", "overdue"), "notice": "voided", "button": "Void invoice"},
    "delete": {"operation": invoice_operations.delete_invoice, "title": "Delete", "fields": (),
               "states": ("draft",), "notice": "deleted", "button": "Delete draft"},
}


def _consequence(visit: Visit, action: str, invoice: dict) -> str:
    if action == "finalize":
        return _finalize_consequence(visit, invoice)
    label = _label(invoice)
    if action == "send":
        first = " It is finalized first: numbered, no longer editable." if invoice["status"] == "draft" else ""
        return (f"{label} will be e-mailed with its PDF and its public link to the address below "
                f"(the customer's, unless you change it).{first}")
    if action == "pay":
        due = format_money(invoice["amount_due"], invoice["currency"])
        return (f"{label} ({due} due) will be recorded as paid. No money moves: this records a payment you "
                "received some other way.")
    if action == "void":
        return (f"{label} will be void: it keeps its number in your records but is no longer owed, and "
                "the customer's link shows it as void. This cannot be undone.")
    return f"{label} will be deleted with its lines. Drafts have no number, so no gap is left."


def _action_values(visit: Visit, action: str, invoice: dict, *, submitted: bool) -> dict[str, str]:
    if submitted:
        return {name: visit.text(name, 5001, strip=name != "message") for name in ACTIONS[action]["fields"]}
    defaults = {"to": invoice["customer_details"].get("email") or "", "cc": "", "message": "",
                "paid_on": today().isoformat(), "reference": "", "reason": ""}
    return {name: defaults[name] for name in ACTIONS[action]["fields"]}


def _action_body(action: str, values: dict[str, str]) -> dict | None:
    if action == "send":
        cc = [address.strip() for address in values["cc"].replace(";", ",").split(",") if address.strip()]
        return {"to": values["to"] or None, "cc": cc, "message": values["message"] or None}
    if action == "pay":
        return {"paid_on": values["paid_on"] or None, "reference": values["reference"] or None}
    if action == "void":
        return {"reason": values["reason"] or None}
    return None


def _action_page(visit: Visit, action: str, invoice: dict, *, values: dict, errors: dict,
                 status_code: int = 200) -> Response:
    return render(visit.request, "invoice_action.html", status_code=status_code, action=action,
                  spec=ACTIONS[action], invoice=invoice, consequence=_consequence(visit, action, invoice),
                  values=values, errors=errors, form_key=new_form_key())


def confirm_action(visit: Visit, action: str) -> Response:
    try:
        invoice = load_invoice(visit)
    except NotFound:
        return not_found(visit, "invoice", "/invoices")
    if invoice["status"] not in ACTIONS[action]["states"]:
        return redirect(f"/invoices/{invoice['id']}")
    return _action_page(visit, action, invoice, values=_action_values(visit, action, invoice, submitted=False),
                        errors={})


def run_action(visit: Visit, action: str) -> Response:
    try:
        invoice = load_invoice(visit)
    except NotFound:
        return not_found(visit, "invoice", "/invoices")
    values = _action_values(visit, action, invoice, submitted=True)
    spec = ACTIONS[action]
    try:
        act(visit, spec["operation"], params={"id": invoice["id"]}, body=_action_body(action, values), keyed=True)
    except DomainError as exc:
        errors = {"cc" if path.startswith("cc") else path: message for path, message in errors_of(exc).items()}
        return _action_page(visit, action, invoice, values=values, errors=errors, status_code=exc.status)
    if action == "delete":
        return redirect("/invoices?notice=deleted")
    return redirect(detail_url(invoice["id"], spec["notice"]))


def routes() -> list[Route]:
    return [page(f"/invoices/{{invoice_id}}/{action}", get=lambda visit, action=action: confirm_action(visit, action),
                 post=lambda visit, action=action: run_action(visit, action))
            for action in ACTIONS]
