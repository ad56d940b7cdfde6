"""Run one operation for one caller: authenticate → rate limit → scope → validate → idempotency →
handler in a transaction → result or domain error.

A surface builds an `Invocation` from its transport (the Authorization value, the raw query and
body, the idempotency key and the name the key is scoped to) and gives a `Presenter`, which turns
a result or an error into the `Reply` an idempotency record keeps. It gets an `Outcome` back:
a reply (fresh or replayed) or a domain error, with the caller's rate-limit standing to report.
"""

from __future__ import annotations

import inspect
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

import anyio
from pydantic import BaseModel
from sqlmodel import Session

from core.access import activity, credentials
from core.access.principal import Principal
from core.base import context, executor
from core.base.db import database_fault, new_session, retrying_disconnects, transaction
from core.base.errors import (
    Conflict,
    DomainError,
    IdempotencyKeyRequired,
    InternalError,
    NotFound,
    RateLimited,
    ValidationFailed,
)
from core.base.executor import Db
from core.base.validation import load_json, parse, text_problem
from core.billing.confirmations import Confirmed
from core.mechanisms import idempotency, ratelimit
from core.mechanisms.idempotency import StoredResponse as Reply

log = logging.getLogger("invoicing.operations")

Idempotency = Literal["required", "optional", "none"]
Shape = Literal["object", "list", "items", "raw"]


@dataclass
class Call:
    """What a handler gets: the open session (or, for a handler on the event loop, the executor's
    `db`), the caller, and validated input."""

    session: Session | None
    principal: Principal
    params: dict[str, str]  # ids named by the caller (REST: the path's `{id}`)
    query: Any
    body: Any
    # What the person was asked before this call, when the surface asked one (MCP's consequential tools).
    confirmed: Confirmed | None = None
    db: Db | None = None

    def account(self) -> tuple[Session, uuid.UUID]:
        """The session and the caller's account: the first arguments of most `core` functions."""
        return self.session, self.principal.account_id


@dataclass
class Operation:
    """One thing a caller can do, whatever the surface: its scope, idempotency rule, input models,
    rate limit and handler."""

    name: str
    handler: Callable[[Call], Any]
    scope: str
    idempotency: Idempotency = "none"
    query: type[BaseModel] | None = None
    body: type[BaseModel] | None = None
    body_required: bool = False
    # An operation with a limit of its own (sending: per key and per account) counts it itself and
    # reports where the caller stands with this; the general request limit is then only looked at.
    own_limit: Callable[[Session, Principal], ratelimit.Usage] | None = None
    # What the handler returns: one `response` object, a page `{data, next_cursor}` of them, all of
    # them `{data}`, or a shape of its own (`raw`, described by `response` itself).
    response: type[BaseModel] | None = None
    shape: Shape = "object"
    # What the activity of the business says of it, such as "Created the customer" (its result's name
    # follows), for writes no invoice event records; None: nothing (a read, or an event says it).
    audit: str | None = None

    def __post_init__(self) -> None:
        if self.on_loop and self.own_limit is not None:
            raise ValueError(f"{self.name}: a handler with a limit of its own runs on the ORM")
        if self.audit is not None and (self.on_loop or self.reads_only):
            raise ValueError(f"{self.name}: an audited handler is a write on the ORM")

    @property
    def on_loop(self) -> bool:
        """Whether the handler is a unit of `core.base.executor` (`async def`, given `call.db`), run on
        the event loop, rather than a function of an ORM session run in a worker thread."""
        return inspect.iscoroutinefunction(self.handler)

    @property
    def reads_only(self) -> bool:
        """A `…:read` scope grants no write, so its operations never write (their transaction is
        read-only: on SQLite it takes no write lock)."""
        return self.scope.endswith(":read")


@dataclass(frozen=True)
class Invocation:
    """One call as the surface received it, before any check."""

    credential: str | None  # the Authorization value, `Bearer …`
    resource: str  # the resource the credential must be bound to (core.access.resources)
    request_id: str
    params: dict[str, str] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)
    query_items: list[tuple[str, str]] = field(default_factory=list)  # every value, for the fingerprint
    typed_query: bool = False  # query values are JSON values (MCP), not strings: validated strictly
    body: bytes = b""
    idempotency_key: str | None = None
    idempotency_scope: tuple[str, str] = ("", "")  # (method, path) or (surface, operation name)
    # Transport-level input faults found before the pipeline ran: a malformed header is reported
    # before the scope check, an over-long body after it.
    header_error: DomainError | None = None
    body_error: DomainError | None = None
    # The surface counted this request against the general limit already (and refused it when over).
    counted: bool = False
    # A caller the surface identified itself (the dashboard's signed-in person; MCP's gate, which verified
    # the credential and counted the request unless the tool has a limit of its own): no credential is
    # looked up and the per-credential request limit is not applied here; every other check is, and an
    # operation's own limit too.
    principal: Principal | None = None
    # The person's answer to the surface's question about this call (core.billing.confirmations).
    confirmed: Confirmed | None = None


