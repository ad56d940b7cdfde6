"""Invoices in the dashboard: the list, a new draft, an invoice's page (with a draft's editor), its
PDF, and what the invoice modules share. Lines are in `invoice_lines`, the lifecycle actions in
`invoice_actions`. Every change runs an operation of `operations.invoices` as the signed-in person
(web.acting). The page of an issued invoice also lists its payments (`operations.payments`) with the
form that records one (run in `invoice_actions`), and shows its payment QR code when it has one."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing
from urllib.parse import urlencode

from markupsafe import Markup
from starlette.responses import Response
from starlette.routing import Route

from core.access import memberships
from core.access.apikeys import list_keys
from core.base import ids
from core.base.clock import today
from core.base.db import new_session, transaction
from core.base.errors import DomainError, NotFound, ValidationFailed
from core.base.money import currency_exponent, format_money, from_major
from core.base.validation import parse
from core.billing import documents, events, payment_qr
from core.billing import invoices as core_invoices
from core.billing.business import find_profile
from core.billing.invoice_lines import UNIT_CODES
from core.billing.payment_inputs import PAYMENT_METHODS
from core.billing.presentation import address_lines, status_label, total_rows
from core.documents.export import EInvoiceQuery, e_invoice
from core.schedules import reminder_policy, reminders
from operations import credit_notes as credit_note_operations
from operations import customers as customer_operations
from operations import invoices as invoice_operations
from operations import payments as payment_operations
from operations import products as product_operations
from operations import schedules as schedule_operations
from pages.routing import Visit, errors_by_field, errors_of, page, redirect
from web.acting import act, new_form_key
from web.documents import framed_pdf
from web.rendering import not_found, notice_of, render

STATUS_TABS = (("", "All"), ("draft", "Drafts"), ("open", "Open"), ("overdue", "Overdue"), ("paid", "Paid"),
               ("void", "Void"))
LIST_FILTERS = ("status", "customer", "number", "from", "to")
PICKER_LIMIT = "100"
NOTICES = {
    "created": "The draft is created. Add its lines below.",
    "saved": "The draft is saved.",
    "line_added": "The line is added.",
    "line_saved": "The line is saved.",
    "line_removed": "The line is removed.",
    "finalized": "The invoice is finalized: it has its number and can no longer be edited.",
    "sent": "The invoice is e-mailed.",
    "paid": "The invoice is marked paid.",
    "voided": "The invoice is void.",
    "deleted": "The draft is deleted.",
    "payment_recorded": "The payment is recorded.",
    "payment_settled": "The payment is recorded: the invoice is paid.",
    "payment_to_balance": "The payment is recorded: the invoice is paid, and what was paid beyond it is on the "
                          "customer's balance for their next invoice.",
    "payment_reversed": "The payment is reversed: what it paid is due again.",
    "reminded": "The payment reminder is e-mailed to the customer.",
    "reminders_paused": "Reminders of this invoice are paused: your reminder policy sends none until you resume them.",
    "reminders_resumed": "Reminders of this invoice are on again, as your reminder policy says.",
}
PAYABLE = ("open", "overdue")
METHOD_LABELS = {"bank_transfer": "Bank transfer", "card": "Card", "cash": "Cash", "cheque": "Cheque",
                 "direct_debit": "Direct debit", "other": "Other"}
METHOD_CHOICES = [(method, METHOD_LABELS[method]) for method in PAYMENT_METHODS]  # the select's, in the API's order


# How history names an event whose type does not read well as it is.
EVENT_LABELS = {"credit_note.created": "credit note issued", "credit_note.voided": "credit note voided",
                "credit_note.emailed": "credit note e-mailed", "credit_note.email_failed": "credit note e-mail failed",
                "payment.recorded": "payment recorded", "payment.reversed": "payment reversed",
                "invoice.reminder_sent": "payment reminder sent"}


def _notice(visit: Visit) -> str | None:
    return notice_of(visit, NOTICES)


def invoice_id_of(visit: Visit) -> str:
    return visit.path_params["invoice_id"]


def detail_url(invoice_id: str, notice: str) -> str:
    return f"/invoices/{invoice_id}?notice={notice}"


# --- who did it ------------------------------------------------------------------------------

def _app_name(meta: dict) -> str:
    """The connected app an event's meta names: the name it registered, else its client id."""
    return meta.get("client_name") or meta.get("client_id") or "a connected app"


