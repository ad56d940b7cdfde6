"""Invoice items: the lines of an invoice, added to and removed from drafts one at a time."""

from core import invoices
from core.invoice_inputs import ItemAdd, ItemDeleteQuery, ItemListQuery
from core.invoice_render import InvoiceItemOut, InvoiceWithLinesOut, line_to_api
from rest.envelopes import one
from rest.framework import Api, Call

api = Api()
TAG = "Invoice items"


@api.operation("GET", "/invoice-items", scope="invoices:read", tag=TAG, query=ItemListQuery,
               response=InvoiceItemOut, envelope="items", summary="All lines of an invoice (not paginated)")
def list_invoice_items(call: Call) -> dict:
    rows = invoices.list_items(call.session, call.principal.account_id, call.query.invoice)
    return {"data": [line_to_api(row) for row in rows]}


@api.operation("POST", "/invoice-items", scope="invoices:write", tag=TAG, body=ItemAdd, body_required=True,
               idempotency="required", response=InvoiceWithLinesOut, status=201, extra_responses=(409,),
               summary="Add a line to a draft; returns the whole updated invoice")
def add_invoice_item(call: Call) -> dict:
    invoice = invoices.add_item(call.session, call.principal, call.body)
    return one(invoices.invoice_to_api(call.session, invoice, with_lines=True))


@api.operation("GET", "/invoice-items/{id}", scope="invoices:read", tag=TAG, response=InvoiceItemOut,
               summary="Retrieve an invoice item")
def get_invoice_item(call: Call) -> dict:
    return one(line_to_api(invoices.get_item(call.session, call.principal.account_id, call.path["id"])))


@api.operation("DELETE", "/invoice-items/{id}", scope="invoices:write", tag=TAG, query=ItemDeleteQuery,
               response=InvoiceWithLinesOut, extra_responses=(409,),
               summary="Remove a line from a draft; returns the whole updated invoice")
def remove_invoice_item(call: Call) -> dict:
    invoice = invoices.remove_item(call.session, call.principal, call.path["id"], call.query.invoice)
    return one(invoices.invoice_to_api(call.session, invoice, with_lines=True))
