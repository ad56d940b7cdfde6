"""Requests routed from the declarations, past Starlette's routing and middleware stacks.

REST's endpoints whose operation runs on the event loop (`Operation.on_loop`: found from the
operation declarations, no path is written here) and MCP's endpoint are called directly: the same
endpoint the application routes to (`rest.framework.serve`, MCP's gate), after what the stack would
have done, done here: the request's id on the response, its metrics and access line
(`service.observability`), and the body limit (a body declared within the surface's limit is taken;
a chunked body, or one declared larger, goes to the stack, which refuses it as it always has).
Anything else (another method, a path no declaration matches) goes to the application.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from starlette.requests import Request
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from asgi.bodies import declared_length
from rest import framework
from service import observability


@dataclass(frozen=True)
class Target:
    """Where a request goes: the route's template (for metrics), the body it takes at most, and the
    ASGI application that answers it (the path's parameters in its scope's `path_params`)."""

    route: str
    max_body: int
    app: ASGIApp


@dataclass(frozen=True)
class _Pattern:
    method: str
    regex: re.Pattern
    convertors: dict
    target: Target


class Direct:
    """The application, with the declared targets answered in front of its stacks."""

    def __init__(self, app: ASGIApp, root: str, endpoints: list[framework.Endpoint], mcp_path: str, mcp: ASGIApp,
                 mcp_max_body: int) -> None:
        self.app = app
        self.exact: dict[tuple[str, str], Target] = {("POST", mcp_path): Target(mcp_path, mcp_max_body, mcp)}
        self.patterns: list[_Pattern] = []
        for endpoint in endpoints:
            if not endpoint.on_loop:
                continue
            target = Target(root + endpoint.path, framework.MAX_BODY_BYTES, _rest_app(endpoint))
            regex, _, convertors = compile_path(root + endpoint.path)
            if convertors:
                self.patterns.append(_Pattern(endpoint.method, regex, convertors, target))
            else:
                self.exact[(endpoint.method, root + endpoint.path)] = target

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (routed := self.target(scope)) is not None and await self.serve(scope, receive, send, *routed):
            return
        await self.app(scope, receive, send)

    def target(self, scope: Scope) -> tuple[Target, dict] | None:
        """The target of an HTTP request and its path's parameters, or None: the application's."""
        if scope["type"] != "http" or scope.get("root_path"):
            return None
        method, path = scope["method"], scope["path"]
        found = self.exact.get((method, path))
        if found is not None:
            return found, {}
        for pattern in self.patterns:
            if pattern.method == method and (matched := pattern.regex.match(path)) is not None:
                return pattern.target, {name: pattern.convertors[name].convert(value)
                                        for name, value in matched.groupdict().items()}
        return None

    async def serve(self, scope: Scope, receive: Receive, send: Send, target: Target, params: dict) -> bool:
        """Answer the request unless its body is not one the target takes as it comes (False: the
        application's)."""
        length = declared_length(scope)
        if length is None or length > target.max_body:
            return False
        request = observability.begin(scope)
        started, status = time.perf_counter(), 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = observability.with_request_id(message, request.request_id)
            await send(message)

        try:
            await target.app({**scope, "path_params": params}, receive, send_with_id)
        finally:
            observability.finish(scope, target.route, status, started)
        return True


def _rest_app(endpoint: framework.Endpoint) -> ASGIApp:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        response = await framework.serve(endpoint, Request(scope, receive))
        await response(scope, receive, send)
    return app