def _drafted_by(meta: dict | None) -> str | None:
    """The connected app that created an invoice, for the "Drafted by …" badge."""
    return _app_name(meta) if meta and meta.get("actor") == "oauth_app" else None


def _creators(visit: Visit, rows: list[dict]) -> dict[str, str]:
    """Public invoice id → the connected app that drafted it, for the rows that have one."""
    with transaction() as session:
        account_id = visit.account_id
        found = events.creators(session, account_id, [ids.parse("invoice", row["id"]) for row in rows])
    return {ids.public_id("invoice", invoice_id): app
            for invoice_id, meta in found.items() if (app := _drafted_by(meta)) is not None}


def _actor_names(visit: Visit) -> Callable[[dict | None], str]:
    """How history names whoever caused an event: the API key, the connected app, or the person."""
    with transaction() as session:
        account_id = visit.account_id
        key_names = {str(key.id): key.name for key in list_keys(session, account_id)}
        # Members now; someone who left is "a former member".
        people = {str(m.user_id): m.name or m.email for m in memberships.list_members(session, account_id)}

    def person(meta: dict) -> str:
        return people.get(str(meta.get("user_id")), "a former member")

    def name(meta: dict | None) -> str:
        actor = (meta or {}).get("actor")
        if actor == "api_key":
            key = f"API key “{key_names.get(meta.get('api_key_id'), 'deleted key')}”"
            return f"{key} of {person(meta)}" if meta.get("user_id") else key
        if actor == "oauth_app":
            return f"{_app_name(meta)} (connected app), for {person(meta)}"
        if actor == "user":
            return f"{person(meta)} (dashboard)"
        if actor == "reminders":
            return "Your reminder policy (automatic)"
        if actor == "schedule":
            return "A schedule (automatic)"
        return "Customer, through the public link"
    return name


def drafts_for_review(visit: Visit) -> list[tuple[dict, str]]:
    """Drafts a connected app (an assistant) or a schedule created, newest first, with the app's name
    (or "a schedule"): the person reviews them before they are finalized or sent."""
    drafts = act(visit, invoice_operations.list_invoices, query={"status": "draft", "limit": "100"})["data"]
    creators = _creators(visit, drafts)
    return [(draft, creators.get(draft["id"]) or "a schedule") for draft in drafts
            if draft["id"] in creators or draft.get("schedule")]


# --- the list --------------------------------------------------------------------------------

def customer_choices(visit: Visit, *, include_archived: bool) -> list[dict]:
    query = {"limit": PICKER_LIMIT, "include_deleted": "true" if include_archived else ""}
    return act(visit, customer_operations.list_customers, query=query)["data"]


def invoice_list(visit: Visit) -> Response:
    params = visit.request.query_params
    filters = {name: params.get(name, "")[:100] for name in LIST_FILTERS}
    errors: dict[str, str] = {}
    try:
        result = act(visit, invoice_operations.list_invoices,
                     query={**filters, "cursor": params.get("cursor", "")[:2000]})
    except (ValidationFailed, NotFound) as exc:
        result = {"data": [], "next_cursor": None}
        errors = errors_by_field(exc.errors) if exc.errors else {"customer": "is not one of your customers"}
    chosen = {name: value for name, value in filters.items() if value}
    next_url = "/invoices?" + urlencode(chosen | {"cursor": result["next_cursor"]}) if result["next_cursor"] else None
    first_url = "/invoices?" + urlencode(chosen) if params.get("cursor") else None
    tabs = [(label, "/invoices?" + urlencode({"status": value}) if value else "/invoices", value == filters["status"])
            for value, label in STATUS_TABS]
    return render(visit.request, "invoices.html", invoices=result["data"], creators=_creators(visit, result["data"]),
                  filters=filters, errors=errors, tabs=tabs, next_url=next_url,
                  first_url=first_url, customers=customer_choices(visit, include_archived=True),
                  notice=_notice(visit))


# --- a new draft -----------------------------------------------------------------------------

DRAFT_FIELDS = ("customer", "currency", "issue_date", "due_date", "description", "footer")


