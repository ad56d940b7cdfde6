"""Tool calls as tasks (`io.modelcontextprotocol/tasks`, 2026-07-28) and the bulk sends: the raw wire
as a client that declares the extension sends it, over the in-process app, against a real SMTP server."""

from __future__ import annotations

import itertools
import json
import time
from datetime import timedelta

import anyio
import httpx2
import pytest

from core.base import db
from core.base.clock import now
from core.models import McpTask
from mcp_server import tasks
from tests.api.invoicing import adhoc, customer, draft, open_invoice, paid_part
from tests.conftest import TEST_ORIGIN
from tests.mcp.jsonrpc import HEADERS
from tests.mcp.test_live_status import StreamingTransport
from tests.smtp import mail_settings, smtp_server

MODERN = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
ASKING = {"extensions": {TASKS: {}}, "elicitation": {"form": {}}}
NOT_ASKING = {"extensions": {TASKS: {}}}
_ids = itertools.count(1)


@pytest.fixture
def mailbox():
    with smtp_server() as (handler, url), mail_settings(smtp_url=url):
        yield handler


def rpc(client, key: str, method: str, params: dict | None = None, *, capabilities: dict | None = None,
        name: str | None = None) -> dict:
    """One 2026-07-28 request with its envelope and routing headers; the JSON-RPC answer."""
    params = dict(params or {})
    params["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                       "io.modelcontextprotocol/clientCapabilities": ASKING if capabilities is None else capabilities}
    headers = {**HEADERS, "MCP-Protocol-Version": MODERN, "Mcp-Method": method, "Authorization": f"Bearer {key}"}
    routed = name or params.get("name") or params.get("taskId")
    if routed:
        headers["Mcp-Name"] = routed
    response = client.post("/mcp", content=json.dumps({"jsonrpc": "2.0", "id": next(_ids), "method": method,
                                                       "params": params}), headers=headers)
    return response.json()


def start(client, key: str, tool: str, capabilities: dict | None = None, **arguments) -> dict:
    answer = rpc(client, key, "tools/call", {"name": tool, "arguments": arguments}, capabilities=capabilities)
    assert "result" in answer, answer
    return answer["result"]


def task(client, key: str, task_id: str, capabilities: dict | None = None) -> dict:
    answer = rpc(client, key, "tasks/get", {"taskId": task_id}, capabilities=capabilities)
    assert "result" in answer, answer
    return answer["result"]


def until(client, key: str, task_id: str, *statuses: str, seconds: float = 10) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        current = task(client, key, task_id)
        if current["status"] in statuses:
            return current
        time.sleep(0.05)
    raise AssertionError(f"task {task_id} still {current['status']}: {current}")


def answer(client, key: str, task_id: str, shown: dict, action: str = "accept") -> dict:
    (request_key,) = shown["inputRequests"]
    response = {"action": action, "content": {"confirm": True}} if action == "accept" else {"action": action}
    return rpc(client, key, "tasks/update", {"taskId": task_id, "inputResponses": {request_key: response}})


def globex_invoices(tenant, count: int) -> list[dict]:
    globex = customer(tenant, name="Globex Corp", email="ap@globex.example")
    return [open_invoice(tenant, customer_id=globex["id"], items=[adhoc("Design", 1000 * (n + 1))], currency="EUR")
            for n in range(count)]


# --- the extension as offered -----------------------------------------------------------------------

def test_discover_advertises_the_extension_and_no_legacy_tasks_capability(client, tenant):
    capabilities = rpc(client, tenant.key, "server/discover")["result"]["capabilities"]
    assert capabilities["extensions"][TASKS] == {}
    assert "tasks" not in capabilities


@pytest.mark.parametrize("method, params", [("tasks/get", {"taskId": "task_x"}), ("tasks/cancel", {"taskId": "task_x"}),
                                            ("tasks/update", {"taskId": "task_x", "inputResponses": {}})])
def test_task_methods_need_the_extension_declared_on_the_request(client, tenant, method, params):
    error = rpc(client, tenant.key, method, params, capabilities={})["error"]
    assert error["code"] == -32021
    assert error["data"]["requiredCapabilities"] == {"extensions": {TASKS: {}}}


@pytest.mark.parametrize("method", ["tasks/get", "tasks/cancel"])
def test_an_unknown_task_is_invalid_params(client, tenant, method):
    assert rpc(client, tenant.key, method, {"taskId": "task_nope"})["error"]["code"] == -32602


@pytest.mark.parametrize("method", ["tasks/result", "tasks/list"])
def test_the_removed_methods_are_not_found(client, tenant, method):
    assert rpc(client, tenant.key, method, {"taskId": "task_x"})["error"]["code"] == -32601


def test_a_tool_without_long_work_answers_directly_even_when_tasks_are_declared(client, tenant):
    result = start(client, tenant.key, "get_business")
    assert result["resultType"] == "complete" and "taskId" not in result and result["isError"] is False


# --- a bulk send as a task, confirmed through it ------------------------------------------------------

def test_a_bulk_send_is_a_task_that_asks_once_naming_each_invoice_then_sends(client, tenant, mailbox):
    invoices = globex_invoices(tenant, 2)
    created = start(client, tenant.key, "send_invoices", invoices=[invoice["id"] for invoice in invoices],
                    idempotency_key="month-end")
    assert created["resultType"] == "task" and created["taskId"].startswith("task_")
    assert {"status", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"} <= set(created)
    assert isinstance(created["ttlMs"], int) and isinstance(created["pollIntervalMs"], int)
    assert not {"task", "requestState", "ttl", "pollInterval"} & set(created)
    shown = until(client, tenant.key, created["taskId"], "input_required")
    (request,) = shown["inputRequests"].values()
    assert request["method"] == "elicitation/create"
    assert request["params"]["message"] == (
        f"E-mail 2 invoices, each with its PDF attached?\n"
        f"- {invoices[0]['number']} to Globex Corp at ap@globex.example: 10.00 EUR\n"
        f"- {invoices[1]['number']} to Globex Corp at ap@globex.example: 20.00 EUR")
    assert "requestState" not in shown and mailbox.received == []
    ack = answer(client, tenant.key, created["taskId"], shown)["result"]
    assert ack == {"resultType": "complete", **({"_meta": ack["_meta"]} if "_meta" in ack else {})}
    done = until(client, tenant.key, created["taskId"], "completed")
    outcome = done["result"]["structuredContent"]
    assert [item["number"] for item in outcome["sent"]] == [invoice["number"] for invoice in invoices]
    assert outcome["not_sent"] == [] and outcome["stopped"] is None
    assert done["statusMessage"] == "Sent 2 of 2 invoices." == outcome["summary"]
    assert len(mailbox.received) == 2


def test_a_declined_list_sends_nothing_and_completes_saying_so(client, tenant, mailbox):
    invoices = globex_invoices(tenant, 1)
    created = start(client, tenant.key, "send_invoices", invoices=[invoices[0]["id"]])
    shown = until(client, tenant.key, created["taskId"], "input_required")
    answer(client, tenant.key, created["taskId"], shown, action="decline")
    done = until(client, tenant.key, created["taskId"], "completed")
    assert done["result"]["structuredContent"]["declined"] is True
    assert mailbox.received == []


def test_cancelling_while_the_person_is_asked_sends_nothing(client, tenant, mailbox):
    invoices = globex_invoices(tenant, 1)
    created = start(client, tenant.key, "send_invoices", invoices=[invoices[0]["id"]])
    until(client, tenant.key, created["taskId"], "input_required")
    assert rpc(client, tenant.key, "tasks/cancel", {"taskId": created["taskId"]})["result"]["resultType"] == "complete"
    done = until(client, tenant.key, created["taskId"], "cancelled")
    assert "result" not in done and "inputRequests" not in done
    assert mailbox.received == []
    # Cancelling a finished task is acknowledged the same way.
    assert "result" in rpc(client, tenant.key, "tasks/cancel", {"taskId": created["taskId"]})


def test_an_invoice_changed_after_the_yes_is_not_sent_and_the_others_are(client, tenant, mailbox):
    invoices = globex_invoices(tenant, 2)
    created = start(client, tenant.key, "send_invoices", invoices=[invoice["id"] for invoice in invoices])
    shown = until(client, tenant.key, created["taskId"], "input_required")
    paid_part(tenant, invoices[0]["id"], 500)  # what is due changed after the person read the list
    answer(client, tenant.key, created["taskId"], shown)
    outcome = until(client, tenant.key, created["taskId"], "completed")["result"]["structuredContent"]
    assert [item["invoice"] for item in outcome["not_sent"]] == [invoices[0]["id"]]
    assert outcome["not_sent"][0]["code"] == "confirmation_stale"
    assert [item["invoice"] for item in outcome["sent"]] == [invoices[1]["id"]]
    assert len(mailbox.received) == 1


def test_another_credential_cannot_see_the_task(client, tenant, other_tenant, mailbox):
    invoices = globex_invoices(tenant, 1)
    created = start(client, tenant.key, "send_invoices", invoices=[invoices[0]["id"]])
    for key in (other_tenant.key, tenant.key_with(["invoices:send"])):
        assert rpc(client, key, "tasks/get", {"taskId": created["taskId"]})["error"]["code"] == -32602
        assert rpc(client, key, "tasks/cancel", {"taskId": created["taskId"]})["error"]["code"] == -32602
    assert task(client, tenant.key, created["taskId"])["status"] in ("working", "input_required")


def test_a_task_whose_process_stopped_beating_is_failed_by_the_next_reader(client, tenant, mailbox):
    invoices = globex_invoices(tenant, 1)
    created = start(client, tenant.key, "send_invoices", invoices=[invoices[0]["id"]])
    until(client, tenant.key, created["taskId"], "input_required")
    with db.transaction() as session:
        row = session.get(McpTask, created["taskId"])
        row.heartbeat_at, row.runner = now() - timedelta(minutes=1), "gone-host:4242"  # another process, dead
        session.add(row)
    failed = task(client, tenant.key, created["taskId"])
    assert failed["status"] == "failed" and failed["error"]["code"] == -32603
    assert "stopped before it finished" in failed["statusMessage"]


def test_a_task_this_process_runs_is_never_settled_as_abandoned_by_it(client, tenant, mailbox):
    invoices = globex_invoices(tenant, 1)
    created = start(client, tenant.key, "send_invoices", invoices=[invoices[0]["id"]])
    until(client, tenant.key, created["taskId"], "input_required")
    with db.transaction() as session:  # a beat late (a slow send, a busy thread pool): the runner is alive here
        row = session.get(McpTask, created["taskId"])
        row.heartbeat_at = now() - timedelta(minutes=1)
        session.add(row)
    assert task(client, tenant.key, created["taskId"])["status"] == "input_required"


def test_nobody_answering_for_ten_minutes_ends_the_task_as_a_decline(client, tenant, mailbox, monkeypatch):
    monkeypatch.setattr(tasks, "ANSWER_WAIT", timedelta(seconds=0.5))
    invoices = globex_invoices(tenant, 1)
    created = start(client, tenant.key, "send_invoices", invoices=[invoices[0]["id"]])
    done = until(client, tenant.key, created["taskId"], "completed")
    assert done["result"]["structuredContent"]["declined"] is True
    assert "did not answer in time" in done["result"]["structuredContent"]["detail"]
    assert mailbox.received == []


def test_at_most_five_unfinished_tasks_per_credential(client, tenant, mailbox):
    invoices = globex_invoices(tenant, 1)
    for _ in range(tasks.MAX_UNFINISHED):
        start(client, tenant.key, "send_invoices", invoices=[invoices[0]["id"]])
    refused = rpc(client, tenant.key, "tools/call", {"name": "send_invoices",
                                                     "arguments": {"invoices": [invoices[0]["id"]]}})
    assert refused["error"]["code"] == 429 and refused["error"]["data"]["limit"] == tasks.MAX_UNFINISHED
    assert "taskId" in start(client, other_key(tenant), "send_invoices", invoices=[invoices[0]["id"]])


def other_key(tenant) -> str:
    return tenant.key_with(["invoices:send", "invoices:read"])


# --- without asking, and without tasks ---------------------------------------------------------------

def test_a_client_that_cannot_be_asked_sends_on_its_scopes_and_gets_what_was_done(client, tenant, mailbox):
    invoices = globex_invoices(tenant, 2)
    unknown = "in_0000000000000000000000"
    created = start(client, tenant.key, "send_invoices", NOT_ASKING,
                    invoices=[invoices[0]["id"], unknown, invoices[1]["id"]])
    outcome = until(client, tenant.key, created["taskId"], "completed")["result"]["structuredContent"]
    assert len(outcome["sent"]) == 2 and [item["invoice"] for item in outcome["not_sent"]] == [unknown]
    assert outcome["not_sent"][0]["code"] == "not_found"
    assert len(mailbox.received) == 2


def test_the_e_mail_limit_stops_a_list_there_and_says_what_was_not_sent(client, tenant, mailbox):
    globex = customer(tenant, name="Globex Corp", email="ap@globex.example")
    ids = [draft(tenant, customer=globex["id"], items=[adhoc("Design", 1000)])["id"] for _ in range(12)]
    result = start(client, tenant.key, "send_invoices", {}, invoices=ids)  # no tasks, nobody asked
    outcome = result["structuredContent"]
    assert len(outcome["sent"]) == 10
    assert [item["code"] for item in outcome["not_sent"]] == ["rate_limited", "not_attempted"]
    assert outcome["stopped"].startswith("Stopped at an e-mail limit")
    assert outcome["summary"].startswith("Sent 10 of 12 invoices. Stopped at an e-mail limit")


def test_a_retried_list_with_its_key_sends_nothing_twice(client, tenant, mailbox):
    invoices = globex_invoices(tenant, 2)
    arguments = {"invoices": [invoice["id"] for invoice in invoices], "idempotency_key": "list-1"}
    first = start(client, tenant.key, "send_invoices", {}, **arguments)["structuredContent"]
    again = start(client, tenant.key, "send_invoices", {}, **arguments)["structuredContent"]
    assert len(first["sent"]) == len(again["sent"]) == 2
    assert len(mailbox.received) == 2


def test_a_long_list_key_still_gives_each_invoice_its_own_send(client, tenant, mailbox):
    invoices = globex_invoices(tenant, 2)
    outcome = start(client, tenant.key, "send_invoices", {}, invoices=[invoice["id"] for invoice in invoices],
                    idempotency_key="k" * 255)["structuredContent"]
    assert len(outcome["sent"]) == 2 and outcome["not_sent"] == []


@pytest.mark.parametrize("key", [12345, "", "k" * 256])
def test_a_list_key_that_is_no_key_is_refused(client, tenant, key):
    invoices = globex_invoices(tenant, 1)
    result = start(client, tenant.key, "send_invoices", {}, invoices=[invoices[0]["id"]], idempotency_key=key)
    assert result["isError"] is True
    assert json.loads(result["content"][0]["text"])["errors"][0]["path"] == "idempotency_key"


def test_an_invoice_named_by_its_id_and_its_uuid_is_named_twice(client, tenant):
    invoice = globex_invoices(tenant, 1)[0]
    result = start(client, tenant.key, "send_invoices", invoices=[invoice["id"], invoice["id"].removeprefix("in_")])
    assert result["isError"] is True


@pytest.mark.parametrize("invoices, field", [([], "invoices"), (["in_a", "in_a"], "invoices"),
                                             ([f"in_{n}" for n in range(51)], "invoices")])
def test_a_bad_list_is_refused_before_anything(client, tenant, invoices, field):
    result = start(client, tenant.key, "send_invoices", invoices=invoices)
    assert result["isError"] is True and "taskId" not in result
    assert json.loads(result["content"][0]["text"])["errors"][0]["path"] == field


def test_a_client_with_only_the_invoice_view_is_refused_a_list(client, tenant):
    invoices = globex_invoices(tenant, 1)
    apps = {"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}}
    result = start(client, tenant.key, "send_invoices", apps, invoices=[invoices[0]["id"]])
    assert result["isError"] is True and "elicitation" in json.loads(result["content"][0]["text"])["detail"]


# --- status notifications on a listen stream ---------------------------------------------------------

async def sse_messages(response):
    """Each JSON-RPC message of a server-sent event stream, as it comes."""
    async for line in response.aiter_lines():
        if line.startswith("data:"):
            yield json.loads(line.removeprefix("data:").strip())


def listen_body(task_ids: list[str], capabilities: dict) -> dict:
    return {"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen", "params": {
        "notifications": {"taskIds": task_ids},
        "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                  "io.modelcontextprotocol/clientCapabilities": capabilities}}}


def test_a_listen_stream_hears_a_followed_task_change_status_until_done(client, app, tenant, other_tenant, mailbox):
    invoices = globex_invoices(tenant, 1)
    created = start(client, tenant.key, "send_invoices", invoices=[invoices[0]["id"]])
    shown = until(client, tenant.key, created["taskId"], "input_required")
    foreign = start(client, other_tenant.key, "send_invoices", invoices=[globex_invoices(other_tenant, 1)[0]["id"]])

    async def work():
        heard = []
        headers = {**HEADERS, "MCP-Protocol-Version": MODERN, "Mcp-Method": "subscriptions/listen",
                   "Authorization": f"Bearer {tenant.key}"}
        async with httpx2.AsyncClient(transport=StreamingTransport(app), base_url=TEST_ORIGIN) as http:
            body = listen_body([created["taskId"], foreign["taskId"]], ASKING)
            async with http.stream("POST", "/mcp", content=json.dumps(body), headers=headers) as response:
                messages = sse_messages(response)
                with anyio.fail_after(10):
                    heard.append(await anext(messages))
                    await anyio.to_thread.run_sync(lambda: answer(client, tenant.key, created["taskId"], shown))
                    async for message in messages:
                        heard.append(message)
                        if message["params"].get("status") == "completed":
                            break
        return heard

    ack, *changes = client.portal.call(work)
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"]["taskIds"] == [created["taskId"]]  # another account's is not followed
    assert {change["method"] for change in changes} == {"notifications/tasks"}
    assert [change["params"]["status"] for change in changes][-1] == "completed"
    assert changes[-1]["params"]["taskId"] == created["taskId"]
    assert changes[-1]["params"]["result"]["structuredContent"]["summary"] == "Sent 1 of 1 invoice."
    assert all(change["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-1" for change in changes)


def test_following_tasks_needs_the_extension_declared(client, tenant):
    body = listen_body(["task_x"], {})
    response = client.post("/mcp", content=json.dumps(body), headers={
        **HEADERS, "MCP-Protocol-Version": MODERN, "Mcp-Method": "subscriptions/listen",
        "Authorization": f"Bearer {tenant.key}"})
    assert response.json()["error"]["code"] == -32021


# --- the run's own rules, without a server ----------------------------------------------------------

def test_an_apps_own_send_limit_stops_a_list_as_an_e_mail_limit_does(tenant):
    from core.base.errors import GrantLimitExceeded
    from mcp_server import bulk
    from operations.pipeline import Outcome
    tried = []

    async def refused(_name, item_arguments, _confirmed):
        tried.append(item_arguments["invoice"])
        return Outcome(error=GrantLimitExceeded("Beyond the 2 sends a day the person allowed this app.",
                                                  remediation_url="http://testserver/apps"))

    principal = type("Caller", (), {"account_id": tenant.account_id})()
    outcome = anyio.run(lambda: bulk.run_each("send_invoices", {"invoices": ["in_a", "in_b", "in_c"]}, principal,
                                              None, refused))
    assert tried == ["in_a"]
    assert [item["code"] for item in outcome["not_sent"]] == ["grant_limit_exceeded", "not_attempted",
                                                              "not_attempted"]
    assert outcome["stopped"].startswith("Stopped at a limit the person set for this app")


def test_a_status_message_is_cut_to_what_its_column_holds(tenant, mailbox):
    class Caller:
        account_id, credential_label = tenant.account_id, "key:test"
    row = tasks._create(Caller(), "send_invoices", {"invoices": ["in_a"]})
    tasks._update(row.id, status_message="x" * 5000)
    with db.transaction() as session:
        assert len(session.get(McpTask, row.id).status_message) == tasks.MESSAGE_MAX
