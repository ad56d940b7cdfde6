"""Request bodies bounded before they are read, in front of every route.

A `Content-Length` above the route's limit is answered 413 at once, without reading a byte; a body
without one (chunked) is counted while it streams and refused as soon as it passes the limit, so
no caller can make a process hold more than the limit in memory. Each surface answers in its own
format (problem JSON, OAuth error JSON, JSON-RPC, a page): the rules name the surface's answer.

A rule may allow a signed-in person more. Whether a request is signed in is asked only of a body
that needs the larger limit (one declared or streamed past the smaller), and is answered by a valid
session, never by a cookie's name; the question runs on a worker thread (it reads the database).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

KB, MIB = 1024, 1024 * 1024


@dataclass(frozen=True)
class BodyLimit:
    path_prefix: str
    max_bytes: int
    refusal: Callable[[Request, str], Response]  # the surface's 413, given the limit in words
    max_bytes_signed_in: int | None = None  # a larger limit for a request with a valid session

    def matches(self, path: str) -> bool:
        prefix = self.path_prefix.rstrip("/")
        return path == prefix or path.startswith(prefix + "/")


class BodyTooLarge(BaseException):
    """Raised from `receive` when a streamed body passes its limit; the middleware answers. A
    BaseException, so no handler of `Exception` on the way (Starlette's 500 page of a mounted app,
    the pipeline's fault handler) takes it for a fault of ours."""


class BodyLimits:
    """ASGI middleware applying the first `BodyLimit` whose prefix matches the path. `signed_in`
    tells (blocking) whether a request comes with a valid session."""

    def __init__(self, app: ASGIApp, limits: list[BodyLimit], signed_in: Callable[[Request], bool]) -> None:
        self.app, self.limits, self.signed_in = app, limits, signed_in

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        rule = next((limit for limit in self.limits if limit.matches(scope.get("path", ""))), None) \
            if scope["type"] == "http" else None
        if rule is None:
            await self.app(scope, receive, send)
            return
        limit, settled = rule.max_bytes, rule.max_bytes_signed_in is None  # settled: no larger limit to ask for

        async def allows(size: int) -> bool:
            """Whether a body of `size` bytes is within the limit, asking once for a signed-in
            person's larger one when the smaller does not do."""
            nonlocal limit, settled
            if size > limit and not settled:
                settled = True
                if await run_in_threadpool(self.signed_in, Request(scope)):
                    limit = rule.max_bytes_signed_in
            return size <= limit

        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and not await allows(int(declared)):
            await rule.refusal(Request(scope), describe(limit))(scope, receive, send)
            return
        counted, started = 0, False

        async def counting_receive() -> Message:
            nonlocal counted
            message = await receive()
            if message["type"] == "http.request":
                counted += len(message.get("body", b""))
                if not await allows(counted):
                    raise BodyTooLarge
            return message

        async def noting_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, noting_send)
        except BodyTooLarge:
            if not started:
                await rule.refusal(Request(scope), describe(limit))(scope, receive, send)


def describe(max_bytes: int) -> str:
    return f"{max_bytes // MIB} MiB" if max_bytes >= MIB else f"{max_bytes // KB} KB"
