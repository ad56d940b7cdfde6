"""`POST /invoices` and `POST /invoices/{id}/finalize` on the fast write path (`operations.fast_writes`),
in front of the endpoints the framework binds: what the fast path leaves goes on to them, told when
the request was counted already."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from operations import fast_writes
from rest.fast_reads import Endpoint, internal_error, response_to
from rest.framework import COUNTED, request_id_of

# The routes served, with their fast write and the status of their success.
WRITES = {"/invoices": (fast_writes.create_invoice.__name__, 201),
          "/invoices/{id}/finalize": (fast_writes.finalize_invoice.__name__, 200)}


def fast_write(path: str, pipeline: Endpoint) -> Endpoint:
    """The endpoint of the route `path`: POST by its fast write when it has one, the rest (and what the
    fast write leaves) by `pipeline`."""
    if path not in WRITES:
        return pipeline
    name, status = WRITES[path]

    async def endpoint(request: Request) -> Response:
        if request.method != "POST":
            return await pipeline(request)
        request_id, header_error = request_id_of(request)
        response = None if header_error else await _answer(getattr(fast_writes, name), status, request, request_id)
        return response if response is not None else await pipeline(request)

    return endpoint


async def _answer(write, status: int, request: Request, request_id: str) -> Response | None:
    try:
        found = await write(fast_writes.Request(
            request.headers.get("authorization"), await request.body(), request.headers.get("idempotency-key"),
            (request.method, request.url.path), request.query_params.multi_items(), dict(request.path_params),
            request_id, status))
    except Exception:
        return internal_error(request_id)
    if found is None:
        return None
    if isinstance(found, fast_writes.Handover):
        request.scope[COUNTED] = True
        return None
    return response_to(found, request_id, status)
