"""Invoice items: the lines of an invoice, added to and removed from drafts one at a time."""

from operations import invoices
from rest.framework import Api

api = Api(tag="Invoice items")
api.endpoint("GET", "/invoice-items", invoices.list_invoice_items, summary="All lines of an invoice (not paginated)")
api.endpoint("POST", "/invoice-items", invoices.add_invoice_item, status=201, extra_responses=(409,),
             summary="Add a line to a draft; returns the whole updated invoice")
api.endpoint("GET", "/invoice-items/{id}", invoices.get_invoice_item, summary="Retrieve an invoice item")
api.endpoint("DELETE", "/invoice-items/{id}", invoices.remove_invoice_item, extra_responses=(409,),
             summary="Remove a line from a draft; returns the whole updated invoice")