class Presenter(Protocol):
    def success(self, result: Any) -> Reply: ...

    def failure(self, error: DomainError) -> Reply: ...


@dataclass(frozen=True)
class Outcome:
    reply: Reply | None = None  # a success, or a stored answer replayed
    error: DomainError | None = None
    usage: ratelimit.Usage | None = None  # the caller's standing against the limit that applies
    replayed: bool = False
    result: Any = None  # the handler's return value, as the presenter got it


async def execute(operation: Operation, invocation: Invocation, presenter: Presenter) -> Outcome:
    """On the event loop: the caller identified and counted, the input checked and the idempotency
    key claimed (`core.base.executor`); then the handler in its transaction, with the answer stored
    under the key: on the loop too for a handler that is a unit, else in one worker thread."""
    usage = None
    try:
        principal, usage = await _authenticate(operation, invocation)
        context.note_caller(principal.account_id, principal.credential_label)
        if operation.own_limit is None and not invocation.counted:
            usage.raise_if_exceeded("requests")
        if invocation.header_error:
            raise invocation.header_error
        principal = principal.with_request_id(invocation.request_id)
        principal.require(operation.scope)
        if invocation.body_error:
            raise invocation.body_error
        if any(text_problem(value) for value in invocation.params.values()):
            raise NotFound("No such object: ids never hold control characters.")  # malformed ids are 404
        query = parse(operation.query, invocation.query, strict=invocation.typed_query) if operation.query else None
        body_json = load_json(invocation.body) if operation.body else None
        if operation.body_required and body_json is None:
            raise ValidationFailed.at("body", "a JSON body is required")
        body = parse(operation.body, body_json) if operation.body else None
        claim = await _claim(operation, invocation, principal, body_json)
        if isinstance(claim, Reply):
            return Outcome(reply=claim, usage=usage, replayed=True)
    except DomainError as error:
        return Outcome(error=error, usage=error.usage or usage)
    except Exception as exc:  # a fault of ours: never leak it, always log it
        return Outcome(error=as_domain_error(exc, invocation.request_id), usage=usage)
    call = Call(session=None, principal=principal, params=invocation.params, query=query, body=body,
                confirmed=invocation.confirmed)
    try:
        if operation.on_loop:
            # A read is repeated once on a connection the database dropped (a restart): nothing was done.
            result, reply = await executor.run(handled, operation, call, claim, presenter,
                                               repeatable=operation.reads_only)
        else:
            result, reply, usage = await anyio.to_thread.run_sync(_in_thread, operation, call, claim, presenter, usage)
        return Outcome(reply=reply, usage=usage, result=result)
    except DomainError as error:
        try:
            await _after_refusal(claim, error, presenter)
        except DomainError as unsettled:  # the claim was taken over meanwhile
            error = unsettled
        except Exception as exc:  # the refusal could not be kept: a fault of ours
            error = as_domain_error(exc, invocation.request_id)
        return Outcome(error=error, usage=error.usage or usage)
    except Exception as exc:  # a fault of ours: never leak it, always log it
        if claim is not None:
            await _release(claim, invocation.request_id)
        return Outcome(error=as_domain_error(exc, invocation.request_id), usage=usage)
    except BaseException:  # cancelled (the client went away): a retry with the key runs again at once
        if claim is not None:
            with anyio.CancelScope(shield=True):
                await _release(claim, invocation.request_id)
        raise


async def handled(db: Db, operation: Operation, call: Call, claim: idempotency.Claim | None,
                  presenter: Presenter) -> tuple[Any, Reply]:
    """A handler that is a unit, run: a read as it is, a write in one transaction with its stored answer.
    Its claim's lease is not renewed (a unit takes milliseconds, the lease 30 s): one that waited
    longer finds its claim taken over by a retry, and `finish` rolls its work back (409)."""
    if operation.reads_only and claim is None:
        result = await operation.handler(replace(call, db=db))
        return result, presenter.success(result)
    async with db.transaction() as tx:
        result = await operation.handler(replace(call, db=tx))
        reply = presenter.success(result)
        if claim is not None:
            await idempotency.finish(tx, claim, reply)
    return result, reply


