"""The fast write path: `POST /invoices` and `POST /invoices/{id}/finalize` for an API key, as the
pipeline runs them, in two and three statements and no ORM.

The pipeline (`operations.pipeline`) creates a draft in a worker thread in three units: the key's check
and the request's count, the idempotency key's claim, then the draft with its lines, history and outbox
rows (Core statements, `invoices.create_invoice`) and the stored answer in one transaction. Here, on
the event loop with asyncpg:

1. One statement checks the key (with the write scope), counts the request, notes the key's use,
   reads the customer and the business profile, and claims the idempotency key: only when the request
   is allowed and the draft can be made (the customer is the account's and not archived, a currency
   is known).
2. The draft is built and computed by the same functions as the pipeline's (`invoices.draft_of`,
   `invoices.draft_shown`, `events.new_event`, `outbox.new_delivery`), its answer and event made from them.
3. One statement, on a connection whose commit is flushed to disk, stores the answer under the claim
   and, only when the claim is still this request's, writes the invoice, its lines, its event and
   the event's outbox rows: all of it or none.

Finalize: the same claim; then the pipeline's own finalization (`core.billing.finalization.finalize`)
with the stored answer in one transaction; a lost claim rolls it back, and the number with it.

On SQLite (`operations.fast_writes_sqlite`) the same steps run on the engine's sqlite3 connections in
two write turns.

Whatever is not that plain success is left to the pipeline: before anything is counted (`None`: a
malformed body, a line with a catalog price, another credential, a missing scope), or after the count
(`Handover`: a key taken already, an unknown or archived customer, no currency), when the pipeline
runs uncounted and gives its own answer. `tests/api/test_fast_writes.py` checks the rows and bytes
against the pipeline's.
"""

from __future__ import annotations

import functools
import json
import logging
import secrets
import uuid
from dataclasses import dataclass
from datetime import UTC

import anyio
import orjson
from sqlalchemy import JSON

from core.access import apikeys
from core.access.principal import Principal
from core.base import crypto, executor, ids, raw
from core.base.clock import now
from core.base.db import UNAVAILABLE, DecimalText, UTCDateTime, get_engine
from core.base.errors import Conflict, DomainError, UpstreamFailed
from core.base.executor import DROPPED
from core.base.validation import load_json, parse
from core.billing import events, invoice_reads, invoices
from core.billing.invoice_inputs import InvoiceCreate
from core.mechanisms import idempotency, ratelimit
from core.mechanisms.idempotency import StoredResponse as Reply
from core.models import (
    InvoiceEvent,
    WebhookDelivery,
    WebhookEndpoint,
)
from core.webhooks import outbox
from operations import fast_reads, fast_writes_sqlite, pipeline
from operations.fast_reads import Answer
from operations.write_lane import (
    BUSINESSES,
    CREATE,
    CUSTOMERS,
    FINALIZE,
    INVOICES,
    LINES,
    NO_ACCOUNT,
    RECORDS,
    Handover,
    Request,
    call_of,
    drafted,
)

KEYS = fast_reads.KEYS
log = logging.getLogger("invoicing.operations")


@dataclass(frozen=True)
class _Claimed:
    """A request counted, allowed and holding its idempotency key: the caller and what was read."""

    principal: Principal
    usage: ratelimit.Usage
    claim: idempotency.Claim
    values: tuple
    layout: invoice_reads.Layout


async def _served(postgresql, sqlite, request: Request, *arguments) -> Answer | Handover | None:
    """`postgresql` on PostgreSQL, or `sqlite` (of `fast_writes_sqlite`) in a thread."""
    if get_engine().dialect.name != "postgresql":
        return await anyio.to_thread.run_sync(sqlite, request, *arguments)
    try:
        return await postgresql(request, *arguments)
    except DROPPED:  # not repeated: the claim or the write may have been done
        return Answer(None, UpstreamFailed(UNAVAILABLE), None)


