"""Resources: an invoice's PDF (`invoice://{invoice_id}/pdf`), a credit note's
(`credit-note://{credit_note_id}/pdf`) and the invoice view for MCP Apps hosts.

Reading a PDF takes the scope `invoices:read` (the gate refuses without it, as for tools) and is the
kept document the API serves (`core.billing.documents`). An unknown id, a malformed one and another
account's all answer "resource not found" alike.
"""

from __future__ import annotations

import base64
import re
from functools import cache
from importlib import resources as package_files

import mcp.types as types
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError
from starlette.concurrency import run_in_threadpool

from core.access.principal import Principal
from core.base import executor
from core.base.db import new_session
from core.base.errors import DomainError
from core.billing import credit_notes, documents, invoices
from mcp_server.clients import APP_MIME_TYPE
from mcp_server.confirmations import principal_of

PDF_TEMPLATE = "invoice://{invoice_id}/pdf"
PDF_URI = re.compile(r"invoice://([^/?#]{1,200})/pdf")
CREDIT_NOTE_PDF_TEMPLATE = "credit-note://{credit_note_id}/pdf"
CREDIT_NOTE_PDF_URI = re.compile(r"credit-note://([^/?#]{1,200})/pdf")
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


async def list_resources(_ctx: ServerRequestContext, _params) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[view_resource()])


def credit_note_pdf_template() -> types.ResourceTemplate:
    return types.ResourceTemplate(
        name="credit-note-pdf", title="Credit note PDF", uri_template=CREDIT_NOTE_PDF_TEMPLATE,
        mime_type="application/pdf", description="A credit note as an A4 PDF, as the customer receives it (base64). "
                                                 "Needs the scope invoices:read.")


def credit_note_pdf_link(view: dict) -> types.ResourceLink:
    return types.ResourceLink(type="resource_link", uri=f"credit-note://{view['id']}/pdf", name=f"{view['number']}.pdf",
                              title=f"Credit note {view['number']} as PDF", mime_type="application/pdf")


async def list_resource_templates(_ctx: ServerRequestContext, _params) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(resource_templates=[pdf_template(), credit_note_pdf_template()])


async def read_resource(ctx: ServerRequestContext, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    uri = str(params.uri)
    if uri == VIEW_URI:
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=VIEW_URI, mime_type=APP_MIME_TYPE, text=view_html(),
            # Self-contained: no script, style, font or connection from anywhere.
            meta={"ui": {"csp": {"connectDomains": [], "resourceDomains": []}, "prefersBorder": True}})])
    match, of_credit_note = PDF_URI.fullmatch(uri), False
    if match is None:
        match, of_credit_note = CREDIT_NOTE_PDF_URI.fullmatch(uri), True
    principal = principal_of(ctx)
    if match is None or principal is None:
        raise _not_found(uri)
    pdf = await run_in_threadpool(_credit_note_pdf if of_credit_note else _pdf, principal, match.group(1))
    if pdf is None:
        raise _not_found(uri)
    return types.ReadResourceResult(contents=[types.BlobResourceContents(
        uri=uri, mime_type="application/pdf", blob=base64.b64encode(pdf).decode("ascii"))])


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


def _not_found(uri: str) -> MCPError:
    return MCPError(RESOURCE_NOT_FOUND, "Resource not found", data={"uri": uri[:500]})