def _draft_body(values: dict[str, str], *, creating: bool) -> dict:
    """The draft fields as the API takes them: a blank optional field is left out when creating
    and cleared (null) when editing."""
    body: dict = {}
    for name in DRAFT_FIELDS:
        value = values.get(name, "")
        if value:
            body[name] = value
        elif not creating and name in ("description", "footer", "due_date"):
            body[name] = None
    return body


def _new_draft_page(visit: Visit, values: dict, errors: dict, status_code: int = 200) -> Response:
    with transaction() as session:
        profile = find_profile(session, visit.account_id)
    return render(visit.request, "invoice_new.html", status_code=status_code, values=values, errors=errors,
                  customers=customer_choices(visit, include_archived=False), has_profile=profile is not None,
                  default_currency=profile.currency if profile else "", form_key=new_form_key())


def new_draft(visit: Visit) -> Response:
    customer = visit.request.query_params.get("customer", "")[:100]
    values = {"customer": customer, "currency": "", "issue_date": today().isoformat(), "due_date": "",
              "description": "", "footer": ""}
    return _new_draft_page(visit, values, {})


def create_draft(visit: Visit) -> Response:
    values = {name: visit.text(name, 5001, strip=name not in ("description", "footer")) for name in DRAFT_FIELDS}
    try:
        created = act(visit, invoice_operations.create_invoice, body=_draft_body(values, creating=True), keyed=True)
    except NotFound:
        return _new_draft_page(visit, values, {"customer": "is not one of your customers"}, status_code=422)
    except DomainError as exc:
        return _new_draft_page(visit, values, errors_of(exc), status_code=exc.status)
    return redirect(detail_url(created["id"], "created"))


# --- one invoice -----------------------------------------------------------------------------

def load_invoice(visit: Visit) -> dict:
    return act(visit, invoice_operations.get_invoice, params={"id": invoice_id_of(visit)})


def every_of_invoice(visit: Visit, operation, invoice_id: str) -> list[dict]:
    """Every item of an invoice's list (`operation`: its credit notes or its payments), oldest first."""
    items: list[dict] = []
    cursor = ""
    while True:
        result = act(visit, operation, params={"id": invoice_id}, query={"limit": "100", "cursor": cursor})
        items += result["data"]
        cursor = result["next_cursor"]
        if not cursor:
            return items[::-1]


def notes_of_invoice(visit: Visit, invoice_id: str) -> list[dict]:
    """Every credit note of the invoice, oldest first."""
    return every_of_invoice(visit, credit_note_operations.list_invoice_credit_notes, invoice_id)


def payments_of_invoice(visit: Visit, invoice_id: str) -> list[dict]:
    """Every payment of the invoice, reversed ones included, oldest first."""
    return every_of_invoice(visit, payment_operations.list_invoice_payments, invoice_id)


def payment_defaults(invoice: dict) -> dict[str, str]:
    """The record-a-payment form as first shown: all that is due, received today by bank transfer."""
    return {"amount": major_text(invoice["amount_due"], invoice["currency"]), "paid_on": today().isoformat(),
            "method": "bank_transfer", "reference": "", "note": "", "overpayment": ""}


def payment_qr_of(invoice: dict) -> Markup | None:
    """The invoice's payment QR code as inline SVG (the pages load no image from elsewhere), or None
    when it has none (`payment_qr.transfer`: open, in EUR, with an IBAN)."""
    code = payment_qr.epc_qr(invoice)
    return Markup(payment_qr.svg(code)) if code is not None else None  # segno writes it; its title is escaped


def creditable_total(invoice: dict, notes: list[dict]) -> int:
    """What the invoice can still be credited: its total less its credit notes (void ones do not count)."""
    return invoice["total"] - sum(note["total"] for note in notes if note["status"] == "issued")


def where_it_went(note: dict) -> str:
    """A credit note's money in a few words: `Credited 12.00 USD, refunded 5.00 USD`."""
    parts = [(f"{verb} {format_money(note[name], note['currency'])}") for name, verb in (
        ("credit_amount", "credited against the invoice"), ("refund_amount", "refunded"),
        ("balance_amount", "to the customer's balance")) if note[name]]
    said = ", ".join(parts)
    return said[:1].upper() + said[1:]


