"""The payment tools over MCP: `record_payment` and `reverse_payment` ask the person first, in words that
say what will happen, and act only on what was shown (a payment recorded meanwhile makes the "yes"
stale: the person is asked again); `list_payments` and `get_receivables` read. Through the official
SDK client in process (2026-07-28, an elicitation callback standing in for the person), the invoice
view's Confirm (MCP Apps), and the raw wire; an app's `pay` limits and missing scopes refuse as
elsewhere. (The same client against live processes, both generations: tests/e2e.)"""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import anyio
import httpx2
import mcp.types as types
import pytest
from babel.dates import format_date
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from core.base import db, ids
from core.base.clock import today
from core.models import Invoice
from tests.api.invoicing import adhoc, customer, open_invoice, paid_part, pay
from tests.conftest import TEST_ORIGIN
from tests.mcp.jsonrpc import call, error_of, post, structured
from tests.mcp.test_assistant_experience import APPS, initialize
from tests.mcp.test_confirmations_bound import call_in, confirm, history
from tests.oauth_flow import obtain, register

VIEW = "ui://invoicing/invoice-view.html"


class Person:
    """The elicitation callback: answers each question (`answers` in turn, then `answer`) and keeps what
    it was asked; `meanwhile` runs in a thread before the first answer (what happens while they read)."""

    def __init__(self, answer: str = "accept", *, answers: list[str] | None = None, meanwhile=None) -> None:
        self.answer, self.answers, self.meanwhile = answer, list(answers or []), meanwhile
        self.asked: list[str] = []
        self.titles: list[str] = []

    async def __call__(self, _context, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.message)
        self.titles.append(params.requested_schema["properties"]["confirm"]["title"])
        if self.meanwhile is not None:
            meanwhile, self.meanwhile = self.meanwhile, None
            await anyio.to_thread.run_sync(meanwhile)
        answer = self.answers.pop(0) if self.answers else self.answer
        if answer == "accept":
            return types.ElicitResult(action="accept", content={"confirm": True})
        return types.ElicitResult(action=answer)


def ask(client, app, key: str, person: Person | None, tool: str, arguments: dict) -> types.CallToolResult:
    """`tool` called by the SDK's client (2026-07-28) over the in-process app, `person` answering."""
    async def main():
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=TEST_ORIGIN,
                                      headers={"Authorization": f"Bearer {key}"}) as http:
            async with Client(streamable_http_client(f"{TEST_ORIGIN}/mcp", http_client=http), mode="2026-07-28",
                              elicitation_callback=person) as session:
                return await session.call_tool(tool, arguments)
    return client.portal.call(main)


def day(value) -> str:
    """A day as the questions write it for the test business (GB): 20 Nov 2026."""
    return format_date(value, "medium", locale="en_GB")


def invoice_of(tenant, invoice_id: str) -> dict:
    return tenant.get(f"/invoices/{invoice_id}").json()["data"]


def payments_of(tenant, invoice_id: str) -> list[dict]:
    return tenant.get("/payments", params={"invoice": invoice_id}).json()["data"]


def owing(tenant, amount: int = 250000, **fields) -> dict:
    """An open invoice of `amount` to Jane Doe."""
    return open_invoice(tenant, items=[adhoc("Design", amount)], **fields)


BANK = {"method": "bank_transfer", "paid_on": "2026-11-20", "reference": "BACS 7"}


# --- the tools as listed ---------------------------------------------------------------------------

