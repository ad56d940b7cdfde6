"""Idempotency keys: one stored response per (account, method, path, key) for 24 hours.

A request claims its key in a short transaction of its own, so a concurrent retry with the same
key sees the claim and gets `409 conflict` instead of running twice. The response is stored in the
same transaction as the work it reports, so a stored key never describes work that was lost.

A claim is a lease: `LEASE` long, renewed by the live request every `LEASE / 3` (`keep`). A request
whose process died stops renewing, and a retry takes the key over once the lease lapses. Each claim
carries a token that the takeover replaces; storing the response (`finish`) is conditional on it,
in the transaction of the work, so a request that lost its lease cannot commit: of two executions
of one key, at most one ever takes effect.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import and_, bindparam, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session

from core.base.clock import now
from core.base.db import transaction
from core.base.errors import Conflict, FieldError, IdempotencyMismatch, ValidationFailed
from core.base.executor import Db
from core.base.validation import text_problem
from core.models import IdempotencyRecord

KEY_MAX = 255
RETENTION = timedelta(hours=24)
# A claim not renewed for this long belongs to a request that died; a retry may take it over.
LEASE = timedelta(seconds=30)

log = logging.getLogger("invoicing.idempotency")
LOST_CLAIM = ("This request outlived its claim on the Idempotency-Key and a retry took it over; its work was not "
              "saved. Retry to get the retry's answer.")


@dataclass(frozen=True)
class StoredResponse:
    status: int
    body: str
    headers: dict


@dataclass(frozen=True)
class Claim:
    record_id: uuid.UUID
    token: str  # this holder's; replaced when a retry takes the key over


def _new_token() -> str:
    return secrets.token_hex(16)


def request_fingerprint(body: object) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def call_fingerprint(body_json: object, query_items: list, params: dict) -> str:
    """What a key's request is compared by: the parsed body, every query value, and the ids the call
    names (when the key's scope does not hold them: MCP), whichever path runs it."""
    request: dict = {"body": body_json, "query": sorted(query_items)}
    if params:
        request["params"] = params
    return request_fingerprint(request)


def check_key(key: object, *, path: str = "Idempotency-Key") -> str:
    """`key` when it is a usable idempotency key, else ValidationFailed at `path` (the header, or
    the argument that carries it)."""
    if not isinstance(key, str) or not 1 <= len(key) <= KEY_MAX:
        raise ValidationFailed.at(path, f"must be a string of 1 to {KEY_MAX} characters")
    if problem := text_problem(key):
        raise ValidationFailed.at(path, problem)
    return key


RECORDS = IdempotencyRecord.__table__


def _claim_statement(dialect):
    values = {name: bindparam(name) for name in (
        "id", "account_id", "method", "path", "key", "request_hash", "locked_until", "claim_token", "created_at")}
    return (dialect.insert(RECORDS).values(**values, state="running").on_conflict_do_nothing()
            .returning(RECORDS.c.id))


CLAIM = {"postgresql": _claim_statement(postgresql), "sqlite": _claim_statement(sqlite)}
_KEY = and_(RECORDS.c.account_id == bindparam("account_id"), RECORDS.c.method == bindparam("method"),
            RECORDS.c.path == bindparam("path"), RECORDS.c.key == bindparam("key"))
LOCKED_RECORD = select(RECORDS).where(_KEY).with_for_update()
_HELD = and_(RECORDS.c.id == bindparam("record_id"), RECORDS.c.claim_token == bindparam("token"),
             RECORDS.c.state == "running")
FINISH = (update(RECORDS).where(_HELD).values(state="done", response_status=bindparam("status"),
                                              response_body=bindparam("body"), response_headers=bindparam("headers"))
          .returning(RECORDS.c.id))
RELEASE = delete(RECORDS).where(_HELD)
RENEW = update(RECORDS).where(_HELD).values(locked_until=bindparam("locked_until"))
RESTART = update(RECORDS).where(RECORDS.c.id == bindparam("record_id")).values(
    request_hash=bindparam("request_hash"), state="running", locked_until=bindparam("locked_until"),
    claim_token=bindparam("claim_token"), created_at=bindparam("created_at"), response_status=None,
    response_body=None, response_headers=None)


async def begin(db: Db, account_id: uuid.UUID, method: str, path: str, key: str,
                fingerprint: str) -> Claim | StoredResponse:
    """Claim the key for this request, or return the response stored by the first one (a unit of
    `core.base.executor`)."""
    request = {"account_id": account_id, "method": method, "path": path, "key": key, "request_hash": fingerprint}
    # A new key (nearly every request) is claimed by one statement that commits on its own (no BEGIN
    # and COMMIT round trips on PostgreSQL); a key taken already is settled under its row's lock.
    async with db.independent_writes():
        claim = await _claim_new(db, request)
    if claim is not None:
        return claim
    async with db.transaction() as tx:
        # A claim can be released (server fault) between our insert and our read: then insert again.
        for _ in range(3):
            record = await tx.first(LOCKED_RECORD, request)
            if record is not None:
                return await _settle(tx, record, fingerprint, now())
            claim = await _claim_new(tx, request)
            if claim is not None:
                return claim
    raise Conflict("A request with this Idempotency-Key is still running; retry shortly.")


async def _claim_new(db: Db, request: dict) -> Claim | None:
    """The key claimed when nobody holds it; None when it is taken."""
    current, token = now(), _new_token()
    claimed = await db.first(CLAIM[db.dialect], {**request, "id": uuid.uuid4(), "locked_until": current + LEASE,
                                                 "claim_token": token, "created_at": current})
    return Claim(claimed.id, token) if claimed is not None else None


async def _settle(db: Db, record, fingerprint: str, current) -> Claim | StoredResponse:
    """What a request finds under a key that is already taken."""
    if record.created_at + RETENTION <= current:
        return await _restart(db, record, fingerprint)
    if record.request_hash != fingerprint:
        raise IdempotencyMismatch(
            "This Idempotency-Key was used with a different request; use a new key for a new request.",
            errors=[FieldError("Idempotency-Key", "was used with a different request body or query")])
    if record.state == "done":
        return StoredResponse(record.response_status, record.response_body, record.response_headers or {})
    if record.locked_until > current:
        raise Conflict("A request with this Idempotency-Key is still running; retry shortly.")
    return await _restart(db, record, fingerprint)


async def _restart(db: Db, record, fingerprint: str) -> Claim:
    current, token = now(), _new_token()
    await db.execute(RESTART, {"record_id": record.id, "request_hash": fingerprint, "locked_until": current + LEASE,
                               "claim_token": token, "created_at": current})
    return Claim(record.id, token)


async def finish(db: Db, claim: Claim, response: StoredResponse) -> None:
    """Store the response, inside the transaction of the work it reports. Conflict when the claim
    was taken over meanwhile: the caller rolls back, so the work is not done twice."""
    stored = await db.first(FINISH, {"record_id": claim.record_id, "token": claim.token, "status": response.status,
                                     "body": response.body, "headers": response.headers})
    if stored is None:
        raise Conflict(LOST_CLAIM)


async def release(db: Db, claim: Claim) -> None:
    """Forget the claim (server fault): a retry with the same key runs again. A claim taken over
    by another request stays theirs."""
    async with db.independent_writes():
        await db.execute(RELEASE, {"record_id": claim.record_id, "token": claim.token})


def renew(claim: Claim) -> bool:
    """Extend the lease; False when the claim is no longer this holder's."""
    with transaction() as session:
        return session.execute(RENEW, {"record_id": claim.record_id, "token": claim.token,
                                       "locked_until": now() + LEASE}).rowcount == 1


@contextmanager
def keep(claim: Claim | None) -> Iterator[None]:
    """Renew `claim`'s lease from a background thread while the block runs."""
    if claim is None:
        yield
        return
    stop = threading.Event()

    def renew_until_stopped() -> None:
        while not stop.wait(LEASE.total_seconds() / 3):
            try:
                if not renew(claim):
                    return
            except Exception:  # a busy or unreachable database: try again on the next beat
                log.warning("could not renew an idempotency claim", exc_info=True)

    # Not joined when the block ends: a beat already under way may wait on the row the block's own
    # transaction holds. A late beat changes nothing, as a finished or released claim is not held.
    threading.Thread(target=renew_until_stopped, name="idempotency-lease", daemon=True).start()
    try:
        yield
    finally:
        stop.set()


def purge_expired(session: Session) -> None:
    session.execute(delete(IdempotencyRecord).where(IdempotencyRecord.created_at < now() - RETENTION))