async def _count_and_claim(request: Request, credential: tuple[str, str], operation, fingerprint: str,
                           parameters: dict) -> _Claimed | Answer | Handover | None:
    """Run the claiming statement of `operation`: None when the pipeline must answer uncounted, the
    429, a `Handover` when the key is not claimed, else the claim."""
    lookup_id, secret = credential
    moment = now()
    claim = idempotency.Claim(uuid.uuid4(), secrets.token_hex(16))
    gate = _gate(operation.scope)
    count = ratelimit.counting("postgresql", ratelimit.api_requests(), "", source=gate)
    text, width, layout = _claiming_statement(count.statement, operation.scope, operation is CREATE)
    method, path = request.scope
    row = await raw.postgres_connections().fetchrow(text.sql, text.arguments({
        **count.parameters, **parameters, "lookup_id": lookup_id, "secret_hash": crypto.sha256_hex(secret),
        "moment": moment, "stale_before": apikeys.stale_before(moment), "claim_id": claim.record_id, "method": method,
        "path": path, "key": request.idempotency_key, "request_hash": fingerprint,
        "locked_until": moment + idempotency.LEASE, "claim_token": claim.token}))
    if row is None:
        return None  # refused by the gate, and not counted: the pipeline says why
    values = tuple(row)
    principal = fast_reads.principal_of(invoice_reads.key_view(values, layout), secret, moment, operation.scope)
    if principal is None:
        return None
    usage = count.usage(values[:width])
    if usage.exceeded:
        return Answer(None, usage.error("requests"), usage)
    if values[width] is None:  # not claimed: the key is taken, or the pipeline refuses the request
        return Handover(usage)
    return _Claimed(principal.with_request_id(request.request_id), usage, claim, values, layout)


async def _release(claim: idempotency.Claim) -> None:
    """Forget the claim, as the pipeline does after a fault (a retry with the key runs again)."""
    try:
        await raw.postgres_connections().fetchrow(RELEASE_STATEMENT, [claim.record_id, claim.token])
    except Exception:  # the lease lapses in its time, and a retry takes the key over
        log.warning("could not release an idempotency claim", exc_info=True)


# --- POST /invoices -------------------------------------------------------------------------------


async def create_invoice(request: Request) -> Answer | Handover | None:
    """POST /invoices; None or a `Handover`: let the pipeline answer."""
    credential = request.claimable()
    if credential is None:
        return None
    try:
        body_json = load_json(request.body)
        data = parse(InvoiceCreate, body_json)
        customer_id = ids.try_parse("customer", data.customer)
        if customer_id is None or any(item.price is not None for item in data.items):
            return None  # the pipeline's 404, or lines read from the catalog
        # Built before the account and its default currency are known (set once they are, with the
        # amount in words): a draft the pipeline would refuse is its own to refuse.
        draft = invoices.draft_of({}, NO_ACCOUNT, customer_id, data.currency, data, rows=invoices.PLAIN_ROWS)
    except DomainError:
        return None  # the pipeline's error, after counting the request
    return await _served(_create, fast_writes_sqlite.create, request, credential, body_json, data, customer_id, draft)


async def _create(request: Request, credential, body_json, data: InvoiceCreate, customer_id: uuid.UUID,
                  draft: tuple) -> Answer | Handover | None:
    claimed = await _count_and_claim(request, credential, CREATE, request.fingerprint(body_json), {
        "customer_id": customer_id, "currency_given": data.currency is not None})
    if not isinstance(claimed, _Claimed):
        return claimed
    try:
        return await _write_draft(claimed, request, data, draft)
    except BaseException:
        await _release(claimed.claim)
        raise


async def _write_draft(claimed: _Claimed, request: Request, data: InvoiceCreate, draft: tuple) -> Answer:
    parts = claimed.layout.parts
    invoice, lines, shown, reply = drafted(claimed.principal, parts["c_"].view(claimed.values),
                                           parts["b_"].view(claimed.values), request, data, draft)
    history = _history(invoice, "invoice.created", shown, claimed.principal)
    written = await raw.postgres_connections(durable=True).fetchrow(CREATE_STATEMENT, [
        *_finishing(claimed.claim, reply), *history, _row_json(invoice), _rows_json(lines)])
    if not written[0]:
        return Answer(None, Conflict(idempotency.LOST_CLAIM), claimed.usage)
    return Answer(reply.body.encode(), None, claimed.usage)


# --- POST /invoices/{id}/finalize -----------------------------------------------------------------


async def finalize_invoice(request: Request) -> Answer | Handover | None:
    """POST /invoices/{id}/finalize; None or a `Handover`: let the pipeline answer."""
    credential = request.claimable()
    if credential is None or ids.try_parse("invoice", request.params.get("id")) is None:
        return None
    return await _served(_finalize, fast_writes_sqlite.finalize, request, credential)


# The fast write of each operation served, by the operation's name.
WRITES = {CREATE.name: create_invoice, FINALIZE.name: finalize_invoice}