def test_the_payment_tools_are_listed_with_schemas_annotations_and_scopes(client, tenant):
    tools = {tool["name"]: tool for tool in post(client, "tools/list", key=tenant.key).json()["result"]["tools"]}
    hints = {name: tuple(tools[name]["annotations"][hint] for hint in (
        "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")) for name in (
        "list_payments", "get_receivables", "record_payment", "reverse_payment")}
    assert hints == {"list_payments": (True, False, True, False), "get_receivables": (True, False, True, False),
                     "record_payment": (False, False, False, False), "reverse_payment": (False, True, False, False)}
    record, reverse = tools["record_payment"], tools["reverse_payment"]
    assert record["inputSchema"]["required"] == ["invoice", "amount"]
    assert set(record["inputSchema"]["properties"]) == {"invoice", "amount", "currency", "paid_on", "method",
                                                        "reference", "note", "overpayment", "idempotency_key"}
    assert record["inputSchema"]["properties"]["method"]["enum"] == ["bank_transfer", "card", "cash", "cheque",
                                                                     "direct_debit", "other"]
    assert reverse["inputSchema"]["required"] == ["payment", "reason"]
    # Asking first: the result, the person's "no", or the view's question.
    for tool in (record, reverse):
        assert len(tool["outputSchema"]["anyOf"]) == 3 and tool["_meta"]["ui"]["resourceUri"] == VIEW
        assert tool["description"].endswith("Needs the scope payments:write.")
    assert tools["list_payments"]["outputSchema"]["properties"]["data"]["items"] == {"$ref": "#/$defs/PaymentOut"}
    assert set(tools["list_payments"]["inputSchema"]["properties"]) == {"invoice", "customer", "cursor", "limit"}
    assert tools["get_receivables"]["outputSchema"]["required"] == ["data", "next_cursor"]
    assert "ReceivablesOut" in tools["get_receivables"]["outputSchema"]["$defs"]
    for name in ("list_payments", "get_receivables"):
        assert tools[name]["description"].endswith("Needs the scope invoices:read.") and "_meta" not in tools[name]


# --- record_payment ------------------------------------------------------------------------------------

def test_recording_asks_first_and_records_what_the_person_saw(client, app, tenant):
    invoice = owing(tenant)
    person = Person("accept")
    result = ask(client, app, tenant.key, person, "record_payment",
                 {"invoice": invoice["id"], "amount": 100000, **BANK, "idempotency_key": "pay-1"})
    assert person.asked == [f"Record a payment of 1,000.00 USD on {invoice['number']} for Jane Doe (received 20 Nov "
                            "2026 by bank transfer, reference BACS 7)? 1,500.00 USD remains due after it. No money "
                            "moves."]
    assert person.titles == ["Yes, record it"]
    assert not result.is_error, result.content
    payment = result.structured_content
    assert payment["id"].startswith("py_") and payment["status"] == "recorded"
    assert (payment["amount"], payment["amount_applied"], payment["paid_on"]) == (100000, 100000, "2026-11-20")
    assert payment["formatted"] == {"amount": "1,000.00 USD", "amount_applied": "1,000.00 USD",
                                    "balance_amount": "0.00 USD", "balance_remaining": "0.00 USD"}
    after = invoice_of(tenant, invoice["id"])
    assert (after["status"], after["amount_paid"], after["amount_due"]) == ("open", 100000, 150000)
    assert [event["type"] for event in history_of(tenant, invoice["id"])][:2] == ["payment.recorded",
                                                                                 "invoice.finalized"]


def history_of(tenant, invoice_id: str) -> list[dict]:
    return tenant.get(f"/invoices/{invoice_id}/events").json()["data"]


def test_the_question_says_when_a_payment_settles_the_invoice(client, app, tenant):
    invoice = owing(tenant)
    paid_part(tenant, invoice["id"], 50000)
    person = Person("accept")
    result = ask(client, app, tenant.key, person, "record_payment",
                 {"invoice": invoice["id"], "amount": 200000, "method": "cheque"})
    assert person.asked == [f"Record a payment of 2,000.00 USD on {invoice['number']} for Jane Doe (received "
                            f"{day(today())} by cheque)? It settles {invoice['number']}. No money moves."]
    assert result.structured_content["status"] == "recorded"
    assert invoice_of(tenant, invoice["id"])["status"] == "paid"


def test_an_excess_put_on_the_balance_is_in_the_question(client, app, tenant):
    invoice = owing(tenant)
    person = Person("accept")
    result = ask(client, app, tenant.key, person, "record_payment",
                 {"invoice": invoice["id"], "amount": 300000, "method": "cash", "overpayment": "balance"})
    assert person.asked == [f"Record a payment of 3,000.00 USD on {invoice['number']} for Jane Doe (received "
                            f"{day(today())} in cash)? It settles {invoice['number']} (2,500.00 USD due) and 500.00 "
                            "USD goes to the customer's balance for their next invoice. No money moves."]
    assert result.structured_content["formatted"]["balance_amount"] == "500.00 USD"


