"""Webhook endpoints: registered, listed and deleted (never edited), and their recent deliveries.

An endpoint subscribes to a subset of the event kinds, or to every kind (`events` omitted or
`["*"]`, which also covers kinds added later). Its url must pass the outbound address rules of
`core.netguard` here and again at every delivery. The `whsec_` secret is kept in clear because
it signs every delivery; it is shown once, in the create response.
"""

from __future__ import annotations

import base64
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field
from sqlalchemy import func
from sqlmodel import Session, select

from config.settings import get_settings
from core.base import ids
from core.base.api_types import Timestamp, UriText
from core.base.clock import iso
from core.base.errors import NotFound, ValidationFailed
from core.base.validation import WEBHOOK_ENDPOINTS_MAX, Input, PageQuery
from core.mechanisms.pagination import Page, paginate
from core.models import EVENT_TYPES, Account, InvoiceEvent, WebhookDelivery, WebhookEndpoint
from core.outbound import netguard
from core.webhooks.signing import SECRET_PREFIX

URL_MAX = 2048
SECRET_BYTES = 24
ALL_EVENTS = "*"


def _known_kind(value: str) -> str:
    if value != ALL_EVENTS and value not in EVENT_TYPES:
        raise ValueError(f"unknown event kind {value!r}; known kinds: {', '.join(EVENT_TYPES)}")
    return value


EventKind = Annotated[str, AfterValidator(_known_kind)]


class WebhookEndpointCreate(Input):
    """A new webhook endpoint."""

    url: str = Field(min_length=1, max_length=URL_MAX, description="https URL resolving to a public address")
    events: list[EventKind] | None = Field(
        default=None, min_length=1, max_length=len(EVENT_TYPES) + 1,
        description='Event kinds to receive; omit (or send ["*"]) for every kind, including future ones')


class WebhookEndpointListQuery(PageQuery):
    pass


class WebhookEndpointOut(BaseModel):
    """Where the service POSTs signed event notifications. Endpoints cannot be edited: delete and recreate."""

    id: str = Field(description="UUID")
    url: UriText = Field(description="The https URL that receives the events")
    events: list[str] = Field(description='Subscribed kinds; ["*"] means every kind, including future ones')
    active: bool = Field(description="False once disabled after 5 days of failed deliveries")
    disabled_at: Timestamp | None = Field(description="When deliveries stopped for good; null while active")
    failure_count: int = Field(description="Consecutive failed delivery attempts; reset by a success")
    created_at: Timestamp = Field(description="When the endpoint was created")


class WebhookEndpointCreatedOut(WebhookEndpointOut):
    """A new endpoint, with the signing secret shown this once."""

    secret: str = Field(description="`whsec_…` signing secret (Standard Webhooks); shown only in this response")


class WebhookEndpointDeletedOut(BaseModel):
    """The endpoint that was deleted; deliveries to it stop at once."""

    id: str = Field(description="UUID of the deleted endpoint")
    deleted: bool = Field(True, description="Always true")


def endpoint_to_api(row: WebhookEndpoint, *, with_secret: bool = False) -> dict:
    fields = dict(
        id=str(row.id), url=row.url, events=row.events if row.events is not None else [ALL_EVENTS],
        active=row.active, disabled_at=iso(row.disabled_at), failure_count=row.failure_count,
        created_at=iso(row.created_at),
    )
    if with_secret:
        return WebhookEndpointCreatedOut(**fields, secret=row.secret).model_dump()
    return WebhookEndpointOut(**fields).model_dump()


