"""The customer's public pages: an invoice `/i/{token}` and its PDF `/i/{token}/pdf`, a credit note
`/c/{token}` and its PDF `/c/{token}/pdf`.

No sign-in: the token is the secret, so these responses are kept out of search engines
(`X-Robots-Tag`) and never leak their address to other sites (`Referrer-Policy: no-referrer`).
Both kinds count against the same limit per client network. An invoice's GET records
`invoice.viewed` / `invoice.downloaded` (throttled in core.public); HEAD does not. A credit note's
visits record nothing: the invoice history has no event for them.
"""

from __future__ import annotations

from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

from config.settings import get_settings
from core.base.addresses import client_network
from core.base.db import transaction
from core.base.errors import NotFound
from core.base.money import format_money
from core.billing import credit_notes, documents, payment_qr, public
from core.billing.pdf import NOT_APPLICABLE, filename_for
from core.billing.presentation import (
    CREDIT_NOTE_STATUS_LABELS,
    UNIT_NAMES,
    address_lines,
    bank_rows,
    corrects_text,
    discount_note,
    document_locale,
    exact_number,
    issuer_name,
    period_text,
    readable_date,
    reason_text,
    settlement_rows,
    status_label,
    total_rows,
    void_text,
)
from core.mechanisms import ratelimit
from core.models import Invoice
from pages.render import SECURITY_HEADERS
from web.documents import pdf_response
from web.rendering import templates

PUBLIC_HEADERS = {**SECURITY_HEADERS, "Referrer-Policy": "no-referrer", "X-Robots-Tag": "noindex, nofollow"}
INVOICE_PAGE = "public_invoice.html"
CREDIT_NOTE_PAGE = "public_credit_note.html"


def _parties_and_totals(view: dict) -> dict:
    """What both documents show alike: the issuer, the customer and the totals, formatted."""
    issuer = view.get("issuer") or {}
    customer = view.get("customer_details") or {}
    return {
        "issuer_name": issuer_name(view),
        "issuer": issuer, "issuer_address": address_lines(issuer.get("address")),
        "customer": customer, "customer_address": address_lines(customer.get("address")),
        "totals": [(row.label, format_money(row.amount, view["currency"]), row.strong) for row in total_rows(view)],
    }


def page_context(view: dict, token: str, notes: list[dict] | None = None) -> dict:
    """What the invoice's template shows, formatted (money with its currency, quantities exact);
    `notes`: its issued credit notes (`_credit_notes_of`)."""
    currency = view["currency"]

    def money(amount: int) -> str:
        return format_money(amount, currency)

    locale = document_locale(view)
    return {
        **_parties_and_totals(view),
        "invoice": view,
        "status_label": status_label(view),
        "bank": bank_rows((view.get("issuer") or {}).get("bank")),
        "payment_qr": _payment_qr(view), "payment_qr_caption": payment_qr.CAPTION,
        "lines": [{
            "description": line["description"], "quantity": exact_number(line["quantity"]),
            "unit": UNIT_NAMES.get(line["unit"], line["unit"]), "unit_amount": money(line["unit_amount"]),
            "discount": f"{exact_number(line['discount_percent'])}%", "tax_rate": exact_number(line["tax_rate"]),
            "amount": money(line["amount"]),
        } for line in view["lines"]["data"]],
        "issue_date": readable_date(view["issue_date"], locale, with_iso=True),
        "due_date": readable_date(view["due_date"], locale, with_iso=True) if view.get("due_date") else "—",
        "period": period_text(view, locale),
        "discount_note": discount_note(view, money), "amount_due": money(view["amount_due"]),
        "pdf_url": f"/i/{token}/pdf",
        "credit_notes": notes or [],
    }


def _payment_qr(view: dict) -> Markup | None:
    """The invoice's payment QR code as inline SVG (the pages' Content-Security-Policy loads no image
    from elsewhere, not even a data: URI), or None."""
    code = payment_qr.epc_qr(view)
    return Markup(payment_qr.svg(code)) if code is not None else None  # segno writes it; its title is escaped