def test_declining_records_nothing(client, app, tenant):
    invoice = owing(tenant)
    result = ask(client, app, tenant.key, Person("decline"), "record_payment",
                 {"invoice": invoice["id"], "amount": 100000})
    assert result.structured_content == {
        "declined": True, "action": "record_payment", "invoice": invoice["id"],
        "detail": "The person declined: nothing changed (no payment was recorded). Ask them before trying again."}
    assert payments_of(tenant, invoice["id"]) == []


def test_a_payment_recorded_while_the_person_reads_makes_them_asked_again(client, app, tenant):
    invoice = owing(tenant)

    def meanwhile():  # someone else records 500.00: what remains due is no longer what was shown
        paid_part(tenant, invoice["id"], 50000, reference="Other desk")

    person = Person("accept", meanwhile=meanwhile)
    result = ask(client, app, tenant.key, person, "record_payment", {"invoice": invoice["id"], "amount": 100000})
    assert [question.split("? ")[1] for question in person.asked] == [
        "1,500.00 USD remains due after it. No money moves.", "1,000.00 USD remains due after it. No money moves."]
    assert not result.is_error and result.structured_content["amount"] == 100000
    assert invoice_of(tenant, invoice["id"])["amount_paid"] == 150000
    assert len(payments_of(tenant, invoice["id"])) == 2


def test_declining_the_second_question_leaves_only_the_other_payment(client, app, tenant):
    invoice = owing(tenant)
    person = Person(answers=["accept", "decline"],
                    meanwhile=lambda: paid_part(tenant, invoice["id"], 50000, reference="Other desk"))
    result = ask(client, app, tenant.key, person, "record_payment", {"invoice": invoice["id"], "amount": 100000})
    assert len(person.asked) == 2 and result.structured_content["declined"] is True
    assert [payment["reference"] for payment in payments_of(tenant, invoice["id"])] == ["Other desk"]


@pytest.mark.parametrize(("arguments", "path"), [
    ({"amount": 300000}, "amount"),  # more than is due, with no word about the excess
    ({"amount": 100000, "currency": "EUR"}, "currency"),
    ({"amount": 0}, "amount"),
])
def test_a_payment_that_would_be_refused_is_not_asked_about(client, app, tenant, arguments, path):
    invoice = owing(tenant)
    person = Person("accept")
    result = ask(client, app, tenant.key, person, "record_payment", {"invoice": invoice["id"], **arguments})
    assert person.asked == []
    error = json.loads(result.content[0].text)
    rest = tenant.post("/payments", json={"invoice": invoice["id"], **arguments}, idem=True).json()
    assert result.is_error and error["code"] == rest["code"] == "validation"
    assert error["errors"] == rest["errors"] and error["errors"][0]["path"] == path


def test_a_paid_invoice_takes_no_payment_and_no_question(client, app, tenant):
    invoice = owing(tenant)
    assert pay(tenant, invoice["id"]).status_code == 200
    person = Person("accept")
    result = ask(client, app, tenant.key, person, "record_payment", {"invoice": invoice["id"], "amount": 100})
    assert person.asked == [] and json.loads(result.content[0].text)["code"] == "invalid_state"


def test_in_the_view_a_payment_recorded_meanwhile_asks_again_and_records_nothing(client, tenant):
    invoice = owing(tenant)
    session = initialize(client, tenant.key, APPS)
    asked = call_in(client, tenant, session, "record_payment", invoice=invoice["id"], amount=100000, **BANK)
    assert asked["structuredContent"]["question"].startswith("Record a payment of 1,000.00 USD")
    assert asked["structuredContent"]["data"]["id"] == invoice["id"]  # the view shows the invoice it pays
    paid_part(tenant, invoice["id"], 50000)

    again = confirm(client, tenant, session, asked)

    assert again["structuredContent"]["notice"].startswith("The invoice changed after the person was asked")
    assert "1,000.00 USD remains due after it" in again["structuredContent"]["question"]
    assert len(payments_of(tenant, invoice["id"])) == 1
    done = confirm(client, tenant, session, again)
    assert done["structuredContent"]["object"] == "payment" and done["structuredContent"]["amount"] == 100000
    assert invoice_of(tenant, invoice["id"])["amount_paid"] == 150000


