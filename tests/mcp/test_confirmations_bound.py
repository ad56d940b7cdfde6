"""A confirmation approves what its question showed, not the call: the invoice view's Confirm after the
draft, its customer or the call changed does nothing and asks again about the invoice as it is now; a
send's question shows everything that reaches the customer; "nothing to ask" cannot be raced into an
unasked action. (The 2026-07-28 round trip and the handshake-era stream: tests/e2e/test_mcp_confirmations.py.)"""

from __future__ import annotations

import pytest

from core.access import resources
from core.base import executor
from core.base.db import new_session, transaction
from core.base.errors import ConfirmationStale
from core.billing import confirmations as core_confirmations
from core.billing import finalization, invoices, payments, sending
from core.billing.confirmations import NOTHING_ASKED, Confirmed
from core.billing.invoice_inputs import PayInput, VoidInput
from core.billing.sending import SendInput
from mcp_server import confirmations
from operations import confirmations as questions
from tests.api.invoicing import adhoc, customer, draft, finalize
from tests.mcp.jsonrpc import post
from tests.mcp.test_assistant_experience import APPS, initialize
from tests.units import principal_of

NOTE = "Our bank details changed:\npay IBAN DE89 3704 0044 0532 0130 00 from now on.\n\n<b>Thanks</b> & regards"


def ask_in_view(client, tenant, tool: str, invoice_id: str, **arguments) -> tuple[dict, str]:
    """An MCP Apps host calls `tool`: the result (the question and the view's token) and the session."""
    session = initialize(client, tenant.key, APPS)
    return call_in(client, tenant, session, tool, invoice=invoice_id, **arguments), session


def call_in(client, tenant, session: str, tool: str, **arguments) -> dict:
    response = post(client, "tools/call", {"name": tool, "arguments": arguments}, key=tenant.key,
                    headers={"Mcp-Session-Id": session})
    assert response.status_code == 200, response.text
    return response.json()["result"]


def confirm(client, tenant, session: str, asked: dict) -> dict:
    return call_in(client, tenant, session, "confirm_invoice_action",
                   token=asked["_meta"]["invoicing"]["confirmation_token"], decision="confirm")


def history(tenant, invoice_id: str) -> list[str]:
    return [event["type"] for event in tenant.get(f"/invoices/{invoice_id}/events").json()["data"]]


def opened(tenant, **customer_fields) -> dict:
    invoice = draft(tenant, customer=customer(tenant, **customer_fields)["id"])
    assert finalize(tenant, invoice["id"]).status_code == 200
    return tenant.get(f"/invoices/{invoice['id']}").json()["data"]


# --- the invoice view: Confirm after a change ---------------------------------------------------------

@pytest.mark.parametrize("change", ["lines", "customer", "customer_email"])
def test_a_draft_changed_after_the_question_is_not_finalized_and_the_view_asks_again(client, tenant, change):
    invoice = draft(tenant, items=[adhoc("Design", 250000)])
    asked, session = ask_in_view(client, tenant, "finalize_invoice", invoice["id"])
    assert "2,500.00 USD" in asked["structuredContent"]["question"]
    if change == "lines":
        assert tenant.patch(f"/invoices/{invoice['id']}", json={"items": [adhoc("Design", 9900000)]}).status_code == 200
    elif change == "customer":
        other = customer(tenant, name="Umbrella Corp")
        assert tenant.patch(f"/invoices/{invoice['id']}", json={"customer": other["id"]}).status_code == 200
    else:
        assert tenant.patch(f"/customers/{invoice['customer']}", json={"email": "evil@attacker.example"}).status_code == 200

    again = confirm(client, tenant, session, asked)

    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["status"] == "draft"
    assert history(tenant, invoice["id"]).count("invoice.finalized") == 0
    assert again["isError"] is False and again["structuredContent"]["confirmation_required"] is True
    assert again["structuredContent"]["notice"].startswith("The invoice changed after the person was asked")
    question = again["structuredContent"]["question"]
    if change == "lines":
        assert "99,000.00 USD" in question
    elif change == "customer":
        assert "Umbrella Corp" in question
    assert again["structuredContent"]["data"]["customer_details"]["email"] == (
        "evil@attacker.example" if change == "customer_email" else "jane@example.com")


def test_the_fresh_question_of_the_view_acts_when_confirmed(client, tenant):
    invoice = draft(tenant, items=[adhoc("Design", 250000)])
    asked, session = ask_in_view(client, tenant, "finalize_invoice", invoice["id"])
    tenant.patch(f"/invoices/{invoice['id']}", json={"items": [adhoc("Design", 9900000)]})
    again = confirm(client, tenant, session, asked)
    done = confirm(client, tenant, session, again)
    assert done["structuredContent"]["status"] == "open" and done["structuredContent"]["total"] == 9900000


