"""Confirmation before money moves, with the official SDK client against two live server processes:
both protocol generations, an elicitation callback that accepts, declines and cancels, the sealed
state refused when tampered with, replayed or foreign, and each round trip finished on another process."""

from __future__ import annotations

import json
import uuid

import anyio
import httpx
import httpx2
import mcp.types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.conftest import make_tenant

pytestmark = pytest.mark.e2e
FINALIZE_QUESTION = "Finalize the draft for Globex Corp, 2,500.00 USD due {due}? It gets the next number and can no " \
                    "longer be edited."


class Person:
    """The elicitation callback: answers every question the same way (or, given `answers`, one after
    the other) and remembers what it was asked. `meanwhile` runs (in a thread) before the first answer:
    what the assistant does while the person reads the question."""

    def __init__(self, answer: str = "accept", tick: bool = True, *, answers: list[str] | None = None,
                 meanwhile=None, every_time: bool = False) -> None:
        self.answer, self.tick, self.asked = answer, tick, []
        self.answers, self.meanwhile, self.every_time = list(answers or []), meanwhile, every_time

    async def __call__(self, _context, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.message)
        if self.meanwhile is not None:
            await anyio.to_thread.run_sync(self.meanwhile)
            self.meanwhile = self.meanwhile if self.every_time else None
        answer = self.answers.pop(0) if self.answers else self.answer
        if answer == "accept":
            return types.ElicitResult(action="accept", content={"confirm": self.tick})
        return types.ElicitResult(action=answer)


def run(origin: str, key: str, mode: str, person: Person | None, work):
    async def main():
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"},
                                      timeout=httpx2.Timeout(30, read=120)) as http:
            async with Client(streamable_http_client(f"{origin}/mcp", http_client=http), mode=mode,
                              elicitation_callback=person) as client:
                return await work(client)
    return anyio.run(main)


def draft(origin: str, key: str) -> dict:
    api = httpx.Client(base_url=f"{origin}/api/v1", headers={"Authorization": f"Bearer {key}"})
    customer = api.post("/customers", json={"name": "Globex Corp", "email": "ap@globex.example"}).json()["data"]
    return api.post("/invoices", json={"customer": customer["id"], "items": [
        {"description": "Design", "unit_amount": 250000}]}, headers={"Idempotency-Key": uuid.uuid4().hex}).json()["data"]


def invoice(origin: str, key: str, invoice_id: str) -> dict:
    return httpx.get(f"{origin}/api/v1/invoices/{invoice_id}", headers={"Authorization": f"Bearer {key}"}).json()["data"]


def history(origin: str, key: str, invoice_id: str) -> list[str]:
    response = httpx.get(f"{origin}/api/v1/invoices/{invoice_id}/events", headers={"Authorization": f"Bearer {key}"})
    return [event["type"] for event in response.json()["data"]]


@pytest.fixture(scope="module")
def servers(live_server_pair) -> list[str]:
    return live_server_pair


@pytest.fixture
def tenant():
    return make_tenant(None)


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_accepting_finalizes_after_the_person_saw_what_happens(servers, tenant, mode):
    person = Person("accept")
    created = draft(servers[0], tenant.key)
    result = run(servers[0], tenant.key, mode, person,
                 lambda client: client.call_tool("finalize_invoice", {"invoice": created["id"]}))
    assert not result.is_error and result.structured_content["status"] == "open"
    assert person.asked == [FINALIZE_QUESTION.format(due=_medium(created["due_date"]))]


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
@pytest.mark.parametrize(("answer", "tick"), [("decline", True), ("cancel", True), ("accept", False)])
def test_declining_changes_nothing_and_says_so(servers, tenant, mode, answer, tick):
    created = draft(servers[0], tenant.key)
    result = run(servers[0], tenant.key, mode, Person(answer, tick),
                 lambda client: client.call_tool("finalize_invoice", {"invoice": created["id"]}))
    assert result.is_error is False
    assert result.structured_content["declined"] is True
    assert "nothing changed" in result.content[0].text
    assert invoice(servers[0], tenant.key, created["id"])["status"] == "draft"
    assert history(servers[0], tenant.key, created["id"]) == ["invoice.created"]


def test_a_client_that_cannot_be_asked_acts_on_its_scopes(servers, tenant):
    created = draft(servers[0], tenant.key)
    result = run(servers[0], tenant.key, "2026-07-28", None,
                 lambda client: client.call_tool("finalize_invoice", {"invoice": created["id"]}))
    assert result.structured_content["status"] == "open"


def test_an_action_that_would_fail_fails_without_a_question(servers, tenant):
    person = Person("accept")
    result = run(servers[0], tenant.key, "2026-07-28", person,
                 lambda client: client.call_tool("finalize_invoice", {"invoice": "in_" + "0" * 32}))
    assert result.is_error and json.loads(result.content[0].text)["code"] == "not_found"
    assert person.asked == []