# --- reverse_payment -------------------------------------------------------------------------------------

def test_reversing_asks_and_reopens_a_paid_invoice(client, app, tenant):
    invoice = owing(tenant)
    assert pay(tenant, invoice["id"], {"reference": "BACS 9"}).status_code == 200
    [payment] = payments_of(tenant, invoice["id"])
    person = Person("accept")
    result = ask(client, app, tenant.key, person, "reverse_payment",
                 {"payment": payment["id"], "reason": "The transfer bounced", "idempotency_key": "rev-1"})
    assert person.asked == [f"Reverse the payment of 2,500.00 USD on {invoice['number']} for Jane Doe (received "
                            f"{day(today())} by another means, reference BACS 9), reason: The transfer bounced? "
                            f"{invoice['number']} reopens: 2,500.00 USD is due again. The payment stays listed as "
                            "reversed."]
    assert person.titles == ["Yes, reverse it"]
    reversed_ = result.structured_content
    assert (reversed_["status"], reversed_["reversal_reason"]) == ("reversed", "The transfer bounced")
    after = invoice_of(tenant, invoice["id"])
    assert (after["status"], after["amount_due"], after["paid_at"]) == ("open", 250000, None)
    assert [event["type"] for event in history_of(tenant, invoice["id"])][:2] == ["invoice.reopened",
                                                                                 "payment.reversed"]


def test_an_invoice_reopened_while_the_person_reads_makes_them_asked_again(client, app, tenant):
    invoice = owing(tenant)
    first = paid_part(tenant, invoice["id"], 100000, reference="First")
    paid_part(tenant, invoice["id"], 150000, reference="Second")  # paid in full: the question says it reopens
    second = next(p for p in payments_of(tenant, invoice["id"]) if p["id"] != first["id"])

    def meanwhile():  # the other payment is reversed: the invoice is open already, and more is due
        response = tenant.post(f"/payments/{second['id']}/reverse", json={"reason": "Bounced"}, idem=True)
        assert response.status_code == 200, response.text

    person = Person("accept", meanwhile=meanwhile)
    result = ask(client, app, tenant.key, person, "reverse_payment",
                 {"payment": first["id"], "reason": "Also bounced", "idempotency_key": "rev-2"})
    assert len(person.asked) == 2
    assert f"{invoice['number']} reopens" in person.asked[0] and "is due again on" in person.asked[1]
    assert not result.is_error and result.structured_content["status"] == "reversed"


def test_reversing_a_part_payment_says_what_is_due_again_and_what_leaves_the_balance(client, app, tenant):
    invoice = owing(tenant, 100000)
    payment = paid_part(tenant, invoice["id"], 40000, method="card", paid_on="2026-11-20")
    person = Person("decline")
    ask(client, app, tenant.key, person, "reverse_payment", {"payment": payment["id"], "reason": "Charge-back"})
    assert person.asked == [f"Reverse the payment of 400.00 USD on {invoice['number']} for Jane Doe (received 20 Nov "
                            f"2026 by card), reason: Charge-back? 400.00 USD is due again on {invoice['number']}. The "
                            "payment stays listed as reversed."]
    assert payments_of(tenant, invoice["id"])[0]["status"] == "recorded"  # declined: nothing changed

    other = owing(tenant, 100000)
    excess = paid_part(tenant, other["id"], 150000, overpayment="balance")
    person = Person("decline")
    ask(client, app, tenant.key, person, "reverse_payment", {"payment": excess["id"], "reason": "Wrong customer"})
    assert person.asked[0].endswith(f"reason: Wrong customer? {other['number']} reopens: 1,000.00 USD is due again, "
                                    "and 500.00 USD leaves the customer's balance. The payment stays listed as reversed.")


