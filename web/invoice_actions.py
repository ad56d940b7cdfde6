"""An invoice's lifecycle in the dashboard: finalize, send, mark paid, void and delete, each on a
page that says what it will do before the person confirms (run through the operations); a payment
reminder sent now (confirmed first, with an optional message) and pausing or resuming the reminders
of the account's policy for one invoice (`operations.reminders`); and its
payments: the form on the invoice's page that records one (part of what is due, or more with the
excess on the customer's balance), and reversing one, confirmed first with its reason."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from core.base.clock import today
from core.base.db import transaction
from core.base.errors import DomainError, NotFound, ValidationFailed
from core.base.money import format_money
from core.billing import numbering
from core.billing.business import find_profile
from operations import invoices as invoice_operations
from operations import payments as payment_operations
from operations import reminders as reminder_operations
from pages.routing import Visit, errors_of, page, redirect
from web.acting import act, new_form_key
from web.invoice_pages import (
    METHOD_LABELS,
    detail_url,
    load_invoice,
    payments_of_invoice,
    refused,
    typed_money,
)
from web.rendering import not_found, render


def _label(invoice: dict) -> str:
    return invoice["number"] or f"The draft for {invoice['customer_details']['name']}"


def _finalize_consequence(visit: Visit, invoice: dict) -> str:
    with transaction() as session:
        account_id = visit.account_id
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
    "remind": {"operation": reminder_operations.remind_invoice, "title": "Send a reminder of", "fields": ("message",),
               "states": ("open", "overdue"), "notice": "reminded", "button": "Send reminder"},
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
    if action == "remind":
        return _remind_consequence(invoice)
    if action == "void":
        return (f"{label} will be void: it keeps its number in your records but is no longer owed, and "
                "the customer's link shows it as void. This cannot be undone.")
    return f"{label} will be deleted with its lines. Drafts have no number, so no gap is left."


def _remind_consequence(invoice: dict) -> str:
    due = format_money(invoice["amount_due"], invoice["currency"])
    to = invoice["customer_details"].get("email")
    if not to:
        return (f"{_label(invoice)} ({due} due): the customer has no e-mail address to remind. Add one on their "
                "page first.")
    return (f"A payment reminder of {_label(invoice)} ({due} due) will be e-mailed now to {to}, in the words of "
            "your reminder policy's step nearest its days overdue, with your message before them. It counts "
            "against your e-mail limits; the reminders your policy sends on their days still go.")


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
    if action == "remind":
        return {"message": values["message"] or None}
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


# --- payments --------------------------------------------------------------------------------

PAYMENT_FIELDS = ("amount", "paid_on", "method", "reference", "note", "overpayment")
# How the core's refusal of an overpayment reads to someone filling in the form rather than an API body.
OVERPAYMENT_ADVICE = ('set overpayment to "balance" to put the excess on the customer\'s balance',
                      "tick “Put any excess on the customer's balance”")


def _payment_body(invoice: dict, values: dict[str, str]) -> dict:
    return {"invoice": invoice["id"], "amount": typed_money(values["amount"], invoice["currency"], "amount"),
            "paid_on": values["paid_on"] or None, "method": values["method"] or "other",
            "reference": values["reference"] or None, "note": values["note"] or None,
            "overpayment": "balance" if values["overpayment"] else "refuse"}


def record_payment(visit: Visit) -> Response:
    """The invoice page's payment form, sent with the page's idempotency key: a second send of the same
    form (a double click) shows the first answer instead of recording the payment twice."""
    try:
        invoice = load_invoice(visit)
    except NotFound:
        return not_found(visit, "invoice", "/invoices")
    values = {name: visit.text(name, 5001, strip=name != "note") for name in PAYMENT_FIELDS}
    try:  # an invoice paid or voided since the form was shown is refused by the operation (409)
        payment = act(visit, payment_operations.record_payment, body=_payment_body(invoice, values), keyed=True)
    except DomainError as exc:
        errors = {path: message.replace(*OVERPAYMENT_ADVICE) for path, message in errors_of(exc).items()}
        return refused(visit, exc, "payment", values, errors=errors)
    settled = payment["amount_applied"] >= invoice["amount_due"]
    notice = ("payment_to_balance" if payment["balance_amount"] else "payment_settled") if settled else \
        "payment_recorded"
    return redirect(detail_url(invoice["id"], notice))


def _payment_of(visit: Visit, invoice: dict, payment_id: str) -> dict:
    """The invoice's payment `payment_id` (404 for one of another invoice or account)."""
    for payment in payments_of_invoice(visit, invoice["id"]):
        if payment["id"] == payment_id:
            return payment
    raise NotFound(f"No such payment: {payment_id}")


