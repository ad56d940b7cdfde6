"""`POST /invoices` and `POST /invoices/{id}/finalize` on the fast write path (`operations.fast_writes`),
in front of the endpoints the framework binds: what the fast path leaves goes on to them, told when
the request was counted already."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from operations import fast_writes
from rest import framework
from rest.fast_reads import Endpoint, internal_error, response_to

# The operations served, each by the fast write of its name.
WRITES = (fast_writes.create_invoice.__name__, fast_writes.finalize_invoice.__name__)


def fast_write(operation: framework.Endpoint, pipeline: Endpoint) -> Endpoint:
    """The endpoint of `operation`'s route: the operation by its fast write when it has one, the rest
    (and what the fast write leaves) by `pipeline`."""
    if operation.name not in WRITES:
        return pipeline

    async def endpoint(request: Request) -> Response:
        if request.method != operation.method:
            return await pipeline(request)
        request_id, header_error = framework.request_id_of(request)
        response = None if header_error else await _answer(operation, request, request_id)
        return response if response is not None else await pipeline(request)

    return endpoint


async def _answer(operation: framework.Endpoint, request: Request, request_id: str) -> Response | None:
    try:
        found = await getattr(fast_writes, operation.name)(fast_writes.Request(
            request.headers.get("authorization"), await request.body(), request.headers.get("idempotency-key"),
            (operation.method, request.url.path), request.query_params.multi_items(), dict(request.path_params),
            request_id, framework.EndpointPresenter(operation, request_id)))
    except Exception:
        return internal_error(request_id)
    if found is None:
        return None
    if isinstance(found, fast_writes.Handover):
        request.scope[framework.COUNTED] = True
        return None
    return response_to(found, request_id, operation.status)