def _detail_page(visit: Visit, *, errors: dict | None = None, failed: str | None = None, values: dict | None = None,
                 status_code: int = 200) -> Response:
    """The invoice's page; a failed form (`failed`: details, add, or a line id) is shown again with
    the values that were sent and the errors next to them."""
    try:
        invoice = load_invoice(visit)
    except NotFound:
        return not_found(visit, "invoice", "/invoices")
    history = act(visit, invoice_operations.list_invoice_events, params={"id": invoice["id"]},
                  query={"limit": "100"})["data"]
    actor = _actor_names(visit)
    draft = invoice["status"] == "draft"
    context = {"customer_options": [], "price_options": [], "unit_choices": [(code, code) for code in UNIT_CODES]}
    if draft:
        context["customer_options"] = [(c["id"], c["name"]) for c in customer_choices(visit, include_archived=False)]
        context["price_options"] = _price_options(visit, invoice["currency"])
    notes = [] if draft else notes_of_invoice(visit, invoice["id"])
    context["schedule_summary"] = _schedule_summary(visit, invoice)
    context["reminders"] = reminders_of(visit, invoice)
    context["late_fee_for"] = late_fee_origin(visit, invoice)
    payable = invoice["status"] in PAYABLE
    if payable:
        context["payment_values"] = (values or {}) if failed == "payment" else payment_defaults(invoice)
    return render(visit.request, "invoice.html", status_code=status_code, invoice=invoice, draft=draft,
                  status_text=status_label(invoice), payable=payable,
                  payments=[] if draft else payments_of_invoice(visit, invoice["id"]), method_labels=METHOD_LABELS,
                  method_choices=METHOD_CHOICES,
                  payment_qr=payment_qr_of(invoice), payment_qr_caption=payment_qr.CAPTION,
                  history=[(event, actor(event["meta"])) for event in history], event_labels=EVENT_LABELS,
                  credit_notes=notes, went=where_it_went, numbers={note["id"]: note["number"] for note in notes},
                  can_credit=invoice["status"] in ("open", "overdue", "paid") and creditable_total(invoice, notes) > 0,
                  drafted_by=_creators(visit, [invoice]).get(invoice["id"]),
                  customer_address=address_lines(invoice["customer_details"].get("address")),
                  totals=total_rows(invoice), errors=errors or {}, failed=failed, values=values or {},
                  major=major_text, relative_days=relative_days, form_key=new_form_key(), notice=_notice(visit),
                  **context)


def relative_days(days: int) -> str:
    """A reminder step's day in words: `7 days after the due date`, `on the due date`."""
    if days == 0:
        return "on the due date"
    count = f"{abs(days)} day{'' if abs(days) == 1 else 's'}"
    return f"{count} {'after' if days > 0 else 'before'} the due date"


def reminders_of(visit: Visit, invoice: dict) -> dict | None:
    """An open invoice's payment reminders: paused or not, the next one the account's policy will send
    (`core.schedules.reminders.next_reminder`, read-only), whether the policy is on, and whether a
    reminder can be sent now; None for an invoice that takes no reminder (a draft, paid, void)."""
    if invoice["status"] not in PAYABLE:
        return None
    with closing(new_session(read_only=True)) as session:
        account_id = visit.account_id
        row = core_invoices.get_invoice(session, account_id, invoice["id"])
        upcoming = reminders.next_reminder(session, row)
        active = reminder_policy.policy_of(session, account_id).active
    return {"paused": bool(invoice.get("reminders_paused")), "policy_active": active,
            "next": upcoming, "next_when": relative_days(upcoming["days"]) if upcoming else "",
            "can_remind": invoice["amount_due"] > 0}


def late_fee_origin(visit: Visit, invoice: dict) -> dict | None:
    """On a late fee's invoice, the overdue invoice it charges for: its id and number."""
    overdue_id = invoice.get("late_fee_for")
    if not overdue_id:
        return None
    try:
        overdue = act(visit, invoice_operations.get_invoice, params={"id": overdue_id})
    except NotFound:
        return {"id": overdue_id, "number": overdue_id}
    return {"id": overdue_id, "number": overdue["number"] or overdue_id}


