"""`tools/call` of `get_invoice` with an API key, answered before the SDK as the SDK answers it.

An assistant reads invoices far more often than it does anything else. Through the SDK a read costs
a stateless session, two hops into threads and the ORM (~9 ms of CPU); here it is the REST fast read
(`operations.fast_reads.get_invoice`: one statement, the invoice's JSON kept under its rows' version)
and the tool result that `server._act` would make of it, written as the SDK writes a JSON-RPC answer.
The lane takes only what it answers exactly as the SDK path does: a lone request of a handshake-era
protocol version whose answer `tests/mcp/test_fast_calls.py` holds byte for byte to the SDK's, no
session header, a host and origin the transport security accepts, the tool's one argument; and only
what the fast read answers itself (an API key with the scope, an invoice found or not). Everything
else, the body replayed, goes to the gate and the SDK, uncounted.
"""

from __future__ import annotations

import json
import logging

import orjson
import pydantic_core
from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from asgi.lanes import read_body
from core.base import context, metrics
from core.base.errors import NotFound
from core.base.jsonout import dumps
from mcp_server.server import result_content, with_formatted_money
from operations import fast_reads
from operations.rendering import error_payload

log = logging.getLogger("invoicing.mcp")
PATH = "/mcp"
ROUTE = "/mcp"
TOOL = "get_invoice"
# Versions whose answers the tests hold to the SDK's byte for byte; others go to the SDK.
VERSIONS = frozenset({"2025-11-25", "2025-06-18", "2025-03-26"})
MAX_BODY = 4096  # a get_invoice call is ~150 bytes; anything larger goes to the SDK


def lane_target(scope: Scope) -> bool:
    return scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == PATH and not scope.get("root_path")


class Lane:
    """The MCP lane of one application (its transport security is the endpoint's)."""

    def __init__(self, security: TransportSecurityMiddleware) -> None:
        self.security = security
        self.kept: dict = {}  # invoice id -> (its REST JSON, the tool result's JSON made of it)

    async def serve(self, scope: Scope, receive: Receive, send: Send) -> tuple[int | None, Receive]:
        """Answer the call (its status), or None with the `receive` the application must read the
        request from (the body, when read, replayed)."""
        headers = _headers(scope)
        if not _plain(headers):
            return None, receive
        body, replay = await read_body(receive, int(headers[b"content-length"]))
        call = _call(body) if body is not None else None
        if call is None or await self.security.validate_request(Request(scope), is_post=True) is not None:
            return None, replay
        request_id, invoice_ref = call
        try:
            found = await fast_reads.get_invoice(_text(headers.get(b"authorization")), invoice_ref)
        except Exception:  # a fault of ours: logged, and the SDK's path answers as it answers faults
            log.error("the MCP lane's read failed (request %s)", context.request_id(), exc_info=True)
            return None, replay
        if found is None or (found.error is not None and not isinstance(found.error, NotFound)):
            return None, replay  # nothing counted, or refused uncounted (a limit): the SDK's answer
        result = self._result(invoice_ref, found)
        metrics.tool_call(TOOL, "ok" if found.error is None else found.error.code)
        answer = b'{"jsonrpc":"2.0","id":' + orjson.dumps(request_id) + b',"result":' + result + b"}"
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode()),
            (b"x-request-id", context.request_id().encode())]})
        await send({"type": "http.response.body", "body": answer})
        return 200, replay

    def _result(self, invoice_ref: str, found: fast_reads.Answer) -> bytes:
        """The tool result `server._act` makes of the read, as the SDK writes it."""
        if found.error is not None:  # not found: `server._error_result`
            return pydantic_core.to_json({"content": [{"text": json.dumps(error_payload(found.error)), "type": "text"}],
                                          "isError": True})
        kept = self.kept.get(invoice_ref)
        if kept is not None and kept[0] == found.body:
            return kept[1]
        invoice = orjson.loads(found.body)["data"]
        text = dumps(with_formatted_money(invoice))
        structured = json.loads(text)  # as `server._act` parses the text the pipeline kept
        # The SDK writes the protocol's objects with their members in name order.
        content = [dict(sorted(item.model_dump(by_alias=True, mode="json", exclude_none=True).items()))
                   for item in result_content(TOOL, text, structured)]
        result = pydantic_core.to_json({"content": content, "isError": False, "structuredContent": structured})
        if len(self.kept) >= 256:
            self.kept.pop(next(iter(self.kept)))
        self.kept[invoice_ref] = (found.body, result)
        return result


def _headers(scope: Scope) -> dict[bytes, bytes]:
    headers: dict[bytes, bytes] = {}
    for name, value in scope["headers"]:
        if name in headers:  # a repeated header: the SDK decides what it means
            headers[b"repeated"] = b"1"
        headers[name] = value
    return headers


def _plain(headers: dict[bytes, bytes]) -> bool:
    """A request whose headers the SDK would accept, as the lane can answer it."""
    length = headers.get(b"content-length", b"")
    return (b"repeated" not in headers and length.isdigit() and 0 < int(length) <= MAX_BODY
            and b"transfer-encoding" not in headers and b"mcp-session-id" not in headers
            and headers.get(b"content-type") == b"application/json"
            and b"application/json" in headers.get(b"accept", b"")
            and _text(headers.get(b"mcp-protocol-version")) in VERSIONS
            and (b"x-request-id" not in headers or _acceptable_request_id(headers[b"x-request-id"])))


def _acceptable_request_id(value: bytes) -> bool:
    return context.acceptable_request_id(value.decode("latin-1"))


def _text(value: bytes | None) -> str | None:
    return value.decode("latin-1") if value is not None else None


def _call(body: bytes) -> tuple[int | str, str] | None:
    """The request id and invoice of a lone `tools/call` of get_invoice with only its argument."""
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(message, dict) or message.keys() != {"jsonrpc", "id", "method", "params"}:
        return None
    request_id, params = message["id"], message["params"]
    if (message["jsonrpc"] != "2.0" or message["method"] != "tools/call" or not isinstance(params, dict)
            or params.keys() != {"name", "arguments"} or params["name"] != TOOL
            or isinstance(request_id, bool) or not isinstance(request_id, (int, str))
            or (isinstance(request_id, int) and not -2**53 < request_id < 2**53)):
        return None
    arguments = params["arguments"]
    if not isinstance(arguments, dict) or arguments.keys() != {"invoice"} or not isinstance(arguments["invoice"], str):
        return None
    return request_id, arguments["invoice"]
