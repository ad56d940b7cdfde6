"""Who did what in a business: its own changes (members, invitations, keys, webhooks, the profile),
read beside invoice events and apps' delegated actions for the activity page. Every entry names the
person, and the app or key they acted through (a key acts as the person who created it)."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import and_, or_
from sqlmodel import Session, select

from core.access.principal import Principal
from core.base.ids import public_id
from core.models import ActivityEntry, ApiKey, DelegatedAction, InvoiceEvent, User

PAGE = 100
VIA_DASHBOARD = "dashboard"


def record(session: Session, principal: Principal, action: str, summary: str) -> None:
    session.add(ActivityEntry(account_id=principal.account_id, user_id=principal.user_id, actor=principal.actor,
                              api_key_id=principal.api_key_id, client_id=principal.client_id,
                              client_name=principal.client_name, action=action, summary=summary[:1000]))


def by_person(session: Session, account_id: uuid.UUID, user_id: uuid.UUID, action: str, summary: str) -> None:
    """`record` of what a person did themselves (the dashboard, an admin command) where no caller is at hand."""
    session.add(ActivityEntry(account_id=account_id, user_id=user_id, actor="user", action=action,
                              summary=summary[:1000]))


# Where each entry is read from; with the time and the row's id, the order of the whole activity.
OWN, INVOICE_EVENTS, DELEGATED = 0, 1, 2


@dataclass(frozen=True)
class Position:
    """A place in the activity, which is ordered newest first by time, then source, then row id: a
    page ends at its last entry's position and the next page starts just before it, so entries of
    the same moment are neither skipped nor shown twice. A bare time (no source) stands before every
    entry of that moment."""
    at: datetime
    source: int = -1
    row_id: uuid.UUID | None = None

    def text(self) -> str:
        return self.at.isoformat() if self.row_id is None else f"{self.at.isoformat()}~{self.source}~{self.row_id.hex}"

    @classmethod
    def parse(cls, text: str) -> Position | None:
        """A position as `text` gives it (a timestamp read as UTC when it names no zone, optionally
        `~source~row id`); None when it is not one."""
        moment, _, rest = text.partition("~")
        try:
            at = datetime.fromisoformat(moment) if moment and len(moment) <= 40 else None
            if at is None:
                return None
            at = at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
        except (ValueError, OverflowError):  # not a time, or one whose UTC is off the calendar (year 1 at +01:00)
            return None
        if not rest:
            return cls(at)
        source, _, row = rest.partition("~")
        try:
            return cls(at, int(source), uuid.UUID(hex=row)) if source in ("0", "1", "2") and len(row) == 32 else None
        except ValueError:
            return None


@dataclass(frozen=True)
class Entry:
    at: datetime
    user_id: uuid.UUID | None
    person: str | None  # the person's e-mail address, or who else it was (None until looked up)
    via: str  # "dashboard", "API key “name”", "app “name”", "customer"
    what: str
    link: str | None = None  # the dashboard page of what it concerns
    source: int = OWN
    row_id: uuid.UUID | None = None

    @property
    def position(self) -> Position:
        return Position(self.at, self.source, self.row_id)


# What only owners and admins see of the business's own changes (as only they see its invitations,
# keys and webhooks).
MANAGERS_ONLY = ("invitation.", "api_key.", "webhook_endpoint.")


def entries(session: Session, account_id: uuid.UUID, *, user_id: uuid.UUID | None = None,
            before: Position | None = None, limit: int | None = None, managing: bool = False) -> list[Entry]:
    """The newest `limit` (a `PAGE`) entries of the business (of one member when `user_id` is given),
    before `before`; `managing`: as an owner or admin sees them."""
    limit = limit or PAGE
    keys = dict(session.exec(select(ApiKey.id, ApiKey.name).where(ApiKey.account_id == account_id)).all())
    found = [*_own(session, account_id, user_id, before, limit, keys, managing),
             *_invoice_events(session, account_id, user_id, before, limit, keys),
             *_delegated(session, account_id, user_id, before, limit)]
    found.sort(key=lambda entry: (entry.at, entry.source, entry.row_id), reverse=True)
    found = found[:limit]
    # Members now and before: a removed member's past stays named.
    named = {entry.user_id for entry in found if entry.user_id is not None}
    people = dict(session.exec(select(User.id, User.email).where(User.id.in_(named))).all()) if named else {}
    return [dataclasses.replace(entry, person=people.get(entry.user_id, "someone")) if entry.person is None else entry
            for entry in found]


def _via(actor: str, key_name: str | None, client_name: str | None) -> str:
    if actor == "api_key":
        return f"API key “{key_name or 'deleted'}”"
    if actor == "oauth_app":
        return f"app “{client_name or 'unnamed'}”"
    return VIA_DASHBOARD


def _window(table, source, account_id, user_id, before: Position | None, limit):
    """The newest `limit` rows of `table` (read as `source`) of the business, of one person, before `before`."""
    query = select(table).where(table.account_id == account_id)
    if user_id is not None:
        query = query.where(table.user_id == user_id)
    if before is not None:
        if source < before.source:  # this source's rows of that moment come after the position
            query = query.where(table.created_at <= before.at)
        elif source == before.source:
            query = query.where(or_(table.created_at < before.at,
                                    and_(table.created_at == before.at, table.id < before.row_id)))
        else:
            query = query.where(table.created_at < before.at)
    return query.order_by(table.created_at.desc(), table.id.desc()).limit(limit)


def _own(session, account_id, user_id, before, limit, keys, managing) -> list[Entry]:
    query = _window(ActivityEntry, OWN, account_id, user_id, before, limit)
    if not managing:
        query = query.where(*(ActivityEntry.action.not_like(f"{prefix}%") for prefix in MANAGERS_ONLY))
    return [Entry(row.created_at, row.user_id, None,
                  _via(row.actor, keys.get(row.api_key_id), row.client_name), row.summary,
                  source=OWN, row_id=row.id)
            for row in session.exec(query)]


def _invoice_events(session, account_id, user_id, before, limit, keys) -> list[Entry]:
    query = _window(InvoiceEvent, INVOICE_EVENTS, account_id, user_id, before, limit)
    found = []
    for event in session.exec(query):
        meta = event.meta or {}
        shown = (event.payload.get("data") or {}).get("object") or {}
        label = shown.get("number") or "a draft"
        actor = meta.get("actor")
        person = None if actor else "the customer"
        via = _via(actor, keys.get(_uuid(meta.get("api_key_id"))), meta.get("client_name")) if actor else "invoice page"
        if meta.get("schedule"):
            via = f"schedule, as {via}"
        elif actor in ("reminders", "schedule"):
            person, via = "automatic", actor
        invoice_id = event.invoice_id
        found.append(Entry(event.created_at, event.user_id, person, via, f"{event.type} on {label}",
                           f"/invoices/{public_id('invoice', invoice_id)}", source=INVOICE_EVENTS, row_id=event.id))
    return found


def _delegated(session, account_id, user_id, before, limit) -> list[Entry]:
    query = _window(DelegatedAction, DELEGATED, account_id, user_id, before, limit)
    return [Entry(row.created_at, row.user_id, None, _via("oauth_app", None, row.client_name),
                  f"{row.action} {row.invoice_label}: {row.outcome}" + (f" ({row.detail})" if row.detail else ""),
                  f"/invoices/{public_id('invoice', row.invoice_id)}", source=DELEGATED, row_id=row.id)
            for row in session.exec(query)]


def _uuid(text) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(text))
    except ValueError:
        return None
