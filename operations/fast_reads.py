"""The fast read path: `get_invoice` and `list_invoices` for an API key, as the pipeline runs them, in
a fraction of their time.

The pipeline (`operations.pipeline`) serves every operation through the ORM in a worker thread. The
most frequent reads are served here instead (REST's lane, and MCP's for `get_invoice`). An invoice:
on PostgreSQL on the event loop with asyncpg, one statement (the key's check, the request's count,
the key's last use, the version of the invoice's rows), no ORM, no response models; only when that
version differs from the one whose JSON this process keeps (`invoice_reads.Rendered`) does a second
statement read the invoice whole with its parties and lines. On SQLite, Core statements in one
thread, every read rendered. A page of the list likewise (below).

It keeps the pipeline's order and answers: a credential it would refuse (401), a missing scope (403)
or an id it would not read is left to the pipeline before anything is counted (`None`), so those
answers stay the pipeline's own; a limit reached is the same 429, an invoice not found the same 404,
and the objects are rendered by the same functions (`core.billing.invoice_render`).
`tests/api/test_fast_reads.py` and `test_fast_lists.py` check the bytes against the pipeline's, on
both databases.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import date

import anyio
import orjson

from config.settings import get_settings
from core.access import apikeys
from core.access.credentials import bearer_token
from core.access.principal import Principal
from core.base import context, crypto, ids, raw
from core.base.clock import now, today
from core.base.db import UNAVAILABLE, get_engine
from core.base.errors import DomainError, Forbidden, NotFound, Unauthorized, UpstreamFailed, ValidationFailed
from core.base.executor import DROPPED
from core.base.jsonout import dumps_read
from core.base.validation import parse
from core.billing import invoice_reads
from core.billing.invoice_inputs import InvoiceListQuery
from core.billing.invoice_render import INVOICE_STATUSES
from core.billing.invoices import list_conditions, list_filters
from core.mechanisms import ratelimit
from core.mechanisms.pagination import (
    Position,
    clamp_limit,
    decode_cursor,
    encode_cursor,
    last_page_row,
    position_of,
)
from core.mechanisms.ratelimit import Usage
from core.models import ApiKey
from operations import invoices as invoice_operations

READ_SCOPE = invoice_operations.get_invoice.scope  # the operations this path serves need it, and nothing else
assert invoice_operations.list_invoices.scope == READ_SCOPE
KEYS = ApiKey.__table__


@dataclass(frozen=True)
class Answer:
    """What the fast path answers: the response's JSON body (`{"data": …}`), or the error the pipeline would give."""

    body: bytes | None
    error: DomainError | None
    usage: Usage | None


INVOICE_STATEMENT_SQLITE = invoice_reads.invoice_statement(lines_in_row=False)
LINES_STATEMENT = invoice_reads.lines_statement()
SQLITE_LAYOUT = invoice_reads.Layout.of(INVOICE_STATEMENT_SQLITE)
GATE = apikeys.valid_key(READ_SCOPE, ratelimit.bucket_prefix(ratelimit.API_REQUESTS))
RENDERED = invoice_reads.Rendered(limit=4 * 1024 * 1024)  # of JSON; a ten-line invoice is ~4.5 KB
RENDERED_ITEMS = invoice_reads.Rendered(limit=2 * 1024 * 1024)  # invoices as a list shows them, ~1.3 KB each


@functools.cache
def _counted_statement(counting_statement, reading: tuple) -> tuple[raw.Text, int, int, invoice_reads.Layout]:
    """PostgreSQL, one statement: the gate; the request counted only when it passed; the key's last
    use written when it is a minute old; what `reading` names (`_reading`) only when the count allowed
    the request. Its row: the count's columns (how many: the second value), what was read (how many:
    the third), the key's (`k_…`, laid out by the fourth); no row when the gate refused the key."""
    from sqlalchemy import bindparam, select, true, update
    counted = counting_statement.cte("counted")
    touched = (update(KEYS).where(KEYS.c.id == GATE.c.id, counted.c.allowed, apikeys.stale_use_clause(GATE.c.last_used_at))
               .values(last_used_at=bindparam("moment")).returning(KEYS.c.id).cte("touched"))
    read = _reading(*reading)
    statement = (select(*counted.c, *read.c, *(GATE.c[name].label(f"k_{name}") for name in apikeys.KEY_COLUMNS))
                 .select_from(GATE.join(counted, true()).outerjoin(read, counted.c.allowed))
                 .add_cte(touched))
    width, read_width = len(counted.c), len(read.c)
    return (raw.postgres_text(statement), width, read_width,
            invoice_reads.Layout.of(statement, skip=width + read_width, parse_json=True))


