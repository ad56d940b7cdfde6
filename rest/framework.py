"""The REST platform every endpoint shares.

An endpoint is declared once with `api.operation(...)`: method, path, scope, idempotency rule and
the pydantic models of its query, body and response. From that one declaration the platform
authenticates, counts the rate limit, checks the scope, validates input, applies idempotency,
runs the handler in a transaction, renders `{data: …}` or a problem, and builds the OpenAPI
document. Handlers are plain synchronous functions over `core`.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

import anyio
from pydantic import BaseModel
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlmodel import Session
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from core import credentials, idempotency, ratelimit
from core.db import new_session, transaction
from core.errors import (Conflict, DomainError, IdempotencyKeyRequired, InternalError, NotFound, RateLimited,
                         UpstreamFailed, ValidationFailed)
from core.jsonout import dumps
from core.principal import Principal
from core.validation import load_json, parse
from rest.problems import problem_response
from service.settings import get_settings

log = logging.getLogger("invoicing.rest")

REQUEST_ID_MAX = 200
# Far above the largest valid request (250 invoice lines with 5000-character descriptions).
MAX_BODY_BYTES = 8 * 1048576
Idempotency = Literal["required", "optional", "none"]
Envelope = Literal["object", "list", "items", "raw"]


@dataclass
class Call:
    """What a handler gets: the open session, the caller, and validated input."""

    session: Session
    principal: Principal
    path: dict[str, str]
    query: Any
    body: Any
    request_id: str
    headers: dict[str, str]
    # Extra headers the handler wants on the response (for example a second rate limit).
    response_headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Result:
    body: dict
    status: int | None = None


@dataclass
class Operation:
    method: str
    path: str
    handler: Callable[[Call], Any]
    scope: str
    summary: str
    tag: str
    idempotency: Idempotency = "none"
    query: type[BaseModel] | None = None
    body: type[BaseModel] | None = None
    body_required: bool = False
    response: type[BaseModel] | None = None
    envelope: Envelope = "object"
    status: int = 200
    rate_limited: bool = True
    media_type: str = "application/json"
    operation_id: str = ""
    extra_responses: tuple[int, ...] = ()


class Api:
    def __init__(self) -> None:
        self.operations: list[Operation] = []

    def operation(self, method: str, path: str, **options: Any) -> Callable:
        def register(handler: Callable[[Call], Any]) -> Callable[[Call], Any]:
            self.operations.append(Operation(method=method, path=path, handler=handler,
                                             operation_id=handler.__name__, **options))
            return handler
        return register

    def routes(self) -> list[Route]:
        by_path: dict[str, dict[str, Operation]] = {}
        for op in self.operations:
            by_path.setdefault(op.path, {})[op.method] = op
        return [Route(path, partial(_dispatch, ops), methods=list(ops)) for path, ops in by_path.items()]


def resource_metadata_url() -> str:
    return f"{get_settings().origin.rstrip('/')}/.well-known/oauth-protected-resource/api/v1"


def _request_id(request: Request) -> tuple[str, DomainError | None]:
    supplied = request.headers.get("x-request-id")
    if supplied is None or supplied == "":
        return f"req_{secrets.token_hex(12)}", None
    if len(supplied) > REQUEST_ID_MAX or not supplied.isprintable():
        error = ValidationFailed.at("X-Request-Id", f"must be at most {REQUEST_ID_MAX} printable characters")
        return f"req_{secrets.token_hex(12)}", error
    return supplied, None


async def _read_body(request: Request) -> bytes | None:
    """The body, or None when it exceeds MAX_BODY_BYTES (read no further: memory stays bounded)."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def _dispatch(ops: dict[str, Operation], request: Request) -> Response:
    op = ops[request.method] if request.method in ops else ops.get("GET")
    raw = await _read_body(request)
    return await anyio.to_thread.run_sync(partial(_process, op, request, raw))


def _process(op: Operation, request: Request, raw: bytes | None) -> Response:
    request_id, header_error = _request_id(request)
    limit_headers: dict[str, str] = {}
    try:
        principal, usage = _authenticate(op, request)
        limit_headers = usage.headers()
        if op.rate_limited and usage.exceeded:
            raise RateLimited(
                f"Rate limit exceeded: {usage.limit} requests per {usage.window_seconds} seconds. "
                f"Retry after {usage.retry_after} seconds.", retry_after=usage.retry_after)
        if header_error:
            raise header_error
        principal = principal.with_request_id(request_id)
        principal.require(op.scope)
        if raw is None:
            raise ValidationFailed.at("body", f"must be at most {MAX_BODY_BYTES // 1048576} MiB")
        query = parse(op.query, dict(request.query_params)) if op.query else None
        body_json = load_json(raw) if op.body else None
        if op.body_required and body_json is None:
            raise ValidationFailed.at("body", "a JSON body is required")
        body = parse(op.body, body_json) if op.body else None
        claim = _claim(op, request, principal, body_json)
        if isinstance(claim, idempotency.StoredResponse):
            return _replay(claim, request_id, limit_headers)
        return _run(op, request, principal, query, body, claim, request_id, limit_headers)
    except DomainError as error:
        return problem_response(error, request_id, headers=limit_headers,
                                resource_metadata=resource_metadata_url())
    except Exception as exc:  # a fault of ours: never leak it, always log it
        error = _unexpected(exc, request_id)
        return problem_response(error, request_id, headers=limit_headers)