@pytest.mark.parametrize(("tool", "arguments", "question"), [
    ("send_invoice", {}, "E-mail INV-{n} (2,500.00 USD) to ap@globex.example, with the PDF attached?"),
    ("send_invoice", {"message": "New bank details:\nIBAN GB33 BUKB 2020 1555 5555 55", "cc": ["cfo@globex.example"]},
     "E-mail INV-{n} (2,500.00 USD) to ap@globex.example (a copy to cfo@globex.example), with the PDF attached and "
     "the note below?\n\nNew bank details:\nIBAN GB33 BUKB 2020 1555 5555 55"),
    ("mark_invoice_paid", {"reference": "BACS 7"}, "Mark INV-{n} paid, recording a payment of 2,500.00 USD "
                                                   "(reference BACS 7)? No money moves; the payment can be reversed "
                                                   "later."),
    ("void_invoice", {}, "Void INV-{n} (2,500.00 USD)? It keeps its number and can no longer be paid."),
])
def test_each_consequential_tool_says_what_will_happen(servers, tenant, tool, arguments, question):
    person = Person("decline")
    opened = draft(servers[0], tenant.key)
    api = httpx.Client(base_url=f"{servers[0]}/api/v1", headers={"Authorization": f"Bearer {tenant.key}"})
    number = api.post(f"/invoices/{opened['id']}/finalize", headers={"Idempotency-Key": uuid.uuid4().hex}
                      ).json()["data"]["number"]
    run(servers[0], tenant.key, "2026-07-28", person,
        lambda client: client.call_tool(tool, {"invoice": opened["id"], **arguments}))
    assert person.asked == [question.format(n=number.removeprefix("INV-"))]


# --- a "yes" approves what the question showed ----------------------------------------------------------

@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_a_draft_changed_while_the_person_reads_is_not_finalized_and_they_are_asked_again(servers, tenant, mode):
    created = draft(servers[0], tenant.key)
    api = httpx.Client(base_url=f"{servers[0]}/api/v1", headers={"Authorization": f"Bearer {tenant.key}"})
    person = Person(answers=["accept", "decline"], meanwhile=lambda: api.patch(
        f"/invoices/{created['id']}", json={"items": [{"description": "Design", "unit_amount": 9900000}]}
    ).raise_for_status())
    result = run(servers[0], tenant.key, mode, person,
                 lambda client: client.call_tool("finalize_invoice", {"invoice": created["id"]}))
    assert result.structured_content["declined"] is True
    assert "2,500.00 USD" in person.asked[0] and "99,000.00 USD" in person.asked[1] and len(person.asked) == 2
    assert invoice(servers[0], tenant.key, created["id"])["status"] == "draft"
    assert "invoice.finalized" not in history(servers[0], tenant.key, created["id"])


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_a_send_whose_recipient_changed_is_not_sent_and_the_new_address_is_asked_about(servers, tenant, mode):
    created = draft(servers[0], tenant.key)
    api = httpx.Client(base_url=f"{servers[0]}/api/v1", headers={"Authorization": f"Bearer {tenant.key}"})
    person = Person(answers=["accept", "decline"], meanwhile=lambda: api.patch(
        f"/customers/{created['customer']}", json={"email": "pay@attacker.example"}).raise_for_status())
    result = run(servers[0], tenant.key, mode, person,
                 lambda client: client.call_tool("send_invoice", {"invoice": created["id"]}))
    assert result.structured_content["declined"] is True
    assert "to ap@globex.example," in person.asked[0] and "to pay@attacker.example," in person.asked[1]
    assert history(servers[0], tenant.key, created["id"]) == ["invoice.created"]


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_the_person_who_confirms_the_fresh_question_gets_what_it_showed(servers, tenant, mode):
    created = draft(servers[0], tenant.key)
    api = httpx.Client(base_url=f"{servers[0]}/api/v1", headers={"Authorization": f"Bearer {tenant.key}"})
    person = Person("accept", meanwhile=lambda: api.patch(
        f"/invoices/{created['id']}", json={"items": [{"description": "Design", "unit_amount": 9900000}]}
    ).raise_for_status())
    result = run(servers[0], tenant.key, mode, person,
                 lambda client: client.call_tool("finalize_invoice", {"invoice": created["id"]}))
    assert result.structured_content["status"] == "open" and result.structured_content["total"] == 9900000
    assert len(person.asked) == 2


def test_a_draft_that_keeps_changing_under_the_question_is_refused_after_three(servers, tenant):
    created = draft(servers[0], tenant.key)
    api = httpx.Client(base_url=f"{servers[0]}/api/v1", headers={"Authorization": f"Bearer {tenant.key}"})
    amounts = iter(range(300000, 400000, 10000))
    person = Person("accept", every_time=True, meanwhile=lambda: api.patch(
        f"/invoices/{created['id']}", json={"items": [{"description": "Design", "unit_amount": next(amounts)}]}
    ).raise_for_status())
    result = run(servers[0], tenant.key, "legacy", person,
                 lambda client: client.call_tool("finalize_invoice", {"invoice": created["id"]}))
    assert result.is_error and json.loads(result.content[0].text)["code"] == "confirmation_stale"
    assert len(person.asked) == 3
    assert invoice(servers[0], tenant.key, created["id"])["status"] == "draft"


