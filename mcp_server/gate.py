"""In front of the SDK: authenticate every request for the MCP resource, bound the body, count the
rate limit, and refuse a tool call whose scope the credential lacks with HTTP 403 so the client can
step up. The SDK only answers inside HTTP 200, so this reads the JSON-RPC request before it does."""

from __future__ import annotations

import json
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from core.access import credentials, resources
from core.access.principal import Principal
from core.access.scopes import MCP_SCOPES
from core.base import context
from core.base.db import transaction
from core.base.errors import DomainError, Unauthorized
from core.mechanisms import ratelimit
from mcp_server.tools import BY_NAME, Tool
from operations.challenge import bearer_challenge
from operations.pipeline import as_domain_error

MAX_BODY_BYTES = 1048576
# JSON-RPC error codes of our own (the spec leaves server errors to the implementation).
FORBIDDEN = -32003
RATE_LIMITED = -32029


def _challenge(error: str, description: str, scope: str) -> str:
    return bearer_challenge(error, description=description, scope=scope,
                            resource_metadata=resources.metadata_url(resources.mcp()))


def unauthorized(detail: str) -> Response:
    return JSONResponse({"error": "invalid_token", "error_description": detail}, status_code=401,
                        headers={"WWW-Authenticate": _challenge("invalid_token", detail, " ".join(MCP_SCOPES))})


def _jsonrpc_error(request_id: Any, code: int, message: str, status: int, headers: dict[str, str],
                   data: dict | None = None) -> Response:
    error: dict[str, Any] = {"code": code, "message": message}
    if data:
        error["data"] = data
    return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": error}, status_code=status, headers=headers)


def _authenticate(authorization: str | None, count: bool) -> tuple[Principal, ratelimit.Usage | None]:
    with transaction() as session:
        principal = credentials.authenticate(session, authorization, resource=resources.mcp())
        usage = ratelimit.hit(session, ratelimit.api_requests(), principal.rate_limit_subject) if count else None
    return principal, usage


class Gate:
    """An ASGI app wrapping the SDK's (a class instance, so Starlette routes to it as ASGI)."""

    def __init__(self, inner: ASGIApp) -> None:
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        headers = Headers(scope=scope)
        # At most MAX_BODY_BYTES: service.body_limits refuses more before it is read.
        body = await Request(scope, receive).body() if scope["method"] == "POST" else b""
        message = _message(body)
        tool = _tool_called(message)
        try:
            # Every request counts against the general limit, as on REST, except sending, which has its own.
            count = tool is None or tool.operation.own_limit is None
            principal, usage = await run_in_threadpool(_authenticate, headers.get("authorization"), count)
        except Unauthorized as error:
            await unauthorized(error.detail)(scope, receive, send)
            return
        except Exception as exc:  # a database fault while authenticating: the REST mapping, never a bare 500
            error = exc if isinstance(exc, DomainError) else as_domain_error(exc, context.request_id())
            response = _jsonrpc_error(_request_id(message), -32603, error.detail, error.status, {}, {"code": error.code})
            await response(scope, receive, send)
            return
        refusal = _refusal(scope["method"], message, tool, principal, usage)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.inner(scope, _replay(body, receive), send)


def _refusal(method: str, message: object, tool: Tool | None, principal: Principal,
             usage: ratelimit.Usage | None) -> Response | None:
    """The answer the gate gives itself, or None to let the SDK answer."""
    if usage is not None and usage.exceeded:
        error = usage.error("requests")
        return _jsonrpc_error(_request_id(message), RATE_LIMITED, error.detail, 429,
                              {"Retry-After": str(error.retry_after)},
                              {"code": error.code, "retry_after_seconds": error.retry_after})
    if method == "GET":
        # Stateless: there is no stream to offer outside a POST's answer (the spec's 405).
        return Response(status_code=405, headers={"Allow": "POST"})
    if tool is None or tool.scope in principal.scopes or _request_id(message) is None:
        return None  # an unknown name (or a malformed request) gets the SDK's answer, which reveals no scope
    detail = f"The tool {tool.name} needs the scope {tool.scope}, which this credential lacks."
    return _jsonrpc_error(_request_id(message), FORBIDDEN, detail, 403,
                          {"WWW-Authenticate": _challenge("insufficient_scope", detail, tool.scope)},
                          {"code": "forbidden", "scope": tool.scope})


def too_large(_request: Request, limit: str) -> Response:
    """A body over the endpoint's limit (refused before it is read), as a JSON-RPC error."""
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": {
        "code": -32600, "message": f"The request body is larger than {limit}."}}, status_code=413)


def _tool_called(message: object) -> Tool | None:
    """The known tool a `tools/call` request names, if it is one."""
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return None
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    return BY_NAME.get(name) if isinstance(name, str) else None


def _request_id(message: object) -> str | int | None:
    """The JSON-RPC id to answer with: a string or an integer, as the protocol allows."""
    request_id = message.get("id") if isinstance(message, dict) else None
    return request_id if isinstance(request_id, (str, int)) and not isinstance(request_id, bool) else None


def _message(body: bytes) -> object:
    try:
        return json.loads(body) if body else None
    except (ValueError, RecursionError):  # not JSON, or nested too deep: the SDK answers a parse error
        return None


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> dict:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()
    return replay
