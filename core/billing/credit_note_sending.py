"""Sending a credit note by e-mail: its public link and its PDF, under the rules and limits of
invoice e-mails (a verified account address, 10 sends an hour per credential, 50 e-mails an hour
per account; an app's `send` limits, compared with the credit note's total).

The count against the limits is committed before the e-mail goes out; a refusal of the mail server
is recorded as `credit_note.email_failed` and reported as `502 upstream_failed`.
"""

from __future__ import annotations

import functools
from email.utils import formataddr

from sqlmodel import Session

from config.settings import get_settings
from core.access import accounts
from core.access.principal import Principal
from core.base import executor
from core.base.errors import InvalidState, UpstreamFailed, ValidationFailed
from core.base.lookup import owned
from core.base.money import format_money
from core.billing import confirmations, credit_notes, delegated_actions, documents, events
from core.billing.confirmations import Confirmed
from core.billing.pdf import filename_for
from core.billing.presentation import document_locale, issuer_name, readable_date
from core.billing.sending import TEMPLATES, SendInput, count_send, email_note, plain_text, recipients
from core.models import Invoice
from core.outbound import mailer
from core.outbound.mailer import Attachment, MailRejected


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
        events.record_shown(session, invoice, "credit_note.email_failed", {**meta, "error": exc.detail}, view)
        session.commit()
        raise UpstreamFailed(f"The e-mail provider did not accept the credit note e-mail ({exc.detail}); retry the "
                             "send.", usage=usage) from None
    events.record_shown(session, invoice, "credit_note.emailed", meta, view)
    return view, to


def credit_note_message(view: dict, *, to: str, cc: list[str], note: str | None):
    """The credit note e-mail, as the invoice e-mail is made: plain text and HTML, the PDF attached."""
    issuer = view.get("issuer") or {}
    sender_name = issuer_name(view, "Your supplier")
    customer = (view.get("customer_details") or {}).get("name") or ""
    locale = document_locale(view)
    context = {
        "kind": "credit note", "sender_name": sender_name, "number": view["number"],
        "invoice_number": view["invoice_number"], "greeting": f"Hello {customer}," if customer else "Hello,",
        "total": format_money(view["total"], view["currency"]), "due_date": None, "note": email_note(note),
        "link": view["public_url"],
        "summary": [("Credit note number", view["number"]), ("Issue date", readable_date(view["issue_date"], locale)),
                    ("Corrects invoice", view["invoice_number"]),
                    ("Total credited", format_money(view["total"], view["currency"]))],
        "contact": " · ".join(filter(None, (issuer.get("email"), issuer.get("phone")))),
    }
    pdf = documents.credit_note_pdf(view).content
    return mailer.compose(
        to=to, cc=cc, subject=f"Credit note {view['number']} from {sender_name}", body=plain_text(context),
        html=TEMPLATES.get_template("invoice_email.html").render(context),
        reply_to=issuer.get("email"), sender=formataddr((sender_name, get_settings().sender_address)),
        attachments=[Attachment(filename_for(view), pdf)],
    )
