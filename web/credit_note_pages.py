"""Credit notes in the dashboard: issuing one from an invoice's page (a form, then a preview of exactly
what will be issued, then the credit note issued with the form's idempotency key), the list, a credit
note's page and PDF, and voiding and e-mailing it (each on a page that says what it will do first).
Every read and change runs an operation of `operations.credit_notes` as the signed-in person
(web.acting); only the total a form would credit, which the amount of "where the money goes" must
name, is asked of the core directly (read-only, as live totals are)."""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass
from decimal import Decimal
from urllib.parse import urlencode

from starlette.responses import Response
from starlette.routing import Route

from core.base.clock import today
from core.base.db import new_session, transaction
from core.base.errors import DomainError, FieldError, NotFound, ValidationFailed
from core.base.money import currency_exponent, format_money, from_major
from core.base.validation import failed, parse
from core.billing import credit_notes as core_credit_notes
from core.billing import documents, numbering
from core.billing.business import find_profile
from core.billing.credit_note_inputs import CreditNoteCreate
from core.billing.presentation import REASON_LABELS, address_lines, exact_number, settlement_rows, total_rows
from operations import credit_notes as credit_note_operations
from pages.routing import Visit, errors_by_field, errors_of, page, redirect
from web.acting import act, new_form_key
from web.documents import framed_pdf
from web.invoice_pages import customer_choices, load_invoice, major_text
from web.rendering import not_found, notice_of, render

REASONS = tuple(REASON_LABELS.items())
DESTINATIONS = {"credit": "Credit against the invoice", "refund": "Refunded to the customer",
                "balance": "Customer balance"}
CREDITABLE = ("open", "overdue", "paid")
# A form holds at most pages.routing.MAX_FORM_FIELDS fields: two a line (quantity, amount) and the rest.
LINES_ON_FORM_MAX = 90
NOTICES = {
    "issued": "The credit note is issued.",
    "voided": "The credit note is void: what it did to the invoice is undone.",
    "sent": "The credit note is e-mailed.",
}
TEXT_FIELDS = ("scope", "custom_description", "custom_amount", "custom_tax_rate", "reason", "memo", "destination",
               "refund_reference", "refunded_on", "previewed_total")
MULTI_LINE_FIELDS = ("custom_description", "memo")


def credit_note_id_of(visit: Visit) -> str:
    return visit.path_params["credit_note_id"]


def note_url(note_id: str, notice: str | None = None) -> str:
    return f"/credit-notes/{note_id}" + (f"?notice={notice}" if notice else "")


def load_note(visit: Visit) -> dict:
    return act(visit, credit_note_operations.get_credit_note, params={"id": credit_note_id_of(visit)})


# --- what remains of each line -------------------------------------------------------------------

@dataclass(frozen=True)
class Creditable:
    """An invoice line and what its credit notes (not void) left of it (`credit_notes.what_remains`)."""

    line: dict
    number: int  # its position on the invoice, from 1
    remains: core_credit_notes.Remaining

    @property
    def done(self) -> bool:
        return self.remains.done

    @property
    def quantity(self) -> Decimal | None:
        return self.remains.quantity

    def units_left(self) -> str | None:
        """`2 of 3 HRS`; None when credited in full, or once part of it was credited by amount."""
        if self.done or self.quantity is None:
            return None
        return f"{exact_number(self.quantity)} of {exact_number(self.line['quantity'])} {self.line['unit']}"

    def money_left(self, currency: str) -> str:
        if self.done:
            return "Credited in full"
        amount, tax = self.remains.amount, self.remains.tax
        return format_money(amount, currency) + (f" + {format_money(tax, currency)} tax" if tax else "")


def creditable(visit: Visit, invoice: dict) -> tuple[list[Creditable], int]:
    """Each line of the invoice with what remains creditable of it, and what the invoice can still be
    credited: the core's figures (read-only, as the form's total is)."""
    with closing(new_session(read_only=True)) as session:
        remains, can_credit = core_credit_notes.what_remains(session, visit.account_id,
                                                             invoice["id"])
    return [Creditable(line, number, remains[line["id"]])
            for number, line in enumerate(invoice["lines"]["data"], start=1)], can_credit


