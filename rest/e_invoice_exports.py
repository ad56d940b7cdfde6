"""A period's e-invoices as one ZIP: make one, read it, download it (kept 24 hours)."""

from starlette.responses import Response

from core.documents import e_invoice_exports
from operations import exports
from rest.framework import Api, Call

api = Api(tag="Invoices")  # beside the e-invoice of each invoice and credit note
api.endpoint("POST", "/e-invoice-exports", exports.export_e_invoices, status=201,
             summary="Export a period's e-invoices as a ZIP",
             description="Every document the business issued between `period_start` and `period_end` (issue "
                         "dates, both included, at most 366 days) as e-invoices in one `format` (`peppol`, `cii` or "
                         "`facturx`), in one ZIP for an accountant: each finalized invoice (open, paid and void: a "
                         "void invoice keeps its number) and each credit note, named as their single downloads "
                         "(`INV-0007-peppol.xml`), with `manifest.csv` listing them all. Drafts are never in it. A "
                         "document EN 16931 or Peppol would refuse is left out and listed in `skipped` with why; it "
                         "never fails the export. A period without documents is a ZIP holding only the manifest. "
                         "The ZIP is kept 24 hours: download it from `GET /e-invoice-exports/{id}/zip`. A period "
                         "the wrong way round or longer than 366 days is 422 at `period_end`. Needs only "
                         "`invoices:read`; an `Idempotency-Key` is optional (a retry with it answers the same "
                         "export).")
api.endpoint("GET", "/e-invoice-exports/{id}", exports.get_e_invoice_export,
             summary="Retrieve an e-invoice export",
             description="The export's period, format, how many documents it holds, what was skipped and why, its "
                         "file name and size, and when it is forgotten (`expires_at`, 24 hours after it was made). "
                         "404 once it has expired, and for another account's.")


@api.operation("GET", "/e-invoice-exports/{id}/zip", scope="invoices:read", media_type=e_invoice_exports.MEDIA_TYPE,
               summary="Download an e-invoice export's ZIP",
               description="The ZIP of the export: one e-invoice per document of the period and `manifest.csv` (number, "
                           "document, issue date, status, currency, total, the invoice a credit note corrects, its "
                           "file, and why a document was skipped). Sent as an attachment named by its `filename` "
                           "(`e-invoices-2026-10-01-2026-12-31-peppol.zip`). 404 once the export has expired (24 "
                           "hours after it was made), and for another account's.")
def e_invoice_export_zip(call: Call) -> Response:
    export = e_invoice_exports.read_export(call.session, call.principal.account_id, call.params["id"])
    content, filename = export.content, export.filename
    call.session.commit()  # no transaction stays open while the ZIP is sent
    return Response(content, media_type=e_invoice_exports.MEDIA_TYPE,
                    headers={"Content-Disposition": f'attachment; filename="{filename}"',
                             "Cache-Control": "private, no-store"})
