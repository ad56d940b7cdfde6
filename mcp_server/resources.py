"""Resources: an invoice (`invoice://{invoice_id}`, as `get_invoice` shows it, live: `mcp_server.live`
announces its changes), its PDF (`invoice://{invoice_id}/pdf`), a credit note's
(`credit-note://{credit_note_id}/pdf`) and the invoice view for MCP Apps hosts.

Reading an invoice or a PDF takes the scope `invoices:read` (the gate refuses without it, as for
tools); a PDF is the kept document the API serves (`core.billing.documents`). An unknown id, a
malformed one and another account's all answer "resource not found" alike. `resources/list` lists
the view and, with `invoices:read`, the account's invoices (newest first, a page at a time). Each
result says how long a client may keep it (`mcp_server.caching`).
"""

from __future__ import annotations

import base64
import json
import re
from functools import cache
from importlib import resources as package_files

import mcp.types as types
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS
from starlette.concurrency import run_in_threadpool

from core.access.principal import Principal
from core.base import executor
from core.base.db import new_session
from core.base.errors import DomainError
from core.billing import credit_notes, documents, invoices
from core.documents import e_invoice_exports
from mcp_server import caching
from mcp_server.calls import run_tool
from mcp_server.clients import APP_MIME_TYPE
from mcp_server.confirmations import caller_as_authenticated, is_modern, principal_of
from mcp_server.tools import BY_NAME
from operations.pipeline import Outcome

INVOICE_TEMPLATE = "invoice://{invoice_id}"
INVOICE_URI = re.compile(r"invoice://([^/?#]{1,200})")
JSON_MIME_TYPE = "application/json"
LIST_PAGE = 50  # invoices per page of resources/list
PDF_TEMPLATE = "invoice://{invoice_id}/pdf"
PDF_URI = re.compile(r"invoice://([^/?#]{1,200})/pdf")
CREDIT_NOTE_PDF_TEMPLATE = "credit-note://{credit_note_id}/pdf"
CREDIT_NOTE_PDF_URI = re.compile(r"credit-note://([^/?#]{1,200})/pdf")
EXPORT_TEMPLATE = f"{e_invoice_exports.URI_SCHEME}://{{export_id}}"
EXPORT_URI = re.compile(rf"{e_invoice_exports.URI_SCHEME}://([^/?#]{{1,200}})")
VIEW_URI = "ui://invoicing/invoice-view.html"
RESOURCE_NOT_FOUND = -32002
READ_SCOPE = "invoices:read"


@cache
def view_html() -> str:
    return package_files.files("mcp_server").joinpath("views/invoice.html").read_text(encoding="utf-8")


def view_resource() -> types.Resource:
    return types.Resource(uri=VIEW_URI, name="invoice-view", title="Invoice view", mime_type=APP_MIME_TYPE,
                          description="An invoice as the dashboard shows it, with Finalize, Send and Open PDF.")


def pdf_template() -> types.ResourceTemplate:
    return types.ResourceTemplate(
        name="invoice-pdf", title="Invoice PDF", uri_template=PDF_TEMPLATE, mime_type="application/pdf",
        description="The invoice as an A4 PDF, as the customer receives it (base64). Drafts carry a DRAFT mark. "
                    "Needs the scope invoices:read.")


def pdf_link(view: dict) -> types.ResourceLink:
    return types.ResourceLink(type="resource_link", uri=f"invoice://{view['id']}/pdf",
                              name=f"{view.get('number') or 'draft'}.pdf",
                              title=f"Invoice {view.get('number') or '(draft)'} as PDF", mime_type="application/pdf")


def public_link(view: dict) -> types.ResourceLink | None:
    if not view.get("public_url"):
        return None
    return types.ResourceLink(type="resource_link", uri=view["public_url"], name="public-invoice-page",
                              title=f"Invoice {view['number']}: the customer's page", mime_type="text/html")


def invoice_template() -> types.ResourceTemplate:
    return types.ResourceTemplate(
        name="invoice", title="Invoice", uri_template=INVOICE_TEMPLATE, mime_type=JSON_MIME_TYPE,
        description="An invoice with its lines, totals and status, as get_invoice shows it (JSON, with formatted "
                    "amounts). Live: subscribe to it on a subscriptions/listen stream to hear when it changes "
                    "(status, amount due, viewed, paid, payments, credit notes). Needs the scope invoices:read.")


