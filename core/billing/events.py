"""Invoice history: one row per event, which is also the webhook event (same id, same payload).

Every event is recorded in the transaction of the change it reports, and its webhook outbox rows
are written in that same transaction.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from pydantic import BaseModel, Field
from sqlalchemy import ScalarSelect, func, insert
from sqlmodel import Session, select

from core.access.resources import rest_api
from core.base import executor, ids
from core.base.api_types import Timestamp
from core.base.clock import iso, now
from core.base.errors import NotFound
from core.base.executor import Db
from core.base.jsonout import jsonable
from core.billing.invoice_render import invoice_to_api
from core.mechanisms import change_feed
from core.mechanisms.pagination import Page, paginate
from core.models import EVENT_TYPES, EventType, Invoice, InvoiceEvent, inserted_values, plain
from core.webhooks import outbox


class EventOut(BaseModel):
    """One entry of an invoice's history; webhooks announce the same kinds."""

    id: str = Field(description="UUID of the event; webhook deliveries of it carry the same id")
    type: EventType = Field(description="What happened")
    meta: dict | None = Field(description=(
        "Who caused it and how: `{actor: api_key, api_key_id, user_id, request_id}` (the person who created the key), "
        "`{actor: oauth_app, client_id, user_id, request_id}` or `{actor: user, user_id}`; plus `reference` and "
        "`payment` on invoice.paid (or `credit_note` when a credit note settled it), `reason` on payment.reversed, "
        "`payment` or `credit_note` on invoice.reopened, and `to` on invoice.emailed and credit_note.emailed. Null "
        "for events the customer caused (viewed, downloaded)"))
    created_at: Timestamp = Field(description="When it happened")


def latest_time(invoice_id) -> ScalarSelect:
    """The time of the invoice's latest event (null before its first), as a scalar subquery: every
    writer of events reads it in its own statement, under the invoice's row lock where it holds one."""
    return select(func.max(InvoiceEvent.created_at)).where(InvoiceEvent.invoice_id == invoice_id).scalar_subquery()


def stamp_after(latest: datetime | None) -> datetime:
    """An event's time: now, or just after the invoice's latest event, so that a history and its
    webhooks order as it happened even while the clock stands still or steps back. The one rule of
    every writer of events."""
    stamp = now()
    return stamp if latest is None or stamp > latest else latest + timedelta(milliseconds=1)


def record(session: Session, invoice: Invoice, type: str, meta: dict | None, shown: dict | None = None):
    """Write the history row of `invoice` (as it is now) and its webhook outbox rows; the row (plain).
    `shown`: what the event carries as `data.object` when it is about something of the invoice's (a
    credit note's or a payment's API object); by default the invoice without lines."""
    if type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {type!r}")
    session.flush()
    latest = None if type == "invoice.created" else session.exec(select(latest_time(invoice.id))).one()
    if shown is None:
        shown = invoice_to_api(session, invoice, with_lines=False)
    return _write(session, invoice, type, meta, shown, latest)


async def record_created(db: Db, invoice, meta: dict | None, shown: dict):
    """`record` of `invoice.created` for a draft written just now without the ORM (`shown`: its API
    object without lines, as written); a unit of `core.base.executor`, in the draft's transaction."""
    event = new_event(invoice, "invoice.created", meta, shown, None)
    await write(db, event)
    return event


def _write(session: Session, invoice, type: str, meta: dict | None, shown: dict, latest: datetime | None):
    event = new_event(invoice, type, meta, shown, latest)
    executor.within(session, write, event)
    return event


async def write(db: Db, event, subscribers: list | None = None) -> None:
    """An event's row (`new_event`), its outbox rows and, for an invoice's, the change it notes for live
    MCP streams (`core.mechanisms.change_feed`), with Core statements: no ORM object is needed.
    `subscribers`: the endpoints it goes to, when read earlier in the transaction (`outbox.subscribers`)."""
    await db.execute(INSERT_EVENT, inserted_values(event))
    await outbox.enqueue(db, event, subscribers)
    if not event.type.startswith("invoice_schedule."):  # a schedule's events name the schedule, not an invoice
        await change_feed.note(db, event.account_id, f"invoice://{ids.public_id('invoice', event.invoice_id)}",
                               event.type)