def _reading(what: str, *shape):
    """What the counted statement reads for the gate's account: an invoice's version (`version`), or
    the ids, creation times and versions of a page of the list of the given shape (`_page_shape`)."""
    if what == "invoice":
        return invoice_reads.version_statement(account=GATE.c.account_id).lateral("current")
    from sqlalchemy import select
    # The account as a value of its own (an InitPlan), not a join: so the account's index gives the
    # page in its order and only the page is read.
    account = select(GATE.c.account_id).scalar_subquery()
    return invoice_reads.page_versions_statement(account=account, conditions=_page_conditions(*shape[:3]),
                                                 after=shape[3], rows=shape[4]).lateral("page")


def _invoice_statement() -> tuple[raw.Text, invoice_reads.Layout]:
    """PostgreSQL: the invoice whole, with its version first (read when the version kept is not the current one)."""
    statement = invoice_reads.invoice_statement(lines_in_row=True, with_version=True)
    return raw.postgres_text(statement), invoice_reads.Layout.of(statement, skip=1, parse_json=True)


INVOICE_STATEMENT_POSTGRESQL = _invoice_statement()


def api_key_of(authorization: str | None) -> tuple[str, str] | None:
    """The API key's lookup id and secret, or None for what the pipeline handles."""
    try:
        token = bearer_token(authorization)
        if not apikeys.looks_like_api_key(token):
            return None  # an OAuth access token: its verifier is the authorization server's
        return apikeys.split(token)
    except Unauthorized:
        return None


def _caller(authorization: str | None, invoice_ref: str) -> tuple[str, str, object] | None:
    """The key's lookup id and secret and the invoice's id, or None for what the pipeline handles."""
    credential = api_key_of(authorization)
    invoice_id = ids.try_parse("invoice", invoice_ref)
    return (*credential, invoice_id) if credential is not None and invoice_id is not None else None


def principal_of(key_row, secret: str, moment, scope: str = READ_SCOPE) -> Principal | None:
    """The caller when the pipeline would let it act with `scope`; None when it would refuse it."""
    try:
        principal = apikeys.verified(key_row, secret, moment)
        principal.require(scope)
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
    return await once_more_if_dropped(_get_invoice_postgresql, *caller, invoice_ref)


async def once_more_if_dropped(read, *arguments) -> Answer | None:
    """`read`, once more on a new connection when the database dropped the first (a restart)."""
    try:
        return await read(*arguments)
    except DROPPED:
        try:
            return await read(*arguments)
        except DROPPED:
            return Answer(None, UpstreamFailed(UNAVAILABLE), None)


@dataclass(frozen=True)
class _Counted:
    """The counted statement's answer for an allowed key: the caller, its standing, what was read."""

    principal: Principal
    usage: Usage
    read: tuple


async def _count_and_read(lookup_id: str, secret: str, reading: tuple, parameters: dict) -> _Counted | Answer | None:
    """Run the counted statement: None when the pipeline must answer (nothing was counted), the 429
    when the limit is reached, else what was read."""
    moment = now()
    count = ratelimit.counting("postgresql", ratelimit.api_requests(), "", source=GATE)  # the gate names the bucket
    text, width, read_width, layout = _counted_statement(count.statement, reading)
    row = await _query(raw.postgres_connections(), text.sql, text.arguments({
        **count.parameters, **parameters, "lookup_id": lookup_id, "secret_hash": crypto.sha256_hex(secret),
        "moment": moment, "stale_before": apikeys.stale_before(moment)}))
    if row is None:
        return None  # refused by the gate, and not counted: the pipeline says why
    values = tuple(row)
    principal = principal_of(invoice_reads.key_view(values, layout), secret, moment)
    if principal is None:
        return None
    usage = count.usage(values[:width])
    if usage.exceeded:
        return Answer(None, usage.error("requests"), usage)
    return _Counted(principal, usage, values[width:width + read_width])


def _stamp() -> tuple:
    """What an invoice's JSON depends on besides its rows: the day (overdue) and the public links' origin."""
    return today(), get_settings().origin


async def _get_invoice_postgresql(lookup_id: str, secret: str, invoice_id, invoice_ref: str) -> Answer | None:
    counted = await _count_and_read(lookup_id, secret, ("invoice",), {"invoice_id": invoice_id})
    if not isinstance(counted, _Counted):
        return counted
    (version,), usage, stamp = counted.read, counted.usage, _stamp()
    kept = RENDERED.kept([invoice_id], [version], stamp)[0] if version is not None else None
    if kept is not None:
        return Answer(_data(kept), None, usage)
    read, read_layout = INVOICE_STATEMENT_POSTGRESQL
    row = await _query(raw.postgres_connections(), read.sql, read.arguments({
        "invoice_id": invoice_id, "account_id": counted.principal.account_id}))
    if row is None:  # none, or deleted since
        return Answer(None, _not_found(invoice_ref), usage)
    values = tuple(row)
    encoded = dumps_read(invoice_reads.render(values, read_layout, today=stamp[0]))
    RENDERED.keep(invoice_id, values[0], stamp, encoded)
    return Answer(_data(encoded), None, usage)


