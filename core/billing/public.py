"""The public link of a finalized invoice: `{origin}/i/{token}` and its PDF, for the customer; and
of a credit note, `{origin}/c/{token}` (no visit is recorded for those).

Opening the page records `invoice.viewed`, downloading the PDF `invoice.downloaded`, each at most
once per invoice every 10 minutes. The throttle is a conditional UPDATE of the invoice's
`last_*_event_at` column: of two concurrent visits only one changes the row, so only one records.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import or_, update
from sqlmodel import Session, select

from core.base.clock import now
from core.base.errors import NotFound
from core.billing import credit_notes, events
from core.billing.invoices import get_by_public_token, invoice_to_api
from core.models import CreditNote, Invoice

EVENT_INTERVAL = timedelta(minutes=10)
# Tokens are secrets.token_urlsafe(32): 43 characters of the URL-safe base64 alphabet.
TOKEN_MAX = 64
TOKEN_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def well_formed(token: str) -> bool:
    return 0 < len(token) <= TOKEN_MAX and set(token) <= TOKEN_ALPHABET


def open_invoice(session: Session, token: str) -> tuple[Invoice, dict]:
    """The invoice behind a public token and its API view with lines; NotFound for anything else."""
    invoice = get_by_public_token(session, token if well_formed(token) else "")
    return invoice, invoice_to_api(session, invoice, with_lines=True)


def open_credit_note(session: Session, token: str) -> tuple[dict, str | None]:
    """The credit note behind a public token, as the API shows it, and its invoice's public token;
    NotFound for anything else."""
    note = None
    if well_formed(token):
        note = session.exec(select(CreditNote).where(CreditNote.public_url_token == token)).first()
    if note is None:
        raise NotFound("No such credit note.")
    invoice_token = session.exec(select(Invoice.public_url_token).where(Invoice.id == note.invoice_id)).first()
    return credit_notes.view_credit_note(session, note), invoice_token


def _record_throttled(session: Session, invoice: Invoice, column, event_type: str) -> bool:
    stamp = now()
    claimed = session.execute(
        update(Invoice)
        .where(Invoice.id == invoice.id, or_(column.is_(None), column <= stamp - EVENT_INTERVAL))
        .values({column: stamp})
        .execution_options(synchronize_session=False)
    ).rowcount
    if claimed != 1:
        return False
    events.record(session, invoice, event_type, None)
    return True


def record_view(session: Session, invoice: Invoice) -> bool:
    """Record `invoice.viewed` unless one was recorded in the last 10 minutes; True if recorded."""
    return _record_throttled(session, invoice, Invoice.last_viewed_event_at, "invoice.viewed")


def record_download(session: Session, invoice: Invoice) -> bool:
    """Record `invoice.downloaded` unless one was recorded in the last 10 minutes; True if recorded."""
    return _record_throttled(session, invoice, Invoice.last_downloaded_event_at, "invoice.downloaded")
