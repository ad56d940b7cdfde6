"""Invoices: list, create, retrieve, edit and delete drafts, finalize, pay, void, history."""

from operations import invoices
from rest.framework import Api

api = Api(tag="Invoices")
api.endpoint("GET", "/invoices", invoices.list_invoices, summary="List invoices (without lines), newest first")
api.endpoint("POST", "/invoices", invoices.create_invoice, status=201, summary="Create a draft invoice")
api.endpoint("GET", "/invoices/{id}", invoices.get_invoice, summary="Retrieve an invoice with its lines")
api.endpoint("PATCH", "/invoices/{id}", invoices.update_invoice, extra_responses=(409,),
             summary="Edit a draft (only the fields sent change; `items` replaces every line)")
api.endpoint("DELETE", "/invoices/{id}", invoices.delete_invoice, extra_responses=(409,),
             summary="Delete a draft invoice")
api.endpoint("POST", "/invoices/{id}/finalize", invoices.finalize_invoice, extra_responses=(409, 422),
             summary="Finalize a draft: assigns its number and public link; it becomes open")
api.endpoint("POST", "/invoices/{id}/pay", invoices.pay_invoice, extra_responses=(409,),
             summary="Mark an open or overdue invoice paid (recorded only; no money moves)")
api.endpoint("POST", "/invoices/{id}/void", invoices.void_invoice, extra_responses=(409,),
             summary="Void an open or overdue invoice (it keeps its number)")
api.endpoint("GET", "/invoices/{id}/events", invoices.list_invoice_events,
             summary="The invoice's history, newest first")
