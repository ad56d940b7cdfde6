"""Invoices in the dashboard: the list, a draft's editor, an invoice's page, and the lifecycle
actions, each behind a page that says what it will do. Every change runs an operation of
`operations.invoices` as the signed-in person (web.acting)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing
from urllib.parse import urlencode

from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from core.access.accounts import account_of, owner_of
from core.access.apikeys import list_keys
from core.base import ids
from core.base.clock import today
from core.base.db import new_session, transaction
from core.base.errors import DomainError, NotFound, ValidationFailed
from core.base.money import currency_exponent, format_money, from_major
from core.base.validation import parse
from core.billing import events, numbering
from core.billing import invoices as core_invoices
from core.billing.business import find_profile
from core.billing.invoice_lines import UNIT_CODES, ItemFields
from core.billing.pdf import filename_for, render_invoice
from core.billing.presentation import address_lines, total_rows
from operations import customers as customer_operations
from operations import invoices as invoice_operations
from operations import products as product_operations
from pages.routing import Visit, errors_by_field, page, redirect
from web.acting import act, new_form_key
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
}


def _notice(visit: Visit) -> str | None:
    return notice_of(visit, NOTICES)


def _invoice_id(visit: Visit) -> str:
    return visit.path_params["invoice_id"]


def _detail_url(invoice_id: str, notice: str) -> str:
    return f"/invoices/{invoice_id}?notice={notice}"


# --- who did it ------------------------------------------------------------------------------

def drafted_by(meta: dict | None) -> str | None:
    """The connected app that created an invoice, for the "Drafted by …" badge."""
    if meta and meta.get("actor") == "oauth_app":
        return meta.get("client_name") or meta.get("client_id") or "a connected app"
    return None


def _creators(visit: Visit, rows: list[dict]) -> dict[str, str]:
    """Public invoice id → the connected app that drafted it, for the rows that have one."""
    with transaction() as session:
        account_id = account_of(session, visit.user).id
        found = events.creators(session, account_id, [ids.parse("invoice", row["id"]) for row in rows])
    return {ids.public_id("invoice", invoice_id): app
            for invoice_id, meta in found.items() if (app := drafted_by(meta)) is not None}


def _actor_names(visit: Visit) -> Callable[[dict | None], str]:
    """How history names whoever caused an event: the API key, the connected app, or the person."""
    with transaction() as session:
        account_id = account_of(session, visit.user).id
        key_names = {str(key.id): key.name for key in list_keys(session, account_id)}
        owner = owner_of(session, account_id)
        person = owner.name or owner.email

    def name(meta: dict | None) -> str:
        actor = (meta or {}).get("actor")
        if actor == "api_key":
            return f"API key “{key_names.get(meta.get('api_key_id'), 'deleted key')}”"
        if actor == "oauth_app":
            return f"{meta.get('client_name') or meta.get('client_id')} (connected app)"
        if actor == "user":
            return f"{person} (dashboard)"
        return "Customer, through the public link"
    return name


def drafts_for_review(visit: Visit) -> list[tuple[dict, str]]:
    """Drafts a connected app (an assistant) created, newest first, with the app's name: the
    person reviews them before they are finalized or sent."""
    drafts = act(visit, invoice_operations.list_invoices, query={"status": "draft", "limit": "100"})["data"]
    creators = _creators(visit, drafts)
    return [(draft, creators[draft["id"]]) for draft in drafts if draft["id"] in creators]


# --- the list --------------------------------------------------------------------------------

def _customer_choices(visit: Visit, *, include_archived: bool) -> list[dict]:
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
                  first_url=first_url, customers=_customer_choices(visit, include_archived=True),
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
        profile = find_profile(session, account_of(session, visit.user).id)
    return render(visit.request, "invoice_new.html", status_code=status_code, values=values, errors=errors,
                  customers=_customer_choices(visit, include_archived=False), has_profile=profile is not None,
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
        return _new_draft_page(visit, values, _errors_of(exc), status_code=exc.status)
    return redirect(_detail_url(created["id"], "created"))


# --- one invoice -----------------------------------------------------------------------------

def _load(visit: Visit) -> dict:
    return act(visit, invoice_operations.get_invoice, params={"id": _invoice_id(visit)})


def _detail_page(visit: Visit, *, errors: dict | None = None, failed: str | None = None, values: dict | None = None,
                 status_code: int = 200) -> Response:
    """The invoice's page; a failed form (`failed`: details, add, or a line id) is shown again with
    the values that were sent and the errors next to them."""
    try:
        invoice = _load(visit)
    except NotFound:
        return not_found(visit, "invoice", "/invoices")
    history = act(visit, invoice_operations.list_invoice_events, params={"id": invoice["id"]},
                  query={"limit": "100"})["data"]
    actor = _actor_names(visit)
    draft = invoice["status"] == "draft"
    context = {"customer_options": [], "price_options": [], "unit_choices": [(code, code) for code in UNIT_CODES]}
    if draft:
        context["customer_options"] = [(c["id"], c["name"]) for c in _customer_choices(visit, include_archived=False)]
        context["price_options"] = _price_options(visit, invoice["currency"])
    creator = (history[-1]["meta"] if history and history[-1]["type"] == "invoice.created" else None)
    return render(visit.request, "invoice.html", status_code=status_code, invoice=invoice, draft=draft,
                  history=[(event, actor(event["meta"])) for event in history], drafted_by=drafted_by(creator),
                  customer_address=address_lines(invoice["customer_details"].get("address")),
                  totals=total_rows(invoice), errors=errors or {}, failed=failed, values=values or {},
                  major=_major_text, form_key=new_form_key(), notice=_notice(visit), **context)


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


def _major_text(amount: int | None, currency: str) -> str:
    """Minor units as the plain major-unit text a form field holds: 250050 USD → 2500.50."""
    if amount is None:
        return ""
    exponent = currency_exponent(currency)
    return f"{amount / 10 ** exponent:.{exponent}f}" if exponent else str(amount)


def invoice_detail(visit: Visit) -> Response:
    return _detail_page(visit)


def invoice_pdf(visit: Visit) -> Response:
    try:
        view = _load(visit)
    except NotFound:
        return not_found(visit, "invoice", "/invoices")
    inline = visit.request.query_params.get("download") != "1"
    disposition = f'{"inline" if inline else "attachment"}; filename="{filename_for(view)}"'
    # Shown inside the invoice's own page: framing by this origin only.
    return Response(render_invoice(view), media_type="application/pdf",
                    headers={"Content-Disposition": disposition, "Cache-Control": "private, no-store",
                             "Content-Security-Policy": "frame-ancestors 'self'", "X-Frame-Options": "SAMEORIGIN",
                             "X-Content-Type-Options": "nosniff"})


def _errors_of(exc: DomainError) -> dict[str, str]:
    """Field path → message; an error without a field (invalid state, a missing price) under ''."""
    return errors_by_field(exc.errors) if exc.errors else {"": exc.detail}


def _refused(visit: Visit, exc: DomainError, failed: str, values: dict, errors: dict | None = None) -> Response:
    """A form refused by the operation: the invoice's page again, the errors beside the form."""
    return _detail_page(visit, errors=errors or _errors_of(exc), failed=failed, values=values,
                        status_code=exc.status)