def _data(encoded: bytes) -> bytes:
    return b'{"data":' + encoded + b"}"


# --- GET /invoices --------------------------------------------------------------------------------
# A page of the list. On PostgreSQL the counted statement reads the page's ids and versions; the
# items whose JSON this process keeps under their version are not read again, and when any is not,
# a second statement reads the page whole. On SQLite the page is read whole and rendered. A filter
# by customer or number, an invalid query or a cursor that is not ours goes to the pipeline, before
# anything is counted.


async def list_invoices(authorization: str | None, query: dict[str, str]) -> Answer | None:
    """GET /invoices for an API key; None: let the pipeline answer (nothing was counted)."""
    credential = api_key_of(authorization)
    if credential is None:
        return None
    try:
        listing = parse(InvoiceListQuery, query)
        limit = clamp_limit(listing.limit)
    except ValidationFailed:
        return None  # the pipeline's 422, after counting the request
    after = position_of(listing.cursor) if listing.cursor else None
    if listing.customer is not None or listing.number or (listing.cursor and after is None):
        return None
    if get_engine().dialect.name != "postgresql":
        return await anyio.to_thread.run_sync(_list_invoices_sqlite, *credential, listing, limit, after)
    return await once_more_if_dropped(_list_invoices_postgresql, *credential, listing, limit, after)


def _page_shape(listing: InvoiceListQuery, after: Position | None, rows: int) -> tuple:
    """What a page's statement is written for: the status filter, whether issue dates bound it, a
    cursor, how many rows it reads."""
    return (listing.status if listing.status in ("open", "overdue") else "exact" if listing.status in INVOICE_STATUSES
            else None, listing.from_ is not None, listing.to is not None, after is not None, rows)


def _page_conditions(status: str | None, issued_from: bool, issued_to: bool) -> list:
    """`list_conditions` with parameters for the values, for the shape's statement written once."""
    from sqlalchemy import bindparam
    columns = invoice_reads.INVOICES.c
    types = {"on_day": columns.due_date.type, "status": columns.status.type, "issued_from": columns.issue_date.type,
             "issued_to": columns.issue_date.type}
    return list_conditions("draft" if status == "exact" else status, None, date.min if issued_from else None,
                           date.min if issued_to else None, None, date.min,
                           bind=lambda name, _value: bindparam(name, type_=types[name]))


@functools.cache
def _page_statement(shape: tuple) -> tuple[raw.Text, invoice_reads.Layout]:
    statement = invoice_reads.page_statement(conditions=_page_conditions(*shape[:3]), after=shape[3], rows=shape[4])
    return raw.postgres_text(statement), invoice_reads.Layout.of(statement, skip=1, parse_json=True)


async def _list_invoices_postgresql(lookup_id: str, secret: str, listing: InvoiceListQuery, limit: int,
                                    after: Position | None) -> Answer | None:
    stamp, shape = _stamp(), _page_shape(listing, after, limit + 1)  # a page and one more: is there a next?
    parameters = _page_parameters(listing, after, stamp[0])
    counted = await _count_and_read(lookup_id, secret, ("page", *shape), parameters)
    if not isinstance(counted, _Counted):
        return counted
    principal, usage = counted.principal, counted.usage
    filters = list_filters(listing, None)
    if after is not None:
        try:
            decode_cursor(listing.cursor, "invoices", principal.account_id, filters)  # this account's, these filters'
        except ValidationFailed as error:
            return Answer(None, error, usage)
    page_ids, created, versions = (list(column or ()) for column in counted.read)
    items = RENDERED_ITEMS.kept(page_ids, versions, stamp)
    if None in items:  # read the page whole, as it is now, and render what is not kept
        text, layout = _page_statement(shape)
        rows = await _query_all(raw.postgres_connections(), text.sql,
                                text.arguments({**parameters, "account_id": principal.account_id}))
        page_ids, created = [row["id"] for row in rows], [row["created"] for row in rows]
        items = [kept or _rendered_item(row, layout, stamp)
                 for row, kept in zip(rows, RENDERED_ITEMS.kept(page_ids, [row[0] for row in rows], stamp), strict=True)]
    return Answer(_page_body(items, created, page_ids, limit, principal, filters), None, usage)


def _page_parameters(listing: InvoiceListQuery, after: Position | None, day: date) -> dict:
    return {"on_day": day, "status": listing.status, "issued_from": listing.from_, "issued_to": listing.to,
            "after_created": after.created if after else None, "after_id": after.id if after else None}


