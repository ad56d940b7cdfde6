"""The fast read path: `get_invoice` for an API key, as the pipeline runs it, in a fraction of its time.

The pipeline (`operations.pipeline`) serves every operation through the ORM in a worker thread. The
most frequent read is served here instead: on PostgreSQL on the event loop with asyncpg, one
statement (the key's check, the request's count, the key's last use, the invoice with its parties
and lines), no ORM, no response models; on SQLite with Core statements in one thread. It keeps the
pipeline's order and answers: a credential it would refuse (401), a missing scope (403) or an id it would not read is
left to the pipeline before anything is counted (`None`), so those answers stay the pipeline's
own; a limit reached is the same 429, an invoice not found the same 404, and the object is rendered
by the same functions (`core.billing.invoice_render`). `tests/api/test_fast_reads.py` checks the
bytes against the pipeline's, on both databases.

On PostgreSQL the statement also reads the version of the invoice's rows (`invoice_reads.version_statement`);
only when it differs from the version whose JSON this process keeps (`invoice_reads.Rendered`) does a
second statement read the invoice whole: a read of an unchanged invoice is one short statement and
renders nothing.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass

import anyio

from config.settings import get_settings
from core.access import apikeys
from core.access.credentials import bearer_token
from core.access.principal import Principal
from core.base import context, crypto, ids, raw
from core.base.clock import now, today
from core.base.db import engine_for_reads, get_engine
from core.base.errors import DomainError, Forbidden, NotFound, Unauthorized, UpstreamFailed
from core.base.jsonout import dumps_read
from core.billing import invoice_reads
from core.mechanisms import ratelimit
from core.mechanisms.ratelimit import Usage
from core.models import ApiKey
from operations import invoices as invoice_operations

READ_SCOPE = invoice_operations.get_invoice.scope  # the operation this path serves
KEYS = ApiKey.__table__


@dataclass(frozen=True)
class Answer:
    """What the fast path answers: the invoice's API object as JSON, or the error the pipeline would give."""

    invoice_json: bytes | None
    error: DomainError | None
    usage: Usage | None


def _key_statement():
    from sqlalchemy import bindparam, select
    return select(*(KEYS.c[name] for name in apikeys.KEY_COLUMNS)).where(KEYS.c.lookup_id == bindparam("lookup_id"))


def _touch_statement():
    from sqlalchemy import bindparam, update
    return update(KEYS).where(KEYS.c.id == bindparam("key_id")).values(last_used_at=bindparam("moment"))


KEY_STATEMENT, TOUCH_STATEMENT = _key_statement(), _touch_statement()
INVOICE_STATEMENT_SQLITE = invoice_reads.invoice_statement(lines_in_row=False)
LINES_STATEMENT = invoice_reads.lines_statement()
SQLITE_LAYOUT = invoice_reads.Layout.of(INVOICE_STATEMENT_SQLITE)
GATE = apikeys.valid_key(READ_SCOPE, ratelimit.bucket_prefix(ratelimit.API_REQUESTS))
RENDERED = invoice_reads.Rendered(limit=4 * 1024 * 1024)  # of JSON; a ten-line invoice is ~4.5 KB


@functools.cache
def _counted_statement(counting_statement) -> tuple[raw.Text, int, invoice_reads.Layout]:
    """PostgreSQL, one statement: the gate; the request counted only when it passed; the key's last
    use written when it is a minute old; the invoice's version only when the count allowed the
    request. Its row: the count's columns (how many: the second value), the version (null: no such
    invoice in the account), the key's (`k_…`, laid out by the third); no row when the gate refused the key."""
    from sqlalchemy import bindparam, select, true, update
    counted = counting_statement.cte("counted")
    touched = (update(KEYS).where(KEYS.c.id == GATE.c.id, counted.c.allowed, apikeys.stale_use_clause(GATE.c.last_used_at))
               .values(last_used_at=bindparam("moment")).returning(KEYS.c.id).cte("touched"))
    current = invoice_reads.version_statement(account=GATE.c.account_id).lateral("current")
    statement = (select(*counted.c, current.c.version, *(GATE.c[name].label(f"k_{name}") for name in apikeys.KEY_COLUMNS))
                 .select_from(GATE.join(counted, true()).outerjoin(current, counted.c.allowed))
                 .add_cte(touched))
    width = len(counted.c)
    return raw.postgres_text(statement), width, invoice_reads.Layout.of(statement, skip=width + 1, parse_json=True)


def _invoice_statement() -> tuple[raw.Text, invoice_reads.Layout]:
    """PostgreSQL: the invoice whole, with its version first (read when the version kept is not the current one)."""
    statement = invoice_reads.invoice_statement(lines_in_row=True, with_version=True)
    return raw.postgres_text(statement), invoice_reads.Layout.of(statement, skip=1, parse_json=True)


INVOICE_STATEMENT_POSTGRESQL = _invoice_statement()