# --- the form ------------------------------------------------------------------------------------

def _values(visit: Visit, lines: list[Creditable]) -> dict:
    values: dict = {name: visit.text(name, 5001, strip=name not in MULTI_LINE_FIELDS) for name in TEXT_FIELDS}
    chosen = set(visit.values("line"))
    for item in lines:
        line_id = item.line["id"]
        values[f"quantity.{line_id}"] = visit.text(f"quantity.{line_id}", 101)
        values[f"amount.{line_id}"] = visit.text(f"amount.{line_id}", 101)
        values[f"line.{line_id}"] = "1" if line_id in chosen else ""
    return values


def _default_values(invoice: dict) -> dict:
    return {"scope": "whole", "destination": "credit" if invoice["status"] != "paid" else "refund",
            "refunded_on": today().isoformat()}


def _destinations(invoice: dict) -> list[tuple[str, str]]:
    """Where the money of a credit note on this invoice may go: a paid invoice has nothing due."""
    names = ("credit", "refund", "balance") if invoice["status"] != "paid" else ("refund", "balance")
    return [(name, DESTINATIONS[name]) for name in names]


def _amount(text: str, currency: str, path: str) -> int:
    minor = from_major(text, currency)
    if minor is None:
        raise ValidationFailed.at(path, f"must be an amount in {currency} with at most {currency_exponent(currency)} "
                                        "decimals, such as " + major_text(250050, currency))
    return minor


def _body(invoice: dict, values: dict, lines: list[Creditable], sources: list[str]) -> dict:
    """The form as the API's body, but where the money goes; `sources` gets, for each line of the body,
    the form row it came from (an invoice line's id, or `custom`), to put an error back beside it."""
    currency = invoice["currency"]
    body: dict = {"invoice": invoice["id"], "reason": values["reason"] or None, "memo": values["memo"] or None}
    custom = {name: values[f"custom_{name}"] for name in ("description", "amount", "tax_rate")}
    problems: list[FieldError] = []
    if values["scope"] not in ("whole", "lines"):
        raise ValidationFailed.at("scope", "choose the whole invoice or chosen lines")
    if values["scope"] == "whole":  # what the form hides then (lines, a line of its own) is not sent
        return body
    items = []
    for item in lines:
        line_id = item.line["id"]
        quantity, amount = values[f"quantity.{line_id}"], values[f"amount.{line_id}"]
        if not (values[f"line.{line_id}"] or quantity or amount):
            continue
        entry: dict = {"invoice_line": line_id}
        if quantity:
            entry["quantity"] = quantity
        if amount:
            try:
                entry["amount"] = _amount(amount, currency, f"amount.{line_id}")
            except ValidationFailed as exc:
                problems += exc.errors
        items.append(entry)
        sources.append(line_id)
    if any(custom.values()):
        entry = {"description": custom["description"] or None}
        if custom["amount"]:
            try:
                entry["amount"] = _amount(custom["amount"], currency, "custom_amount")
            except ValidationFailed as exc:
                problems += exc.errors
        if custom["tax_rate"]:
            entry["tax_rate"] = custom["tax_rate"]
        items.append(entry)
        sources.append("custom")
    if problems:
        raise failed(problems)
    if not items:
        raise ValidationFailed.at("lines", "choose a line to credit (tick it, or give a quantity or an amount), or "
                                           "add a line of your own")
    return body | {"lines": items}


def _credit_total(visit: Visit, body: dict) -> int:
    """What the body would credit, before saying where the money goes: the core's arithmetic, nothing saved."""
    with closing(new_session(read_only=True)) as session:
        data = parse(CreditNoteCreate, body)
        return core_credit_notes.credit_total(session, visit.account_id, data)


def _allocated(body: dict, values: dict, invoice: dict, total: int) -> dict:
    """The body with all of `total` going where the form says."""
    destination = values["destination"]
    if destination not in dict(_destinations(invoice)):
        raise ValidationFailed.at("destination", "choose where the money goes" + (
            ": a paid invoice has nothing due, so refund it or credit the customer's balance"
            if invoice["status"] == "paid" and destination == "credit" else ""))
    body = body | {f"{destination}_amount": total}
    if destination == "refund":
        body |= {"refund_reference": values["refund_reference"] or None, "refunded_on": values["refunded_on"] or None}
    return body


