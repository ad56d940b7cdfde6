"""The webhook outbox: one delivery row per (event, subscribed endpoint), in the caller's transaction."""

from __future__ import annotations

from sqlmodel import Session, select

from core.base.clock import now
from core.models import InvoiceEvent, WebhookDelivery, WebhookEndpoint


def subscribes(endpoint: WebhookEndpoint, event_type: str) -> bool:
    # No list means every kind, including kinds added later.
    return endpoint.events is None or event_type in endpoint.events


def enqueue(session: Session, event: InvoiceEvent) -> list[WebhookDelivery]:
    """Write the outbox rows for `event`; the worker delivers them after the commit."""
    endpoints = session.exec(select(WebhookEndpoint).where(
        WebhookEndpoint.account_id == event.account_id, WebhookEndpoint.active.is_(True)))
    rows = [WebhookDelivery(account_id=event.account_id, event_id=event.id, endpoint_id=endpoint.id,
                            next_attempt_at=now())
            for endpoint in endpoints if subscribes(endpoint, event.type)]
    session.add_all(rows)
    return rows
