"""An invoice as a document: sending it by e-mail, and its PDF (served by the REST API only)."""

from starlette.responses import Response

from core.base import executor
from core.billing import documents, invoices
from core.billing.pdf import filename_for
from core.documents.export import EInvoiceQuery
from operations import invoices as invoice_operations
from rest.framework import Api, Call

api = Api(tag="Invoices")
api.endpoint("POST", "/invoices/{id}/send", invoice_operations.send_invoice, extra_responses=(409, 502),
             summary="E-mail an invoice",
             description="E-mails the invoice with its PDF attached and its public link, to `to` or else the "
                         "customer's e-mail (422 at path `to` when there is neither). A draft is finalized first. "
                         "409 `invalid_state` until the account's e-mail is verified. 502 `upstream_failed` when "
                         "the mail server refuses: the invoice stays finalized, `invoice.email_failed` is recorded, "
                         "and a retry (with a new key) sends again. Limits: 10 sends per hour per credential, 50 "
                         "invoice e-mails per hour per account.")


@api.operation("GET", "/invoices/{id}/pdf", scope="invoices:read", media_type="application/pdf",
               summary="Download an invoice as PDF",
               description="The invoice as an A4 PDF, as the customer receives it. Drafts carry a DRAFT mark. "
                           "A finalized invoice's PDF carries a strong `ETag`: send it back in `If-None-Match` "
                           "and an unchanged document is answered `304 Not Modified`.")
def invoice_pdf(call: Call) -> Response:
    view = executor.within(call.session, invoices.view_invoice, call.principal.account_id, call.params["id"])
    call.session.commit()  # no transaction stays open while the document renders
    document = documents.invoice_pdf(view)
    caching = {"ETag": document.etag, "Cache-Control": "private, no-cache"} if document.etag else \
        {"Cache-Control": "private, no-store"}  # a draft changes: never stored
    return Response(document.content, media_type="application/pdf",
                    headers={"Content-Disposition": f'attachment; filename="{filename_for(view)}"', **caching})


@api.operation("GET", "/invoices/{id}/e-invoice", scope="invoices:read", query=EInvoiceQuery,
               media_type="application/xml,application/pdf", extra_responses=(409,),
               summary="Download an invoice as an e-invoice",
               description="The finalized invoice as a structured e-invoice under EN 16931, in `format` `peppol` "
                           "(UBL 2.1, Peppol BIS Billing 3.0: `application/xml`), `cii` (UN/CEFACT CII D16B: "
                           "`application/xml`) or `facturx` (the PDF as PDF/A-3 with the CII embedded: "
                           "`application/pdf`). A draft is `409 invalid_state`. What the invoice lacks for the format "
                           "is `422 validation`, at the field to fill in, naming the business term (such as "
                           "`customer.address.country`: BT-55).")
def invoice_e_invoice(call: Call) -> Response:
    document = invoice_operations.e_invoice_document(call)
    return Response(document.content, media_type=document.media_type,
                    headers={"Content-Disposition": f'attachment; filename="{document.filename}"',
                             "Cache-Control": "private, no-cache"})