def new_event(invoice, type: str, meta: dict | None, shown: dict, latest: datetime | None = None):
    """The history row (plain) of an event about `invoice`: `shown` its API object without lines,
    `latest` the time of its latest event before this one (None for its first). Every writer of
    events makes its row here."""
    event_id, created_at = uuid.uuid4(), stamp_after(latest)
    return NEW_EVENT(id=event_id, account_id=invoice.account_id, invoice_id=invoice.id, type=type,
                     meta=jsonable(meta) if meta is not None else None, user_id=_person(meta),
                     payload=event_payload(event_id, type, created_at, shown), created_at=created_at)


def _person(meta: dict | None) -> uuid.UUID | None:
    """The person an event's `meta` names (who acted, or who created the key that did)."""
    try:
        return uuid.UUID(str((meta or {}).get("user_id")))
    except ValueError:
        return None


NEW_EVENT = plain(InvoiceEvent)
INSERT_EVENT = insert(InvoiceEvent.__table__)


def event_payload(event_id: uuid.UUID, type: str, created_at, invoice: dict) -> dict:
    """The webhook body of an event about `invoice` (its API object without lines; a credit note's
    events carry the credit note)."""
    data = {"object": jsonable(invoice)}
    if type == "invoice.finalized":  # where its e-invoices are fetched (with a key that reads invoices)
        data["e_invoices"] = e_invoice_links(invoice["id"])
    elif type == "credit_note.created":
        data["e_invoices"] = e_invoice_links(invoice["id"], "credit-notes")
    return {"id": str(event_id), "type": type, "created_at": iso(created_at), "data": data}


E_INVOICE_FORMATS = ("peppol", "cii", "facturx")


def e_invoice_links(document_id: str, collection: str = "invoices") -> dict[str, str]:
    """The API addresses of an invoice's (or a credit note's) e-invoices, by format."""
    return {fmt: f"{rest_api()}/{collection}/{document_id}/e-invoice?format={fmt}" for fmt in E_INVOICE_FORMATS}


def event_to_api(row: InvoiceEvent) -> dict:
    return EventOut(id=str(row.id), type=row.type, meta=row.meta, created_at=iso(row.created_at)).model_dump()


def list_events(session: Session, account_id: uuid.UUID, invoice_id_text: str, cursor: str | None,
                limit: int | None) -> Page:
    """The invoice's history, newest first."""
    invoice_id = ids.parse("invoice", invoice_id_text)
    exists = session.exec(select(Invoice.id).where(Invoice.id == invoice_id, Invoice.account_id == account_id)).first()
    if exists is None:
        raise NotFound(f"No such invoice: {invoice_id_text}")
    query = select(InvoiceEvent).where(InvoiceEvent.account_id == account_id, InvoiceEvent.invoice_id == invoice_id)
    return paginate(session, query, InvoiceEvent, kind="invoice_events", account_id=account_id,
                    filters={"invoice": str(invoice_id)}, cursor=cursor, limit=limit, created_column="created_at")


def creators(session: Session, account_id: uuid.UUID, invoice_ids: list[uuid.UUID]) -> dict[uuid.UUID, dict]:
    """Who created each of these invoices: the `meta` of its `invoice.created` event."""
    if not invoice_ids:
        return {}
    rows = session.exec(select(InvoiceEvent.invoice_id, InvoiceEvent.meta).where(
        InvoiceEvent.account_id == account_id, InvoiceEvent.invoice_id.in_(invoice_ids),
        InvoiceEvent.type == "invoice.created"))
    return {invoice_id: meta or {} for invoice_id, meta in rows}