def test_a_reversed_payment_is_not_asked_about_again(client, app, tenant):
    invoice = owing(tenant)
    payment = paid_part(tenant, invoice["id"], 1000)
    assert tenant.post(f"/payments/{payment['id']}/reverse", json={"reason": "x"}, idem=True).status_code == 200
    person = Person("accept")
    result = ask(client, app, tenant.key, person, "reverse_payment", {"payment": payment["id"], "reason": "again"})
    rest = tenant.post(f"/payments/{payment['id']}/reverse", json={"reason": "again"}, idem=True).json()
    assert person.asked == [] and result.is_error
    assert json.loads(result.content[0].text) == {"code": rest["code"], "detail": rest["detail"]}


def test_in_the_view_a_reversal_shows_the_payment_and_acts_once(client, tenant):
    invoice = owing(tenant)
    payment = paid_part(tenant, invoice["id"], 250000)
    session = initialize(client, tenant.key, APPS)
    asked = call_in(client, tenant, session, "reverse_payment", payment=payment["id"], reason="Bounced")
    shown = asked["structuredContent"]
    assert (shown["action"], shown["invoice"], shown["data"]["object"]) == ("reverse_payment", payment["id"], "payment")
    assert shown["data"]["formatted"]["amount"] == "2,500.00 USD"
    done = confirm(client, tenant, session, asked)
    assert done["structuredContent"]["status"] == "reversed"
    assert invoice_of(tenant, invoice["id"])["status"] == "open"
    assert history(tenant, invoice["id"]).count("payment.reversed") == 1


# --- mark_invoice_paid: a payment of what is due ----------------------------------------------------------

def test_marking_a_part_paid_invoice_paid_records_what_remains_due_and_says_so(client, tenant):
    invoice = owing(tenant)
    paid_part(tenant, invoice["id"], 200000)
    session = initialize(client, tenant.key, APPS)
    asked = call_in(client, tenant, session, "mark_invoice_paid", invoice=invoice["id"], reference="BACS 7")
    assert asked["structuredContent"]["question"] == (
        f"Mark {invoice['number']} paid, recording a payment of 500.00 USD, what remains due after 2,000.00 USD paid "
        "so far (reference BACS 7)? No money moves; the payment can be reversed later.")
    paid = confirm(client, tenant, session, asked)["structuredContent"]
    assert (paid["status"], paid["amount_paid"]) == ("paid", 250000)
    assert [p["amount"] for p in payments_of(tenant, invoice["id"])] == [50000, 200000]


def test_marking_a_credited_invoice_paid_records_what_is_due_not_the_total(client, tenant):
    invoice = owing(tenant)
    note = tenant.post("/credit-notes", json={"invoice": invoice["id"], "lines": [
        {"description": "Goodwill", "amount": 50000}]}, idem=True)
    assert note.status_code == 201, note.text
    session = initialize(client, tenant.key, APPS)
    asked = call_in(client, tenant, session, "mark_invoice_paid", invoice=invoice["id"])
    assert asked["structuredContent"]["question"] == (
        f"Mark {invoice['number']} paid, recording a payment of 2,000.00 USD, what remains due of its 2,500.00 USD "
        "total? No money moves; the payment can be reversed later.")


# --- an app's limits and the scopes ------------------------------------------------------------------------

PAY_100 = [{"type": "invoice_actions", "actions": ["pay"], "max_amount": {"currency": "USD", "amount": 10000},
            "max_per_day": 5}]
PAY_1000 = [{**PAY_100[0], "max_amount": {"currency": "USD", "amount": 100000}}]


def app_token(browser, client, details) -> str:
    app_client = register(client, token_endpoint_auth_method="none", client_name="Bookkeeper")
    return obtain(browser, app_client, scopes=["invoices:read", "payments:write"],
                  authorization_details=details)["access_token"]


def refused_by_the_limit(result: dict) -> None:
    assert error_of(result)["code"] == "grant_limit_exceeded"
    denial = result["_meta"]["io.modelcontextprotocol/authorization"]
    assert denial["reason"] == "insufficient_authorization" and denial["url"].startswith(f"{TEST_ORIGIN}/settings/apps/")


