"""An assistant credits an invoice over MCP with the official SDK client against live server processes:
the person is asked first, naming the invoice, the amount and where the money goes; a "yes" issues
exactly what was shown, a "no" changes nothing, and a credit note issued meanwhile makes the answer stale."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.conftest import make_tenant
from tests.e2e.test_mcp_confirmations import Person, draft, history, invoice, run

pytestmark = pytest.mark.e2e
PARTIAL = {"lines": [{"description": "Two hours less", "amount": 50000}], "refund_amount": 30000,
           "balance_amount": 20000, "refund_reference": "BACS-R-9", "reason": "order_change"}


@pytest.fixture(scope="module")
def servers(live_server_pair) -> list[str]:
    return live_server_pair


@pytest.fixture
def tenant():
    return make_tenant(None)


def api(origin: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=f"{origin}/api/v1", headers={"Authorization": f"Bearer {key}"})


def paid_invoice(origin: str, key: str) -> dict:
    created = draft(origin, key)
    client = api(origin, key)
    for action in ("finalize", "pay"):
        response = client.post(f"/invoices/{created['id']}/{action}", headers={"Idempotency-Key": uuid.uuid4().hex})
        assert response.status_code == 200, response.text
    return response.json()["data"]


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_the_person_confirms_and_part_of_a_paid_invoice_is_credited(servers, tenant, mode):
    paid = paid_invoice(servers[0], tenant.key)
    person = Person("accept")
    result = run(servers[0], tenant.key, mode, person,
                 lambda client: client.call_tool("create_credit_note", {"invoice": paid["id"], **PARTIAL}))
    assert not result.is_error, result.content
    note = result.structured_content
    assert (note["number"], note["total"], note["refund_amount"], note["balance_amount"]) == (
        "CN-0001", 50000, 30000, 20000)
    assert note["formatted"]["total"] == "500.00 USD"
    assert person.asked == [
        f"Issue a credit note on {paid['number']} for Globex Corp, 500.00 USD (300.00 USD refunded to the customer; "
        "200.00 USD to the customer's balance for their next invoice, reason: order change)? It gets the next credit "
        "note number and can only be voided afterwards."]
    assert history(servers[0], tenant.key, paid["id"])[0] == "credit_note.created"


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_declining_issues_nothing(servers, tenant, mode):
    paid = paid_invoice(servers[0], tenant.key)
    result = run(servers[0], tenant.key, mode, Person("decline"),
                 lambda client: client.call_tool("create_credit_note", {"invoice": paid["id"], **PARTIAL}))
    assert result.structured_content["declined"] is True
    assert "no credit note was issued" in result.content[0].text
    assert api(servers[0], tenant.key).get("/credit-notes").json()["data"] == []


def test_a_credit_note_issued_while_the_person_reads_makes_them_asked_again(servers, tenant):
    created = draft(servers[0], tenant.key)
    opened = api(servers[0], tenant.key).post(f"/invoices/{created['id']}/finalize",
                                              headers={"Idempotency-Key": uuid.uuid4().hex}).json()["data"]
    line = created["lines"]["data"][0]["id"]

    def meanwhile():  # another credit note takes 1.00 of the line: what remains of it is no longer what was shown
        response = api(servers[1], tenant.key).post(
            "/credit-notes", json={"invoice": opened["id"], "lines": [{"invoice_line": line, "amount": 100}]},
            headers={"Idempotency-Key": uuid.uuid4().hex})
        assert response.status_code == 201, response.text

    person = Person("accept", meanwhile=meanwhile)
    result = run(servers[0], tenant.key, "2026-07-28", person,
                 lambda client: client.call_tool("create_credit_note", {"invoice": opened["id"],
                                                                        "lines": [{"invoice_line": line}]}))
    assert [question.split(" (")[0] for question in person.asked] == [
        f"Issue a credit note on {opened['number']} for Globex Corp, 2,500.00 USD",
        f"Issue a credit note on {opened['number']} for Globex Corp, 2,499.00 USD"]
    assert not result.is_error and result.structured_content["total"] == 249900


def test_voiding_asks_and_says_what_is_undone(servers, tenant):
    paid = paid_invoice(servers[0], tenant.key)
    created = api(servers[0], tenant.key).post("/credit-notes", json={"invoice": paid["id"], **PARTIAL},
                                               headers={"Idempotency-Key": uuid.uuid4().hex}).json()["data"]
    person = Person("accept")
    result = run(servers[0], tenant.key, "2026-07-28", person,
                 lambda client: client.call_tool("void_credit_note", {"credit_note": created["id"]}))
    assert result.structured_content["status"] == "void"
    assert person.asked == ["Void credit note CN-0001 (500.00 USD): 200.00 USD leaves the customer's balance? It "
                            "keeps its number."]
    assert invoice(servers[0], tenant.key, paid["id"])["status"] == "paid"