ALLOCATION_PATHS = ("credit_amount", "refund_amount", "balance_amount")
CUSTOM_FIELDS = {"description": "custom_description", "amount": "custom_amount", "tax_rate": "custom_tax_rate"}


def _field_of(path: str, sources: list[str]) -> str:
    """The form field an error of the operation belongs beside: `lines.2.quantity` → `quantity.ii_…`."""
    parts = path.split(".")
    if parts[0] == "lines" and len(parts) > 1 and parts[1].isdigit() and int(parts[1]) < len(sources):
        source, name = sources[int(parts[1])], parts[2] if len(parts) > 2 else ""
        if source == "custom":
            return CUSTOM_FIELDS.get(name, "custom_description")
        return f"{name}.{source}" if name in ("quantity", "amount") else f"line.{source}"
    if path in ALLOCATION_PATHS:
        return "destination"
    return "" if path == "invoice" else path


def _form_errors(exc: DomainError, sources: list[str]) -> dict[str, str]:
    errors: dict[str, str] = {}
    for path, message in errors_of(exc).items():
        errors.setdefault(_field_of(path, sources), message)
    return errors


def _labels(lines: list[Creditable]) -> dict[str, str]:
    labels = {"scope": "What to credit", "lines": "Lines", "custom_description": "Line of your own: description",
              "custom_amount": "Line of your own: amount", "custom_tax_rate": "Line of your own: tax rate",
              "reason": "Reason", "memo": "Memo", "destination": "Where the money goes",
              "refund_reference": "Refund reference", "refunded_on": "Refunded on"}
    for item in lines:
        line_id = item.line["id"]
        labels |= {f"line.{line_id}": f"Line {item.number}", f"quantity.{line_id}": f"Line {item.number}: quantity",
                   f"amount.{line_id}": f"Line {item.number}: amount"}
    return labels


def _form_page(visit: Visit, invoice: dict, values: dict, errors: dict, status_code: int = 200) -> Response:
    lines, can_credit = creditable(visit, invoice)
    # Crediting the whole invoice credits what remains of each line: more than the invoice can still be
    # credited once an earlier credit note credited a line of its own.
    whole = sum(item.remains.amount + item.remains.tax for item in lines if not item.done)
    return render(visit.request, "credit_note_new.html", status_code=status_code, invoice=invoice, lines=lines,
                  whole=whole,
                  lines_on_form=len(lines) <= LINES_ON_FORM_MAX, values=values, errors=errors,
                  labels=_labels(lines), reasons=REASONS, destinations=_destinations(invoice),
                  can_credit=can_credit, form_key=new_form_key())


def credit_note_form(visit: Visit) -> Response:
    try:
        invoice = load_invoice(visit)
    except NotFound:
        return not_found(visit, "invoice", "/invoices")
    if invoice["status"] not in CREDITABLE:
        return redirect(f"/invoices/{invoice['id']}")
    return _form_page(visit, invoice, _default_values(invoice), {})


def _upcoming_number(visit: Visit) -> str | None:
    with transaction() as session:
        account_id = visit.account_id
        profile = find_profile(session, account_id)
        if profile is None:
            return None
        return numbering.upcoming_number(session, account_id, profile.credit_note_prefix, "credit_note")


def _consequence(visit: Visit, invoice: dict, preview: dict) -> list[str]:
    """What issuing will do, in plain words."""
    currency, number = invoice["currency"], _upcoming_number(visit)
    total = format_money(preview["total"], currency)
    said = [f"A credit note of {total}{f' numbered {number}' if number else ''} will be issued for invoice "
            f"{invoice['number']} to {invoice['customer_details']['name']}. Once issued it cannot be edited or "
            "deleted, only voided."]
    if preview["credit_amount"]:
        due = invoice["amount_due"] - preview["credit_amount"]
        said.append(f"{total} will be taken off what the invoice still has due: {format_money(due, currency)} "
                    "will be due" + (" and the invoice will be paid (by credit)." if due == 0 else "."))
    if preview["refund_amount"]:
        said.append(f"{total} will be recorded as refunded to the customer outside this service"
                    + (f" (reference {preview['refund']['reference']})" if preview["refund"]["reference"] else "")
                    + ". No money moves here: make the refund yourself.")
    if preview["balance_amount"]:
        said.append(f"{total} will be credited to the customer's balance in {currency} and taken off their next "
                    f"invoice in {currency} when it is finalized.")
    return said


