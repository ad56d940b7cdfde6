"""Credit notes: preview, issue, list, retrieve, void, e-mail, and their documents."""

from starlette.responses import Response

from core.billing import credit_notes, documents
from core.billing.pdf import filename_for
from core.documents.export import EInvoiceQuery
from operations import credit_notes as operations
from rest.framework import Api, Call

api = Api(tag="Credit notes")
api.endpoint("GET", "/credit-notes", operations.list_credit_notes, summary="List credit notes",
             description="Newest first, paginated, each with its lines. Filters: `invoice` and `customer` (404 when "
                         "not the account's).")
api.endpoint("POST", "/credit-notes", operations.create_credit_note, status=201, extra_responses=(409, 422),
             summary="Issue a credit note",
             description="Corrects an open (or overdue) or paid invoice with a document of its own, numbered in its "
                         "own series (`CN-0001`). `lines` credit part of the invoice's lines (by `quantity` or "
                         "`amount` before tax, or all that remains of one) or add lines of their own; omitted, all "
                         "that remains of the invoice is credited. Tax is computed per line with the invoice's rates "
                         "and rounding. Where the money goes adds up to the total: `credit_amount` (off what is due "
                         "on an open invoice, at most its `amount_due`), `refund_amount` (refunded outside the "
                         "service, with `refund_reference` and `refunded_on`) and `balance_amount` (the customer's "
                         "credit, applied to their next invoice in that currency); none given on an open invoice, "
                         "all of it is `credit_amount`. A paid invoice takes only refund and balance. More than the "
                         "invoice can still be credited is 422 at the field. An open invoice credited to zero becomes "
                         "`paid`. Requires `credit_notes:write` and an `Idempotency-Key`. Records "
                         "`credit_note.created` (and `invoice.paid`) in the invoice's history.")
api.endpoint("POST", "/credit-notes/preview", operations.preview_credit_note, extra_responses=(409, 422),
             summary="Preview a credit note",
             description="The same body as issuing one; answers the credit note that would be issued, computed "
                         "exactly so, with the same 404, 409 and 422 answers, but nothing is saved or numbered (`id` "
                         "and `number` are null). Needs only `invoices:read`.")
api.endpoint("GET", "/credit-notes/{id}", operations.get_credit_note, summary="Retrieve a credit note",
             description="With every line, and where its money went (credit, refund, balance).")
api.endpoint("POST", "/credit-notes/{id}/void", operations.void_credit_note, extra_responses=(409,),
             summary="Void a credit note",
             description="Undoes its effects: what it took off the invoice is due again (an invoice it settled "
                         "reopens, recording `invoice.reopened`) and its balance leaves the customer's. 409 "
                         "`invalid_state` when void already, or once its balance was applied to another invoice. "
                         "Requires `credit_notes:write` and an `Idempotency-Key`. Records `credit_note.voided`.")
api.endpoint("POST", "/credit-notes/{id}/send", operations.send_credit_note, extra_responses=(409, 502),
             summary="E-mail a credit note",
             description="As sending an invoice: its PDF attached and its public link, to `to` or else the "
                         "customer's e-mail; the same scope (`invoices:send`), limits and 409 until the account's "
                         "e-mail is verified. Records `credit_note.emailed` (or `credit_note.email_failed` with a 502).")
api.endpoint("GET", "/invoices/{id}/credit-notes", operations.list_invoice_credit_notes,
             summary="List an invoice's credit notes", tag="Invoices",
             description="Newest first, paginated, each with its lines.")


@api.operation("GET", "/credit-notes/{id}/pdf", scope="invoices:read", media_type="application/pdf",
               summary="Download a credit note as PDF",
               description="The credit note as an A4 PDF titled \"Credit note\", naming the invoice it corrects; a "
                           "void one carries a VOID mark. It carries a strong `ETag`: send it back in "
                           "`If-None-Match` and an unchanged document is answered `304 Not Modified`.")
def credit_note_pdf(call: Call) -> Response:
    view = credit_notes.view_credit_note(call.session, credit_notes.get_credit_note(
        call.session, call.principal.account_id, call.params["id"]))
    call.session.commit()  # no transaction stays open while the document renders
    document = documents.credit_note_pdf(view)
    caching = {"ETag": document.etag} if document.etag else {}
    return Response(document.content, media_type="application/pdf",
                    headers={"Content-Disposition": f'attachment; filename="{filename_for(view)}"',
                             "Cache-Control": "private, no-cache", **caching})


@api.operation("GET", "/credit-notes/{id}/e-invoice", scope="invoices:read", query=EInvoiceQuery,
               media_type="application/xml,application/pdf", extra_responses=(422,),
               summary="Download a credit note as an e-invoice",
               description="The credit note under EN 16931 with the invoice it corrects (BG-3): `peppol` (UBL 2.1 "
                           "CreditNote, Peppol BIS Billing 3.0, type 381), `cii` (CII D16B, TypeCode 381) or "
                           "`facturx` (PDF/A-3 with the CII embedded).")
def credit_note_e_invoice(call: Call) -> Response:
    document = operations.e_invoice_document(call)
    return Response(document.content, media_type=document.media_type,
                    headers={"Content-Disposition": f'attachment; filename="{document.filename}"',
                             "Cache-Control": "private, no-cache"})
