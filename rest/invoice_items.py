"""Invoice items: the lines of an invoice, added to and removed from drafts one at a time."""

from operations import invoices
from rest.framework import Api

api = Api(tag="Invoice items")
api.endpoint("GET", "/invoice-items", invoices.list_invoice_items, summary="List the lines of an invoice",
             description="Every line of the invoice named by `invoice`, in order, in one response (not paginated).")
api.endpoint("POST", "/invoice-items", invoices.add_invoice_item, status=201, extra_responses=(409,),
             summary="Add a line to a draft",
             description="Priced (`price`: amount and tax rate come from the price, the description from its "
                         "product) or ad hoc (`description` and `unit_amount`). Returns the whole draft with its "
                         "totals recomputed and records `invoice.updated`. 409 `invalid_state` unless the invoice "
                         "is a draft. A retry with the same `Idempotency-Key` adds no second line.")
api.endpoint("GET", "/invoice-items/{id}", invoices.get_invoice_item, summary="Retrieve an invoice item",
             description="One line, of any invoice of the account.")
api.endpoint("DELETE", "/invoice-items/{id}", invoices.remove_invoice_item, extra_responses=(409,),
             summary="Remove a line from a draft",
             description="Returns the whole draft with its totals recomputed and records `invoice.updated`. "
                         "The optional `invoice` query narrows the lookup. 409 `invalid_state` unless a draft.")