def _schedule_summary(visit: Visit, invoice: dict) -> str | None:
    """How often the schedule that made the invoice runs (`on the 1st of every month, from …`), or None."""
    if not invoice.get("schedule"):
        return None
    try:
        return act(visit, schedule_operations.get_invoice_schedule, params={"id": invoice["schedule"]})["summary"]
    except NotFound:
        return None


def _price_options(visit: Visit, currency: str) -> list[tuple[str, str]]:
    """The active prices an invoice in `currency` can bill: `Consulting · 150.00 USD / month`."""
    prices = act(visit, product_operations.list_prices,
                 query={"active": "true", "currency": currency, "limit": PICKER_LIMIT})["data"]
    products = {p["id"]: p["name"] for p in act(visit, product_operations.list_products,
                                                query={"active": "true", "limit": PICKER_LIMIT})["data"]}
    return [(price["id"], " · ".join(filter(None, (
        products[price["product"]], price["nickname"],
        format_money(price["unit_amount"], price["currency"])
        + (f" / {price['recurring']['interval']}" if price["recurring"] else "")))))
        for price in prices if price["product"] in products]


def major_text(amount: int | None, currency: str) -> str:
    """Minor units as the plain major-unit text a form field holds: 250050 USD → 2500.50."""
    if amount is None:
        return ""
    exponent = currency_exponent(currency)
    return f"{amount / 10 ** exponent:.{exponent}f}" if exponent else str(amount)


def typed_money(text: str, currency: str, path: str) -> int:
    """An amount a person typed in major units (`2,500.50`) as minor units (`core.base.money.from_major`);
    422 at `path` when it is not one."""
    minor = from_major(text, currency)
    if minor is None:
        raise ValidationFailed.at(path, f"must be an amount in {currency} with at most {currency_exponent(currency)} "
                                        "decimals, such as " + major_text(250050, currency))
    return minor


def invoice_detail(visit: Visit) -> Response:
    return _detail_page(visit)


def invoice_pdf(visit: Visit) -> Response:
    try:
        view = load_invoice(visit)
    except NotFound:
        return not_found(visit, "invoice", "/invoices")
    return framed_pdf(visit.request, documents.invoice_pdf(view), view)


def invoice_e_invoice(visit: Visit) -> Response:
    """The finalized invoice as an e-invoice file; what the invoice lacks is shown on its page."""
    # Read as the PDF is (the get_invoice operation), then written as REST writes it: the file's bytes,
    # not the assistant's base64 form of them.
    try:
        query = parse(EInvoiceQuery, {"format": visit.request.query_params.get("format", "")[:20]})
        document = e_invoice(load_invoice(visit), query.format)
    except NotFound:
        return not_found(visit, "invoice", "/invoices")
    except DomainError as exc:
        return _detail_page(visit, errors=errors_of(exc) or {"format": exc.detail}, failed="e_invoice",
                            status_code=exc.status)
    return Response(document.content, media_type=document.media_type, headers={
        "Content-Disposition": f'attachment; filename="{document.filename}"', "X-Content-Type-Options": "nosniff"})


def refused(visit: Visit, exc: DomainError, failed: str, values: dict, errors: dict | None = None) -> Response:
    """A form refused by the operation: the invoice's page again, the errors beside the form."""
    return _detail_page(visit, errors=errors or errors_of(exc), failed=failed, values=values,
                        status_code=exc.status)


def save_draft(visit: Visit) -> Response:
    values = {name: visit.text(name, 5001, strip=name not in ("description", "footer")) for name in DRAFT_FIELDS}
    try:
        load_invoice(visit)
    except NotFound:
        return not_found(visit, "invoice", "/invoices")
    try:
        act(visit, invoice_operations.update_invoice, params={"id": invoice_id_of(visit)},
            body=_draft_body(values, creating=False))
    except DomainError as exc:
        return refused(visit, exc, "details", values)
    return redirect(detail_url(invoice_id_of(visit), "saved"))


def routes() -> list[Route]:
    return [
        page("/invoices", get=invoice_list),
        page("/invoices/new", get=new_draft, post=create_draft),
        page("/invoices/{invoice_id}", get=invoice_detail, post=save_draft),
        page("/invoices/{invoice_id}/pdf", get=invoice_pdf),
        page("/invoices/{invoice_id}/e-invoice", get=invoice_e_invoice),
    ]
