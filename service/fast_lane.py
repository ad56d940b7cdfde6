"""The fast lane: in front of the whole application, the hottest reads answered without the routing
and middleware stacks (`rest.fast_reads`); everything else, and whatever the lane leaves, goes to the
application. Off while traces are on (the request's span is the instrumented stack's)."""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Receive, Scope, Send

from rest import fast_reads
from service import observability


class FastLane:
    def __init__(self, app: ASGIApp, *, enabled: bool = True) -> None:
        self.app, self.enabled = app, enabled

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        target = fast_reads.lane_target(scope) if self.enabled else None
        if target is not None:
            observability.begin(scope)
            started = time.perf_counter()
            status = await fast_reads.serve_in_lane(scope, receive, send, target)
            if status is not None:
                observability.finish(scope, fast_reads.route_of(target), status, started)
                return
        await self.app(scope, receive, send)
