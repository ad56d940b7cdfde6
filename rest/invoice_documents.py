"""An invoice as a document: its PDF, and sending it by e-mail."""

from starlette.responses import Response

from core import invoices, sending
from core.pdf import filename_for, render_invoice
from core.sending import SendInput, SendOut
from rest.framework import Api, Call

api = Api()
TAG = "Invoices"


@api.operation("POST", "/invoices/{id}/send", scope="invoices:send", tag=TAG, idempotency="required",
               body=SendInput, response=SendOut, envelope="raw", rate_limited=False, extra_responses=(409, 502),
               summary="E-mail the invoice with its PDF and public link (a draft is finalized first). "
                       "Limits: 10 sends per hour per key, 50 invoice e-mails per hour per account")
def send_invoice(call: Call) -> dict:
    data, emailed_to = sending.send_invoice(call.session, call.principal, call.path["id"], call.body)
    call.response_headers.update(sending.send_limit_usage(call.session, call.principal).headers())
    return {"data": data, "emailed_to": emailed_to}


@api.operation("GET", "/invoices/{id}/pdf", scope="invoices:read", tag=TAG, media_type="application/pdf",
               summary="The invoice as a PDF (drafts carry a DRAFT mark)")
def invoice_pdf(call: Call) -> Response:
    invoice = invoices.get_invoice(call.session, call.principal.account_id, call.path["id"])
    view = invoices.invoice_to_api(call.session, invoice, with_lines=True)
    return pdf_response(view)


def pdf_response(view: dict, *, headers: dict[str, str] | None = None) -> Response:
    disposition = f'attachment; filename="{filename_for(view)}"'
    return Response(render_invoice(view), media_type="application/pdf",
                    headers={"Content-Disposition": disposition, "Cache-Control": "private, no-store",
                             **(headers or {})})
