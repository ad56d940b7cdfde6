"""The REST binding of the operation pipeline: parse HTTP → `operations.pipeline` → render.

An endpoint is an operation of `operations` (scope, idempotency rule, the pydantic models of its
query, body and response, its handler) bound to a method and path with `api.endpoint(...)`; the
pipeline runs it exactly as it runs the MCP tool of the same operation. The OpenAPI document is
built from the same declarations. `api.operation(...)` declares an endpoint only REST has (the
PDF download).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from functools import partial
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from core.access import resources
from core.base import context
from core.base.errors import DomainError, NotFound, PayloadTooLarge, ValidationFailed
from core.base.jsonout import dumps
from core.billing import documents
from core.mechanisms.ratelimit import Usage
from operations.pipeline import Call, Invocation, Operation, Reply, execute
from rest.problems import problem_body, problem_response

# Far above the largest valid request (250 invoice lines with 5000-character descriptions).
MAX_BODY_BYTES = 8 * 1048576

__all__ = ["Api", "Call", "Endpoint", "serve", "unrouted", "too_large"]


@dataclass
class Endpoint(Operation):
    """An operation as the REST API serves it: a single object is sent as `{data: …}`."""

    method: str = "GET"
    path: str = "/"
    summary: str = ""
    description: str = ""
    tag: str = ""
    status: int = 200
    media_type: str = "application/json"
    extra_responses: tuple[int, ...] = ()

    @property
    def operation_id(self) -> str:
        return self.name


class Api:
    def __init__(self, tag: str = "") -> None:
        self.tag = tag
        self.operations: list[Endpoint] = []

    def endpoint(self, method: str, path: str, operation: Operation, *, summary: str, **binding: Any) -> None:
        """Serve a shared operation (from `operations`) at `method path`."""
        shared = {f.name: getattr(operation, f.name) for f in fields(Operation)}
        self.operations.append(Endpoint(**shared, method=method, path=path, summary=summary,
                                        tag=binding.pop("tag", self.tag), **binding))

    def operation(self, method: str, path: str, **options: Any) -> Callable:
        """Declare an operation only the REST API has (a document download), handler below."""
        def register(handler: Callable[[Call], Any]) -> Callable[[Call], Any]:
            options.setdefault("tag", self.tag)
            self.operations.append(Endpoint(name=handler.__name__, handler=handler, method=method, path=path,
                                            **options))
            return handler
        return register

    def routes(self) -> list[Route]:
        by_path: dict[str, dict[str, Endpoint]] = {}
        for endpoint in self.operations:
            by_path.setdefault(endpoint.path, {})[endpoint.method] = endpoint
        return [Route(path, partial(_dispatch, endpoints), methods=list(endpoints))
                for path, endpoints in by_path.items()]


def rate_limit_headers(usage: Usage | None) -> dict[str, str]:
    if usage is None:
        return {}
    return {"RateLimit-Limit": str(usage.limit), "RateLimit-Remaining": str(usage.remaining),
            "RateLimit-Reset": str(usage.reset)}


def request_id_of(request: Request) -> tuple[str, DomainError | None]:
    """The request's id (the client's X-Request-Id when acceptable: service.observability gave it),
    and the refusal of a malformed one (reported after the credential and scope checks)."""
    supplied = request.headers.get("x-request-id")
    error = None
    if supplied and not context.acceptable_request_id(supplied):
        error = ValidationFailed.at("X-Request-Id", f"must be at most {context.REQUEST_ID_MAX} printable characters")
    return context.request_id(), error


async def _dispatch(endpoints: dict[str, Endpoint], request: Request) -> Response:
    endpoint = endpoints[request.method] if request.method in endpoints else endpoints.get("GET")
    return await serve(endpoint, request)


async def serve(endpoint: Endpoint, request: Request) -> Response:
    """The answer of `endpoint` to a request routed to it (by its route, or from the declarations by
    `service.direct`)."""
    raw = await request.body()  # at most MAX_BODY_BYTES: a larger body is refused before it is read
    return await _process(endpoint, request, raw)


def too_large(request: Request, limit: str) -> Response:
    """A body over the API's limit (refused before it is read)."""
    request_id, _ = request_id_of(request)
    return problem_response(PayloadTooLarge(f"The request body is larger than {limit}, the most any request "
                                            f"of this API needs."), request_id)


async def _process(endpoint: Endpoint, request: Request, raw: bytes) -> Response:
    request_id, header_error = request_id_of(request)
    invocation = Invocation(
        credential=request.headers.get("authorization"), resource=resources.rest_api(), request_id=request_id,
        params=dict(request.path_params), query=dict(request.query_params),
        query_items=request.query_params.multi_items(), body=raw,
        idempotency_key=request.headers.get("idempotency-key"),
        idempotency_scope=(endpoint.method, request.url.path),
        header_error=header_error,
    )
    outcome = await execute(endpoint, invocation, EndpointPresenter(endpoint, request_id))
    limit_headers = rate_limit_headers(outcome.usage)
    if outcome.error is not None:
        return problem_response(outcome.error, request_id, headers=limit_headers,
                                resource_metadata=resources.metadata_url(resources.rest_api()))
    if isinstance(outcome.result, Response):  # a document (the PDF) rather than JSON
        document = _not_modified(request, outcome.result) or outcome.result
        document.headers.update({**limit_headers, "X-Request-Id": request_id})
        return document
    reply = outcome.reply
    headers = {**reply.headers, **limit_headers, "X-Request-Id": request_id}
    if outcome.replayed:
        headers["Idempotent-Replayed"] = "true"
    return Response(reply.body, status_code=reply.status, headers=headers,
                    media_type=headers.pop("content-type", "application/json"))


def _not_modified(request: Request, document: Response) -> Response | None:
    """304 when the client already holds this document (its strong ETag in If-None-Match)."""
    etag = document.headers.get("etag")
    if not documents.held(etag, request.headers.get("if-none-match")):
        return None
    return Response(status_code=304, headers={"ETag": etag, "Cache-Control": document.headers["cache-control"]})


@dataclass(frozen=True)
class EndpointPresenter:
    """How a REST result or error is kept under an idempotency key (request id and rate-limit
    headers are added per response, never stored)."""

    endpoint: Endpoint
    request_id: str

    def success(self, result: Any) -> Reply:
        if isinstance(result, Response):
            return Reply(result.status_code, "", {})  # documents are never idempotent operations
        body = {"data": result} if self.endpoint.shape == "object" else result
        return Reply(self.endpoint.status, dumps(body), {"content-type": "application/json"})

    def failure(self, error: DomainError) -> Reply:
        return Reply(error.status, dumps(problem_body(error, self.request_id)),
                     {"content-type": "application/problem+json"})


def unrouted(request: Request, _exc: Exception) -> Response:
    """No operation at this path and method: a 404 problem like any other (Stripe does the same)."""
    request_id, _ = request_id_of(request)
    return problem_response(NotFound(f"No endpoint {request.method} {request.url.path}."), request_id)