def test_a_payment_above_the_apps_pay_limit_is_refused_without_a_question(browser, client, tenant):
    token = app_token(browser, client, PAY_100)
    invoice = owing(tenant)
    session = initialize(client, token, APPS)  # a host that would show the question
    result = post(client, "tools/call", {"name": "record_payment", "arguments": {
        "invoice": invoice["id"], "amount": 50000}}, key=token, headers={"Mcp-Session-Id": session}).json()["result"]
    refused_by_the_limit(result)
    assert "confirmation_required" not in json.dumps(result)
    assert payments_of(tenant, invoice["id"]) == []
    # Within the limit, the same app is asked and may record.
    within = post(client, "tools/call", {"name": "record_payment", "arguments": {
        "invoice": invoice["id"], "amount": 10000}}, key=token, headers={"Mcp-Session-Id": session}).json()["result"]
    assert within["structuredContent"]["confirmation_required"] is True


def test_a_reversal_above_the_apps_pay_limit_is_refused(browser, client, tenant):
    token = app_token(browser, client, PAY_100)
    payment = paid_part(tenant, owing(tenant)["id"], 50000)
    refused_by_the_limit(call(client, token, "reverse_payment", payment=payment["id"], reason="Bounced"))
    assert tenant.get(f"/payments/{payment['id']}").json()["data"]["status"] == "recorded"


def test_marking_paid_is_limited_by_what_is_due_not_by_the_total(browser, client, tenant):
    token = app_token(browser, client, PAY_1000)
    invoice = owing(tenant)  # 2,500.00 USD, above the app's 1,000.00
    paid_part(tenant, invoice["id"], 200000)  # 500.00 USD left: within it
    session = initialize(client, token, APPS)
    asked = post(client, "tools/call", {"name": "mark_invoice_paid", "arguments": {"invoice": invoice["id"]}},
                 key=token, headers={"Mcp-Session-Id": session}).json()["result"]
    assert "a payment of 500.00 USD" in asked["structuredContent"]["question"]


@pytest.mark.parametrize(("tool", "arguments"), [
    ("record_payment", {"invoice": "in_x", "amount": 100}),
    ("reverse_payment", {"payment": "py_x", "reason": "x"}),
])
def test_recording_or_reversing_without_payments_write_is_a_403_step_up(client, tenant, tool, arguments):
    response = post(client, "tools/call", {"name": tool, "arguments": arguments},
                    key=tenant.key_with(["invoices:read"]))
    assert response.status_code == 403
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith('Bearer error="insufficient_scope"') and 'scope="payments:write"' in challenge
    assert response.json()["error"]["data"] == {"code": "forbidden", "required_scope": "payments:write"}


def test_the_reads_need_only_invoices_read(client, tenant):
    reader = tenant.key_with(["invoices:read"])
    assert structured(client, reader, "list_payments")["data"] == []
    assert structured(client, reader, "get_receivables")["data"]["object"] == "receivables"


# --- list_payments ---------------------------------------------------------------------------------------

def test_list_payments_filters_by_invoice_and_customer_and_pages(client, tenant, other_tenant):
    first, second = owing(tenant), owing(tenant, customer_id=customer(tenant, name="Initech")["id"])
    older = paid_part(tenant, first["id"], 1000, method="bank_transfer")
    newer = paid_part(tenant, first["id"], 2000)
    theirs = paid_part(tenant, second["id"], 3000)
    assert tenant.post(f"/payments/{older['id']}/reverse", json={"reason": "Bounced"}, idem=True).status_code == 200

    def listed(**arguments):
        return structured(client, tenant.key, "list_payments", **arguments)

    assert [p["id"] for p in listed()["data"]] == [theirs["id"], newer["id"], older["id"]]
    of_first = listed(invoice=first["id"])["data"]
    assert [(p["id"], p["status"]) for p in of_first] == [(newer["id"], "recorded"), (older["id"], "reversed")]
    assert of_first[1]["formatted"]["amount"] == "10.00 USD"
    assert [p["id"] for p in listed(customer=second["customer"])["data"]] == [theirs["id"]]
    page = listed(limit=2)
    rest = listed(limit=2, cursor=page["next_cursor"])
    assert [p["id"] for p in page["data"] + rest["data"]] == [theirs["id"], newer["id"], older["id"]]
    assert rest["next_cursor"] is None
    foreign = owing(other_tenant)
    assert error_of(call(client, tenant.key, "list_payments", invoice=foreign["id"]))["code"] == "not_found"


