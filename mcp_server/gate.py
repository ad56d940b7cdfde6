"""In front of the SDK: authenticate every request for the MCP resource, bound the body, count the
rate limit, and refuse a tool call whose scope the credential lacks with HTTP 403 so the client can
step up. The SDK only answers inside HTTP 200, so this reads the JSON-RPC request before it does."""

from __future__ import annotations

import json
import logging
import secrets
from typing import Any

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from asgi.bodies import replaying
from core.access import resources
from core.access.principal import Principal
from core.access.scopes import MCP_SCOPES
from core.base import context
from core.base.errors import DomainError, RoleForbids, Unauthorized
from core.billing.confirmations import Confirmed
from core.mechanisms import ratelimit
from mcp_server import confirmations, prompts
from mcp_server import resources as mcp_resources
from mcp_server.clients import SESSION_HEADER, Traits, UnknownSession, binding, session_id, session_traits, traits_of
from mcp_server.codes import FORBIDDEN, RATE_LIMITED
from mcp_server.tools import BY_NAME, Tool
from operations.challenge import bearer_challenge
from operations.confirmations import ACTIONS, Question, question_for
from operations.pipeline import as_domain_error, identify
from operations.rendering import forbidden_data

log = logging.getLogger("invoicing.mcp")

MAX_BODY_BYTES = 1048576
SESSION_NOT_FOUND = -32001  # the code MCP SDKs answer an unknown handshake-era session with
# Headers whose values the SDK compares with the body: compared without their optional whitespace
# (RFC 9110 §5.5), as the SDK's own comparison does not strip it.
ROUTING_HEADERS = ("mcp-method", "mcp-name", "mcp-protocol-version")
ROUTING_HEADER_PREFIX = "mcp-param-"


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


class Gate:
    """An ASGI app wrapping the SDK's (a class instance, so Starlette routes to it as ASGI)."""

    def __init__(self, inner: ASGIApp) -> None:
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        scope = without_optional_whitespace(scope)
        headers = Headers(scope=scope)
        # At most MAX_BODY_BYTES: service.body_limits refuses more before it is read.
        body = await Request(scope, receive).body() if scope["method"] == "POST" else b""
        message = _message(body)
        tool = _tool_called(message)
        try:
            # Every request counts against the general limit, as on REST, except sending, which has its own.
            count = tool is None or tool.operation.own_limit is None
            principal, usage = await identify(headers.get("authorization"), resources.mcp(), count=count, peek=False)
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
        scope = {**scope, confirmations.PRINCIPAL: principal}
        try:
            scope = _with_session(scope, headers, principal)
        except UnknownSession:
            response = _jsonrpc_error(_request_id(message), SESSION_NOT_FOUND, "Session not found: initialize again.", 404, {})
            await response(scope, receive, send)
            return
        if _is_answer(message):
            await self._take_answer(scope, receive, send, message, principal)
            return
        if tool is not None and tool.name in ACTIONS and _asks_on_stream(scope, headers):
            question = await run_in_threadpool(question_for, tool.name, principal, _arguments(message))
            if question is not None:
                await self._ask_on_stream(scope, receive, send, body, message, question, principal)
                return
        if isinstance(message, dict) and message.get("method") == "initialize":
            send = _with_session_id(send, principal, traits_of(_params(message).get("capabilities")))
        await self.inner(scope, replaying(body, receive), send)

    async def _take_answer(self, scope: Scope, receive: Receive, send: Send, message: dict,
                           principal: Principal) -> None:
        """A client's answer to one of our questions: kept for the process whose stream asked it."""
        if not await run_in_threadpool(confirmations.record_answer, message["id"], binding(principal), message):
            log.info("an answer to an unknown or closed question %s was dropped", str(message["id"])[:80])
        await Response(status_code=202)(scope, receive, send)

    async def _ask_on_stream(self, scope: Scope, receive: Receive, send: Send, body: bytes, message: dict,
                             question: Question, principal: Principal) -> None:
        """A handshake-era call that needs the person's word: `elicitation/create` on the call's own
        stream (server-sent events), the answer awaited through the database, then the call's result.
        When the invoice changed while the person was asked, nothing happened: they are asked again
        about it as it is now (at most MAX_QUESTIONS times), on the same stream."""
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache, no-transform")]})

        async def event(payload: dict) -> None:
            await send({"type": "http.response.body", "body": f"event: message\ndata: {json.dumps(payload)}\n\n".encode(),
                        "more_body": True})

        async def keep_alive() -> None:
            await send({"type": "http.response.body", "body": b": waiting for the person\n\n", "more_body": True})

        tool, arguments = _params(message)["name"], _arguments(message)
        for _ in range(confirmations.MAX_QUESTIONS):
            approved, action = await self._ask(question, principal, event, keep_alive)
            if not approved:
                declined = confirmations.declined(tool, arguments, action)
                result = {"jsonrpc": "2.0", "id": message.get("id"),
                          "result": declined.model_dump(by_alias=True, exclude_none=True, mode="json")}
                break
            result = await self._forward(scope, body, question.confirmed)
            if not confirmations.is_changed(result.get("result")):
                break
            question = await run_in_threadpool(question_for, tool, principal, arguments)
            if question is None:
                break  # it would fail now: the refusal stands
        await event(result)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _ask(self, question: Question, principal: Principal, event, keep_alive) -> tuple[bool, str]:
        """Put `question` on the stream and wait for the answer (from whichever process it reaches)."""
        question_id = f"{confirmations.STATE_PREFIX.rstrip(':')}-{secrets.token_urlsafe(18)}"
        await run_in_threadpool(confirmations.open_question, question_id, binding(principal))
        try:
            await event(confirmations.elicitation_request(question_id, question))
            answer = await confirmations.wait_for_answer(question_id, keep_alive)
        finally:
            await run_in_threadpool(confirmations.forget, question_id)
        return confirmations.answer_confirms(answer)

    async def _forward(self, scope: Scope, body: bytes, confirmed: Confirmed) -> dict:
        """The SDK's answer to a call the person confirmed (JSON, as it answers every call)."""
        chunks: list[bytes] = []

        async def capture(message: dict) -> None:
            if message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        async def no_more() -> dict:
            return {"type": "http.disconnect"}

        await self.inner({**scope, confirmations.CONFIRMED: confirmed}, replaying(body, no_more), capture)
        return json.loads(b"".join(chunks))