def test_a_draft_sent_to_a_customer_whose_address_changed_sends_nothing_and_names_the_new_address(client, tenant):
    invoice = draft(tenant)
    asked, session = ask_in_view(client, tenant, "send_invoice", invoice["id"])
    assert "to jane@example.com," in asked["structuredContent"]["question"]
    tenant.patch(f"/customers/{invoice['customer']}", json={"email": "evil@attacker.example"})
    again = confirm(client, tenant, session, asked)
    assert "to evil@attacker.example," in again["structuredContent"]["question"]
    assert history(tenant, invoice["id"]) == ["invoice.created"]


def test_an_open_invoice_goes_to_the_address_it_was_issued_to_whatever_the_customer_became(client, tenant):
    invoice = opened(tenant)
    asked, session = ask_in_view(client, tenant, "send_invoice", invoice["id"])
    tenant.patch(f"/customers/{invoice['customer']}", json={"email": "evil@attacker.example"})
    sent = confirm(client, tenant, session, asked)
    assert sent["structuredContent"]["emailed_to"] == "jane@example.com"


def test_an_open_invoice_paid_elsewhere_meanwhile_is_refused_not_asked_again(client, tenant):
    invoice = opened(tenant)
    asked, session = ask_in_view(client, tenant, "void_invoice", invoice["id"])
    assert tenant.post(f"/invoices/{invoice['id']}/pay", json={}, idem=True).status_code == 200
    refused = confirm(client, tenant, session, asked)
    assert refused["isError"] is True and '"invalid_state"' in refused["content"][0]["text"]


def test_an_unchanged_invoice_is_acted_on_once(client, tenant):
    invoice = opened(tenant)
    asked, session = ask_in_view(client, tenant, "mark_invoice_paid", invoice["id"], reference="BACS 7")
    paid = confirm(client, tenant, session, asked)
    assert paid["structuredContent"]["status"] == "paid"
    assert history(tenant, invoice["id"]).count("invoice.paid") == 1


# --- what a send's question shows ------------------------------------------------------------------

def test_the_send_question_shows_the_note_in_full_the_copies_and_the_attachment(client, tenant):
    invoice = opened(tenant)
    asked, _ = ask_in_view(client, tenant, "send_invoice", invoice["id"], message=f"  {NOTE}\n",
                           cc=["boss@globex.example", "jane@example.com"])
    question = asked["structuredContent"]["question"]
    assert question == (f"E-mail {invoice['number']} (10.00 USD) to jane@example.com (a copy to boss@globex.example), "
                        f"with the PDF attached and the note below?\n\n{NOTE}")


def test_a_send_without_a_note_says_the_pdf_is_attached(client, tenant):
    invoice = opened(tenant)
    asked, _ = ask_in_view(client, tenant, "send_invoice", invoice["id"])
    assert asked["structuredContent"]["question"] == (
        f"E-mail {invoice['number']} (10.00 USD) to jane@example.com, with the PDF attached?")


def test_a_note_the_send_would_refuse_is_not_asked_about(client, tenant):
    invoice = opened(tenant)
    result, _ = ask_in_view(client, tenant, "send_invoice", invoice["id"], message="x" * 2001)
    assert result["isError"] is True and '"validation"' in result["content"][0]["text"]
    assert "invoice.emailed" not in history(tenant, invoice["id"])


def test_the_view_shows_a_note_as_text(client, tenant):
    view = post(client, "resources/read", {"uri": "ui://invoicing/invoice-view.html"}, key=tenant.key).json()
    html = view["result"]["contents"][0]["text"]
    assert "white-space: pre-wrap" in html and "innerHTML" not in html


# --- "nothing to ask" cannot be raced ---------------------------------------------------------------

def test_a_draft_given_lines_after_nothing_was_asked_gets_a_question_instead_of_finalizing(client, tenant,
                                                                                            monkeypatch):
    invoice = draft(tenant, items=[])
    real = questions.question_for
    calls = []

    def question_then_a_concurrent_write(*args):
        question = real(*args)  # a draft without lines: it would fail, nothing to ask
        if not calls:
            assert question is None
            assert tenant.post("/invoice-items", json={"invoice": invoice["id"], **adhoc("Design", 250000)},
                               idem=True).status_code == 201
        calls.append(question)
        return question

    monkeypatch.setattr(confirmations, "question_for", question_then_a_concurrent_write)
    result, _ = ask_in_view(client, tenant, "finalize_invoice", invoice["id"])
    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["status"] == "draft"
    assert result["structuredContent"]["confirmation_required"] is True
    assert "2,500.00 USD" in result["structuredContent"]["question"]
    assert "notice" not in result["structuredContent"]  # nothing was asked before: nothing "changed after"


def test_a_handshake_era_call_raced_past_nothing_to_ask_is_refused_not_acted(client, tenant, monkeypatch):
    from mcp_server import gate
    invoice = draft(tenant, items=[])
    real = questions.question_for

    def nothing_to_ask_then_a_concurrent_write(*args):
        question = real(*args)
        assert question is None  # a draft without lines: nothing to ask
        tenant.post("/invoice-items", json={"invoice": invoice["id"], **adhoc("Design", 250000)}, idem=True)
        return question

    monkeypatch.setattr(gate, "question_for", nothing_to_ask_then_a_concurrent_write)
    session = initialize(client, tenant.key, {"elicitation": {"form": {}}})
    result = call_in(client, tenant, session, "finalize_invoice", invoice=invoice["id"])
    assert result["isError"] is True and '"confirmation_stale"' in result["content"][0]["text"]
    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["status"] == "draft"


