"""The fast write path on SQLite: `operations.fast_writes`' steps on the engine's sqlite3 connections
(`core.base.raw.sqlite_text`: Core statements compiled once, values converted by the types' own
processors, so the rows are those the ORM writes), in a thread.

Two write turns, as the pipeline's transactions are serialized by SQLite's write lock anyway: the
request counted and the idempotency key claimed (when the request is allowed and the pipeline would
do the work); then the work, its event, its outbox rows and the stored answer, all or nothing, only
while the claim is still this request's. Anything else is the pipeline's, as on PostgreSQL.
"""

from __future__ import annotations

import functools
import secrets
import uuid

from sqlalchemy import bindparam, select

from core.base import executor, raw
from core.base.errors import Conflict, DomainError
from core.billing import events, invoice_reads
from core.billing.invoice_inputs import InvoiceCreate
from core.mechanisms import idempotency
from operations import fast_reads, pipeline
from operations.fast_reads import Answer
from operations.write_lane import (
    BUSINESSES,
    CREATE,
    CUSTOMERS,
    FINALIZE,
    INVOICES,
    LINES,
    Handover,
    Request,
    call_of,
    drafted,
)


def create(request: Request, credential, body_json, data: InvoiceCreate, customer_id: uuid.UUID,
            draft: tuple) -> Answer | Handover | None:
    with raw.sqlite_connection() as connection:
        claimed = _count_and_claim(connection, request, credential, CREATE, request.fingerprint(body_json),
                                   lambda account_id: _draftable(connection, account_id, customer_id, data))
        if not isinstance(claimed, tuple):
            return claimed
        principal, usage, claim, parties = claimed
        try:
            return _write_draft(connection, principal, usage, claim, parties, request, data, draft)
        except BaseException:
            _release(connection, claim)
            raise


def _draftable(connection, account_id: uuid.UUID, customer_id: uuid.UUID, data: InvoiceCreate):
    """The customer and the business profile, when the pipeline would make the draft (the customer
    is the account's and not archived, a currency is given or the profile has one); else None."""
    found = raw.sqlite_text(PARTIES).run(connection, {"customer_id": customer_id, "account_id": account_id})
    if not found or found[0].c_archived_at is not None:
        return None
    parties = found[0]
    if data.currency is None and parties.b_id is None:
        return None
    return parties


def _write_draft(connection, principal, usage, claim, parties, request: Request, data: InvoiceCreate,
                 draft: tuple) -> Answer:
    parts = _parties_layout().parts
    invoice, lines, shown, reply = drafted(principal, parts["c_"].view(tuple(parties)), parts["b_"].view(tuple(parties)),
                                           request, data, draft)
    with raw.sqlite_writing(connection):
        if not _finished(connection, claim, reply):
            return Answer(None, Conflict(idempotency.LOST_CLAIM), usage)
        _insert(connection, INVOICES, [invoice])
        _insert(connection, LINES, lines)
        event = events.new_event(invoice, "invoice.created", principal.event_meta(), shown)
        executor.on_sqlite_connection(connection, events.write, event)
    return Answer(reply.body.encode(), None, usage)


def finalize(request: Request, credential) -> Answer | Handover | None:
    with raw.sqlite_connection() as connection:
        claimed = _count_and_claim(connection, request, credential, FINALIZE, request.fingerprint(None),
                                   lambda _account_id: ())
        if not isinstance(claimed, tuple):
            return claimed
        principal, usage, claim, _ = claimed
        try:
            _, reply = executor.on_sqlite_connection(connection, pipeline.handled, FINALIZE,
                                                     call_of(principal, request), claim, request.presenter)
        except Conflict as lost:  # the claim was taken over meanwhile
            return Answer(None, lost, usage)
        except DomainError:  # refused by the same function: the pipeline answers (and keeps the answer)
            _release(connection, claim)
            return Handover(usage)
        except BaseException:
            _release(connection, claim)
            raise
        return Answer(reply.body.encode(), None, usage)


# --- shared ---------------------------------------------------------------------------------------


def _count_and_claim(connection, request: Request, credential: tuple[str, str], operation, fingerprint: str, ready):
    """Counted as a fast read is (`fast_reads.count_sqlite`), and in the same write turn, when the
    request is allowed and `ready(account_id)` gives what the work needs (not None), the key claimed.
    None when the pipeline must answer uncounted, the 429, a `Handover` when not claimed; else
    (principal, usage, claim, what `ready` gave)."""
    claim = idempotency.Claim(uuid.uuid4(), secrets.token_hex(16))
    method, path = request.scope

    def claiming(principal, moment):
        prepared = ready(principal.account_id)
        if prepared is None or not raw.sqlite_text(idempotency.CLAIM["sqlite"]).run(connection, {
                "id": claim.record_id, "account_id": principal.account_id, "method": method, "path": path,
                "key": request.idempotency_key, "request_hash": fingerprint, "locked_until": moment + idempotency.LEASE,
                "claim_token": claim.token, "created_at": moment}):
            return None
        return prepared

    counted = fast_reads.count_sqlite(connection, *credential, operation.scope, claiming)
    if not isinstance(counted, tuple):
        return counted
    principal, usage, prepared = counted
    if prepared is None:
        return Handover(usage)
    return principal.with_request_id(request.request_id), usage, claim, prepared


def _finished(connection, claim: idempotency.Claim, reply) -> bool:
    """The answer stored under the claim, when it is still this request's (`idempotency.finish`)."""
    return bool(raw.sqlite_text(idempotency.FINISH).run(connection, {
        "record_id": claim.record_id, "token": claim.token, "status": reply.status, "body": reply.body,
        "headers": reply.headers}))


def _insert(connection, table, rows: list) -> None:
    if rows:
        text = raw.sqlite_text(_insert_statement(table))
        connection.executemany(text.sql, [text.arguments(row if isinstance(row, dict) else
                                                         {name: getattr(row, name) for name in table.c.keys()})
                                          for row in rows])


def _release(connection, claim: idempotency.Claim) -> None:
    """Forget the claim, as the pipeline does after a fault (a retry with the key runs again)."""
    with raw.sqlite_writing(connection):
        raw.sqlite_text(idempotency.RELEASE).execute(connection, {"record_id": claim.record_id, "token": claim.token})


@functools.cache
def _insert_statement(table):
    return table.insert()  # every column, as a parameter of its name


PARTIES = (select(CUSTOMERS.c.id.label("c_id"), CUSTOMERS.c.archived_at.label("c_archived_at"),
                  *invoice_reads.party_columns())
           .select_from(CUSTOMERS.outerjoin(BUSINESSES, BUSINESSES.c.account_id == CUSTOMERS.c.account_id))
           .where(CUSTOMERS.c.id == bindparam("customer_id"), CUSTOMERS.c.account_id == bindparam("account_id")))
@functools.cache
def _parties_layout() -> invoice_reads.Layout:
    return invoice_reads.Layout.of(PARTIES)