def _preview_page(visit: Visit, invoice: dict, values: dict, preview: dict) -> Response:
    carried = {name: value for name, value in values.items() if value and name not in ("previewed_total",)}
    return render(visit.request, "credit_note_preview.html", invoice=invoice, preview=preview,
                  totals=total_rows(preview), consequence=_consequence(visit, invoice, preview),
                  carried=carried, reason_labels=REASON_LABELS, form_key=visit.text("idempotency_key", 300))


def credit_note_submit(visit: Visit) -> Response:
    """The form's three steps: `preview` (the form sent: what would be issued), `edit` (back to the form
    from the preview) and `issue` (from the preview, with the total it showed and the form's key)."""
    try:
        invoice = load_invoice(visit)
    except NotFound:
        return not_found(visit, "invoice", "/invoices")
    lines, _can_credit = creditable(visit, invoice)
    values = _values(visit, lines)
    step = visit.text("step", 20)
    if step == "edit":
        return _form_page(visit, invoice, values, {})
    sources: list[str] = []
    try:
        body = _body(invoice, values, lines, sources)
        if step == "issue" and values["previewed_total"].isdigit():
            # What the preview showed: should the invoice have changed since, the core refuses the sum.
            total = int(values["previewed_total"])
        else:
            total = _credit_total(visit, body)
        body = _allocated(body, values, invoice, total)
        if step == "issue":
            note = act(visit, credit_note_operations.create_credit_note, body=body, keyed=True)
            return redirect(note_url(note["id"], "issued"))
        preview = act(visit, credit_note_operations.preview_credit_note, body=body)
    except DomainError as exc:
        return _form_page(visit, invoice, values, _form_errors(exc, sources), status_code=exc.status)
    values["previewed_total"] = str(preview["total"])
    return _preview_page(visit, invoice, values, preview)


# --- the list ------------------------------------------------------------------------------------

def credit_note_list(visit: Visit) -> Response:
    params = visit.request.query_params
    customer = params.get("customer", "")[:100]
    errors: dict[str, str] = {}
    try:
        result = act(visit, credit_note_operations.list_credit_notes,
                     query={"customer": customer, "cursor": params.get("cursor", "")[:2000]})
    except (ValidationFailed, NotFound) as exc:
        result = {"data": [], "next_cursor": None}
        errors = errors_by_field(exc.errors) if exc.errors else {"customer": "is not one of your customers"}
    chosen = {"customer": customer} if customer else {}
    next_url = ("/credit-notes?" + urlencode(chosen | {"cursor": result["next_cursor"]})
                if result["next_cursor"] else None)
    first_url = "/credit-notes" + (f"?{urlencode(chosen)}" if chosen else "") if params.get("cursor") else None
    return render(visit.request, "credit_notes.html", notes=result["data"], customer=customer, errors=errors,
                  customers=customer_choices(visit, include_archived=True), next_url=next_url, first_url=first_url)


# --- one credit note -----------------------------------------------------------------------------

def credit_note_detail(visit: Visit) -> Response:
    try:
        note = load_note(visit)
    except NotFound:
        return not_found(visit, "credit note", "/credit-notes")
    return render(visit.request, "credit_note.html", note=note, totals=total_rows(note), parts=settlement_rows(note),
                  customer_address=address_lines(note["customer_details"].get("address")),
                  reason_labels=REASON_LABELS, notice=notice_of(visit, NOTICES))


def credit_note_pdf(visit: Visit) -> Response:
    try:
        view = load_note(visit)
    except NotFound:
        return not_found(visit, "credit note", "/credit-notes")
    return framed_pdf(visit.request, documents.credit_note_pdf(view), view)