def test_a_client_that_cannot_be_asked_acts_on_its_scopes(client, tenant):
    invoice = draft(tenant)
    response = post(client, "tools/call", {"name": "finalize_invoice", "arguments": {"invoice": invoice["id"]}},
                    key=tenant.key)
    assert response.json()["result"]["structuredContent"]["status"] == "open"


# --- the rule in core ---------------------------------------------------------------------------------

def test_the_digest_ignores_the_updated_stamp_only(tenant):
    view = tenant.get(f"/invoices/{draft(tenant)['id']}").json()["data"]
    same = core_confirmations.digest(view, "finalize", None)
    assert core_confirmations.digest({**view, "updated": "2030-01-01T00:00:00.000Z"}, "finalize", None) == same
    assert core_confirmations.digest({**view, "total": view["total"] + 1}, "finalize", None) != same
    assert core_confirmations.digest(view, "void", None) != same


@pytest.mark.parametrize("confirmed", [NOTHING_ASKED, Confirmed("0" * 64)])
def test_core_finalize_refuses_what_the_person_did_not_see(tenant, confirmed):
    invoice = draft(tenant)
    principal = tenant_principal(tenant)
    with pytest.raises(ConfirmationStale), transaction() as session:
        row = invoices.get_invoice(session, tenant.account_id, invoice["id"], lock=True)
        finalization.finalize_in(session, principal, row, confirmed=confirmed)
    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["status"] == "draft"


@pytest.mark.parametrize(("action", "act"), [
    ("pay", lambda session, principal, row: payments.mark_paid(session, principal, row, PayInput(reference="BACS 7"),
                                                               confirmed=Confirmed("0" * 64))),
    ("void", lambda session, principal, row: invoices.void(session, principal, row, VoidInput(reason="dup"),
                                                          confirmed=NOTHING_ASKED)),
])
def test_core_pay_and_void_refuse_what_the_person_did_not_see(tenant, action, act):
    invoice = opened(tenant)
    principal = tenant_principal(tenant)
    with pytest.raises(ConfirmationStale), transaction() as session:
        act(session, principal, invoices.get_invoice(session, tenant.account_id, invoice["id"], lock=True))
    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["status"] == "open"
    assert history(tenant, invoice["id"]) == ["invoice.finalized", "invoice.created"]


def test_core_send_refuses_what_the_person_did_not_see_before_anything_goes_out(tenant):
    invoice = opened(tenant)
    principal = tenant_principal(tenant)
    session = new_session()
    try:
        with pytest.raises(ConfirmationStale):
            sending.send_invoice(session, principal, invoice["id"], SendInput(message="Pay to IBAN …"),
                                 confirmed=Confirmed("0" * 64))
    finally:
        session.rollback()
        session.close()
    assert "invoice.emailed" not in history(tenant, invoice["id"])


def test_a_payment_day_is_part_of_what_is_confirmed(client, tenant):
    invoice = opened(tenant)
    asked, session = ask_in_view(client, tenant, "mark_invoice_paid", invoice["id"], paid_on="2026-11-20")
    assert "paid on 20 Nov 2026" in asked["structuredContent"]["question"]
    paid = confirm(client, tenant, session, asked)
    assert paid["structuredContent"]["paid_at"].startswith("2026-11-20")


def test_core_finalize_acts_on_what_the_person_saw(tenant):
    invoice = draft(tenant)
    principal = tenant_principal(tenant)
    with transaction() as session:
        view = executor.within(session, invoices.view_invoice, tenant.account_id, invoice["id"])
        seen = Confirmed(core_confirmations.digest(view, "finalize", None))
        row = invoices.get_invoice(session, tenant.account_id, invoice["id"], lock=True)
        assert finalization.finalize_in(session, principal, row, confirmed=seen).status == "open"


def tenant_principal(tenant):
    return principal_of(f"Bearer {tenant.key}", resources.mcp())


def _context(scope: dict):
    from types import SimpleNamespace
    return SimpleNamespace(request=SimpleNamespace(scope=scope))


def test_a_call_acts_as_the_caller_the_gate_verified_for_the_request(tenant):
    principal = tenant_principal(tenant)
    assert confirmations.caller_as_authenticated(_context({confirmations.PRINCIPAL: principal})) is principal


def test_a_call_that_waited_for_the_persons_answer_verifies_its_credential_again(tenant):
    # Minutes may pass on the stream while the person reads: the app may have been disconnected meanwhile.
    scope = {confirmations.PRINCIPAL: tenant_principal(tenant), confirmations.CONFIRMED: NOTHING_ASKED}
    assert confirmations.caller_as_authenticated(_context(scope)) is None