def without_optional_whitespace(scope: Scope) -> Scope:
    """`scope` with the MCP routing headers' values stripped of leading and trailing spaces and tabs."""
    def routing(name: bytes) -> bool:
        lowered = name.decode("latin-1").lower()
        return lowered in ROUTING_HEADERS or lowered.startswith(ROUTING_HEADER_PREFIX)
    headers = [(name, value.strip(b" \t") if routing(name) else value) for name, value in scope["headers"]]
    return {**scope, "headers": headers}


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
    needed = _needed_scope(message, tool)
    if needed is None or needed[1] in principal.scopes or _request_id(message) is None:
        return None  # an unknown name (or a malformed request) gets the SDK's answer, which reveals no scope
    what, scope = needed
    refused = principal.refusal(scope, what)
    assert refused is not None
    # a role's refusal has no challenge: no step-up can help, so nothing invites one
    headers = {} if isinstance(refused, RoleForbids) else {
        "WWW-Authenticate": _challenge("insufficient_scope", refused.detail, scope)}
    return _jsonrpc_error(_request_id(message), FORBIDDEN, refused.detail, 403, headers, forbidden_data(refused))


def _needed_scope(message: object, tool: Tool | None) -> tuple[str, str] | None:
    """What the request does and the scope it takes, when it takes one: a known tool's, reading an
    invoice's PDF (as get_invoice), completing a customer or an invoice id (as the tools that list them)."""
    if tool is not None:
        return f"The tool {tool.name}", tool.scope
    method, params = (message.get("method") if isinstance(message, dict) else None), _params(message)
    if method == "resources/read" and str(params.get("uri", "")).startswith(("invoice://", "e-invoice-export://")):
        return "Reading an invoice or an export", mcp_resources.READ_SCOPE
    if method == "completion/complete" and (scope := prompts.completion_scope(params.get("ref"), params.get("argument"))):
        return "Completing this argument", scope
    return None


def too_large(_request: Request, limit: str) -> Response:
    """A body over the endpoint's limit (refused before it is read), as a JSON-RPC error."""
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": {
        "code": -32600, "message": f"The request body is larger than {limit}."}}, status_code=413)


def _params(message: object) -> dict:
    params = message.get("params") if isinstance(message, dict) else None
    return params if isinstance(params, dict) else {}


def _arguments(message: object) -> dict:
    arguments = _params(message).get("arguments")
    return arguments if isinstance(arguments, dict) else {}


def _is_modern(headers: Headers) -> bool:
    version = headers.get("mcp-protocol-version")
    return version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS


def _with_session(scope: Scope, headers: Headers, principal: Principal) -> Scope:
    """The traits a handshake-era client's session carries, on the scope; the SDK, stateless,
    never sees the session id. UnknownSession for one this credential was not given."""
    value = headers.get(SESSION_HEADER)
    if value is None or _is_modern(headers):
        return scope
    traits = session_traits(value, principal)
    kept = [(name, v) for name, v in scope["headers"] if name.decode("latin-1").lower() != SESSION_HEADER]
    return {**scope, "headers": kept, confirmations.TRAITS: traits}


def _asks_on_stream(scope: Scope, headers: Headers) -> bool:
    traits = scope.get(confirmations.TRAITS)
    return traits is not None and traits.elicitation and "text/event-stream" in headers.get("accept", "")


def _with_session_id(send: Send, principal: Principal, traits: Traits) -> Send:
    """An `initialize` answer gives a client that can be asked, or shows views, a session carrying that."""
    if not traits.any:
        return send

    async def with_header(message: dict) -> None:
        if message["type"] == "http.response.start" and message.get("status") == 200:
            headers = [*message.get("headers", []), (SESSION_HEADER.encode(), session_id(principal, traits).encode())]
            message = {**message, "headers": headers}
        await send(message)
    return with_header


def _is_answer(message: object) -> bool:
    """A JSON-RPC response from the client to one of our questions."""
    return (isinstance(message, dict) and "method" not in message and ("result" in message or "error" in message)
            and isinstance(message.get("id"), str) and message["id"].startswith(confirmations.STATE_PREFIX.rstrip(":") + "-"))


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