def credit_note_context(view: dict, token: str, invoice_token: str | None) -> dict:
    """What the credit note's template shows, formatted as on its PDF."""
    currency = view["currency"]

    def money(amount: int) -> str:
        return format_money(amount, currency)

    def line_shown(line: dict) -> dict:
        by_quantity = line.get("quantity") is not None
        return {
            "description": line["description"],
            "quantity": exact_number(line["quantity"]) if by_quantity else NOT_APPLICABLE,
            "unit": UNIT_NAMES.get(line["unit"], line["unit"]) if by_quantity else "",
            "unit_amount": money(line["unit_amount"]) if line.get("unit_amount") is not None else "",
            "discount": f"{exact_number(line['discount_percent'])}%" if line.get("type") != "custom" else "",
            "tax_rate": exact_number(line["tax_rate"]), "amount": money(line["amount"]),
        }

    return {
        **_parties_and_totals(view),
        "note": view,
        "status_label": CREDIT_NOTE_STATUS_LABELS.get(view["status"], view["status"]),
        "corrects": corrects_text(view), "reason": reason_text(view), "void_notice": void_text(view),
        "invoice_url": f"/i/{invoice_token}" if invoice_token else None,
        "lines": [line_shown(line) for line in view["lines"]["data"]],
        "issue_date": readable_date(view["issue_date"], document_locale(view), with_iso=True),
        "total": money(view["total"]),
        "settlement": [(label, money(amount)) for label, amount in settlement_rows(view)],
        "pdf_url": f"/c/{token}/pdf",
    }


def _render(page: str, **context) -> str:
    return templates.environment.get_template(page).render(user=None, csrf_token=lambda: "", **context)


def _not_found(page: str = INVOICE_PAGE) -> HTMLResponse:
    return HTMLResponse(_render(page, missing=True), status_code=404, headers=PUBLIC_HEADERS)


def visits_per_network() -> ratelimit.Limit:
    """Public pages and PDFs served to one client network (an IPv4 address, an IPv6 /64)."""
    return ratelimit.Limit("public_link", get_settings().rate_limit_public_link, 60)


def _count_visit(client_ip: str) -> ratelimit.Usage:
    with transaction() as session:
        return ratelimit.hit(session, visits_per_network(), client_network(client_ip))


def _too_many(usage: ratelimit.Usage, noun: str = "invoice") -> Response:
    usage.refused()
    html = templates.environment.get_template("error.html").render(
        title="Too many requests", message=f"This network has opened {noun} links very often in the last minute.",
        retry_after=usage.retry_after, back_url=None, user=None, csrf_token=lambda: "")
    return HTMLResponse(html, status_code=429, headers={**PUBLIC_HEADERS, "Retry-After": str(usage.retry_after)})


def _credit_notes_of(session, invoice: Invoice) -> list[dict]:
    """The invoice's issued credit notes as its page lists them, oldest first."""
    locale = document_locale({"issuer": invoice.issuer_snapshot})
    return [{"number": note.number, "issue_date": readable_date(note.issue_date, locale),
             "total": format_money(note.total, note.currency), "url": f"/c/{note.public_url_token}"}
            for note in credit_notes.notes_of_invoice(session, invoice.id) if note.status == "issued"]


def _open(method: str, token: str, record, *, with_notes: bool = False) -> tuple[dict, list[dict]] | None:
    """The invoice view behind a token (None if unknown) and, on request, its issued credit notes;
    a GET records the visit (HEAD does not)."""
    with transaction() as session:
        try:
            invoice, view = public.open_invoice(session, token)
        except NotFound:
            return None
        notes = _credit_notes_of(session, invoice) if with_notes else []
        if method == "GET":
            record(session, invoice)
    return view, notes