async def _finalize(request: Request, credential) -> Answer | Handover | None:
    claimed = await _count_and_claim(request, credential, FINALIZE, request.fingerprint(None), {})
    if not isinstance(claimed, _Claimed):
        return claimed
    try:
        _, reply = await executor.run(pipeline.handled, FINALIZE, call_of(claimed.principal, request),
                                      claimed.claim, request.presenter)
    except Conflict as lost:  # the claim was taken over meanwhile
        return Answer(None, lost, claimed.usage)
    except UpstreamFailed as unreachable:  # a retry with the key runs again
        await _release(claimed.claim)
        return Answer(None, unreachable, claimed.usage)
    except DomainError:  # refused by the same function: the pipeline answers (and keeps the answer)
        await _release(claimed.claim)
        return Handover(claimed.usage)
    except BaseException:
        await _release(claimed.claim)
        raise
    return Answer(reply.body.encode(), None, claimed.usage)


def _finishing(claim: idempotency.Claim, reply: Reply) -> list:
    """The parameters $1–$5 of a write: the claim, and the answer stored under it."""
    return [claim.record_id, claim.token, reply.status, reply.body, json.dumps(reply.headers)]


def _history(invoice, kind: str, shown: dict, principal: Principal) -> list:
    """The parameters $6–$8 of a write: the event, its outbox row's columns (for every endpoint that
    subscribes), its kind."""
    event = events.new_event(invoice, kind, principal.event_meta(), shown)
    return [_row_json(event), _row_json(outbox.new_delivery(event, NO_ACCOUNT)), kind]


@functools.cache
def _gate(scope: str):
    return apikeys.valid_key(scope, ratelimit.bucket_prefix(ratelimit.API_REQUESTS))


@functools.cache
def _claiming_statement(counting_statement, scope: str, drafting: bool) -> tuple[raw.Text, int, invoice_reads.Layout]:
    """The gate of `scope`; the request counted only when it passed; the key's last use written when it
    is a minute old; the idempotency key claimed when the count allowed the request and (`drafting`)
    the draft can be made: its customer (`c_…`) is the account's and not archived, and a currency is
    given or the business profile (`b_…`) has one. Its row: the count's columns (how many: the second
    value), the claim's record id (`claimed`, null when not claimed), the parties (`drafting`), the
    key's (`k_…`); no row when the gate refused the key."""
    from sqlalchemy import Boolean, and_, bindparam, or_, select, true, update
    from sqlalchemy.dialects.postgresql import insert

    gate = _gate(scope)
    counted = counting_statement.cte("counted")
    touched = (update(KEYS).where(KEYS.c.id == gate.c.id, counted.c.allowed, apikeys.stale_use_clause(gate.c.last_used_at))
               .values(last_used_at=bindparam("moment")).returning(KEYS.c.id).cte("touched"))
    sources, ready, read = gate.join(counted, true()), counted.c.allowed, []
    if drafting:
        parties = (select(CUSTOMERS.c.id.label("c_id"), CUSTOMERS.c.archived_at.label("c_archived_at"),
                          *invoice_reads.party_columns())
                   .select_from(gate.outerjoin(CUSTOMERS, and_(CUSTOMERS.c.id == bindparam("customer_id"),
                                                               CUSTOMERS.c.account_id == gate.c.account_id))
                                .outerjoin(BUSINESSES, BUSINESSES.c.account_id == gate.c.account_id))).cte("parties")
        sources, read = sources.join(parties, true()), list(parties.c)
        ready = and_(ready, parties.c.c_id.is_not(None), parties.c.c_archived_at.is_(None),
                     or_(bindparam("currency_given", type_=Boolean), parties.c.b_id.is_not(None)))
    claimed_values = {"id": "claim_id", "method": "method", "path": "path", "key": "key",
                      "request_hash": "request_hash", "locked_until": "locked_until", "claim_token": "claim_token",
                      "created_at": "moment"}
    claim = (select(*(bindparam(name, type_=RECORDS.c[column].type) for column, name in claimed_values.items()),
                    gate.c.account_id, bindparam("state", "running", type_=RECORDS.c.state.type))
             .select_from(sources).where(ready))
    claimed = (insert(RECORDS).from_select([*claimed_values, "account_id", "state"], claim)
               .on_conflict_do_nothing().returning(RECORDS.c.id).cte("claimed"))
    statement = (select(*counted.c, claimed.c.id.label("claimed"), *read,
                        *(gate.c[name].label(f"k_{name}") for name in apikeys.KEY_COLUMNS))
                 .select_from(sources.outerjoin(claimed, true())).add_cte(touched))
    width = len(counted.c)
    return raw.postgres_text(statement), width, invoice_reads.Layout.of(statement, skip=width + 1, parse_json=True)


# --- the write statement --------------------------------------------------------------------------
# Rows go in as JSON objects of their columns (`json_populate_record`), valued as the ORM writes them
# (`_writer`): the statement names no column and stays right as the models change.