def _authenticate(op: Operation, request: Request) -> tuple[Principal, ratelimit.Usage]:
    """The caller, and its request count in this window (counted unless the operation has its own limit)."""
    with transaction() as session:
        principal = credentials.authenticate(session, request.headers.get("authorization"),
                                             resource=get_settings().base_url)
        # A verifier that names no credential still gets a bucket of its own, never a shared one.
        subject = principal.credential_id or f"account:{principal.account_id}:{principal.actor}"
        count = ratelimit.hit if op.rate_limited else ratelimit.peek
        usage = count(session, ratelimit.API_REQUESTS, subject)
    return principal, usage


def unrouted(request: Request, _exc: Exception) -> Response:
    """No operation at this path and method: a 404 problem like any other (Stripe does the same)."""
    request_id, _ = _request_id(request)
    return problem_response(NotFound(f"No endpoint {request.method} {request.url.path}."), request_id)


def _claim(op: Operation, request: Request, principal: Principal, body_json: Any):
    key = request.headers.get("idempotency-key")
    if op.idempotency == "none" or key is None:
        if op.idempotency == "required":
            raise IdempotencyKeyRequired(
                f"{op.method} {op.path} needs an Idempotency-Key header (any unique string up to 255 characters).")
        return None
    idempotency.check_key(key)
    fingerprint = idempotency.request_fingerprint({"body": body_json, "query": sorted(request.query_params.multi_items())})
    return idempotency.begin(principal.account_id, op.method, request.url.path, key, fingerprint)


def _replay(stored: idempotency.StoredResponse, request_id: str, limit_headers: dict[str, str]) -> Response:
    headers = {**stored.headers, **limit_headers, "X-Request-Id": request_id, "Idempotent-Replayed": "true"}
    return Response(stored.body, status_code=stored.status, headers=headers,
                    media_type=headers.pop("content-type", "application/json"))


def _run(op: Operation, request: Request, principal: Principal, query: Any, body: Any,
         claim: idempotency.Claim | None, request_id: str, limit_headers: dict[str, str]) -> Response:
    session = new_session()
    try:
        call = Call(session=session, principal=principal, path=dict(request.path_params), query=query,
                    body=body, request_id=request_id, headers=dict(request.headers))
        try:
            outcome = op.handler(call)
        except DomainError:
            session.rollback()
            raise
        headers = {**limit_headers, **call.response_headers}
        response = _render(op, outcome, request_id, headers)
        if claim is not None:
            idempotency.finish(session, claim, _stored(response))
        session.commit()
        return response
    except DomainError as error:
        session.rollback()
        headers = {**limit_headers, **getattr(error, "headers", {})}
        response = problem_response(error, request_id, headers=headers, resource_metadata=resource_metadata_url())
        _settle_claim_after_error(claim, error, response)
        return response
    except BaseException:
        session.rollback()
        if claim is not None:
            idempotency.release(claim)
        raise
    finally:
        session.close()


def _settle_claim_after_error(claim, error: DomainError, response: Response) -> None:
    """Keep a client error under its key (a retry gets the same answer); forget transient ones."""
    if claim is None:
        return
    if error.status >= 500 or isinstance(error, (Conflict, RateLimited)):
        idempotency.release(claim)
        return
    with transaction() as session:
        idempotency.finish(session, claim, _stored(response))


def _stored(response: Response) -> idempotency.StoredResponse:
    kept = {k: v for k, v in response.headers.items()
            if k.lower() not in ("x-request-id", "content-length") and not k.lower().startswith("ratelimit-")}
    return idempotency.StoredResponse(response.status_code, response.body.decode(), kept)


def _render(op: Operation, outcome: Any, request_id: str, headers: dict[str, str]) -> Response:
    if isinstance(outcome, Response):
        outcome.headers.update({**headers, "X-Request-Id": request_id})
        return outcome
    status = op.status
    if isinstance(outcome, Result):
        status = outcome.status or status
        outcome = outcome.body
    return Response(dumps(outcome), status_code=status, media_type="application/json",
                    headers={**headers, "X-Request-Id": request_id})


def _unexpected(exc: Exception, request_id: str) -> DomainError:
    if isinstance(exc, IntegrityError):
        log.warning("write conflict (request %s): %s", request_id, exc.__class__.__name__)
        return Conflict("The write clashed with another one; retry the request.")
    if isinstance(exc, DBAPIError):
        log.error("database fault (request %s)", request_id, exc_info=exc)
        return UpstreamFailed("The database is unavailable; retry the request.")
    log.error("unexpected error (request %s)", request_id, exc_info=exc)
    return InternalError("An unexpected error occurred; retry the request. Request id: " + request_id)


