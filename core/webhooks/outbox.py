"""The webhook outbox: one delivery row per (event, subscribed endpoint), in the caller's transaction.

Which endpoints an event goes to is one rule, `subscribed_endpoints`: the account's active endpoints
whose `events` list names the event's kind or is absent (every kind, kinds added later too). It is
SQL, so every writer of events applies it in its own statements, whichever way it runs them.
"""

from __future__ import annotations

from sqlalchemy import Boolean, String, bindparam, insert, select
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from core.base.clock import now
from core.base.executor import Db
from core.models import WebhookDelivery, WebhookEndpoint, inserted_values, plain

ENDPOINTS, DELIVERY = WebhookEndpoint.__table__, plain(WebhookDelivery)


class subscribes_to(FunctionElement):  # noqa: N801 (SQLAlchemy names SQL functions in lower case)
    """`subscribes_to(endpoint.events, kind)`: whether an endpoint's `events` (a JSON list, or JSON or
    SQL null for every kind) takes events of `kind`."""

    type = Boolean()
    name = "subscribes_to"
    inherit_cache = True


@compiles(subscribes_to, "postgresql")
def _subscribes_postgresql(element, compiler, **kw) -> str:
    events, kind = (compiler.process(clause, **kw) for clause in element.clauses)
    return f"({events} IS NULL OR {events}::jsonb = 'null'::jsonb OR jsonb_exists({events}::jsonb, {kind}))"


@compiles(subscribes_to, "sqlite")
def _subscribes_sqlite(element, compiler, **kw) -> str:
    events, kind = (compiler.process(clause, **kw) for clause in element.clauses)
    return (f"({events} IS NULL OR {events} = 'null' OR "
            f"EXISTS (SELECT 1 FROM json_each({events}) WHERE json_each.value = {kind}))")


def subscribed_endpoints(*, account_id=None, kind=None):
    """The ids of the account's endpoints an event of the kind goes to (`:account_id`, `:kind` unless
    given as expressions)."""
    account_id = bindparam("account_id", type_=ENDPOINTS.c.account_id.type) if account_id is None else account_id
    kind = bindparam("kind", type_=String()) if kind is None else kind
    return select(ENDPOINTS.c.id).where(ENDPOINTS.c.account_id == account_id, ENDPOINTS.c.active.is_(True),
                                        subscribes_to(ENDPOINTS.c.events, kind))


SUBSCRIBED = subscribed_endpoints()
INSERT_DELIVERY = insert(WebhookDelivery.__table__)


def new_delivery(event, endpoint_id):
    """The outbox row (plain) of `event` (an `invoice_events` row) for an endpoint."""
    return DELIVERY(account_id=event.account_id, event_id=event.id, endpoint_id=endpoint_id, next_attempt_at=now())


def delivery_rows(event, endpoint_ids) -> list[dict]:
    """The values of the outbox rows of `event` for these endpoints."""
    return [inserted_values(new_delivery(event, endpoint_id)) for endpoint_id in endpoint_ids]


async def subscribers(db: Db, account_id, kind: str) -> list:
    """The ids of the endpoints an event of `kind` in the account goes to (`subscribed_endpoints`)."""
    return [row[0] for row in await db.rows(SUBSCRIBED, {"account_id": account_id, "kind": kind})]


async def enqueue(db: Db, event, endpoint_ids: list | None = None) -> None:
    """Write the outbox rows for `event` (an `invoice_events` row) to its `subscribers`, read now
    unless given (read earlier in the transaction); the worker delivers them after the commit. A unit
    of `core.base.executor`, in the transaction of the event."""
    if endpoint_ids is None:
        endpoint_ids = await subscribers(db, event.account_id, event.type)
    rows = delivery_rows(event, endpoint_ids)
    if rows:
        await db.execute_many(INSERT_DELIVERY, rows)


