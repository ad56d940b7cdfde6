"""A draft's lines in the dashboard: add, edit and remove them (through the operations, as the
signed-in person), and the live totals the line forms ask for while the person types."""

from __future__ import annotations

from contextlib import closing

from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from core.base.db import new_session
from core.base.errors import DomainError, NotFound, ValidationFailed
from core.base.money import currency_exponent, format_money, from_major
from core.base.validation import parse
from core.billing import invoices as core_invoices
from core.billing.invoice_lines import ItemFields
from operations import invoices as invoice_operations
from pages.routing import Visit, errors_of, page, redirect
from web.acting import act
from web.invoice_pages import detail_url, invoice_id_of, load_invoice, major_text, refused
from web.rendering import not_found

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
                                                     "decimals, such as " + major_text(250050, currency))
        body["unit_amount"] = minor
    return body


def _line_errors(exc: DomainError) -> dict[str, str]:
    """An item error of PATCH (`items.3.quantity`) named as the line form's field (`quantity`)."""
    return {(path.split(".")[2] if path.startswith("items.") and path.count(".") == 2 else path): message
            for path, message in errors_of(exc).items()}


def add_line(visit: Visit) -> Response:
    values = _line_values(visit)
    try:
        invoice = load_invoice(visit)
    except NotFound:
        return not_found(visit, "invoice", "/invoices")
    try:
        body = _line_body(values, invoice["currency"]) | {"invoice": invoice["id"]}
        act(visit, invoice_operations.add_invoice_item, body=body, keyed=True)
    except DomainError as exc:
        return refused(visit, exc, "add", values)
    return redirect(detail_url(invoice["id"], "line_added"))


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
        invoice = load_invoice(visit)
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
        return refused(visit, exc, item_id, values, _line_errors(exc))
    return redirect(detail_url(invoice["id"], "line_saved"))


def preview_line(visit: Visit) -> Response:
    """Live totals (JSON for the page's script): what a line and the draft would come to with the
    line form as it is now (`line`: `add`, or the id of the line being edited), computed by the
    core exactly as saving would, with nothing saved."""
    try:
        invoice = load_invoice(visit)
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
            draft, built = core_invoices.preview_lines(session, visit.account_id, invoice["id"],
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
            query={"invoice": invoice_id_of(visit)})
    except NotFound:
        return not_found(visit, "invoice line", "/invoices")
    except DomainError as exc:
        return refused(visit, exc, visit.path_params["item_id"], {})
    return redirect(detail_url(invoice_id_of(visit), "line_removed"))


def routes() -> list[Route]:
    return [
        page("/invoices/{invoice_id}/lines", post=add_line),
        page("/invoices/{invoice_id}/preview", post=preview_line),
        page("/invoices/{invoice_id}/lines/{item_id}", post=save_line),
        page("/invoices/{invoice_id}/lines/{item_id}/remove", post=remove_line),
    ]
