"""An assistant records and reverses payments over MCP with the official SDK client against live server
processes, in both protocol generations: the person is asked first, naming the amount, the invoice,
what remains due and how the money came; a payment recorded on another process while they read makes
them asked again (on the same stream, for a handshake-era client); a reversal reopens a paid invoice."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.conftest import make_tenant
from tests.e2e.test_mcp_confirmations import Person, draft, history, invoice, run

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def servers(live_server_pair) -> list[str]:
    return live_server_pair


@pytest.fixture
def tenant():
    return make_tenant(None)


def api(origin: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=f"{origin}/api/v1", headers={"Authorization": f"Bearer {key}"})


def opened(origin: str, key: str) -> dict:
    created = draft(origin, key)
    response = api(origin, key).post(f"/invoices/{created['id']}/finalize", headers={"Idempotency-Key": uuid.uuid4().hex})
    assert response.status_code == 200, response.text
    return response.json()["data"]


def recorded(origin: str, key: str, invoice_id: str, amount: int, **fields) -> dict:
    response = api(origin, key).post("/payments", json={"invoice": invoice_id, "amount": amount, **fields},
                                     headers={"Idempotency-Key": uuid.uuid4().hex})
    assert response.status_code == 201, response.text
    return response.json()["data"]


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_the_person_confirms_and_part_of_an_invoice_is_paid(servers, tenant, mode):
    invoice_ = opened(servers[0], tenant.key)
    person = Person("accept")
    result = run(servers[0], tenant.key, mode, person, lambda client: client.call_tool("record_payment", {
        "invoice": invoice_["id"], "amount": 100000, "method": "bank_transfer", "paid_on": "2026-11-20",
        "reference": "BACS 7"}))
    assert not result.is_error, result.content
    assert result.structured_content["formatted"]["amount"] == "1,000.00 USD"
    assert person.asked == [f"Record a payment of 1,000.00 USD on {invoice_['number']} for Globex Corp (received 20 "
                            "Nov 2026 by bank transfer, reference BACS 7)? 1,500.00 USD remains due after it. No "
                            "money moves."]
    assert invoice(servers[0], tenant.key, invoice_["id"])["amount_due"] == 150000
    assert history(servers[0], tenant.key, invoice_["id"])[0] == "payment.recorded"


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_a_payment_recorded_on_another_process_while_the_person_reads_makes_them_asked_again(servers, tenant, mode):
    invoice_ = opened(servers[0], tenant.key)
    person = Person("accept", meanwhile=lambda: recorded(servers[1], tenant.key, invoice_["id"], 50000))
    result = run(servers[0], tenant.key, mode, person, lambda client: client.call_tool("record_payment", {
        "invoice": invoice_["id"], "amount": 100000}))
    assert [question.split("? ")[1] for question in person.asked] == [
        "1,500.00 USD remains due after it. No money moves.", "1,000.00 USD remains due after it. No money moves."]
    assert not result.is_error and result.structured_content["amount"] == 100000
    assert invoice(servers[0], tenant.key, invoice_["id"])["amount_paid"] == 150000


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_reversing_asks_and_reopens_the_paid_invoice(servers, tenant, mode):
    invoice_ = opened(servers[0], tenant.key)
    payment = recorded(servers[0], tenant.key, invoice_["id"], 250000, method="card", paid_on="2026-11-20")
    person = Person("accept")
    result = run(servers[0], tenant.key, mode, person, lambda client: client.call_tool("reverse_payment", {
        "payment": payment["id"], "reason": "Charge-back"}))
    assert result.structured_content["status"] == "reversed"
    assert person.asked == [f"Reverse the payment of 2,500.00 USD on {invoice_['number']} for Globex Corp (received "
                            f"20 Nov 2026 by card), reason: Charge-back? {invoice_['number']} reopens: 2,500.00 USD "
                            "is due again. The payment stays listed as reversed."]
    after = invoice(servers[0], tenant.key, invoice_["id"])
    assert (after["status"], after["amount_due"]) == ("open", 250000)
    assert history(servers[0], tenant.key, invoice_["id"])[:2] == ["invoice.reopened", "payment.reversed"]
