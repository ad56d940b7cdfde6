"""`POST /invoices` and `POST /invoices/{id}/finalize` on the fast write path (`operations.fast_writes`).

Two ways in, as for the fast reads: `FastLane` (in front of the whole application, so the write skips
the routing and middleware stacks; `lane_target` and `serve_in_lane`) and `fast_write`, in front of
the endpoints the framework binds (when the lane is off, with traces on). What the fast path leaves
goes on to the pipeline, told when the request was counted already, and never to the fast path twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.datastructures import Headers, QueryParams
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope, Send

from asgi.lanes import declared_length, send_answer
from core.base import context
from operations import fast_writes, write_lane
from rest import framework, invoices
from rest.fast_reads import Endpoint, internal_error, refused_request_id, response_to

WRITES = tuple(fast_writes.WRITES)  # the names of the operations served
OPERATIONS = {operation.name: operation for operation in invoices.api.operations if operation.name in WRITES}
TRIED = "invoicing.fast_write_tried"  # in a request's scope: the fast path had it, and left it to the pipeline
ROOT = "/api/v1"
CREATE_PATH = ROOT + OPERATIONS["create_invoice"].path
FINALIZE = OPERATIONS["finalize_invoice"].path.split("{id}", 1)[1]  # what follows the invoice's id


def fast_write(operation: framework.Endpoint, pipeline: Endpoint) -> Endpoint:
    """The endpoint of `operation`'s route: the operation by its fast write when it has one, the rest
    (and what the fast write leaves) by `pipeline`."""
    if operation.name not in WRITES:
        return pipeline

    async def endpoint(request: Request) -> Response:
        if request.method != operation.method or request.scope.get(TRIED):
            return await pipeline(request)
        request_id, header_error = framework.request_id_of(request)
        response = None if header_error else await _answer(operation, request.scope, await request.body(),
                                                           dict(request.path_params), request_id)
        return response if response is not None else await pipeline(request)

    return endpoint


@dataclass(frozen=True)
class LaneWrite:
    """A request the lane may take: its operation, the ids its path names, its body's declared length."""

    operation: framework.Endpoint
    params: dict
    length: int


def lane_target(scope: Scope) -> LaneWrite | None:
    """What the lane takes: POST /api/v1/invoices or /api/v1/invoices/{id}/finalize with a body the API
    accepts the size of (else `service.body_limits` answers)."""
    if scope["type"] != "http" or scope["method"] != "POST" or scope.get("root_path"):
        return None
    path = scope["path"]
    if path == CREATE_PATH:
        operation, params = OPERATIONS["create_invoice"], {}
    elif path.startswith(CREATE_PATH + "/") and path.endswith(FINALIZE) and \
            (invoice_ref := path[len(CREATE_PATH) + 1:-len(FINALIZE)]) and "/" not in invoice_ref:
        operation, params = OPERATIONS["finalize_invoice"], {"id": invoice_ref}
    else:
        return None
    length = declared_length(scope)
    return LaneWrite(operation, params, length) if length is not None and length <= framework.MAX_BODY_BYTES else None


async def serve_in_lane(scope: Scope, body: bytes, send: Send, target: LaneWrite) -> int | None:
    """Answer the write (its status) or None, having sent nothing: the application answers (the
    request marked in `scope` as tried, and as counted when it was)."""
    if refused_request_id(scope):
        return None
    response = await _answer(target.operation, scope, body, target.params, context.request_id())
    return await send_answer(send, response) if response is not None else None


async def _answer(operation: framework.Endpoint, scope: Scope, body: bytes, params: dict,
                  request_id: str) -> Response | None:
    headers = Headers(scope=scope)
    try:
        found = await fast_writes.WRITES[operation.name](write_lane.Request(
            headers.get("authorization"), body, headers.get("idempotency-key"), (operation.method, scope["path"]),
            QueryParams(scope["query_string"]).multi_items(), params, request_id,
            framework.EndpointPresenter(operation, request_id)))
    except Exception as exc:
        return internal_error(exc, request_id)
    if found is None or isinstance(found, write_lane.Handover):
        scope[TRIED] = True
        scope[framework.COUNTED] = found is not None
        return None
    return response_to(found, request_id, operation.status)
