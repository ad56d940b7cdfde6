"""A period's e-invoices as one ZIP (core.documents.e_invoice_exports), and reading it back while it
is kept. Making one reads the period's documents and stores the ZIP for 24 hours: `invoices:read`
suffices, as it does for each e-invoice alone. Making one reports progress through
`core.mechanisms.progress` (a runner watching it may stop it between documents)."""

from core.documents import e_invoice_exports
from core.documents.e_invoice_exports import ExportInput, ExportOut
from operations.pipeline import Call, Operation

READ = "invoices:read"


def _export(call: Call) -> dict:
    return e_invoice_exports.create_export(call.session, call.principal.account_id, call.body)


def _get(call: Call) -> dict:
    return e_invoice_exports.export_to_api(
        e_invoice_exports.read_export(call.session, call.principal.account_id, call.params["id"]))


export_e_invoices = Operation("export_e_invoices", _export, scope=READ, idempotency="optional", body=ExportInput,
                              body_required=True, response=ExportOut)
get_e_invoice_export = Operation("get_e_invoice_export", _get, scope=READ, response=ExportOut)