def _in_thread(operation: Operation, call: Call, claim: idempotency.Claim | None, presenter: Presenter,
               usage: ratelimit.Usage) -> tuple[Any, Reply, ratelimit.Usage]:
    """A handler on the ORM, in a worker thread: its session's transaction holds the stored answer."""
    def attempt() -> tuple[Any, Reply, ratelimit.Usage]:
        session = new_session(read_only=operation.reads_only)
        try:
            with idempotency.keep(claim):
                result = operation.handler(replace(call, session=session))
                if operation.audit is not None:
                    activity.record(session, call.principal, operation.name, f"{operation.audit} {_named(result)}")
                standing = operation.own_limit(session, call.principal) if operation.own_limit else usage
                reply = presenter.success(result)
                if claim is not None:
                    executor.within(session, idempotency.finish, claim, reply)
                session.commit()
            return result, reply, standing
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()
    # A read is repeated once on a connection the database dropped (a restart): nothing was done.
    return retrying_disconnects(attempt) if operation.reads_only else attempt()


def _named(result: Any) -> str:
    """What an audited write acted on, as the activity page names it."""
    shown = result.get("data", result) if isinstance(result, dict) else {}
    shown = shown if isinstance(shown, dict) else {}
    name = shown.get("name") or shown.get("nickname") or shown.get("description")
    return f"“{name}” ({shown.get('id')})" if name else str(shown.get("id") or "").strip()


async def _after_refusal(claim: idempotency.Claim | None, error: DomainError, presenter: Presenter) -> None:
    """What a refusal leaves behind: what it must record (after the work's rollback), and its answer
    kept under the key (a retry gets the same answer), unless it is transient: then the key is let go."""
    if error.kept_after_rollback is not None:
        await anyio.to_thread.run_sync(_keep_after_rollback, error.kept_after_rollback)
    if claim is None:
        return
    if error.status >= 500 or isinstance(error, (Conflict, RateLimited)):
        await executor.run(idempotency.release, claim)
        return
    await executor.run(_keep_refusal, claim, presenter.failure(error))


def _keep_after_rollback(row: Any) -> None:
    with transaction() as separate:
        separate.add(row)


async def _keep_refusal(db: Db, claim: idempotency.Claim, reply: Reply) -> None:
    async with db.transaction() as tx:
        await idempotency.finish(tx, claim, reply)


async def _release(claim: idempotency.Claim, request_id: str) -> None:
    """Let the key go after a fault of ours (a retry runs again), as far as the database lets us."""
    try:
        await executor.run(idempotency.release, claim)
    except Exception:
        log.warning("could not release an idempotency claim (request %s)", request_id, exc_info=True)


async def _authenticate(operation: Operation, invocation: Invocation) -> tuple[Principal, ratelimit.Usage]:
    """The caller, and its request count in this window (counted unless the operation has its own limit)."""
    if invocation.principal is not None:  # identified by the surface (see Invocation.principal)
        return invocation.principal, ratelimit.NOT_LIMITED
    counts = not (operation.own_limit or invocation.counted)
    return await identify(invocation.credential, invocation.resource, count=counts)


async def identify(authorization: str | None, resource: str, *, count: bool,
                   peek: bool = True) -> tuple[Principal, ratelimit.Usage | None]:
    """The caller behind `authorization` for `resource`, and its standing against the request limit:
    this request counted (`count`), or only looked at (`peek`), or neither (None). Independent
    statements on the event loop, repeated once on a connection the database dropped."""
    if count:
        return await executor.run(credentials.authenticate_counting, authorization, resource, repeatable=True)

    async def standing(db: Db, principal: Principal) -> ratelimit.Usage | None:
        return await ratelimit.peek_on(db, ratelimit.api_requests(), principal.rate_limit_subject) if peek else None
    return await executor.run(lambda db: credentials.authenticate(db, authorization, resource=resource, then=standing),
                              repeatable=True)


async def _claim(operation: Operation, invocation: Invocation, principal: Principal,
                 body_json: Any) -> idempotency.Claim | Reply | None:
    key = invocation.idempotency_key
    if operation.idempotency == "none" or key is None:
        if operation.idempotency == "required":
            method, path = invocation.idempotency_scope
            raise IdempotencyKeyRequired(
                f"{method} {path} needs an Idempotency-Key header (any unique string up to 255 characters).")
        return None
    idempotency.check_key(key)
    fingerprint = idempotency.call_fingerprint(body_json, invocation.query_items, invocation.params)
    method, path = invocation.idempotency_scope
    return await executor.run(idempotency.begin, principal.account_id, method, path, key, fingerprint)


def as_domain_error(exc: Exception, request_id: str) -> DomainError:
    """An unexpected exception as the domain error a caller sees (logged, never leaked). Only an
    unreachable database is `upstream_failed`: a value it refuses is the caller's input, any other
    database fault is ours."""
    if (fault := database_fault(exc)) is not None:
        if fault.status >= 500:
            log.error("database unavailable (request %s)", request_id, exc_info=exc)
        else:
            log.warning("database refused the request (request %s): %s", request_id, exc.__class__.__name__)
        return fault
    log.error("unexpected error (request %s)", request_id, exc_info=exc)
    return InternalError("An unexpected error occurred; retry the request. Request id: " + request_id)
