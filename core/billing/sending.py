"""Sending an invoice by e-mail: finalize a draft first, then e-mail the public link and the PDF.

The finalization (and the count against the send limits) is committed before the e-mail goes
out, so an invoice whose e-mail fails stays open with its number; the failure is recorded as
`invoice.email_failed` and reported as `502 upstream_failed`, and a retry sends it again.
No transaction is open while the PDF renders (`core.billing.documents`, kept for the invoice's
public link too) or while the mail server is talked to.
"""

from __future__ import annotations

from email.utils import formataddr
from typing import Annotated

import jinja2
from pydantic import AfterValidator, BaseModel, Field
from sqlmodel import Session

from config.settings import get_settings
from core.access import accounts
from core.access.principal import Principal
from core.base import executor
from core.base.api_types import EmailText
from core.base.errors import InvalidState, UpstreamFailed, ValidationFailed
from core.base.money import format_money
from core.base.validation import EMAIL_MAX, MULTI_LINE, Input, email_or_error
from core.billing import delegated_actions, documents, events, finalization, invoices
from core.billing.confirmations import Confirmed, require_as_confirmed
from core.billing.invoice_render import InvoiceOut
from core.billing.pdf import filename_for
from core.billing.presentation import document_locale, issuer_name, public_url, readable_date
from core.mechanisms import ratelimit
from core.outbound import mailer
from core.outbound.mailer import Attachment, MailRejected

CC_MAX = 5
MESSAGE_MAX = 2000

EmailAddress = Annotated[str, Field(max_length=EMAIL_MAX), AfterValidator(email_or_error)]


class SendInput(Input):
    """Who receives the invoice e-mail, and an optional note."""

    to: EmailAddress | None = Field(default=None, description="Recipient; overrides the customer's e-mail")
    cc: list[EmailAddress] = Field(default_factory=list, max_length=CC_MAX,
                                   description=f"Up to {CC_MAX} addresses copied")
    message: Annotated[str | None, MULTI_LINE] = Field(default=None, max_length=MESSAGE_MAX,
                                description="Text added to the e-mail body")


class SendOut(BaseModel):
    """The invoice as sent (finalized first if it was a draft) and where it went."""

    data: InvoiceOut = Field(description="The invoice, without lines")
    emailed_to: EmailText = Field(description="The primary recipient")


def send_invoice(session: Session, principal: Principal, id_text: str,
                 data: SendInput | None = None, *, confirmed: Confirmed | None = None) -> tuple[dict, str]:
    """E-mail the invoice; returns its API view (without lines) and the primary address. `confirmed`:
    what the person was asked, when a surface asked (core.billing.confirmations).

    `session` must be one whose transactions the caller manages (`core.db.new_session()`, as REST
    handlers get): this function commits it before and after talking to the mail server, so it
    cannot run inside `core.db.transaction()`. The caller commits what follows the last commit
    (the `invoice.emailed` event)."""
    data = data or SendInput()
    invoice = invoices.get_invoice(session, principal.account_id, id_text, lock=True)
    if invoice.status in ("paid", "void"):
        raise InvalidState(f"Invoice {id_text} is {invoice.status}: only a draft or an open invoice can be sent.")
    if not accounts.account_email_verified(session, principal.account_id):
        raise InvalidState("The account e-mail address is not verified: verify it before sending invoices.")
    _addressed(invoices.invoice_to_api(session, invoice, with_lines=False), data)
    executor.within(session, delegated_actions.act_for, principal, "send", invoice)
    require_as_confirmed(session, invoice, "send", data, confirmed)
    usage = count_send(session, principal)
    if invoice.status == "draft":
        # What the person confirmed is checked again as the draft is read to be frozen into the invoice.
        finalization.finalize_in(session, principal, invoice, as_action=None, confirmed=confirmed,
                                 asked_about=("send", data))
    view = invoices.invoice_to_api(session, invoice, with_lines=True)
    # To the customer as the invoice shows it (a draft's customer is read again as it is frozen): what
    # the person confirmed, when asked.
    to, cc = _addressed(view, data)
    session.commit()  # the number and the counted send survive whatever the mail server says
    message = invoice_message(view, to=to, cc=cc, note=data.message)  # renders the PDF: after the commit

    meta = {**principal.event_meta(), "to": to, "cc": cc}
    try:
        mailer.send(message, kind="invoice")
    except MailRejected as exc:
        events.record(session, invoice, "invoice.email_failed", {**meta, "error": exc.detail})
        session.commit()
        raise UpstreamFailed(f"The e-mail provider did not accept the invoice e-mail ({exc.detail}). "
                             f"The invoice is finalized as {view['number']}; retry the send.", usage=usage) from None
    events.record(session, invoice, "invoice.emailed", meta)
    return invoices.invoice_to_api(session, invoice, with_lines=False), to


def _addressed(view: dict, data: SendInput) -> tuple[str, list[str]]:
    to, cc = recipients(view, data)
    if not to:
        raise ValidationFailed.at("to", "is required: the customer has no e-mail address")
    return to, cc


