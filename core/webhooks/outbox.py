"""The webhook outbox: one delivery row per (event, subscribed endpoint), in the caller's transaction."""

from __future__ import annotations

from sqlalchemy import insert, select
from sqlmodel import Session

from core.base.clock import now
from core.models import WebhookDelivery, WebhookEndpoint, inserted_values, plain


def subscribes(endpoint, event_type: str) -> bool:
    # No list means every kind, including kinds added later.
    return endpoint.events is None or event_type in endpoint.events


def enqueue(session: Session, event: dict) -> None:
    """Write the outbox rows for `event` (an `invoice_events` row's values); the worker delivers them
    after the commit."""
    endpoints = session.connection().execute(select(ENDPOINTS.c.id, ENDPOINTS.c.events).where(
        ENDPOINTS.c.account_id == event["account_id"], ENDPOINTS.c.active.is_(True)))
    rows = [inserted_values(DELIVERY(account_id=event["account_id"], event_id=event["id"],
                                            endpoint_id=endpoint.id, next_attempt_at=now()))
            for endpoint in endpoints if subscribes(endpoint, event["type"])]
    if rows:
        session.connection().execute(insert(WebhookDelivery.__table__), rows)


ENDPOINTS, DELIVERY = WebhookEndpoint.__table__, plain(WebhookDelivery)
