"""Sending a credit note by e-mail: its public link and its PDF, under the rules and limits of
invoice e-mails (a verified account address, 10 sends an hour per credential, 50 e-mails an hour
per account; an app's `send` limits, compared with the credit note's total).

The count against the limits is committed before the e-mail goes out; a refusal of the mail server
is recorded as `credit_note.email_failed` and reported as `502 upstream_failed`.
"""

from __future__ import annotations

import functools

from pydantic import BaseModel, Field
from sqlmodel import Session

from core.access import accounts
from core.access.principal import Principal
from core.base import executor
from core.base.api_types import EmailText
from core.base.errors import InvalidState, UpstreamFailed, ValidationFailed
from core.base.lookup import owned
from core.base.money import format_money
from core.billing import confirmations, credit_notes, delegated_actions, documents, events
from core.billing.confirmations import Confirmed
from core.billing.credit_note_render import CreditNoteOut
from core.billing.sending import SendInput, count_send, document_message, recipients
from core.models import Invoice
from core.outbound import mailer
from core.outbound.mailer import MailRejected


class CreditNoteSendOut(BaseModel):
    """The credit note as sent and where it went."""

    data: CreditNoteOut = Field(description="The credit note")
    emailed_to: EmailText = Field(description="The primary recipient")


def send_credit_note(session: Session, principal: Principal, id_text: str, data: SendInput | None = None, *,
                     confirmed: Confirmed | None = None) -> tuple[dict, str]:
    """E-mail the credit note to `to` or the customer's address; its API view and the primary address.
    `session`'s transactions are the caller's, as `sending.send_invoice` says."""
    data = data or SendInput()
    note = credit_notes.get_credit_note(session, principal.account_id, id_text)
    invoice = owned(session, Invoice, "invoice", principal.account_id, str(note.invoice_id), noun="invoice")
    # The account (an app's limits) before the credit note, as every writer takes them.
    executor.within(session, functools.partial(delegated_actions.act_for, amount=note.total), principal, "send", invoice)
    note = credit_notes.get_credit_note(session, principal.account_id, id_text, lock=True)
    if note.status != "issued":
        raise InvalidState(f"Credit note {note.number} is void: it is not sent.")
    if not accounts.account_email_verified(session, principal.account_id):
        raise InvalidState("The account e-mail address is not verified: verify it before sending credit notes.")
    view = credit_notes.view_credit_note(session, note)
    to, cc = recipients(view, data)
    if not to:
        raise ValidationFailed.at("to", "is required: the customer has no e-mail address")
    if confirmed is not None:
        confirmations.check(confirmed, view, "send_credit", data)
    usage = count_send(session, principal)
    session.commit()  # the counted send survives whatever the mail server says
    message = credit_note_message(view, to=to, cc=cc, note=data.message)
    meta = {**principal.event_meta(), "to": to, "cc": cc}
    try:
        mailer.send(message, kind="credit_note")
    except MailRejected as exc:
        events.record(session, invoice, "credit_note.email_failed", {**meta, "error": exc.detail}, view)
        session.commit()
        raise UpstreamFailed(f"The e-mail provider did not accept the credit note e-mail ({exc.detail}); retry the "
                             "send.", usage=usage) from None
    events.record(session, invoice, "credit_note.emailed", meta, view)
    return view, to


def credit_note_message(view: dict, *, to: str, cc: list[str], note: str | None):
    """The credit note e-mail, as the invoice e-mail is made (`sending.document_message`)."""
    total = format_money(view["total"], view["currency"])
    return document_message(
        view, kind="credit note", to=to, cc=cc, note=note, link=view["public_url"],
        pdf=documents.credit_note_pdf(view).content, facts={"invoice_number": view["invoice_number"]},
        summary=[("Credit note number", view["number"]), ("Issue date", None),
                 ("Corrects invoice", view["invoice_number"]), ("Total credited", total)])