def recipients(view: dict, data: SendInput) -> tuple[str | None, list[str]]:
    """Who an e-mail of the invoice `view` goes to: `to` or the customer's address (None: nobody), and
    the copies, each once and never to the primary address."""
    to = data.to or (view.get("customer_details") or {}).get("email") or None
    cc = [address for address in dict.fromkeys(data.cc) if not to or address.lower() != to.lower()]
    return to, cc


def email_note(note: str | None) -> str | None:
    """The note as the e-mail's body carries it (and a confirmation shows it): trimmed, or None."""
    return note.strip() if note and note.strip() else None


def send_limit_usage(session: Session, principal: Principal) -> ratelimit.Usage:
    """Where the caller stands against its send limit (for RateLimit-* headers): per key for a
    credential, the account's e-mail limit for a person in the dashboard."""
    if not principal.has_credential_limits:
        return ratelimit.peek(session, ratelimit.emails_per_account(), str(principal.account_id))
    return ratelimit.peek(session, ratelimit.sends_per_key(), principal.rate_limit_subject)


def count_send(session: Session, principal: Principal) -> ratelimit.Usage:
    """One send per credential (10 an hour; a person in the dashboard has no such limit) and one
    invoice e-mail per account (50 an hour, whoever sends)."""
    per_key = None
    if principal.has_credential_limits:
        per_key = ratelimit.hit(session, ratelimit.sends_per_key(), principal.rate_limit_subject)
        per_key.raise_if_exceeded("invoice sends per API key")
    per_account = ratelimit.hit(session, ratelimit.emails_per_account(), str(principal.account_id))
    per_account.raise_if_exceeded("invoice e-mails per account")
    return per_key or per_account


TEMPLATES = jinja2.Environment(loader=jinja2.PackageLoader("core.billing", "templates"),
                                autoescape=jinja2.select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True)


def invoice_message(view: dict, *, to: str, cc: list[str], note: str | None):
    """The invoice e-mail (`document_message`): its due date and what is due."""
    due_date = readable_date(view["due_date"], document_locale(view)) if view.get("due_date") else None
    return document_message(
        view, kind="invoice", to=to, cc=cc, note=note, link=public_url(view["public_url_token"]),
        pdf=documents.invoice_pdf(view).content, facts={"due_date": due_date},
        summary=[("Invoice number", view["number"]), ("Issue date", None),
                 *([("Due date", due_date)] if due_date else []),
                 *([("Paid so far", format_money(view["amount_paid"], view["currency"]))]
                   if view.get("amount_paid") else []),
                 ("Amount due", format_money(view["amount_due"], view["currency"]))])


def document_message(view: dict, *, kind: str, to: str, cc: list[str], note: str | None, link: str, pdf: bytes,
                     summary: list[tuple[str, str | None]], facts: dict):
    """An e-mail of a document (`kind`: invoice or credit note): plain text and HTML saying the same, the
    PDF attached, from the issuer's name at the service's address, replies going to the issuer.
    `summary`: its rows (an "Issue date" row of None is filled in); `facts`: what the wording needs."""
    issuer = view.get("issuer") or {}
    sender_name = issuer_name(view, "Your supplier")
    customer = (view.get("customer_details") or {}).get("name") or ""
    issued = readable_date(view["issue_date"], document_locale(view))
    context = {
        "kind": kind, "sender_name": sender_name, "number": view["number"], "due_date": None, **facts,
        "greeting": f"Hello {customer}," if customer else "Hello,",
        "total": format_money(view["total"], view["currency"]), "note": email_note(note), "link": link,
        "summary": [(label, issued if label == "Issue date" and value is None else value) for label, value in summary],
        "contact": " · ".join(filter(None, (issuer.get("email"), issuer.get("phone")))),
    }
    return mailer.compose(
        to=to, cc=cc, subject=f"{kind.capitalize()} {view['number']} from {sender_name}", body=plain_text(context),
        html=TEMPLATES.get_template("invoice_email.html").render(context),
        reply_to=issuer.get("email"), sender=formataddr((sender_name, get_settings().sender_address)),
        attachments=[Attachment(filename_for(view), pdf)],
    )


def plain_text(context: dict) -> str:
    """The e-mail's plain text, saying what its HTML says (an invoice's, or a credit note's)."""
    kind = context["kind"]
    if kind == "credit note":
        what = f"credit note {context['number']} for {context['total']}, correcting invoice {context['invoice_number']}"
    else:
        due = f", due {context['due_date']}" if context["due_date"] else ""
        what = f"invoice {context['number']} for {context['total']}{due}"
    paragraphs = [context["greeting"], f"{context['sender_name']} has sent you {what}."]
    if context["note"]:
        paragraphs.append(context["note"])
    paragraphs += [f"View {kind}: {context['link']}", f"The {kind} is attached as a PDF."]
    if context["contact"]:
        paragraphs.append(f"Questions? Reply to this e-mail or contact {context['sender_name']}: {context['contact']}")
    paragraphs.append(f"— {context['sender_name']}")
    return "\n\n".join(paragraphs) + "\n"