def save_draft(visit: Visit) -> Response:
    values = {name: visit.text(name, 5001, strip=name not in ("description", "footer")) for name in DRAFT_FIELDS}
    try:
        _load(visit)
    except NotFound:
        return not_found(visit, "invoice", "/invoices")
    try:
        act(visit, invoice_operations.update_invoice, params={"id": _invoice_id(visit)},
            body=_draft_body(values, creating=False))
    except DomainError as exc:
        return _refused(visit, exc, "details", values)
    return redirect(_detail_url(_invoice_id(visit), "saved"))


# --- lines -----------------------------------------------------------------------------------

LINE_FIELDS = ("price", "description", "quantity", "unit", "unit_amount", "discount_percent", "tax_rate")


def _line_values(visit: Visit) -> dict[str, str]:
    return {name: visit.text(name, 5001, strip=name != "description") for name in LINE_FIELDS}


def _line_body(values: dict[str, str], currency: str) -> dict:
    """A line form as an API item: amounts typed in major units become minor units; blank fields
    take the API's defaults (the price's amount and tax rate for a priced line)."""
    body: dict = {}
    for name in ("price", "description", "unit"):
        if values.get(name):
            body[name] = values[name]
    for name in ("quantity", "discount_percent", "tax_rate"):
        if values.get(name):
            body[name] = values[name]
    if values.get("unit_amount"):
        minor = from_major(values["unit_amount"], currency)
        if minor is None:
            decimals = currency_exponent(currency)
            raise ValidationFailed.at("unit_amount", f"must be an amount in {currency} with at most {decimals} "
                                                     "decimals, such as " + _major_text(250050, currency))
        body["unit_amount"] = minor
    return body


def _line_errors(exc: DomainError) -> dict[str, str]:
    """An item error of PATCH (`items.3.quantity`) named as the line form's field (`quantity`)."""
    return {(path.split(".")[2] if path.startswith("items.") and path.count(".") == 2 else path): message
            for path, message in _errors_of(exc).items()}


def add_line(visit: Visit) -> Response:
    values = _line_values(visit)
    try:
        invoice = _load(visit)
    except NotFound:
        return not_found(visit, "invoice", "/invoices")
    try:
        body = _line_body(values, invoice["currency"]) | {"invoice": invoice["id"]}
        act(visit, invoice_operations.add_invoice_item, body=body, keyed=True)
    except DomainError as exc:
        return _refused(visit, exc, "add", values)
    return redirect(_detail_url(invoice["id"], "line_added"))


def _as_item(line: dict) -> dict:
    """An existing line as PATCH `items` keeps it, unchanged."""
    item = {"description": line["description"], "quantity": line["quantity"], "unit": line["unit"],
            "unit_amount": line["unit_amount"], "discount_percent": line["discount_percent"],
            "tax_rate": line["tax_rate"]}
    return item | ({"price": line["price"]} if line["price"] else {})


