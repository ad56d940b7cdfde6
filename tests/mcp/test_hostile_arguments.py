"""Every MCP tool, fed hostile arguments (tests/hostile.py): always a JSON-RPC result (a tool error
at worst), never a transport or server error; a validation error names arguments the assistant sent
or the tool declares."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_server.gate import MAX_BODY_BYTES
from mcp_server.tools import TOOLS, Tool
from tests import hostile
from tests.conftest import make_tenant
from tests.mcp.jsonrpc import HEADERS

pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

# Where a refusal may point besides the arguments: the body as a whole, lines of an invoice.
OTHER_PATHS = {"body", "lines", "items"}


def real_ids(tool: Tool, records: dict[str, Any]) -> list[str]:
    return {
        "customer": [records["customer"]["id"]],
        "invoice": [records["draft"]["id"], records["open"]["id"]],
        "item": [records["draft"]["lines"]["data"][0]["id"]],
        "credit_note": [records["credit_note"]["id"]],
        "payment": [records["payment"]["id"]],
        "schedule": [records["schedule"]["id"], records["paused_schedule"]["id"]],
    }.get(tool.id_argument or "", [])


def valid_body(tool: Tool, records: dict[str, Any]) -> dict[str, Any]:
    """A body the tool's operation accepts (tests/hostile.py's, or one of the payment tools')."""
    return hostile.valid_body(tool.operation.name, records) or {
        "record_payment": {"invoice": records["open"]["id"], "amount": 1},
        "reverse_payment": {"reason": "Bounced"},
        "create_invoice_schedule": schedule_body(records),
        "send_reminder": {"message": "Any news?"},
    }.get(tool.name, {})


def schedule_body(records: dict[str, Any]) -> dict[str, Any]:
    return {"customer": records["customer"]["id"], "invoice": {"items": [{"price": records["price"]["id"]}]},
            "recurrence": {"interval": "month", "start_date": "2030-01-31", "day_of_month": "last", "count": 3}}


def seeded(tenant) -> dict[str, Any]:
    """tests/hostile.py's records, a payment of the open invoice, and invoice schedules (one paused)."""
    records = hostile.seed(tenant)
    paid = tenant.post("/payments", json={"invoice": records["open"]["id"], "amount": 100}, idem=True)
    assert paid.status_code == 201, paid.text
    schedules = [tenant.post("/invoice-schedules", json=schedule_body(records), idem=True) for _ in range(2)]
    assert all(made.status_code == 201 for made in schedules), schedules[0].text
    paused = schedules[1].json()["data"]
    assert tenant.post(f"/invoice-schedules/{paused['id']}/pause", json={}).status_code == 200
    return {**records, "payment": paid.json()["data"], "schedule": schedules[0].json()["data"], "paused_schedule": paused}


def arguments_for(tool: Tool, records: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    declared = [name for name in tool.input_schema()["properties"] if name != tool.id_argument]
    base = valid_body(tool, records)
    if tool.writes:
        base = {**base, "idempotency_key": str(uuid.uuid4())}
    arguments = hostile.overrides(declared).map(lambda changed: {**base, **changed})
    if tool.id_argument:
        ids = st.one_of(st.sampled_from(real_ids(tool, records)), hostile.ids, hostile.values)
        arguments = st.tuples(arguments, ids).map(lambda pair: {**pair[0], tool.id_argument: pair[1]})
    return arguments


def assert_result(response, tool: Tool, sent: dict[str, Any], size: int) -> None:
    if size > MAX_BODY_BYTES:
        assert response.status_code == 413 and response.json()["error"]["code"] == -32600, response.text
        return
    if hostile.has_lone_surrogate(sent) and response.status_code == 400:
        # The SDK's JSON parser refuses a lone surrogate (not I-JSON) as a whole: a parse error.
        assert response.json()["error"]["code"] == -32700, response.text
        return
    assert response.status_code == 200, response.text[:500]
    message = response.json()
    assert "result" in message, message
    result = message["result"]
    if not result.get("isError"):
        return
    error = json.loads(result["content"][0]["text"])
    assert error["code"] not in ("internal_error", "upstream_failed"), error
    if error["code"] == "validation":
        names = set(tool.input_schema()["properties"]) | {str(name) for name in sent} | OTHER_PATHS
        for problem in error["errors"]:
            assert problem["message"] and hostile.names_a_sent_path(problem["path"], names), error


@pytest.mark.fuzz
@pytest.mark.parametrize("tool", TOOLS, ids=lambda tool: tool.name)
def test_hostile_arguments_never_reach_a_server_error(client, tool, monkeypatch):
    hostile.lift_request_limit(monkeypatch)
    tenant = make_tenant(client)
    records = seeded(tenant)

    @given(sent=arguments_for(tool, records))
    @settings(max_examples=hostile.EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    def fuzz(sent):
        request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool.name, "arguments": sent}}
        body = hostile.to_json(request).encode("utf-8", "surrogatepass")
        response = client.post("/mcp", content=body, headers={**HEADERS, "Authorization": f"Bearer {tenant.key}"})
        assert_result(response, tool, sent, len(body))

    fuzz()
