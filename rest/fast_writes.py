"""`POST /invoices` and `POST /invoices/{id}/finalize` on the fast write path (`operations.fast_writes`),
in front of the endpoints the framework binds: what the fast path leaves goes on to them, told when
the request was counted already."""

from __future__ import annotations

import logging

from starlette.requests import Request
from starlette.responses import Response

from core.access import resources
from core.base.errors import InternalError
from operations import fast_writes
from rest.fast_reads import Endpoint
from rest.framework import COUNTED, rate_limit_headers, request_id_of
from rest.problems import problem_response

log = logging.getLogger("invoicing.operations")
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
    except Exception:  # a fault of ours: as the pipeline, never leaked, always logged
        log.error("unexpected error (request %s)", request_id, exc_info=True)
        return problem_response(InternalError("An unexpected error occurred; retry the request. Request id: "
                                              + request_id), request_id)
    if found is None:
        return None
    if isinstance(found, fast_writes.Handover):
        request.scope[COUNTED] = True
        return None
    headers = {**rate_limit_headers(found.usage), "X-Request-Id": request_id}
    if found.error is not None:
        return problem_response(found.error, request_id, headers=headers,
                                resource_metadata=resources.metadata_url(resources.rest_api()))
    return Response(found.body, status_code=status, headers=headers, media_type="application/json")