def save_line(visit: Visit) -> Response:
    values = _line_values(visit)
    item_id = visit.path_params["item_id"]
    try:
        invoice = _load(visit)
    except NotFound:
        return not_found(visit, "invoice", "/invoices")
    lines = invoice["lines"]["data"]
    if not any(line["id"] == item_id for line in lines):
        return not_found(visit, "invoice line", f"/invoices/{invoice['id']}")
    try:
        edited = _line_body(values, invoice["currency"])
        items = [(_as_item(line) | edited) if line["id"] == item_id else _as_item(line) for line in lines]
        act(visit, invoice_operations.update_invoice, params={"id": invoice["id"]}, body={"items": items})
    except DomainError as exc:
        return _refused(visit, exc, item_id, values, _line_errors(exc))
    return redirect(_detail_url(invoice["id"], "line_saved"))


def preview_line(visit: Visit) -> Response:
    """Live totals (JSON for the page's script): what a line and the draft would come to with the
    line form as it is now (`line`: `add`, or the id of the line being edited), computed by the
    core exactly as saving would, with nothing saved."""
    try:
        invoice = _load(visit)
    except NotFound:
        return JSONResponse({"message": "This invoice does not exist, or belongs to another account."},
                            status_code=404)
    target = visit.text("line", 100)
    lines = invoice["lines"]["data"]
    try:
        edited = _line_body(_line_values(visit), invoice["currency"])
        items = [(_as_item(line) | edited) if line["id"] == target else _as_item(line) for line in lines]
        if target == "add":
            items.append(edited)
        with closing(new_session(read_only=True)) as session:
            parsed = [parse(ItemFields, item, prefix=f"items.{index}.") for index, item in enumerate(items)]
            draft, built = core_invoices.preview_lines(session, account_of(session, visit.user).id, invoice["id"],
                                                        parsed)
            position = len(built) - 1 if target == "add" else next(
                (i for i, line in enumerate(lines) if line["id"] == target), None)
            line = built[position] if position is not None else None
            currency, total = draft.currency, draft.total
    except DomainError as exc:
        first = exc.errors[0] if exc.errors else None
        field = first.path.rsplit(".", 1)[-1] if first else ""
        return JSONResponse({"message": f"{field.replace('_', ' ').capitalize()}: {first.message}" if first
                             else exc.detail}, status_code=exc.status)
    said = f"The invoice would total {format_money(total, currency)}."
    if line is not None:
        said = (f"This line: {format_money(line.amount, currency)}"
                f"{f' plus {format_money(line.tax_amount, currency)} tax' if line.tax_amount else ''}. " + said)
    return JSONResponse({"message": said})


def remove_line(visit: Visit) -> Response:
    try:
        act(visit, invoice_operations.remove_invoice_item, params={"id": visit.path_params["item_id"]},
            query={"invoice": _invoice_id(visit)})
    except NotFound:
        return not_found(visit, "invoice line", "/invoices")
    except DomainError as exc:
        return _refused(visit, exc, visit.path_params["item_id"], {})
    return redirect(_detail_url(_invoice_id(visit), "line_removed"))


# --- lifecycle actions, each confirmed first ---------------------------------------------------

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
        invoice = _load(visit)
    except NotFound:
        return not_found(visit, "invoice", "/invoices")
    if invoice["status"] not in ACTIONS[action]["states"]:
        return redirect(f"/invoices/{invoice['id']}")
    return _action_page(visit, action, invoice, values=_action_values(visit, action, invoice, submitted=False),
                        errors={})


def run_action(visit: Visit, action: str) -> Response:
    try:
        invoice = _load(visit)
    except NotFound:
        return not_found(visit, "invoice", "/invoices")
    values = _action_values(visit, action, invoice, submitted=True)
    spec = ACTIONS[action]
    try:
        act(visit, spec["operation"], params={"id": invoice["id"]}, body=_action_body(action, values), keyed=True)
    except DomainError as exc:
        errors = {"cc" if path.startswith("cc") else path: message for path, message in _errors_of(exc).items()}
        return _action_page(visit, action, invoice, values=values, errors=errors, status_code=exc.status)
    if action == "delete":
        return redirect("/invoices?notice=deleted")
    return redirect(_detail_url(invoice["id"], spec["notice"]))


def routes() -> list[Route]:
    action_routes = [page(f"/invoices/{{invoice_id}}/{action}",
                          get=lambda visit, action=action: confirm_action(visit, action),
                          post=lambda visit, action=action: run_action(visit, action))
                     for action in ACTIONS]
    return [
        page("/invoices", get=invoice_list),
        page("/invoices/new", get=new_draft, post=create_draft),
        page("/invoices/{invoice_id}", get=invoice_detail, post=save_draft),
        page("/invoices/{invoice_id}/pdf", get=invoice_pdf),
        page("/invoices/{invoice_id}/lines", post=add_line),
        page("/invoices/{invoice_id}/preview", post=preview_line),
        page("/invoices/{invoice_id}/lines/{item_id}", post=save_line),
        page("/invoices/{invoice_id}/lines/{item_id}/remove", post=remove_line),
        *action_routes,
    ]
