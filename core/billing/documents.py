"""The PDFs of invoices and credit notes: rendered once for a document that no longer changes and kept,
on a small pool of its own.

A finalized invoice never changes but for its status and what credit notes took off it, so its PDF is
rendered the first time anyone asks (and at most once per status it shows: open, overdue, paid, void,
and per amount credited) and its bytes are kept in `invoice_documents` with a strong ETag; later
requests, the public link's included, are served the kept bytes (or 304). A credit note never changes
but for being voided: its PDF is kept the same way, once issued and once void, in the same table under
the invoice it corrects (its variant names the credit note: `credit_note:{id}:…`), so that a credit
note's documents go wherever its invoice's go and need no table of their own.
Drafts change, so they are rendered on every request — only for signed-in callers, who are limited.
Renders run on `RENDER_POOL`, two threads per process, never on the threads that serve requests;
concurrent requests for the same document in one process wait for one render. No transaction is
open while a document renders.
"""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from config.settings import get_settings
from core.base import ids
from core.base.db import transaction
from core.base.work_pools import WorkPool
from core.billing.pdf import render_credit_note, render_invoice
from core.models import InvoiceDocument

RENDER_POOL = WorkPool("pdf-render", 2)
LAYOUT_VERSION = 2  # raise when the PDF's layout changes, so kept documents are made again
CREDIT_NOTE_LAYOUT_VERSION = 1  # the same, for credit notes


@dataclass(frozen=True)
class Document:
    content: bytes
    etag: str | None  # strong; None for a draft (never kept)

    def held_by(self, if_none_match: str | None) -> bool:
        """Whether a client that sent this `If-None-Match` holds these very bytes (RFC 9110 §13.1.2)."""
        return held(self.etag, if_none_match)


def held(etag: str | None, if_none_match: str | None) -> bool:
    return bool(etag and if_none_match) and bool({tag.strip() for tag in if_none_match.split(",")} & {etag, "*"})


def _origin() -> str:
    """The configured origin, short: the public link printed on every document depends on it."""
    return hashlib.sha256(get_settings().origin.encode()).hexdigest()[:12]


def _variant(view: dict) -> str | None:
    """What a finalized invoice's PDF depends on besides the invoice; None for a draft. What was taken
    off it (the customer's balance, credit notes, payments) prints under its totals, and what remains due
    is in its payment QR code, without changing its status."""
    if view.get("status") == "draft" or not view.get("number"):
        return None
    variant = f"{view['status']}:{LAYOUT_VERSION}:{_origin()}"
    taken = (view.get("balance_applied") or 0, view.get("amount_credited") or 0, view.get("amount_paid") or 0)
    return f"{variant}:less:{taken[0]}:{taken[1]}:{taken[2]}" if any(taken) else variant


def _credit_note_key(view: dict) -> tuple[uuid.UUID, str]:
    """Where a credit note's PDF is kept: under the invoice it corrects, a variant naming it and its status."""
    invoice_id = ids.parse("invoice", view["invoice"], what="invoice")
    note_id = ids.parse("credit_note", view["id"], what="credit note")
    return invoice_id, f"credit_note:{note_id.hex}:{view['status']}:{CREDIT_NOTE_LAYOUT_VERSION}:{_origin()}"


def _etag(content: bytes) -> str:
    return f'"{hashlib.sha256(content).hexdigest()[:40]}"'


def _kept(invoice_id: uuid.UUID, variant: str) -> Document | None:
    with transaction() as session:
        row = session.exec(select(InvoiceDocument).where(InvoiceDocument.invoice_id == invoice_id,
                                                         InvoiceDocument.variant == variant)).first()
        return Document(row.content, row.etag) if row else None


def _keep(invoice_id: uuid.UUID, variant: str, content: bytes) -> Document:
    """Keep the bytes; when another process kept its own render first, serve that one (one ETag)."""
    try:
        with transaction() as session:
            session.add(InvoiceDocument(invoice_id=invoice_id, variant=variant, content=content, etag=_etag(content)))
        return Document(content, _etag(content))
    except IntegrityError:
        return _kept(invoice_id, variant) or Document(content, _etag(content))


_rendering: dict[tuple[uuid.UUID, str], Future] = {}
_rendering_lock = threading.Lock()


def _render_once(invoice_id: uuid.UUID, variant: str, render: Callable[[dict], bytes], view: dict) -> Future:
    """The render of this document in flight in this process, or a new one on the pool."""
    key = (invoice_id, variant)
    with _rendering_lock:
        if key in _rendering:
            return _rendering[key]
        future = RENDER_POOL.submit(lambda: _keep(invoice_id, variant, render(view)))
        _rendering[key] = future
    future.add_done_callback(lambda _: _forget(key))
    return future


def _forget(key: tuple[uuid.UUID, str]) -> None:
    with _rendering_lock:
        _rendering.pop(key, None)


def invoice_pdf(view: dict) -> Document:
    """The PDF of an invoice's view (`view_invoice`), kept or rendered; call with no transaction open."""
    variant = _variant(view)
    if variant is None:
        return Document(RENDER_POOL.run(render_invoice, view), None)
    invoice_id = ids.parse("invoice", view["id"], what="invoice")
    return _kept(invoice_id, variant) or _render_once(invoice_id, variant, render_invoice, view).result()


async def invoice_pdf_async(view: dict, *, read) -> Document:
    """`invoice_pdf` from the event loop: waits for a render without holding a thread. `read`
    runs a short blocking function off the loop (the caller's thread pool)."""
    variant = _variant(view)
    if variant is None:
        return Document(await RENDER_POOL.run_async(render_invoice, view), None)
    invoice_id = ids.parse("invoice", view["id"], what="invoice")
    kept = await read(_kept, invoice_id, variant)
    return kept or await RENDER_POOL.wait(_render_once(invoice_id, variant, render_invoice, view))


def credit_note_pdf(view: dict) -> Document:
    """The PDF of a credit note's view (`credit_notes.view_credit_note`), kept or rendered; call with no
    transaction open. A preview (no id, no number) is rendered and never kept."""
    if not view.get("id") or not view.get("number"):
        return Document(RENDER_POOL.run(render_credit_note, view), None)
    invoice_id, variant = _credit_note_key(view)
    return _kept(invoice_id, variant) or _render_once(invoice_id, variant, render_credit_note, view).result()


async def credit_note_pdf_async(view: dict, *, read) -> Document:
    """`credit_note_pdf` from the event loop, as `invoice_pdf_async`."""
    if not view.get("id") or not view.get("number"):
        return Document(await RENDER_POOL.run_async(render_credit_note, view), None)
    invoice_id, variant = _credit_note_key(view)
    kept = await read(_kept, invoice_id, variant)
    return kept or await RENDER_POOL.wait(_render_once(invoice_id, variant, render_credit_note, view))
