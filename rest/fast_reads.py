"""`GET /invoices/{id}` and `GET /invoices` on the fast read path (`operations.fast_reads`).

Two ways in: `FastLane` (mounted by `service.app` in front of the whole application, so the hot read
skips the routing and middleware stacks; its request id, access line and metrics are written as
`service.observability` writes them) and `invoice_reads`, in front of the endpoint the framework binds
(when the lane is off, with traces on). What the fast path leaves (another credential, an odd header,
every other method) goes on to the full stack."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from asgi.lanes import first_header, send_answer
from core.access import resources
from core.base import context
from operations import fast_reads
from operations.pipeline import as_domain_error
from rest.framework import rate_limit_headers, request_id_of
from rest.problems import problem_response

Endpoint = Callable[[Request], Awaitable[Response]]
Target = str | QueryParams  # an invoice's id, or the list's query
LIST = "/api/v1/invoices"  # the path and route template of the list
PREFIX = LIST + "/"
ROUTE = "/api/v1/invoices/{id}"


async def answer(authorization: str | None, target: Target, request_id: str) -> Response | None:
    """The response to GET /invoices/{id} (`target` the id) or GET /invoices (`target` the query), or
    None: the full stack answers."""
    try:
        if isinstance(target, str):
            found = await fast_reads.get_invoice(authorization, target)
        else:
            found = await fast_reads.list_invoices(authorization, dict(target))
    except Exception as exc:
        return internal_error(exc, request_id)
    return None if found is None else response_to(found, request_id)


def internal_error(exc: Exception, request_id: str) -> Response:
    """An unexpected exception of a fast path, answered as the pipeline answers one (`as_domain_error`:
    an unreachable database is a 502, any other fault of ours a 500; never leaked, always logged)."""
    return problem_response(as_domain_error(exc, request_id), request_id)


def response_to(found: fast_reads.Answer, request_id: str, status: int = 200) -> Response:
    """The response of a fast path's answer, with the headers the pipeline's has."""
    headers = {**rate_limit_headers(found.usage), "X-Request-Id": request_id}
    if found.error is not None:
        return problem_response(found.error, request_id, headers=headers,
                                resource_metadata=resources.metadata_url(resources.rest_api()))
    return Response(found.body, status_code=status, headers=headers, media_type="application/json")


def invoice_reads(pipeline: Endpoint) -> Endpoint:
    """The endpoint of `/invoices/{id}` or `/invoices` in the REST app: GET by the fast path, the rest
    by `pipeline`."""

    async def endpoint(request: Request) -> Response:
        if request.method != "GET":
            return await pipeline(request)
        request_id, header_error = request_id_of(request)
        target = request.path_params["id"] if "id" in request.path_params else request.query_params
        response = None if header_error else await answer(request.headers.get("authorization"), target, request_id)
        return response if response is not None else await pipeline(request)

    return endpoint


def lane_target(scope: Scope) -> Target | None:
    """What the lane takes: GET /api/v1/invoices/{id} (the id) or GET /api/v1/invoices (its query),
    without a body."""
    if scope["type"] != "http" or scope["method"] != "GET" or scope.get("root_path"):
        return None
    path = scope["path"]
    if path == LIST:
        target: Target = QueryParams(scope["query_string"])
    elif path.startswith(PREFIX) and (invoice_ref := path[len(PREFIX):]) and "/" not in invoice_ref:
        target = invoice_ref
    else:
        return None
    for name, value in scope["headers"]:
        if (name == b"content-length" and value != b"0") or name == b"transfer-encoding":
            return None
    return target


def route_of(target: Target) -> str:
    """The route template of the lane's request, for its access line and metrics."""
    return ROUTE if isinstance(target, str) else LIST


async def serve_in_lane(scope: Scope, receive: Receive, send: Send, target: Target) -> int | None:
    """Answer the request (its status) or None, having sent nothing: the full stack answers."""
    if refused_request_id(scope):
        return None
    authorization = first_header(scope, b"authorization")
    response = await answer(authorization.decode("latin-1") if authorization is not None else None, target,
                            context.request_id())
    return await send_answer(send, response) if response is not None else None


def refused_request_id(scope: Scope) -> bool:
    """Whether the request's X-Request-Id is one the pipeline refuses (after authenticating and
    counting: a lane leaves such a request to it)."""
    supplied = first_header(scope, b"x-request-id")
    return supplied is not None and not context.acceptable_request_id(supplied.decode("latin-1"))