def _caller(authorization: str | None, invoice_ref: str) -> tuple[str, str, object] | None:
    """The key's lookup id and secret and the invoice's id, or None for what the pipeline handles."""
    try:
        token = bearer_token(authorization)
        if not apikeys.looks_like_api_key(token):
            return None  # an OAuth access token: its verifier is the authorization server's
        lookup_id, secret = apikeys.split(token)
    except Unauthorized:
        return None
    invoice_id = ids.try_parse("invoice", invoice_ref)
    return (lookup_id, secret, invoice_id) if invoice_id is not None else None


def _principal(key_row, secret: str, moment) -> Principal | None:
    """The caller when the pipeline would let it read invoices; None when it would refuse it."""
    try:
        principal = apikeys.verified(key_row, secret, moment)
        principal.require(READ_SCOPE)
    except (Unauthorized, Forbidden):
        return None
    context.note_caller(principal.account_id, principal.credential_label)
    return principal


def _not_found(invoice_ref: str) -> NotFound:
    return NotFound(f"No such invoice: {invoice_ref}")


async def get_invoice(authorization: str | None, invoice_ref: str) -> Answer | None:
    """GET /invoices/{id} for an API key; None: let the pipeline answer (nothing was counted)."""
    caller = _caller(authorization, invoice_ref)
    if caller is None:
        return None
    if get_engine().dialect.name != "postgresql":
        return await anyio.to_thread.run_sync(_get_invoice_sqlite, *caller, invoice_ref)
    try:
        return await _get_invoice_postgresql(*caller, invoice_ref)
    except _DROPPED:  # a connection the database dropped (a restart): once more, on a new one
        try:
            return await _get_invoice_postgresql(*caller, invoice_ref)
        except _DROPPED:
            return Answer(None, UpstreamFailed("The database is unavailable; retry the request."), None)


def _dropped() -> tuple[type[BaseException], ...]:
    import asyncpg
    return (asyncpg.PostgresConnectionError, asyncpg.InterfaceError, ConnectionError, asyncio.TimeoutError)


_DROPPED = _dropped()


async def _get_invoice_postgresql(lookup_id: str, secret: str, invoice_id, invoice_ref: str) -> Answer | None:
    moment = now()
    count = ratelimit.counting("postgresql", ratelimit.api_requests(), "", source=GATE)  # the gate names the bucket
    text, width, layout = _counted_statement(count.statement)
    connections = raw.postgres_connections()
    row = await _query(connections, text.sql, text.arguments({
        **count.parameters, "lookup_id": lookup_id, "secret_hash": crypto.sha256_hex(secret), "moment": moment,
        "stale_before": apikeys.stale_before(moment), "invoice_id": invoice_id}))
    if row is None:
        return None  # refused by the gate, and not counted: the pipeline says why
    values = tuple(row)
    principal = _principal(invoice_reads.key_view(values, layout), secret, moment)
    if principal is None:
        return None
    usage = count.usage(values[:width])
    if usage.exceeded:
        return Answer(None, usage.error("requests"), usage)
    version = values[width]
    stamp = (today(), get_settings().origin)  # what the JSON depends on besides the rows
    kept = RENDERED.kept(invoice_id, stamp) if version is not None else None
    if kept is not None and kept[0] == version:
        return Answer(kept[1], None, usage)
    read, read_layout = INVOICE_STATEMENT_POSTGRESQL
    row = await _query(connections, read.sql, read.arguments({"invoice_id": invoice_id,
                                                              "account_id": principal.account_id}))
    if row is None:  # none, or deleted since
        return Answer(None, _not_found(invoice_ref), usage)
    values = tuple(row)
    encoded = dumps_read(invoice_reads.render(values, read_layout, today=stamp[0]))
    RENDERED.keep(invoice_id, values[0], stamp, encoded)
    return Answer(encoded, None, usage)


async def _query(connections: raw.Connections, sql: str, arguments: list):
    return await connections.fetchrow(sql, arguments)


def _get_invoice_sqlite(lookup_id: str, secret: str, invoice_id, invoice_ref: str) -> Answer | None:
    reads = engine_for_reads()
    with reads.connect() as connection:  # a deferred BEGIN: no write turn taken for reading
        key = connection.execute(KEY_STATEMENT, {"lookup_id": lookup_id}).first()
    moment = now()
    principal = _principal(key, secret, moment)
    if principal is None:
        return None
    count = ratelimit.counting("sqlite", ratelimit.api_requests(), principal.rate_limit_subject)
    with get_engine().begin() as connection:  # the write turn and BEGIN IMMEDIATE of core.base.db
        usage = count.usage(tuple(connection.execute(count.statement, count.parameters).one()))
        if not usage.exceeded and apikeys.stale_use(key, moment):
            connection.execute(TOUCH_STATEMENT, {"key_id": principal.api_key_id, "moment": moment})
    if usage.exceeded:
        return Answer(None, usage.error("requests"), usage)
    with reads.connect() as connection:
        row = connection.execute(INVOICE_STATEMENT_SQLITE, {"invoice_id": invoice_id,
                                                            "account_id": principal.account_id}).first()
        lines = connection.execute(LINES_STATEMENT, {"invoice_id": invoice_id}).all() if row is not None else []
    if row is None:
        return Answer(None, _not_found(invoice_ref), usage)
    return Answer(dumps_read(invoice_reads.render(tuple(row), SQLITE_LAYOUT, lines, today=today())), None, usage)
