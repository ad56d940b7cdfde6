"""Invoices: list, create, retrieve, edit and delete drafts, their lines, finalize, send, pay, void
and the history."""

from core.base import executor
from core.base.ids import public_id
from core.base.jsonout import Encoded
from core.base.validation import PageQuery
from core.billing import events, finalization, invoice_reads, invoices, payments, sending
from core.billing.events import EventOut
from core.billing.invoice_inputs import (
    InvoiceCreate,
    InvoiceListQuery,
    InvoiceUpdate,
    ItemAdd,
    ItemDeleteQuery,
    ItemListQuery,
    PayInput,
    VoidInput,
)
from core.billing.invoice_render import (
    DeletedInvoiceOut,
    InvoiceItemOut,
    InvoiceOut,
    InvoicePreviewOut,
    InvoiceWithLinesOut,
    line_to_api,
)
from core.billing.sending import SendInput, SendOut
from core.documents.export import EDocument, EInvoiceOut, EInvoiceQuery, e_invoice
from operations.pipeline import Call, Operation
from operations.rendering import page

READ, WRITE = "invoices:read", "invoices:write"


def _invoice(call: Call, *, lock: bool = False):
    return invoices.get_invoice(call.session, call.principal.account_id, call.params["id"], lock=lock)


def _view(call: Call, invoice, *, with_lines: bool) -> dict:
    return invoices.invoice_to_api(call.session, invoice, with_lines=with_lines)


async def _list_invoices(call: Call) -> dict:
    return await invoices.list_invoices(call.db, call.principal.account_id, call.query)


def _delete_draft(call: Call) -> dict:
    deleted = invoices.delete_draft(call.session, call.principal, call.params["id"])
    return {"id": public_id("invoice", deleted), "object": "invoice", "deleted": True}


def _list_events(call: Call) -> dict:
    result = events.list_events(call.session, call.principal.account_id, call.params["id"],
                                call.query.cursor, call.query.limit)
    return page(result, events.event_to_api)


def e_invoice_document(call: Call) -> EDocument:
    """The invoice as an e-invoice in the format the caller asked for (REST serves the bytes, MCP the
    document as text or base64)."""
    view = executor.within(call.session, invoices.view_invoice, call.principal.account_id, call.params["id"])
    call.session.commit()  # no transaction stays open while the document is made
    return e_invoice(view, call.query.format)


def _send(call: Call) -> dict:
    data, emailed_to = sending.send_invoice(call.session, call.principal, call.params["id"], call.body,
                                            confirmed=call.confirmed)
    return {"data": data, "emailed_to": emailed_to}


list_invoices = Operation("list_invoices", _list_invoices, scope=READ, query=InvoiceListQuery, response=InvoiceOut,
                          shape="list")
async def _create_invoice(call: Call) -> dict:
    return (await invoices.create_invoice(call.db, call.principal, call.body)).shown


create_invoice = Operation("create_invoice", _create_invoice, scope=WRITE, body=InvoiceCreate, body_required=True,
                           idempotency="required", response=InvoiceWithLinesOut)
preview_invoice = Operation(
    "preview_invoice", lambda call: invoices.preview_invoice(call.session, call.principal, call.body),
    scope=READ, body=InvoiceCreate, body_required=True, response=InvoicePreviewOut)
async def _get_invoice(call: Call) -> Encoded:
    return await invoice_reads.shown_invoice(call.db, call.principal.account_id, call.params["id"])


get_invoice = Operation("get_invoice", _get_invoice, scope=READ, response=InvoiceWithLinesOut)
update_invoice = Operation(
    "update_invoice",
    lambda call: _view(call, invoices.update_invoice(call.session, call.principal, call.params["id"], call.body),
                       with_lines=True),
    scope=WRITE, body=InvoiceUpdate, response=InvoiceWithLinesOut)
delete_invoice = Operation("delete_invoice", _delete_draft, scope=WRITE, idempotency="optional",
                           response=DeletedInvoiceOut, audit="Deleted the draft")
async def _finalize_invoice(call: Call) -> dict:
    return await finalization.finalize(call.db, call.principal, call.params["id"], confirmed=call.confirmed)


finalize_invoice = Operation("finalize_invoice", _finalize_invoice, scope="invoices:finalize",
                             idempotency="required", response=InvoiceOut)
pay_invoice = Operation(
    "pay_invoice",
    lambda call: _view(call, payments.mark_paid(call.session, call.principal, _invoice(call, lock=True), call.body,
                                                confirmed=call.confirmed), with_lines=False),
    scope="payments:write", idempotency="required", body=PayInput, response=InvoiceOut)
void_invoice = Operation(
    "void_invoice",
    lambda call: _view(call, invoices.void(call.session, call.principal, _invoice(call, lock=True), call.body,
                                           confirmed=call.confirmed), with_lines=False),
    scope="invoices:finalize", idempotency="required", body=VoidInput, response=InvoiceOut)
send_invoice = Operation("send_invoice", _send, scope="invoices:send", idempotency="required", body=SendInput,
                         own_limit=sending.send_limit_usage, response=SendOut, shape="raw")
get_e_invoice = Operation(
    "get_e_invoice", lambda call: e_invoice_document(call).to_api(call.params["id"]), scope=READ, query=EInvoiceQuery,
    response=EInvoiceOut)
list_invoice_events = Operation("list_invoice_events", _list_events, scope=READ, query=PageQuery, response=EventOut,
                                shape="list")

list_invoice_items = Operation(
    "list_invoice_items",
    lambda call: {"data": [line_to_api(row) for row in invoices.list_items(call.session, call.principal.account_id,
                                                                           call.query.invoice)]},
    scope=READ, query=ItemListQuery, response=InvoiceItemOut, shape="items")
add_invoice_item = Operation(
    "add_invoice_item",
    lambda call: _view(call, invoices.add_item(call.session, call.principal, call.body), with_lines=True),
    scope=WRITE, body=ItemAdd, body_required=True, idempotency="required", response=InvoiceWithLinesOut)
get_invoice_item = Operation(
    "get_invoice_item",
    lambda call: line_to_api(invoices.get_item(call.session, call.principal.account_id, call.params["id"])),
    scope=READ, response=InvoiceItemOut)
remove_invoice_item = Operation(
    "remove_invoice_item",
    lambda call: _view(call, invoices.remove_item(call.session, call.principal, call.params["id"], call.query.invoice),
                       with_lines=True),
    scope=WRITE, query=ItemDeleteQuery, response=InvoiceWithLinesOut)
