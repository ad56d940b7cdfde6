"""Invoices: list, create, retrieve, edit and delete drafts, finalize, pay, void, history."""

from operations import invoices
from rest.framework import Api

api = Api(tag="Invoices")
api.endpoint("GET", "/invoices", invoices.list_invoices, summary="List invoices",
             description="Newest first, without lines, paginated. Filters: `status` (`overdue` gives open invoices "
                         "past their due date; unknown values are ignored), `customer` (404 if not the account's), "
                         "`from` and `to` (inclusive bounds on `issue_date`).")
api.endpoint("POST", "/invoices", invoices.create_invoice, status=201, summary="Create a draft invoice",
             description="Only `customer` is required: the currency defaults to the business's, the issue date "
                         "to today (UTC) and the due date to 30 days later. `items` may be empty. Requires an "
                         "`Idempotency-Key` (428 without). Records `invoice.created`.")
api.endpoint("POST", "/invoices/preview", invoices.preview_invoice, summary="Preview a draft invoice",
             description="The same body as creating a draft; answers the invoice that would be created, with its "
                         "lines and totals computed exactly as creating computes them and the same 404 and 422 "
                         "answers, but nothing is saved, numbered or recorded (`id` is null, `object` is "
                         "`invoice_preview`). Needs only `invoices:read`; no `Idempotency-Key`.")
api.endpoint("GET", "/invoices/{id}", invoices.get_invoice, summary="Retrieve an invoice",
             description="With every line. A draft shows the customer and business profile as they are now; a "
                         "finalized invoice shows them as they were when it was finalized.")
api.endpoint("PATCH", "/invoices/{id}", invoices.update_invoice, extra_responses=(409,), summary="Edit a draft",
             description="Only the fields sent change; `items` replaces every line. Totals are recomputed and "
                         "`invoice.updated` recorded. 409 `invalid_state` once finalized.")
api.endpoint("DELETE", "/invoices/{id}", invoices.delete_invoice, extra_responses=(409,), summary="Delete a draft",
             description="Drafts have no number, so nothing is lost. 409 `invalid_state` for a finalized invoice "
                         "(void it instead).")
api.endpoint("POST", "/invoices/{id}/finalize", invoices.finalize_invoice, extra_responses=(409, 422),
             summary="Finalize a draft",
             description="Assigns the next number (`INV-0001`, consecutive, never reused), the public link and "
                         "`finalized_at`, and freezes the customer and business details. The invoice becomes "
                         "`open` and can no longer be edited. A draft without lines is 422 at path `lines`. "
                         "Requires an `Idempotency-Key`. Records `invoice.finalized`.")
api.endpoint("POST", "/invoices/{id}/pay", invoices.pay_invoice, extra_responses=(409,),
             summary="Mark an invoice paid",
             description="For an open or overdue invoice paid outside the service (no money moves here). "
                         "`paid_on` defaults to now; `reference` is kept in the `invoice.paid` event. Paid is final.")
api.endpoint("POST", "/invoices/{id}/void", invoices.void_invoice, extra_responses=(409,), summary="Void an invoice",
             description="For an open or overdue invoice issued in error: it keeps its number, `amount_due` becomes "
                         "0 and the optional `reason` is stored. Records `invoice.voided`.")
api.endpoint("GET", "/invoices/{id}/events", invoices.list_invoice_events, summary="List an invoice's history",
             description="Newest first, paginated: created, updated, finalized, emailed, email_failed, viewed, "
                         "downloaded, paid and voided, each with who caused it in `meta`.")
