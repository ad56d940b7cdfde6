"""An invoice as a document: sending it by e-mail, and its PDF (served by the REST API only)."""

from starlette.responses import Response

from core.billing import invoices
from core.billing.pdf import filename_for, render_invoice
from operations import invoices as invoice_operations
from rest.framework import Api, Call

api = Api(tag="Invoices")
api.endpoint("POST", "/invoices/{id}/send", invoice_operations.send_invoice, extra_responses=(409, 502),
             summary="E-mail the invoice with its PDF and public link (a draft is finalized first). "
                     "Limits: 10 sends per hour per key, 50 invoice e-mails per hour per account")


@api.operation("GET", "/invoices/{id}/pdf", scope="invoices:read", media_type="application/pdf",
               summary="The invoice as a PDF (drafts carry a DRAFT mark)")
def invoice_pdf(call: Call) -> Response:
    view = invoices.view_invoice(*call.account(), call.params["id"])
    disposition = f'attachment; filename="{filename_for(view)}"'
    return Response(render_invoice(view), media_type="application/pdf",
                    headers={"Content-Disposition": disposition, "Cache-Control": "private, no-store"})
