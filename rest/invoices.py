"""Invoices: list, create, retrieve, edit and delete drafts, finalize, pay, void, history."""

from core import events, invoices
from core.events import EventOut
from core.invoice_inputs import InvoiceCreate, InvoiceListQuery, InvoiceUpdate, PayInput, VoidInput
from core.invoice_render import DeletedInvoiceOut, InvoiceOut, InvoiceWithLinesOut
from core.ids import public_id
from core.validation import PageQuery
from rest.envelopes import one, page
from rest.framework import Api, Call

api = Api()
TAG = "Invoices"


def _invoice(call: Call, *, lock: bool = False):
    return invoices.get_invoice(call.session, call.principal.account_id, call.path["id"], lock=lock)


def _render(call: Call, invoice, *, with_lines: bool) -> dict:
    return one(invoices.invoice_to_api(call.session, invoice, with_lines=with_lines))


@api.operation("GET", "/invoices", scope="invoices:read", tag=TAG, query=InvoiceListQuery, response=InvoiceOut,
               envelope="list", summary="List invoices (without lines), newest first")
def list_invoices(call: Call) -> dict:
    result = invoices.list_invoices(call.session, call.principal.account_id, call.query)
    return page(result, lambda row: invoices.invoice_to_api(call.session, row, with_lines=False))


@api.operation("POST", "/invoices", scope="invoices:write", tag=TAG, body=InvoiceCreate, body_required=True,
               idempotency="required", response=InvoiceWithLinesOut, status=201, summary="Create a draft invoice")
def create_invoice(call: Call) -> dict:
    return _render(call, invoices.create_invoice(call.session, call.principal, call.body), with_lines=True)


@api.operation("GET", "/invoices/{id}", scope="invoices:read", tag=TAG, response=InvoiceWithLinesOut,
               summary="Retrieve an invoice with its lines")
def get_invoice(call: Call) -> dict:
    return _render(call, _invoice(call), with_lines=True)


@api.operation("PATCH", "/invoices/{id}", scope="invoices:write", tag=TAG, body=InvoiceUpdate,
               response=InvoiceWithLinesOut, extra_responses=(409,),
               summary="Edit a draft (only the fields sent change; `items` replaces every line)")
def update_invoice(call: Call) -> dict:
    invoice = invoices.update_invoice(call.session, call.principal, call.path["id"], call.body)
    return _render(call, invoice, with_lines=True)


@api.operation("DELETE", "/invoices/{id}", scope="invoices:write", tag=TAG, idempotency="optional",
               response=DeletedInvoiceOut, extra_responses=(409,), summary="Delete a draft invoice")
def delete_invoice(call: Call) -> dict:
    deleted = invoices.delete_draft(call.session, call.principal, call.path["id"])
    return one({"id": public_id("invoice", deleted), "object": "invoice", "deleted": True})


@api.operation("POST", "/invoices/{id}/finalize", scope="invoices:finalize", tag=TAG, idempotency="required",
               response=InvoiceOut, extra_responses=(409, 422),
               summary="Finalize a draft: assigns its number and public link; it becomes open")
def finalize_invoice(call: Call) -> dict:
    return _render(call, invoices.finalize(call.session, call.principal, _invoice(call, lock=True)), with_lines=False)


@api.operation("POST", "/invoices/{id}/pay", scope="payments:write", tag=TAG, idempotency="required",
               body=PayInput, response=InvoiceOut, extra_responses=(409,),
               summary="Mark an open or overdue invoice paid (recorded only; no money moves)")
def pay_invoice(call: Call) -> dict:
    invoice = invoices.mark_paid(call.session, call.principal, _invoice(call, lock=True), call.body)
    return _render(call, invoice, with_lines=False)


@api.operation("POST", "/invoices/{id}/void", scope="invoices:finalize", tag=TAG, idempotency="required",
               body=VoidInput, response=InvoiceOut, extra_responses=(409,),
               summary="Void an open or overdue invoice (it keeps its number)")
def void_invoice(call: Call) -> dict:
    invoice = invoices.void(call.session, call.principal, _invoice(call, lock=True), call.body)
    return _render(call, invoice, with_lines=False)


@api.operation("GET", "/invoices/{id}/events", scope="invoices:read", tag=TAG, query=PageQuery, response=EventOut,
               envelope="list", summary="The invoice's history, newest first")
def list_invoice_events(call: Call) -> dict:
    result = events.list_events(call.session, call.principal.account_id, call.path["id"],
                                call.query.cursor, call.query.limit)
    return page(result, events.event_to_api)