def new_secret() -> str:
    """`whsec_` and the standard base64 of 24 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def check_url(url: str, *, resolver: netguard.Resolver | None = None) -> None:
    """Refuse a url the address rules forbid, as a 422 at path `url`."""
    try:
        netguard.check_url(url, allow_hosts=get_settings().allow_hosts, resolver=resolver)
    except netguard.UnsafeAddress as exc:
        raise ValidationFailed.at("url", f"is not an allowed webhook address: {exc}") from None


def _subscribed_kinds(events: list[str] | None) -> list[str] | None:
    """None (every kind, future ones too) or the listed kinds without repeats, in order."""
    if events is None:
        return None
    if ALL_EVENTS in events:
        if len(events) > 1:
            raise ValidationFailed.at("events", f'"{ALL_EVENTS}" (every kind) cannot be combined with other kinds')
        return None
    return list(dict.fromkeys(events))


def create_endpoint(session: Session, account_id: uuid.UUID, data: WebhookEndpointCreate, *,
                    resolver: netguard.Resolver | None = None) -> WebhookEndpoint:
    events = _subscribed_kinds(data.events)
    # Resolve before touching the database, so a slow DNS answer never holds a write lock.
    check_url(data.url, resolver=resolver)
    # Serialize creations per account so that concurrent requests cannot pass the limit together.
    session.exec(select(Account.id).where(Account.id == account_id).with_for_update()).first()
    count = session.exec(select(func.count()).select_from(WebhookEndpoint)
                         .where(WebhookEndpoint.account_id == account_id)).one()
    if count >= WEBHOOK_ENDPOINTS_MAX:
        raise ValidationFailed.at(
            "body", f"an account can have at most {WEBHOOK_ENDPOINTS_MAX} webhook endpoints; delete one first")
    row = WebhookEndpoint(account_id=account_id, url=data.url, events=events, secret=new_secret())
    session.add(row)
    session.flush()
    return row


def get_endpoint(session: Session, account_id: uuid.UUID, endpoint_id: str) -> WebhookEndpoint:
    row_id = ids.parse_uuid(endpoint_id, what="webhook endpoint")
    row = session.exec(select(WebhookEndpoint).where(
        WebhookEndpoint.id == row_id, WebhookEndpoint.account_id == account_id)).first()
    if row is None:
        raise NotFound(f"No such webhook endpoint: {endpoint_id}")
    return row


def list_endpoints(session: Session, account_id: uuid.UUID, q: WebhookEndpointListQuery) -> Page:
    query = select(WebhookEndpoint).where(WebhookEndpoint.account_id == account_id)
    return paginate(session, query, WebhookEndpoint, kind="webhook_endpoints", account_id=account_id,
                    filters={}, cursor=q.cursor, limit=q.limit, created_column="created_at")


def all_endpoints(session: Session, account_id: uuid.UUID) -> list[WebhookEndpoint]:
    """Every endpoint of the account (at most 16), newest first: for the dashboard."""
    return list(session.exec(select(WebhookEndpoint).where(WebhookEndpoint.account_id == account_id)
                             .order_by(WebhookEndpoint.created_at.desc(), WebhookEndpoint.id.desc())))


def delete_endpoint(session: Session, account_id: uuid.UUID, endpoint_id: str) -> uuid.UUID:
    """Remove the endpoint at once; its pending deliveries go with it."""
    row = get_endpoint(session, account_id, endpoint_id)
    deleted_id = row.id
    # Deleted explicitly rather than left to ON DELETE CASCADE, which SQLite only honours with
    # foreign keys switched on.
    for delivery in session.exec(select(WebhookDelivery).where(WebhookDelivery.endpoint_id == deleted_id)):
        session.delete(delivery)
    session.delete(row)
    session.flush()
    return deleted_id


def deleted_to_api(endpoint_id: uuid.UUID) -> dict:
    return WebhookEndpointDeletedOut(id=str(endpoint_id)).model_dump()


# --- dashboard -------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeliverySummary:
    id: uuid.UUID
    event_id: uuid.UUID
    event_type: str
    status: str  # pending, succeeded, failed
    attempts: int
    last_status_code: int | None
    last_error: str | None
    last_attempt_at: datetime | None
    next_attempt_at: datetime | None  # None once succeeded or given up
    created_at: datetime


def recent_deliveries(session: Session, account_id: uuid.UUID, endpoint_id: uuid.UUID | str,
                      limit: int = 20) -> list[DeliverySummary]:
    """The endpoint's latest deliveries, newest first; 404 for another account's endpoint."""
    endpoint = get_endpoint(session, account_id, str(endpoint_id))
    rows = session.exec(
        select(WebhookDelivery, InvoiceEvent.type)
        .join(InvoiceEvent, InvoiceEvent.id == WebhookDelivery.event_id)
        .where(WebhookDelivery.endpoint_id == endpoint.id, WebhookDelivery.account_id == account_id)
        .order_by(WebhookDelivery.created_at.desc(), WebhookDelivery.id.desc())
        .limit(max(1, min(limit, 100))))
    return [
        DeliverySummary(
            id=row.id, event_id=row.event_id, event_type=event_type, status=row.status, attempts=row.attempts,
            last_status_code=row.last_status_code, last_error=row.last_error,
            last_attempt_at=row.last_attempt_at,
            next_attempt_at=row.next_attempt_at if row.status == "pending" else None,
            created_at=row.created_at,
        )
        for row, event_type in rows
    ]
