"""`send_reminder` over MCP: e-mails a payment reminder of one open (or overdue) invoice, asking the person
first in words that name the invoice, the customer and the address, what is due and how late, and the
note; the "yes" is bound to what was shown (a payment recorded meanwhile asks again), checked by core's
`remind_now` under its lock. Refusals are REST's (`POST /invoices/{id}/remind`), without a question.
Through the official SDK client in process (2026-07-28, an elicitation callback standing in for the
person), the invoice view's Confirm (MCP Apps), and the raw wire, against a real SMTP server."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from sqlmodel import select

from core.base import db, ids
from core.base.clock import today
from core.models import Invoice, InvoiceReminder
from tests.api.invoicing import adhoc, customer, draft, open_invoice, paid_part, pay
from tests.mcp.jsonrpc import call, error_of, post
from tests.mcp.test_assistant_experience import APPS, initialize
from tests.mcp.test_confirmations_bound import call_in, confirm, history
from tests.mcp.test_payment_tools import Person, ask, day
from tests.oauth_flow import obtain, register
from tests.smtp import mail_settings, smtp_server

VIEW = "ui://invoicing/invoice-view.html"


@pytest.fixture
def mailbox():
    with smtp_server() as (handler, url), mail_settings(smtp_url=url):
        yield handler


def overdue(tenant, days: int = 12, amount: int = 250000, **customer_fields) -> dict:
    """An open invoice of `amount` EUR to Globex Corp, its due date `days` ago (negative: still to come)."""
    globex = customer(tenant, **{"name": "Globex Corp", "email": "ap@globex.example", **customer_fields})
    invoice = open_invoice(tenant, customer_id=globex["id"], items=[adhoc("Design", amount)], currency="EUR")
    with db.transaction() as session:
        row = session.get(Invoice, ids.parse("invoice", invoice["id"]))
        row.due_date = today() - timedelta(days=days)
        session.add(row)
    return tenant.get(f"/invoices/{invoice['id']}").json()["data"]


def question(invoice: dict, due: str = "2,500.00 EUR due, 12 days overdue", note: str | None = None) -> str:
    asked = f"E-mail a payment reminder for {invoice['number']} to Globex Corp at ap@globex.example: {due}"
    return f"{asked}, with the note below?\n\n{note}" if note else f"{asked}?"


def reminded(invoice_id: str) -> list[InvoiceReminder]:
    with db.transaction() as session:
        return list(session.exec(select(InvoiceReminder).where(
            InvoiceReminder.invoice_id == ids.parse("invoice", invoice_id))))


def text_of(received) -> str:
    return received.message.get_body(("plain",)).get_content().replace("\r\n", "\n")


# --- the tool as listed ------------------------------------------------------------------------------

def test_the_reminder_tool_is_listed_with_its_annotations_and_scope(client, tenant):
    tools = {tool["name"]: tool for tool in post(client, "tools/list", key=tenant.key).json()["result"]["tools"]}
    tool, send = tools["send_reminder"], tools["send_invoice"]
    hints = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
    assert tuple(tool["annotations"][hint] for hint in hints) == (False, False, False, True)
    assert {hint: tool["annotations"][hint] for hint in hints} == {hint: send["annotations"][hint] for hint in hints}
    assert tool["inputSchema"]["required"] == ["invoice"]
    assert set(tool["inputSchema"]["properties"]) == {"invoice", "message", "idempotency_key"}
    assert tool["inputSchema"]["additionalProperties"] is False
    assert tool["description"].endswith("Needs the scope invoices:send.")
    # Asking first: the result, the person's "no", or the view's question.
    assert len(tool["outputSchema"]["anyOf"]) == 3 and tool["_meta"]["ui"]["resourceUri"] == VIEW
    assert set(tool["outputSchema"]["$defs"]["send_reminder_result"]["required"]) == {"data", "emailed_to"}


# --- asking first ------------------------------------------------------------------------------------

def test_it_asks_first_and_emails_exactly_one_reminder_after_yes(client, app, tenant, mailbox):
    invoice = overdue(tenant)
    person = Person("accept")
    result = ask(client, app, tenant.key, person, "send_reminder",
                 {"invoice": invoice["id"], "message": "  Any news on this one?\nThanks.  ", "idempotency_key": "r-1"})
    assert person.asked == [question(invoice, note="Any news on this one?\nThanks.")]
    assert person.titles == ["Yes, send it"]
    assert not result.is_error, result.content
    assert result.structured_content["emailed_to"] == "ap@globex.example"
    assert result.structured_content["data"]["id"] == invoice["id"]
    assert result.structured_content["data"]["formatted"]["amount_due"] == "2,500.00 EUR"
    [received] = mailbox.received
    assert received.rcpt_tos == ["ap@globex.example"]
    assert text_of(received).startswith("Any news on this one?\nThanks.\n\n")
    assert "2,500.00 EUR" in text_of(received)
    assert history(tenant, invoice["id"]).count("invoice.reminder_sent") == 1
    assert [(row.manual, row.status, row.step_days) for row in reminded(invoice["id"])] == [(True, "sent", 12)]
    # Retried with its key: the first answer, no second e-mail.
    again = ask(client, app, tenant.key, Person("accept"), "send_reminder",
                {"invoice": invoice["id"], "message": "  Any news on this one?\nThanks.  ", "idempotency_key": "r-1"})
    assert again.structured_content["emailed_to"] == "ap@globex.example" and len(mailbox.received) == 1


@pytest.mark.parametrize(("days", "due"), [
    (1, "2,500.00 EUR due, 1 day overdue"),
    (0, "2,500.00 EUR due today"),
    (-5, "2,500.00 EUR due {day}, not overdue yet"),
])
def test_the_question_says_how_late_the_invoice_is(client, app, tenant, mailbox, days, due):
    invoice = overdue(tenant, days)
    person = Person("decline")
    ask(client, app, tenant.key, person, "send_reminder", {"invoice": invoice["id"]})
    assert person.asked == [question(invoice, due.format(day=day(today() - timedelta(days=days))))]


def test_a_part_paid_invoice_is_reminded_of_what_remains_due(client, app, tenant, mailbox):
    invoice = overdue(tenant)
    paid_part(tenant, invoice["id"], 50000)
    person = Person("decline")
    ask(client, app, tenant.key, person, "send_reminder", {"invoice": invoice["id"]})
    assert person.asked == [question(invoice, "2,000.00 EUR due, 12 days overdue")]


def test_declining_sends_nothing(client, app, tenant, mailbox):
    invoice = overdue(tenant)
    result = ask(client, app, tenant.key, Person("decline"), "send_reminder",
                 {"invoice": invoice["id"], "message": "Any news?"})
    assert result.structured_content == {
        "declined": True, "action": "remind", "invoice": invoice["id"],
        "detail": "The person declined: nothing changed (no reminder was sent). Ask them before trying again."}
    assert mailbox.received == [] and reminded(invoice["id"]) == []
    assert "invoice.reminder_sent" not in history(tenant, invoice["id"])


def test_a_payment_recorded_while_the_person_reads_makes_them_asked_again(client, app, tenant, mailbox):
    invoice = overdue(tenant)

    def meanwhile():  # someone else records 500.00: what is due is no longer what was shown
        paid_part(tenant, invoice["id"], 50000, reference="Other desk")

    person = Person("accept", meanwhile=meanwhile)
    result = ask(client, app, tenant.key, person, "send_reminder", {"invoice": invoice["id"]})
    assert person.asked == [question(invoice), question(invoice, "2,000.00 EUR due, 12 days overdue")]
    assert not result.is_error and result.structured_content["data"]["amount_due"] == 200000
    [received] = mailbox.received  # only after the second "yes"
    assert "2,000.00 EUR" in text_of(received)


def test_declining_the_second_question_sends_nothing(client, app, tenant, mailbox):
    invoice = overdue(tenant)
    person = Person(answers=["accept", "decline"], meanwhile=lambda: paid_part(tenant, invoice["id"], 50000))
    result = ask(client, app, tenant.key, person, "send_reminder", {"invoice": invoice["id"]})
    assert len(person.asked) == 2 and result.structured_content["declined"] is True
    assert mailbox.received == [] and reminded(invoice["id"]) == []


def test_paid_while_the_person_reads_is_refused_as_rest_refuses_it(client, app, tenant, mailbox):
    invoice = overdue(tenant)
    person = Person("accept", meanwhile=lambda: pay(tenant, invoice["id"]))
    result = ask(client, app, tenant.key, person, "send_reminder", {"invoice": invoice["id"]})
    assert len(person.asked) == 1
    assert result.is_error and json.loads(result.content[0].text)["code"] == "invalid_state"
    assert mailbox.received == []


# --- refused without a question ------------------------------------------------------------------------

@pytest.mark.parametrize("state", ["draft", "paid"])
def test_a_draft_or_paid_invoice_gets_rests_error_and_no_question(client, app, tenant, mailbox, state):
    if state == "draft":
        invoice = draft(tenant, customer=customer(tenant, name="Globex Corp", email="ap@globex.example")["id"])
    else:
        invoice = overdue(tenant)
        assert pay(tenant, invoice["id"]).status_code == 200
    person = Person("accept")
    result = ask(client, app, tenant.key, person, "send_reminder", {"invoice": invoice["id"]})
    rest = tenant.post(f"/invoices/{invoice['id']}/remind", json={}, idem=True)
    assert person.asked == [] and result.is_error and rest.status_code == 409
    assert json.loads(result.content[0].text) == {"code": rest.json()["code"], "detail": rest.json()["detail"]}
    assert rest.json()["code"] == "invalid_state" and mailbox.received == []


def test_a_customer_without_an_address_gets_rests_error_and_no_question(client, app, tenant, mailbox):
    invoice = overdue(tenant, email=None)
    person = Person("accept")
    result = ask(client, app, tenant.key, person, "send_reminder", {"invoice": invoice["id"]})
    rest = tenant.post(f"/invoices/{invoice['id']}/remind", json={}, idem=True).json()
    error = json.loads(result.content[0].text)
    assert person.asked == [] and error["code"] == rest["code"] == "validation"
    assert error["errors"] == rest["errors"] and mailbox.received == []


def test_another_accounts_invoice_is_not_found(client, app, tenant, other_tenant, mailbox):
    theirs = overdue(other_tenant)
    person = Person("accept")
    result = ask(client, app, tenant.key, person, "send_reminder", {"invoice": theirs["id"]})
    assert person.asked == [] and json.loads(result.content[0].text)["code"] == "not_found"
    assert error_of(call(client, tenant.key, "send_reminder", invoice=theirs["id"]))["code"] == "not_found"
    assert mailbox.received == []


def test_without_invoices_send_is_a_403_step_up_as_for_the_other_sends(client, tenant, mailbox):
    invoice = overdue(tenant)
    key = tenant.key_with(["invoices:read", "invoices:write"])
    for tool, arguments in (("send_reminder", {"invoice": invoice["id"]}), ("send_invoice", {"invoice": invoice["id"]})):
        response = post(client, "tools/call", {"name": tool, "arguments": arguments}, key=key)
        assert response.status_code == 403, tool
        challenge = response.headers["www-authenticate"]
        assert challenge.startswith('Bearer error="insufficient_scope"') and 'scope="invoices:send"' in challenge
        assert response.json()["error"]["data"] == {"code": "forbidden", "required_scope": "invoices:send"}
    assert mailbox.received == []


# --- the invoice view ------------------------------------------------------------------------------------

def test_in_the_view_a_payment_recorded_meanwhile_asks_again_and_confirm_sends_once(client, tenant, mailbox):
    invoice = overdue(tenant)
    session = initialize(client, tenant.key, APPS)
    asked = call_in(client, tenant, session, "send_reminder", invoice=invoice["id"], message="Any news?")
    shown = asked["structuredContent"]
    assert (shown["action"], shown["invoice"], shown["question"]) == ("remind", invoice["id"],
                                                                      question(invoice, note="Any news?"))
    assert shown["data"]["id"] == invoice["id"] and mailbox.received == []
    paid_part(tenant, invoice["id"], 50000)

    again = confirm(client, tenant, session, asked)

    assert again["structuredContent"]["notice"].startswith("The invoice changed after the person was asked")
    assert again["structuredContent"]["question"] == question(invoice, "2,000.00 EUR due, 12 days overdue",
                                                              note="Any news?")
    assert mailbox.received == []
    done = confirm(client, tenant, session, again)
    assert done["structuredContent"]["emailed_to"] == "ap@globex.example"
    assert len(mailbox.received) == 1 and history(tenant, invoice["id"]).count("invoice.reminder_sent") == 1


# --- an app's `send` limits ------------------------------------------------------------------------------

SEND_100 = [{"type": "invoice_actions", "actions": ["send"], "max_amount": {"currency": "EUR", "amount": 10000},
             "max_per_day": 5}]


def test_above_the_apps_send_limit_it_is_refused_without_a_question(browser, client, tenant, mailbox):
    app_client = register(client, token_endpoint_auth_method="none", client_name="Collector")
    token = obtain(browser, app_client, scopes=["invoices:read", "invoices:send"],
                   authorization_details=SEND_100)["access_token"]
    invoice = overdue(tenant)  # 2,500.00 EUR, above the app's 100.00
    session = initialize(client, token, APPS)  # a host that would show the question
    result = post(client, "tools/call", {"name": "send_reminder", "arguments": {"invoice": invoice["id"]}},
                  key=token, headers={"Mcp-Session-Id": session}).json()["result"]
    assert error_of(result)["code"] == "grant_limit_exceeded"
    assert "confirmation_required" not in json.dumps(result) and mailbox.received == []
