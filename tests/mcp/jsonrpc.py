"""Raw JSON-RPC over the in-process app: the wire as a client sends it (protocol 2025-11-25)."""

from __future__ import annotations

import itertools
import json

PROTOCOL = "2025-11-25"
_ids = itertools.count(1)
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
           "MCP-Protocol-Version": PROTOCOL}


def post(client, method: str, params: dict | None = None, *, key: str | None = None, headers=None):
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params or {}}
    all_headers = {**HEADERS, **({"Authorization": f"Bearer {key}"} if key else {}), **(headers or {})}
    return client.post("/mcp", content=json.dumps(body), headers=all_headers)


def call(client, key: str, tool: str, **arguments) -> dict:
    """The tools/call result (raises on a transport or JSON-RPC error)."""
    response = post(client, "tools/call", {"name": tool, "arguments": arguments}, key=key)
    assert response.status_code == 200, response.text
    message = response.json()
    assert "result" in message, message
    return message["result"]


def structured(client, key: str, tool: str, **arguments) -> dict:
    result = call(client, key, tool, **arguments)
    assert not result.get("isError"), result
    return result["structuredContent"]


def error_of(result: dict) -> dict:
    assert result["isError"] is True and "structuredContent" not in result, result
    return json.loads(result["content"][0]["text"])
