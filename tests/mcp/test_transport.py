"""/mcp as a client meets it: authentication, step-up on a missing scope, Origin and body limits,
the rate limit, and the tool list."""

import json
import time

import pytest

from core.access.scopes import MCP_SCOPES
from core.base import db
from core.mechanisms import ratelimit
from mcp_server.gate import MAX_BODY_BYTES
from mcp_server.tools import TOOLS
from tests.limits import spend
from tests.mcp.jsonrpc import HEADERS, post

DECIDED_TOOLS = {
    "get_business", "list_customers", "get_customer", "create_customer", "update_customer", "list_products",
    "list_prices", "list_invoices", "get_invoice", "list_invoice_events", "create_invoice", "update_invoice",
    "add_invoice_item", "remove_invoice_item", "delete_draft_invoice", "finalize_invoice", "void_invoice",
    "send_invoice", "mark_invoice_paid", "preview_invoice", "confirm_invoice_action", "get_e_invoice",
    "list_credit_notes", "get_credit_note", "preview_credit_note", "create_credit_note", "send_credit_note",
    "void_credit_note", "list_payments", "record_payment", "reverse_payment", "get_receivables",
    "list_invoice_schedules", "create_invoice_schedule", "pause_invoice_schedule", "resume_invoice_schedule",
    "cancel_invoice_schedule", "send_reminder", "export_e_invoices", "send_invoices", "send_reminders",
}


@pytest.fixture
def fixed_window(monkeypatch):
    frozen = (int(time.time()) // 60) * 60 + 30.0
    monkeypatch.setattr(ratelimit, "clock", lambda: frozen)
    return frozen


def test_without_a_credential_is_401_with_the_challenge(client):
    response = post(client, "tools/list")
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith('Bearer error="invalid_token", error_description="')
    assert 'resource_metadata="http://testserver/.well-known/oauth-protected-resource/mcp"' in challenge
    assert f'scope="{" ".join(MCP_SCOPES)}"' in challenge


def test_an_unknown_key_is_401(client):
    response = post(client, "tools/list", key="inv_live_abcdefgh_" + "x" * 32)
    assert response.status_code == 401
    assert "unknown" in response.json()["error_description"].lower()


def test_a_get_without_a_credential_is_401_too(client):
    assert client.get("/mcp", headers={"Accept": "text/event-stream"}).status_code == 401


def test_mcp_is_served_at_exactly_mcp(client, tenant):
    response = post(client, "tools/list", key=tenant.key)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")


def test_tools_list_has_every_decided_tool(client, tenant):
    tools = post(client, "tools/list", key=tenant.key).json()["result"]["tools"]
    assert {tool["name"] for tool in tools} == DECIDED_TOOLS


def test_every_tool_has_schemas_and_explicit_annotations(client, tenant):
    for tool in post(client, "tools/list", key=tenant.key).json()["result"]["tools"]:
        assert tool["inputSchema"]["type"] == "object", tool["name"]
        assert tool["outputSchema"]["type"] == "object", tool["name"]
        assert set(tool["annotations"]) >= {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
        assert tool["description"] and tool["title"]


def test_every_argument_is_described(client, tenant):
    for tool in post(client, "tools/list", key=tenant.key).json()["result"]["tools"]:
        schema = tool["inputSchema"]
        nested = [(f"{model}.{name}", prop) for model, definition in schema.get("$defs", {}).items()
                  for name, prop in definition.get("properties", {}).items()]
        for name, prop in [*schema["properties"].items(), *nested]:
            assert prop.get("description"), (tool["name"], name)


def test_writes_take_an_idempotency_key_and_reads_do_not(client, tenant):
    for tool in post(client, "tools/list", key=tenant.key).json()["result"]["tools"]:
        if (tool.get("_meta") or {}).get("ui", {}).get("visibility") == ["app"]:
            continue  # the view's confirmation: its token is good for one call
        read_only = tool["annotations"]["readOnlyHint"]
        assert ("idempotency_key" in tool["inputSchema"]["properties"]) is not read_only, tool["name"]


def test_only_sending_reaches_the_open_world(client, tenant):
    tools = post(client, "tools/list", key=tenant.key).json()["result"]["tools"]
    assert [t["name"] for t in tools if t["annotations"]["openWorldHint"]] == [
        "send_invoice", "send_reminder", "send_credit_note", "send_invoices", "send_reminders", "confirm_invoice_action"]


def test_the_tool_list_matches_the_declarations():
    assert {tool.name for tool in TOOLS} | {"confirm_invoice_action"} == DECIDED_TOOLS


def test_a_tool_call_without_its_scope_is_403_for_step_up(client, tenant):
    key = tenant.key_with(["invoices:write"])
    response = post(client, "tools/call", {"name": "finalize_invoice", "arguments": {"invoice": "in_x"}}, key=key)
    assert response.status_code == 403
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith('Bearer error="insufficient_scope"')
    assert 'scope="invoices:finalize"' in challenge
    assert 'resource_metadata="http://testserver/.well-known/oauth-protected-resource/mcp"' in challenge
    assert "error_description=" in challenge
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is not None
    assert body["error"]["data"] == {"code": "forbidden", "required_scope": "invoices:finalize"}
    assert body["error"]["code"] == 403  # outside the codes JSON-RPC and MCP keep (-32768..-32000)


def test_implied_scopes_count(client, tenant):
    key = tenant.key_with(["invoices:write"])  # implies invoices:read, clients:read, business:read
    response = post(client, "tools/call", {"name": "list_invoices", "arguments": {}}, key=key)
    assert response.status_code == 200
    assert response.json()["result"]["isError"] is False


def test_an_unknown_tool_is_a_protocol_error_revealing_no_scope(client, tenant):
    key = tenant.key_with(["business:read"])
    response = post(client, "tools/call", {"name": "no_such_tool", "arguments": {}}, key=key)
    assert response.status_code == 200
    assert response.json()["error"]["code"] == -32602
    assert "www-authenticate" not in response.headers


def test_a_foreign_origin_is_403(client, tenant):
    response = post(client, "tools/list", key=tenant.key, headers={"Origin": "https://evil.example"})
    assert response.status_code == 403


def test_the_service_origin_is_accepted(client, tenant):
    response = post(client, "tools/list", key=tenant.key, headers={"Origin": "http://testserver"})
    assert response.status_code == 200


def test_a_body_over_the_limit_is_413(client, tenant):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "create_customer", "arguments": {"name": "x" * MAX_BODY_BYTES}}})
    response = client.post("/mcp", content=body, headers={**HEADERS, "Authorization": f"Bearer {tenant.key}"})
    assert response.status_code == 413