def invoice_resource(invoice: dict) -> types.Resource:
    """An invoice of the account as `resources/list` names it (`invoice`: as `list_invoices` shows it)."""
    number = invoice.get("number")
    customer = (invoice.get("customer_details") or {}).get("name")
    total = (invoice.get("formatted") or {}).get("total")
    described = ", ".join(str(part) for part in (customer, invoice.get("status"), total) if part)
    return types.Resource(uri=f"invoice://{invoice['id']}", name=number or invoice["id"],
                          title=f"Invoice {number}" if number else "Draft invoice", mime_type=JSON_MIME_TYPE,
                          description=described or None)


async def list_resources(ctx: ServerRequestContext,
                         params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
    """The invoice view, then (with `invoices:read`) the account's invoices, newest first, a page at a
    time: `nextCursor` names the next page."""
    cursor = params.cursor if params is not None else None
    listed = [view_resource()] if cursor is None else []
    principal = principal_of(ctx)
    if principal is None or READ_SCOPE not in principal.scopes:
        if cursor is not None:
            raise MCPError(INVALID_PARAMS, "Invalid cursor")
        return types.ListResourcesResult(resources=listed, **caching.fields(caching.RESOURCE_LIST))
    outcome = await _run_tool(ctx, "list_invoices", {"limit": LIST_PAGE, **({"cursor": cursor} if cursor else {})})
    if outcome.error is not None and outcome.error.code == "validation":
        raise MCPError(INVALID_PARAMS, "Invalid cursor", data={"code": "validation"})
    page = _body(outcome)
    listed += [invoice_resource(invoice) for invoice in page["data"]]
    return types.ListResourcesResult(resources=listed, next_cursor=page.get("next_cursor"),
                                     **caching.fields(caching.RESOURCE_LIST))


async def _run_tool(ctx: ServerRequestContext, name: str, arguments: dict) -> Outcome:
    """A read-only tool run as the caller: the same pipeline, scope and answer as `tools/call`."""
    authorization = ctx.request.headers.get("authorization") if ctx.request is not None else None
    return await run_tool(BY_NAME[name], arguments, authorization, None, caller_as_authenticated(ctx))


def _body(outcome: Outcome) -> dict:
    """A successful outcome's structured result; any other an internal error with the REST code."""
    if outcome.error is not None:
        raise MCPError(INTERNAL_ERROR, outcome.error.detail, data={"code": outcome.error.code})
    if outcome.reply.status >= 400:
        raise MCPError(INTERNAL_ERROR, "Internal error")
    return json.loads(outcome.reply.body)


def credit_note_pdf_template() -> types.ResourceTemplate:
    return types.ResourceTemplate(
        name="credit-note-pdf", title="Credit note PDF", uri_template=CREDIT_NOTE_PDF_TEMPLATE,
        mime_type="application/pdf", description="A credit note as an A4 PDF, as the customer receives it (base64). "
                                                 "Needs the scope invoices:read.")


def credit_note_pdf_link(view: dict) -> types.ResourceLink:
    return types.ResourceLink(type="resource_link", uri=f"credit-note://{view['id']}/pdf", name=f"{view['number']}.pdf",
                              title=f"Credit note {view['number']} as PDF", mime_type="application/pdf")


async def list_resource_templates(_ctx: ServerRequestContext, _params) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(
        resource_templates=[invoice_template(), pdf_template(), credit_note_pdf_template(), export_template()],
        **caching.fields(caching.SAME_FOR_EVERYONE))


async def read_resource(ctx: ServerRequestContext, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    uri = str(params.uri)
    if uri == VIEW_URI:
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=VIEW_URI, mime_type=APP_MIME_TYPE, text=view_html(),
            # Self-contained: no script, style, font or connection from anywhere.
            meta={"ui": {"csp": {"connectDomains": [], "resourceDomains": []}, "prefersBorder": True}})],
            **caching.fields(caching.VIEW_HTML))
    if (invoice := INVOICE_URI.fullmatch(uri)) is not None:
        return await _read_invoice(ctx, uri, invoice.group(1))
    if (export := EXPORT_URI.fullmatch(uri)) is not None:
        return await _read_export(ctx, uri, export.group(1))
    match, of_credit_note = PDF_URI.fullmatch(uri), False
    if match is None:
        match, of_credit_note = CREDIT_NOTE_PDF_URI.fullmatch(uri), True
    principal = principal_of(ctx)
    if match is None or principal is None:
        raise _not_found(ctx, uri)
    pdf = await run_in_threadpool(_credit_note_pdf if of_credit_note else _pdf, principal, match.group(1))
    if pdf is None:
        raise _not_found(ctx, uri)
    return types.ReadResourceResult(contents=[types.BlobResourceContents(
        uri=uri, mime_type="application/pdf", blob=base64.b64encode(pdf).decode("ascii"))],
        **caching.fields(caching.PDF))