def _page_body(items: list[bytes], created: list, page_ids: list, limit: int, principal: Principal,
               filters: dict) -> bytes:
    """`{data, next_cursor}` of a page read with one row more than it shows (there is a next page when
    that row is there)."""
    items, last = last_page_row(items, limit)
    next_cursor = None
    if last is not None:
        next_cursor = encode_cursor("invoices", principal.account_id, filters, Position(created[limit - 1],
                                                                                       page_ids[limit - 1]))
    return b'{"data":[' + b",".join(items) + b'],"next_cursor":' + orjson.dumps(next_cursor) + b"}"


def _rendered_item(row, layout: invoice_reads.Layout, stamp: tuple) -> bytes:
    values = tuple(row)
    encoded = dumps_read(invoice_reads.render(values, layout, today=stamp[0], with_lines=False))
    RENDERED_ITEMS.keep(row["id"], values[0], stamp, encoded)
    return encoded


async def _query(connections: raw.Connections, sql: str, arguments: list):
    return await connections.fetchrow(sql, arguments)


async def _query_all(connections: raw.Connections, sql: str, arguments: list) -> list:
    return await connections.fetch(sql, arguments)


def count_sqlite(connection, lookup_id: str, secret: str, scope: str = READ_SCOPE, within=None):
    """SQLite: the key read, then the request counted in the write turn (and the key's use noted), and,
    when it is allowed, `within(principal, moment)` in the same turn (the fast writes claim their key
    there): None when the pipeline must answer (nothing was counted), the 429 when the limit is
    reached, else (principal, usage, what `within` gave)."""
    found = raw.sqlite_text(apikeys.KEY_STATEMENT).run(connection, {"lookup_id": lookup_id})
    moment = now()
    principal = principal_of(found[0] if found else None, secret, moment, scope)
    if principal is None:
        return None
    count = ratelimit.counting("sqlite", ratelimit.api_requests(), principal.rate_limit_subject)
    done = None
    with raw.sqlite_writing(connection):
        usage = count.usage(tuple(raw.sqlite_text(count.statement).run(connection, count.parameters)[0]))
        if not usage.exceeded:
            if apikeys.stale_use(found[0], moment):
                raw.sqlite_text(apikeys.TOUCH_STATEMENT).run(connection, {"key_id": principal.api_key_id, "moment": moment})
            done = within(principal, moment) if within is not None else None
    if usage.exceeded:
        return Answer(None, usage.error("requests"), usage)
    return principal, usage, done


def _get_invoice_sqlite(lookup_id: str, secret: str, invoice_id, invoice_ref: str) -> Answer | None:
    with raw.sqlite_connection() as connection:
        counted = count_sqlite(connection, lookup_id, secret)
        if not isinstance(counted, tuple):
            return counted
        principal, usage, _ = counted
        with raw.sqlite_reading(connection):
            found = raw.sqlite_text(INVOICE_STATEMENT_SQLITE).run(connection, {
                "invoice_id": invoice_id, "account_id": principal.account_id})
            lines = raw.sqlite_text(LINES_STATEMENT).run(connection, {"invoice_id": invoice_id}) if found else []
    if not found:
        return Answer(None, _not_found(invoice_ref), usage)
    return Answer(_data(dumps_read(invoice_reads.render(tuple(found[0]), SQLITE_LAYOUT, lines, today=today()))), None,
                  usage)


def _list_invoices_sqlite(lookup_id: str, secret: str, listing: InvoiceListQuery, limit: int,
                          after: Position | None) -> Answer | None:
    """SQLite: counted as a read of an invoice is, then the page read whole and every item rendered
    (no row versions to keep rendered items under)."""
    with raw.sqlite_connection() as connection:
        counted = count_sqlite(connection, lookup_id, secret)
        if not isinstance(counted, tuple):
            return counted
        principal, usage, _ = counted
        filters = list_filters(listing, None)
        if after is not None:
            try:
                decode_cursor(listing.cursor, "invoices", principal.account_id, filters)
            except ValidationFailed as error:
                return Answer(None, error, usage)
        day = today()
        statement, layout = _page_statement_sqlite(_page_shape(listing, after, limit + 1))
        rows = raw.sqlite_text(statement).run(connection, {**_page_parameters(listing, after, day),
                                                           "account_id": principal.account_id})
    items = [dumps_read(invoice_reads.render(tuple(row), layout, today=day, with_lines=False)) for row in rows]
    return Answer(_page_body(items, [row.created for row in rows], [row.id for row in rows], limit, principal, filters),
                  None, usage)


@functools.cache
def _page_statement_sqlite(shape: tuple):
    statement = invoice_reads.page_statement(conditions=_page_conditions(*shape[:3]), after=shape[3], rows=shape[4],
                                             with_versions=False)
    return statement, invoice_reads.Layout.of(statement)