def _show(method: str, token: str, client_ip: str) -> Response:
    if (usage := _count_visit(client_ip)).exceeded:
        return _too_many(usage)
    opened = _open(method, token, public.record_view, with_notes=True)
    if opened is None:
        return _not_found()
    view, notes = opened
    return HTMLResponse(_render(INVOICE_PAGE, missing=False, **page_context(view, token, notes)),
                        headers=PUBLIC_HEADERS)


def _client_ip(request: Request) -> str:
    return request.client.host if request.client else ""


async def invoice_page(request: Request) -> Response:
    return await run_in_threadpool(_show, request.method, request.path_params["token"], _client_ip(request))


async def invoice_pdf(request: Request) -> Response:
    """The kept PDF (rendered once, on the render pool: this request holds no thread meanwhile)."""
    if (usage := await run_in_threadpool(_count_visit, _client_ip(request))).exceeded:
        return _too_many(usage)
    opened = await run_in_threadpool(_open, request.method, request.path_params["token"], public.record_download)
    if opened is None:
        return _not_found()
    view, _ = opened
    document = await documents.invoice_pdf_async(view, read=run_in_threadpool)
    headers = {key: value for key, value in PUBLIC_HEADERS.items() if key != "Cache-Control"}
    return pdf_response(request, document, f'attachment; filename="{filename_for(view)}"', headers)


# --- credit notes ------------------------------------------------------------------------------


def _open_credit_note(token: str) -> tuple[dict, str | None] | None:
    """The credit note view behind a token (None if unknown) and its invoice's public token."""
    with transaction() as session:
        try:
            return public.open_credit_note(session, token)
        except NotFound:
            return None


def _show_credit_note(token: str, client_ip: str) -> Response:
    if (usage := _count_visit(client_ip)).exceeded:
        return _too_many(usage, "credit note")
    opened = _open_credit_note(token)
    if opened is None:
        return _not_found(CREDIT_NOTE_PAGE)
    view, invoice_token = opened
    return HTMLResponse(_render(CREDIT_NOTE_PAGE, missing=False, **credit_note_context(view, token, invoice_token)),
                        headers=PUBLIC_HEADERS)


async def credit_note_page(request: Request) -> Response:
    return await run_in_threadpool(_show_credit_note, request.path_params["token"], _client_ip(request))


async def credit_note_pdf(request: Request) -> Response:
    """The kept PDF of a credit note, as `invoice_pdf`."""
    if (usage := await run_in_threadpool(_count_visit, _client_ip(request))).exceeded:
        return _too_many(usage, "credit note")
    opened = await run_in_threadpool(_open_credit_note, request.path_params["token"])
    if opened is None:
        return _not_found(CREDIT_NOTE_PAGE)
    view, _ = opened
    document = await documents.credit_note_pdf_async(view, read=run_in_threadpool)
    headers = {key: value for key, value in PUBLIC_HEADERS.items() if key != "Cache-Control"}
    return pdf_response(request, document, f'attachment; filename="{filename_for(view)}"', headers)


async def no_such_link(_: Request) -> Response:
    return _not_found()


async def no_such_credit_note_link(_: Request) -> Response:
    return _not_found(CREDIT_NOTE_PAGE)


def routes() -> list[BaseRoute]:
    return [
        Route("/i/{token}", invoice_page, methods=["GET", "HEAD"]),
        Route("/i/{token}/pdf", invoice_pdf, methods=["GET", "HEAD"]),
        # Anything else under /i/ (a mangled link) gets the same page as an unknown token.
        Route("/i/{rest:path}", no_such_link, methods=["GET", "HEAD"]),
        Route("/c/{token}", credit_note_page, methods=["GET", "HEAD"]),
        Route("/c/{token}/pdf", credit_note_pdf, methods=["GET", "HEAD"]),
        Route("/c/{rest:path}", no_such_credit_note_link, methods=["GET", "HEAD"]),
    ]