# --- void and send, confirmed first --------------------------------------------------------------

ACTIONS: dict[str, dict] = {
    "void": {"operation": credit_note_operations.void_credit_note, "title": "Void", "fields": (),
             "notice": "voided", "button": "Void credit note"},
    "send": {"operation": credit_note_operations.send_credit_note, "title": "Send", "fields": ("to", "cc", "message"),
             "notice": "sent", "button": "Send e-mail"},
}


def _action_consequence(action: str, note: dict) -> str:
    label = f"Credit note {note['number']} ({format_money(note['total'], note['currency'])})"
    if action == "send":
        return (f"{label} will be e-mailed with its PDF and its public link to the address below (the customer's, "
                "unless you change it).")
    undone = []
    if note["credit_amount"]:
        undone.append(f"the {format_money(note['credit_amount'], note['currency'])} it took off invoice "
                      f"{note['invoice_number']} will be due again (a paid invoice reopens)")
    if note["balance_amount"]:
        undone.append(f"the {format_money(note['balance_amount'], note['currency'])} it put on the customer's "
                      "balance will be taken back")
    refund = (f" A refund made outside this service ({format_money(note['refund_amount'], note['currency'])}) is "
              "not undone: only its record is." if note["refund_amount"] else "")
    return (f"{label} will be void: it keeps its number in your records, and "
            + ("; ".join(undone) if undone else "nothing else changes") + f". This cannot be undone.{refund}")


def _action_values(visit: Visit, action: str, note: dict, *, submitted: bool) -> dict[str, str]:
    if submitted:
        return {name: visit.text(name, 5001, strip=name != "message") for name in ACTIONS[action]["fields"]}
    defaults = {"to": note["customer_details"].get("email") or "", "cc": "", "message": ""}
    return {name: defaults[name] for name in ACTIONS[action]["fields"]}


def _action_body(action: str, values: dict[str, str]) -> dict | None:
    if action == "send":
        cc = [address.strip() for address in values["cc"].replace(";", ",").split(",") if address.strip()]
        return {"to": values["to"] or None, "cc": cc, "message": values["message"] or None}
    return None


def _action_page(visit: Visit, action: str, note: dict, *, values: dict, errors: dict,
                 status_code: int = 200) -> Response:
    return render(visit.request, "credit_note_action.html", status_code=status_code, action=action,
                  spec=ACTIONS[action], note=note, consequence=_action_consequence(action, note), values=values,
                  errors=errors, form_key=new_form_key())


def confirm_action(visit: Visit, action: str) -> Response:
    try:
        note = load_note(visit)
    except NotFound:
        return not_found(visit, "credit note", "/credit-notes")
    if note["status"] != "issued":
        return redirect(note_url(note["id"]))
    return _action_page(visit, action, note, values=_action_values(visit, action, note, submitted=False), errors={})


def run_action(visit: Visit, action: str) -> Response:
    try:
        note = load_note(visit)
    except NotFound:
        return not_found(visit, "credit note", "/credit-notes")
    values = _action_values(visit, action, note, submitted=True)
    spec = ACTIONS[action]
    try:
        act(visit, spec["operation"], params={"id": note["id"]}, body=_action_body(action, values), keyed=True)
    except DomainError as exc:
        errors = {"cc" if path.startswith("cc") else path: message for path, message in errors_of(exc).items()}
        return _action_page(visit, action, note, values=values, errors=errors, status_code=exc.status)
    return redirect(note_url(note["id"], spec["notice"]))


def routes() -> list[Route]:
    return [
        page("/invoices/{invoice_id}/credit-note", get=credit_note_form, post=credit_note_submit),
        page("/credit-notes", get=credit_note_list),
        page("/credit-notes/{credit_note_id}", get=credit_note_detail),
        page("/credit-notes/{credit_note_id}/pdf", get=credit_note_pdf),
        *(page(f"/credit-notes/{{credit_note_id}}/{action}",
               get=lambda visit, action=action: confirm_action(visit, action),
               post=lambda visit, action=action: run_action(visit, action))
          for action in ACTIONS),
    ]