def _is_json(column) -> bool:
    return isinstance(column.type, JSON)


def _names(table) -> str:
    return ", ".join(f'"{column.name}"' for column in table.c)


def _from_record(table, record: str, *, replaced: dict | None = None) -> str:
    """The select list of a row of `table` from the record `record`: a JSON column the ORM wrote as
    JSON `null` (never SQL NULL) stays so, and `replaced` columns take other expressions."""
    replaced = replaced or {}
    parts = []
    for column in table.c:
        if column.name in replaced:
            parts.append(replaced[column.name])
        elif _is_json(column):
            parts.append(f"coalesce({record}.\"{column.name}\", 'null'::json)")
        else:
            parts.append(f'{record}."{column.name}"')
    return ", ".join(parts)


def _subscribed_sql() -> str:
    """`outbox.subscribed_endpoints` for the event's account (`r`) and kind ($8), as SQL text."""
    from sqlalchemy import literal_column
    from sqlalchemy.dialects import postgresql
    statement = outbox.subscribed_endpoints(account_id=literal_column("r.account_id"), kind=literal_column("$8::text"))
    return str(statement.compile(dialect=postgresql.dialect()))


def _write_statement(invoice_change: str) -> str:
    """A write in one statement: the answer stored under the claim ($1–$5), and only when it was
    still this request's, `invoice_change` (CTEs reading `finished`, parameters from $9), the event
    ($6) and its outbox rows for the endpoints that subscribe to its kind ($7, $8). Its value: whether
    the claim was this request's."""
    events_, deliveries, endpoints = InvoiceEvent.__table__, WebhookDelivery.__table__, WebhookEndpoint.__table__
    return f"""
WITH finished AS (
  UPDATE {RECORDS.name} SET state = 'done', response_status = $3, response_body = $4, response_headers = $5::json
  WHERE id = $1 AND claim_token = $2 AND state = 'running' RETURNING id),
{invoice_change},
event AS (
  INSERT INTO {events_.name} ({_names(events_)})
  SELECT {_from_record(events_, "r")} FROM finished, json_populate_record(NULL::{events_.name}, $6::json) AS r
  RETURNING id),
deliveries AS (
  INSERT INTO {deliveries.name} ({_names(deliveries)})
  SELECT {_from_record(deliveries, "r", replaced={"id": "gen_random_uuid()", "endpoint_id": "e.id"})}
  FROM finished, json_populate_record(NULL::{deliveries.name}, $7::json) AS r, {endpoints.name} AS e
  WHERE e.id IN ({_subscribed_sql()}))
SELECT count(*) > 0 FROM finished"""


CREATE_STATEMENT = _write_statement(f"""invoice AS (
  INSERT INTO {INVOICES.name} ({_names(INVOICES)})
  SELECT {_from_record(INVOICES, "r")} FROM finished, json_populate_record(NULL::{INVOICES.name}, $9::json) AS r),
lines AS (
  INSERT INTO {LINES.name} ({_names(LINES)})
  SELECT {_from_record(LINES, "r")} FROM finished, json_populate_recordset(NULL::{LINES.name}, $10::json) AS r)""")
RELEASE_STATEMENT = f"DELETE FROM {RECORDS.name} WHERE id = $1 AND claim_token = $2 AND state = 'running'"


def _writer(column):
    """How a column's value goes into the row's JSON object (written by orjson) as the ORM writes it:
    decimals as the column's text, moments in UTC, nested JSON as the text `json.dumps` makes of it, as
    SQLAlchemy does (a `json` column keeps that text); ids, dates and numbers as they are."""
    if isinstance(column.type, DecimalText):
        return lambda value: None if value is None else column.type.process_bind_param(value, None)
    if isinstance(column.type, UTCDateTime):
        return lambda value: None if value is None else value.astimezone(UTC)
    if _is_json(column):
        return lambda value: orjson.Fragment(json.dumps(value))
    return None


@functools.cache
def _writers(table) -> tuple:
    return tuple((column.name, _writer(column)) for column in table.c)


def _values(row) -> dict:
    return {name: getattr(row, name) if write is None else write(getattr(row, name))
            for name, write in _writers(row.__table__)}


def _row_json(row) -> str:
    return orjson.dumps(_values(row), default=_uuid_text).decode()


def _rows_json(rows: list) -> str:
    return orjson.dumps([_values(row) for row in rows], default=_uuid_text).decode()


def _uuid_text(value) -> str:
    """An id read by asyncpg (its own UUID type, which orjson does not take for one)."""
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not written as JSON")
