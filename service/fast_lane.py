"""The fast lane: in front of the whole application, the hottest requests answered without the routing
and middleware stacks (REST's `rest.fast_reads` and `rest.fast_writes`, MCP's `mcp_server.fast_calls`,
OAuth's refresh grant `authz.fast_refresh`); everything else, and whatever the lane leaves, goes to
the application. Off while traces are on (the request's span is the instrumented stack's)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from starlette.types import ASGIApp, Receive, Scope, Send

from asgi.lanes import read_body
from authz import fast_refresh
from mcp_server import fast_calls
from rest import fast_reads, fast_writes
from service import observability
from service.direct import Direct


class FastLane:
    def __init__(self, app: ASGIApp, mcp: fast_calls.Lane, direct: Direct, *, enabled: bool = True) -> None:
        self.app, self.mcp, self.direct, self.enabled = app, mcp, direct, enabled

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.enabled:
            await self.app(scope, receive, send)
            return
        target = fast_reads.lane_target(scope)
        if target is not None:
            observability.begin(scope)
            started = time.perf_counter()
            status = await fast_reads.serve_in_lane(scope, receive, send, target)
            if status is not None:
                observability.finish(scope, fast_reads.route_of(target), status, started)
                return
        elif fast_calls.lane_target(scope):
            observability.begin(scope)
            started = time.perf_counter()
            status, receive = await self.mcp.serve(scope, receive, send)
            if status is not None:
                observability.finish(scope, fast_calls.ROUTE, status, started)
                return
        elif (write := fast_writes.lane_target(scope)) is not None:
            served, receive = await _with_body(scope, receive, write.length, fast_writes.ROOT + write.operation.path,
                                               lambda body: fast_writes.serve_in_lane(scope, body, send, write))
            if served:
                return
        elif (length := fast_refresh.lane_target(scope)) is not None:
            served, receive = await _with_body(scope, receive, length, fast_refresh.PATH,
                                               lambda body: fast_refresh.serve(scope, body, send))
            if served:
                return
        if (routed := self.direct.target(scope)) is not None and await self.direct.serve(scope, receive, send, *routed):
            return
        await self.app(scope, receive, send)


async def _with_body(scope: Scope, receive: Receive, length: int, route: str,
                     serve: Callable[[bytes], Awaitable[int | None]]) -> tuple[bool, Receive]:
    """A lane that reads the request's body first (`length` bytes declared): whether `serve` answered
    (it has the body only when it came whole), and the `receive` the application reads the request
    from when it did not (what was read, replayed)."""
    observability.begin(scope)
    started = time.perf_counter()
    body, receive = await read_body(receive, length)
    status = await serve(body) if body is not None else None
    if status is not None:
        observability.finish(scope, route, status, started)
        return True, receive
    return False, receive