def _reversal_consequence(invoice: dict, payment: dict) -> list[str]:
    """What reversing will do, in plain words."""
    currency = invoice["currency"]
    amount = format_money(payment["amount"], currency)
    said = [f"The payment of {amount} received on {payment['paid_on']} ({METHOD_LABELS[payment['method']].lower()}"
            + (f", reference {payment['reference']}" if payment["reference"] else "") + ") will be marked reversed: "
            "it stays listed with your reason. No money moves here: this records that the money did not arrive "
            "or was given back."]
    if payment["amount_applied"]:
        again = f"Invoice {invoice['number']} will have {format_money(payment['amount_applied'], currency)} due again"
        if invoice["status"] == "paid":
            said.append(f"{again}: it is no longer paid, it reopens.")
        else:
            due = invoice["amount_due"] + payment["amount_applied"]
            said.append(f"{again} ({format_money(due, currency)} in all).")
    if payment["balance_amount"]:
        said.append(f"The {format_money(payment['balance_amount'], currency)} it put on the customer's balance will be "
                    "taken back.")
    said.append("This cannot be undone: record the payment again if it was reversed by mistake.")
    return said


def _reversal_page(visit: Visit, invoice: dict, payment: dict, *, values: dict, errors: dict,
                   status_code: int = 200) -> Response:
    return render(visit.request, "payment_reverse.html", status_code=status_code, invoice=invoice, payment=payment,
                  consequence=_reversal_consequence(invoice, payment), method_labels=METHOD_LABELS, values=values,
                  errors=errors, form_key=new_form_key())


def _reversal(visit: Visit, payment_id: str, run: bool) -> Response:
    """The page that asks why a payment is reversed (`run` False), or the reversal it confirms."""
    try:
        invoice = load_invoice(visit)
    except NotFound:
        return not_found(visit, "invoice", "/invoices")
    try:
        payment = _payment_of(visit, invoice, payment_id)
    except NotFound:
        return not_found(visit, "payment", f"/invoices/{invoice['id']}")
    if not run:
        if payment["status"] != "recorded":
            return redirect(f"/invoices/{invoice['id']}")
        return _reversal_page(visit, invoice, payment, values={"reason": ""}, errors={})
    values = {"reason": visit.text("reason", 1001)}
    try:
        if not values["reason"]:  # the operation's own words for an empty string are pydantic's
            raise ValidationFailed.at("reason", "say why the payment is reversed, such as a bounced transfer, a "
                                                "charge-back or a mistake")
        act(visit, payment_operations.reverse_payment, params={"id": payment["id"]}, body={"reason": values["reason"]},
            keyed=True)
    except DomainError as exc:
        return _reversal_page(visit, invoice, payment, values=values, errors=errors_of(exc), status_code=exc.status)
    return redirect(detail_url(invoice["id"], "payment_reversed"))


def confirm_reversal(visit: Visit) -> Response:
    return _reversal(visit, visit.request.query_params.get("payment", "")[:100], run=False)


def reverse_payment(visit: Visit) -> Response:
    return _reversal(visit, visit.text("payment", 100), run=True)


# --- reminders ---------------------------------------------------------------------------------

def pause_reminders(visit: Visit) -> Response:
    """Pause (`paused=true`) or resume the policy's reminders of the invoice."""
    try:
        invoice = load_invoice(visit)
    except NotFound:
        return not_found(visit, "invoice", "/invoices")
    paused = visit.text("paused", 10) == "true"
    try:
        act(visit, reminder_operations.pause_invoice_reminders, params={"id": invoice["id"]}, body={"paused": paused})
    except DomainError as exc:
        return refused(visit, exc, "reminders", {})
    return redirect(detail_url(invoice["id"], "reminders_paused" if paused else "reminders_resumed"))


def routes() -> list[Route]:
    return [*(page(f"/invoices/{{invoice_id}}/{action}", get=lambda visit, action=action: confirm_action(visit, action),
                   post=lambda visit, action=action: run_action(visit, action))
              for action in ACTIONS),
            page("/invoices/{invoice_id}/payments", post=record_payment),
            page("/invoices/{invoice_id}/reminders", post=pause_reminders),
            page("/invoices/{invoice_id}/payments/reverse", get=confirm_reversal, post=reverse_payment)]