# --- the sealed state of a 2026-07-28 round trip -----------------------------------------------------

def first_round(origin: str, key: str, invoice_id: str) -> types.InputRequiredResult:
    return run(origin, key, "2026-07-28", Person(), lambda client: client.session.call_tool(
        "finalize_invoice", {"invoice": invoice_id}, allow_input_required=True))


def second_round(origin: str, key: str, invoice_id: str, state: str, arguments: dict | None = None):
    answer = {"confirm": types.ElicitResult(action="accept", content={"confirm": True})}
    return run(origin, key, "2026-07-28", Person(), lambda client: client.session.call_tool(
        "finalize_invoice", arguments or {"invoice": invoice_id}, input_responses=answer, request_state=state,
        allow_input_required=True))


def test_the_round_trip_finishes_on_another_process(servers, tenant):
    created = draft(servers[0], tenant.key)
    asked = first_round(servers[0], tenant.key, created["id"])
    assert isinstance(asked, types.InputRequiredResult) and asked.request_state.startswith("v1.")
    result = second_round(servers[1], tenant.key, created["id"], asked.request_state)
    assert result.structured_content["status"] == "open"


def test_a_replayed_state_is_refused(servers, tenant):
    created = draft(servers[0], tenant.key)
    asked = first_round(servers[0], tenant.key, created["id"])
    assert second_round(servers[0], tenant.key, created["id"], asked.request_state).structured_content["status"] == "open"
    replayed = second_round(servers[1], tenant.key, created["id"], asked.request_state)
    assert replayed.is_error and json.loads(replayed.content[0].text)["code"] == "confirmation_invalid"
    assert history(servers[0], tenant.key, created["id"]).count("invoice.finalized") == 1


@pytest.mark.parametrize("change", ["tampered", "foreign", "other_arguments"])
def test_a_state_that_is_not_this_calls_is_refused_and_changes_nothing(servers, tenant, change):
    created = draft(servers[0], tenant.key)
    state = first_round(servers[0], tenant.key, created["id"]).request_state
    key, arguments = tenant.key, None
    if change == "tampered":
        state = state[:-6] + ("AAAAAA" if not state.endswith("AAAAAA") else "BBBBBB")
    elif change == "foreign":
        key = tenant.key_with(["invoices:finalize"])
    else:
        arguments = {"invoice": created["id"], "idempotency_key": "another"}
    with pytest.raises(BaseException) as refused:
        second_round(servers[1], key, created["id"], state, arguments)
    assert mcp_error(refused.value).error.code == -32602
    assert invoice(servers[0], tenant.key, created["id"])["status"] == "draft"


# --- a handshake-era session: the answer through the database ----------------------------------------

def test_a_handshake_era_answer_may_reach_another_process(servers, tenant):
    created = draft(servers[0], tenant.key)
    headers = {"Authorization": f"Bearer {tenant.key}", "Accept": "application/json, text/event-stream",
               "Content-Type": "application/json", "MCP-Protocol-Version": "2025-11-25"}
    initialized = httpx.post(f"{servers[0]}/mcp", headers=headers, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "clientInfo": {"name": "t", "version": "1"},
            "capabilities": {"elicitation": {"form": {}}}}})
    session = {**headers, "Mcp-Session-Id": initialized.headers["mcp-session-id"]}
    with httpx.stream("POST", f"{servers[0]}/mcp", headers=session, timeout=60, json={
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "finalize_invoice", "arguments": {"invoice": created["id"]}}}) as stream:
        events = (json.loads(line[5:]) for line in stream.iter_lines() if line.startswith("data:"))
        question = next(events)
        assert question["method"] == "elicitation/create"
        answered = httpx.post(f"{servers[1]}/mcp", headers=session, json={
            "jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"confirm": True}}})
        assert answered.status_code == 202
        result = next(events)
    assert result["id"] == 2 and result["result"]["structuredContent"]["status"] == "open"


def test_a_session_of_another_credential_is_not_found(servers, tenant):
    headers = {"Authorization": f"Bearer {tenant.key}", "Accept": "application/json, text/event-stream",
               "Content-Type": "application/json", "MCP-Protocol-Version": "2025-11-25"}
    initialized = httpx.post(f"{servers[0]}/mcp", headers=headers, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "clientInfo": {"name": "t", "version": "1"},
            "capabilities": {"elicitation": {}}}})
    other = make_tenant(None)
    response = httpx.post(f"{servers[1]}/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers={
        **headers, "Authorization": f"Bearer {other.key}", "Mcp-Session-Id": initialized.headers["mcp-session-id"]})
    assert response.status_code == 404


def mcp_error(raised: BaseException) -> MCPError:
    """The protocol error inside what the client's task groups raised."""
    while isinstance(raised, BaseExceptionGroup):
        raised = raised.exceptions[0]
    assert isinstance(raised, MCPError), raised
    return raised


def _medium(day: str) -> str:
    from datetime import date

    from babel.dates import format_date
    return format_date(date.fromisoformat(day), "medium", locale="en_GB")
