"""Credit notes: preview, issue, list, retrieve, void and e-mail them; their e-invoices."""

from core.base.validation import PageQuery
from core.billing import credit_note_sending, credit_notes
from core.billing.credit_note_inputs import CreditNoteCreate, CreditNoteListQuery
from core.billing.credit_note_render import CreditNoteOut
from core.billing.credit_note_sending import CreditNoteSendOut
from core.billing.sending import SendInput, send_limit_usage
from core.documents.export import EDocument, EInvoiceOut, EInvoiceQuery, e_invoice
from operations.pipeline import Call, Operation
from operations.rendering import page

READ, WRITE = "invoices:read", "credit_notes:write"


def _note(call: Call):
    return credit_notes.get_credit_note(call.session, call.principal.account_id, call.params["id"])


def _list(call: Call, query: CreditNoteListQuery | None = None) -> dict:
    result = credit_notes.list_credit_notes(call.session, call.principal.account_id, query or call.query)
    return page(result, lambda note: credit_notes.view_credit_note(call.session, note))


def _list_of_invoice(call: Call) -> dict:
    return _list(call, CreditNoteListQuery(invoice=call.params["id"], cursor=call.query.cursor, limit=call.query.limit))


def _create(call: Call) -> dict:
    note, lines = credit_notes.create_credit_note(call.session, call.principal, call.body, confirmed=call.confirmed)
    return credit_notes.credit_note_to_api(note, lines)


def _void(call: Call) -> dict:
    note = credit_notes.void_credit_note(call.session, call.principal, call.params["id"], confirmed=call.confirmed)
    return credit_notes.view_credit_note(call.session, note)


def _send(call: Call) -> dict:
    data, emailed_to = credit_note_sending.send_credit_note(call.session, call.principal, call.params["id"], call.body,
                                                            confirmed=call.confirmed)
    return {"data": data, "emailed_to": emailed_to}


def e_invoice_document(call: Call) -> EDocument:
    """The credit note as an e-invoice in the format asked for (REST serves the bytes, MCP the text)."""
    view = credit_notes.e_invoice_view(call.session, call.principal.account_id, call.params["id"])
    call.session.commit()  # no transaction stays open while the document is made
    return e_invoice(view, call.query.format)


list_credit_notes = Operation("list_credit_notes", _list, scope=READ, query=CreditNoteListQuery,
                              response=CreditNoteOut, shape="list")
list_invoice_credit_notes = Operation("list_invoice_credit_notes", _list_of_invoice, scope=READ, query=PageQuery,
                                      response=CreditNoteOut, shape="list")
preview_credit_note = Operation(
    "preview_credit_note", lambda call: credit_notes.preview_credit_note(call.session, call.principal, call.body),
    scope=READ, body=CreditNoteCreate, body_required=True, response=CreditNoteOut)
create_credit_note = Operation("create_credit_note", _create, scope=WRITE, body=CreditNoteCreate, body_required=True,
                               idempotency="required", response=CreditNoteOut)
get_credit_note = Operation("get_credit_note", lambda call: credit_notes.view_credit_note(call.session, _note(call)),
                            scope=READ, response=CreditNoteOut)
void_credit_note = Operation("void_credit_note", _void, scope=WRITE, idempotency="required", response=CreditNoteOut)
send_credit_note = Operation("send_credit_note", _send, scope="invoices:send", idempotency="required",
                             body=SendInput, own_limit=send_limit_usage, response=CreditNoteSendOut, shape="raw")
get_credit_note_e_invoice = Operation(
    "get_credit_note_e_invoice", lambda call: e_invoice_document(call).to_api(call.params["id"]), scope=READ,
    query=EInvoiceQuery, response=EInvoiceOut)