def test_requests_over_the_limit_are_429_with_retry_after(client, tenant, fixed_window):
    spend(ratelimit.api_requests(), f"key:{tenant.key_id}", 120)
    response = post(client, "tools/list", key=tenant.key)
    assert response.status_code == 429
    assert int(response.headers["retry-after"]) >= 1
    assert response.json()["error"]["data"]["code"] == "rate_limited"
    assert response.json()["error"]["code"] == 429


def test_a_tool_call_over_the_limit_is_429_too(client, tenant, fixed_window):
    spend(ratelimit.api_requests(), f"key:{tenant.key_id}", 120)
    response = post(client, "tools/call", {"name": "list_customers", "arguments": {}}, key=tenant.key)
    assert response.status_code == 429
    assert response.json()["error"]["data"]["retry_after_seconds"] >= 1


def test_the_limit_comes_before_the_scope_as_on_rest(client, tenant, fixed_window):
    key = tenant.key_with(["business:read"])
    for _ in range(120):
        assert post(client, "tools/call", {"name": "finalize_invoice", "arguments": {}}, key=key).status_code == 403
    assert post(client, "tools/call", {"name": "finalize_invoice", "arguments": {}}, key=key).status_code == 429


def test_tool_calls_count_once_against_the_limit(client, tenant, fixed_window):
    post(client, "tools/call", {"name": "list_customers", "arguments": {}}, key=tenant.key)
    with db.transaction() as session:
        usage = ratelimit.peek(session, ratelimit.api_requests(), f"key:{tenant.key_id}")
    assert usage.remaining == 119


def test_a_get_is_405_as_there_is_no_stream_to_offer(client, tenant):
    response = client.get("/mcp", headers={"Accept": "text/event-stream", "Authorization": f"Bearer {tenant.key}"})
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


def test_a_database_fault_while_authenticating_is_a_502_json_rpc_error(client, tenant, monkeypatch):
    from sqlalchemy.exc import OperationalError

    from mcp_server import gate

    async def broken(*_args, **_options):
        raise OperationalError("SELECT", {}, Exception("connection refused"))
    monkeypatch.setattr(gate, "identify", broken)
    response = post(client, "tools/list", key=tenant.key)
    assert response.status_code == 502
    assert response.json()["error"]["data"] == {"code": "upstream_failed"}
    assert "connection refused" not in response.text


def test_a_body_nested_too_deep_is_refused_without_a_server_error(client, tenant):
    body = "[" * 5000 + "]" * 5000
    response = client.post("/mcp", content=body, headers={**HEADERS, "Authorization": f"Bearer {tenant.key}"})
    assert 400 <= response.status_code < 500


def test_a_request_id_that_is_not_a_string_or_number_gets_no_step_up_answer(client, tenant):
    key = tenant.key_with(["business:read"])
    body = json.dumps({"jsonrpc": "2.0", "id": {"a": [1]}, "method": "tools/call",
                       "params": {"name": "finalize_invoice", "arguments": {}}})
    response = client.post("/mcp", content=body, headers={**HEADERS, "Authorization": f"Bearer {key}"})
    assert response.status_code != 403 and response.status_code < 500


MODERN = "2026-07-28"


def modern_call(client, key: str, name_header: str, method_header: str = "tools/call"):
    envelope = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "get_business", "arguments": {}, "_meta": envelope}}
    return client.post("/mcp", content=json.dumps(body), headers={
        **HEADERS, "MCP-Protocol-Version": MODERN, "Mcp-Method": method_header, "Mcp-Name": name_header,
        "Authorization": f"Bearer {key}"})


@pytest.mark.parametrize("padded", [" get_business", "get_business ", "\tget_business\t", "  get_business  "])
def test_routing_headers_are_compared_without_their_optional_whitespace(client, tenant, padded):
    response = modern_call(client, tenant.key, padded)
    assert response.status_code == 200, response.text
    assert response.json()["result"]["isError"] is False


def test_a_routing_header_that_differs_inside_is_still_a_mismatch(client, tenant):
    response = modern_call(client, tenant.key, "get_ business")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32020


def test_a_padded_method_header_is_accepted_too(client, tenant):
    response = modern_call(client, tenant.key, "get_business", method_header=" tools/call ")
    assert response.status_code == 200, response.text