async def _read_invoice(ctx: ServerRequestContext, uri: str, invoice_ref: str) -> types.ReadResourceResult:
    """The invoice as the `get_invoice` tool shows it (the same operation, as the caller), never kept."""
    principal = principal_of(ctx)
    if principal is None or READ_SCOPE not in principal.scopes:  # the gate refused already: a second lock
        raise _not_found(ctx, uri)
    outcome = await _run_tool(ctx, "get_invoice", {"invoice": invoice_ref})
    if outcome.error is not None and outcome.error.code == "not_found":
        raise _not_found(ctx, uri)
    _body(outcome)
    return types.ReadResourceResult(contents=[types.TextResourceContents(
        uri=uri, mime_type=JSON_MIME_TYPE, text=outcome.reply.body)], **caching.fields(caching.LIVE))


def export_template() -> types.ResourceTemplate:
    return types.ResourceTemplate(
        name="e-invoice-export", title="E-invoice export (ZIP)", uri_template=EXPORT_TEMPLATE,
        mime_type=e_invoice_exports.MEDIA_TYPE,
        description="A period's e-invoices made by export_e_invoices, as a ZIP (base64), kept 24 hours. Needs the "
                    "scope invoices:read.")


async def _read_export(ctx: ServerRequestContext, uri: str, export_ref: str) -> types.ReadResourceResult:
    """An export's ZIP, while it is kept (`export_e_invoices` links it)."""
    principal = principal_of(ctx)
    if principal is None or READ_SCOPE not in principal.scopes:
        raise _not_found(ctx, uri)

    def zipped() -> bytes | None:
        session = new_session(read_only=True)
        try:
            return e_invoice_exports.read_export(session, principal.account_id, export_ref).content
        except DomainError:
            return None
        finally:
            session.close()

    content = await run_in_threadpool(zipped)
    if content is None:
        raise _not_found(ctx, uri)
    return types.ReadResourceResult(contents=[types.BlobResourceContents(
        uri=uri, mime_type=e_invoice_exports.MEDIA_TYPE, blob=base64.b64encode(content).decode("ascii"))],
        **caching.fields(caching.EXPORT))


def _pdf(principal: Principal, invoice_ref: str) -> bytes | None:
    session = new_session(read_only=True)
    try:
        principal.require(READ_SCOPE)  # the gate refused the request already: this is a second lock
        view = executor.within(session, invoices.view_invoice, principal.account_id, invoice_ref)
    except DomainError:
        return None
    finally:
        session.close()
    return documents.invoice_pdf(view).content


def _credit_note_pdf(principal: Principal, credit_note_ref: str) -> bytes | None:
    session = new_session(read_only=True)
    try:
        principal.require(READ_SCOPE)
        view = credit_notes.view_credit_note(session, credit_notes.get_credit_note(
            session, principal.account_id, credit_note_ref))
    except DomainError:
        return None
    finally:
        session.close()
    return documents.credit_note_pdf(view).content


def _not_found(ctx: ServerRequestContext, uri: str) -> MCPError:
    """"Resource not found": `-32602` since 2026-07-28 (SEP-2164), `-32002` before."""
    code = INVALID_PARAMS if is_modern(ctx) else RESOURCE_NOT_FOUND
    return MCPError(code, "Resource not found", data={"uri": uri[:500]})
