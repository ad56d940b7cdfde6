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

from config.settings import get_settings
from core.base.addresses import client_network
from core.base.db import transaction
from core.base.errors import NotFound
from core.base.money import format_money
from core.billing import documents, public
from core.billing.pdf import filename_for
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
from core.mechanisms import ratelimit
from pages.render import SECURITY_HEADERS
from web.documents import pdf_response
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


def visits_per_network() -> ratelimit.Limit:
    """Public pages and PDFs served to one client network (an IPv4 address, an IPv6 /64)."""
    return ratelimit.Limit("public_link", get_settings().rate_limit_public_link, 60)


def _count_visit(client_ip: str) -> ratelimit.Usage:
    with transaction() as session:
        return ratelimit.hit(session, visits_per_network(), client_network(client_ip))


def _too_many(usage: ratelimit.Usage) -> Response:
    usage.refused()
    html = templates.environment.get_template("error.html").render(
        title="Too many requests", message="This network has opened invoice links very often in the last minute.",
        retry_after=usage.retry_after, back_url=None, user=None, csrf_token=lambda: "")
    return HTMLResponse(html, status_code=429, headers={**PUBLIC_HEADERS, "Retry-After": str(usage.retry_after)})


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


def _show(method: str, token: str, client_ip: str) -> Response:
    if (usage := _count_visit(client_ip)).exceeded:
        return _too_many(usage)
    view = _open(method, token, public.record_view)
    if view is None:
        return _not_found()
    html = templates.environment.get_template("public_invoice.html").render(
        missing=False, user=None, csrf_token=lambda: "", **page_context(view, token))
    return HTMLResponse(html, headers=PUBLIC_HEADERS)


def _client_ip(request: Request) -> str:
    return request.client.host if request.client else ""


async def invoice_page(request: Request) -> Response:
    return await run_in_threadpool(_show, request.method, request.path_params["token"], _client_ip(request))


async def invoice_pdf(request: Request) -> Response:
    """The kept PDF (rendered once, on the render pool: this request holds no thread meanwhile)."""
    if (usage := await run_in_threadpool(_count_visit, _client_ip(request))).exceeded:
        return _too_many(usage)
    view = await run_in_threadpool(_open, request.method, request.path_params["token"], public.record_download)
    if view is None:
        return _not_found()
    document = await documents.invoice_pdf_async(view, read=run_in_threadpool)
    headers = {key: value for key, value in PUBLIC_HEADERS.items() if key != "Cache-Control"}
    return pdf_response(request, document, f'attachment; filename="{filename_for(view)}"', headers)


async def no_such_link(_: Request) -> Response:
    return _not_found()


def routes() -> list[BaseRoute]:
    return [
        Route("/i/{token}", invoice_page, methods=["GET", "HEAD"]),
        Route("/i/{token}/pdf", invoice_pdf, methods=["GET", "HEAD"]),
        # Anything else under /i/ (a mangled link) gets the same page as an unknown token.
        Route("/i/{rest:path}", no_such_link, methods=["GET", "HEAD"]),
    ]
