"""The customer's public invoice page `/i/{token}` and its PDF `/i/{token}/pdf`.

No sign-in: the token is the secret, so these responses are kept out of search engines
(`X-Robots-Tag`) and never leak their address to other sites (`Referrer-Policy: no-referrer`).
A GET records `invoice.viewed` / `invoice.downloaded` (throttled in core.public); HEAD does not.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

from core.base.db import transaction
from core.base.errors import NotFound
from core.base.money import format_money
from core.billing import public
from core.billing.pdf import filename_for, render_invoice
from core.billing.presentation import (
    STATUS_LABELS,
    UNIT_NAMES,
    address_lines,
    bank_rows,
    discount_note,
    document_locale,
    exact_number,
    issuer_name,
    readable_date,
    total_rows,
)
from pages.render import SECURITY_HEADERS
from web.rendering import templates

PUBLIC_HEADERS = {**SECURITY_HEADERS, "Referrer-Policy": "no-referrer", "X-Robots-Tag": "noindex, nofollow"}


def page_context(view: dict, token: str) -> dict:
    """What the template shows, formatted (money with its currency, quantities exact)."""
    currency = view["currency"]
    issuer = view.get("issuer") or {}
    customer = view.get("customer_details") or {}

    def money(amount: int) -> str:
        return format_money(amount, currency)

    locale = document_locale(view)
    return {
        "invoice": view,
        "status_label": STATUS_LABELS.get(view["status"], view["status"]),
        "issuer_name": issuer_name(view),
        "issuer": issuer, "issuer_address": address_lines(issuer.get("address")),
        "customer": customer, "customer_address": address_lines(customer.get("address")),
        "bank": bank_rows(issuer.get("bank")),
        "lines": [{
            "description": line["description"], "quantity": exact_number(line["quantity"]),
            "unit": UNIT_NAMES.get(line["unit"], line["unit"]), "unit_amount": money(line["unit_amount"]),
            "discount": exact_number(line["discount_percent"]), "tax_rate": exact_number(line["tax_rate"]),
            "amount": money(line["amount"]),
        } for line in view["lines"]["data"]],
        "issue_date": readable_date(view["issue_date"], locale, with_iso=True),
        "due_date": readable_date(view["due_date"], locale, with_iso=True) if view.get("due_date") else "—",
        "totals": [(row.label, money(row.amount), row.strong) for row in total_rows(view)],
        "discount_note": discount_note(view, money), "amount_due": money(view["amount_due"]),
        "pdf_url": f"/i/{token}/pdf",
    }


def _not_found() -> HTMLResponse:
    html = templates.environment.get_template("public_invoice.html").render(missing=True, user=None, csrf_token=lambda: "")
    return HTMLResponse(html, status_code=404, headers=PUBLIC_HEADERS)


def _open(method: str, token: str, record) -> dict | None:
    """The invoice view behind a token (None if unknown); a GET records the visit (HEAD does not)."""
    with transaction() as session:
        try:
            invoice, view = public.open_invoice(session, token)
        except NotFound:
            return None
        if method == "GET":
            record(session, invoice)
    return view


def _show(method: str, token: str) -> Response:
    view = _open(method, token, public.record_view)
    if view is None:
        return _not_found()
    html = templates.environment.get_template("public_invoice.html").render(
        missing=False, user=None, csrf_token=lambda: "", **page_context(view, token))
    return HTMLResponse(html, headers=PUBLIC_HEADERS)


def _download(method: str, token: str) -> Response:
    view = _open(method, token, public.record_download)
    if view is None:
        return _not_found()
    headers = {**PUBLIC_HEADERS, "Content-Disposition": f'attachment; filename="{filename_for(view)}"'}
    return Response(render_invoice(view), media_type="application/pdf", headers=headers)


async def invoice_page(request: Request) -> Response:
    return await run_in_threadpool(_show, request.method, request.path_params["token"])


async def invoice_pdf(request: Request) -> Response:
    return await run_in_threadpool(_download, request.method, request.path_params["token"])


async def no_such_link(_: Request) -> Response:
    return _not_found()


def routes() -> list[BaseRoute]:
    return [
        Route("/i/{token}", invoice_page, methods=["GET", "HEAD"]),
        Route("/i/{token}/pdf", invoice_pdf, methods=["GET", "HEAD"]),
        # Anything else under /i/ (a mangled link) gets the same page as an unknown token.
        Route("/i/{rest:path}", no_such_link, methods=["GET", "HEAD"]),
    ]