# --- get_receivables ---------------------------------------------------------------------------------------

def overdue_by(invoice_id: str, days: int) -> None:
    with db.transaction() as session:
        row = session.get(Invoice, ids.parse("invoice", invoice_id))
        row.due_date = today() - timedelta(days=days)
        session.add(row)


def test_get_receivables_answers_the_figures_per_currency_and_customer_formatted(client, tenant):
    part_paid = owing(tenant)  # 2,500.00 less 1,000.00 paid: 1,500.00 owed, not yet due
    paid_part(tenant, part_paid["id"], 100000)
    late = owing(tenant, 100000, customer_id=customer(tenant, name="Initech")["id"])
    overdue_by(late["id"], 10)
    owing(tenant, 50000, currency="EUR")
    settled = owing(tenant, 7000)
    assert pay(tenant, settled["id"]).status_code == 200

    answer = structured(client, tenant.key, "get_receivables")
    rest = tenant.get("/receivables").json()
    currencies = {row["currency"]: row for row in answer["data"]["currencies"]}
    usd = currencies["USD"]
    assert (usd["outstanding"], usd["overdue"], usd["invoices"], usd["overdue_invoices"]) == (250000, 100000, 2, 1)
    assert usd["formatted"] == {"outstanding": "2,500.00 USD", "overdue": "1,000.00 USD"}
    assert [(b["bucket"], b["formatted"]["amount"]) for b in usd["buckets"][:2]] == [
        ("current", "1,500.00 USD"), ("days_1_30", "1,000.00 USD")]
    assert currencies["EUR"]["formatted"]["outstanding"] == "500.00 EUR"  # never added to the dollars
    assert [(row["name"], row["formatted"]["outstanding"]) for row in answer["data"]["customers"]] == [
        ("Jane Doe", "1,500.00 USD"), ("Initech", "1,000.00 USD"), ("Jane Doe", "500.00 EUR")]
    assert strip_formatted(answer) == rest  # the REST answer, with `formatted` beside the amounts


def strip_formatted(value):
    if isinstance(value, dict):
        return {k: strip_formatted(v) for k, v in value.items() if k != "formatted"}
    if isinstance(value, list):
        return [strip_formatted(v) for v in value]
    return value


def test_get_receivables_filters_by_currency_and_pages_its_customers(client, tenant):
    for name, amount in (("A", 1000), ("B", 2000), ("C", 3000)):
        owing(tenant, amount, customer_id=customer(tenant, name=name)["id"])
    owing(tenant, 1000, currency="EUR")
    first = structured(client, tenant.key, "get_receivables", currency="usd", limit=2)
    assert [row["currency"] for row in first["data"]["currencies"]] == ["USD"]
    second = structured(client, tenant.key, "get_receivables", currency="usd", limit=2, cursor=first["next_cursor"])
    names = [row["name"] for row in first["data"]["customers"] + second["data"]["customers"]]
    assert names == ["C", "B", "A"] and second["next_cursor"] is None  # largest first
    error = error_of(call(client, tenant.key, "get_receivables", cursor=first["next_cursor"]))  # another filter
    assert error["code"] == "validation" and error["errors"][0]["path"] == "cursor"


def test_a_retried_record_with_its_key_records_once(client, tenant):
    invoice = owing(tenant)
    key = f"pay-{uuid.uuid4().hex}"
    first = structured(client, tenant.key, "record_payment", invoice=invoice["id"], amount=1000, idempotency_key=key)
    again = structured(client, tenant.key, "record_payment", invoice=invoice["id"], amount=1000, idempotency_key=key)
    assert again["id"] == first["id"] and len(payments_of(tenant, invoice["id"])) == 1
