"""Properties of crediting, over random invoices and random sequences of credit notes: whatever is
asked, what is issued adds up, never credits more than the invoice has, and an invoice credited in
pieces to the end is credited exactly its total and its tax."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import hostile
from tests.api.invoicing import adhoc, open_invoice
from tests.conftest import make_tenant

LINES = st.lists(st.tuples(st.integers(1, 99999), st.integers(1, 7), st.sampled_from([0, 5, 7, 10, 19, 20, 21])),
                 min_size=1, max_size=4)
ASKS = st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["quantity", "amount", "rest", "custom"]),
                          st.integers(1, 50000)), min_size=1, max_size=6)


def _line_ask(kind: str, line: dict, size: int) -> dict:
    if kind == "quantity":
        return {"invoice_line": line["id"], "quantity": 1 + size % 3}
    if kind == "amount":
        return {"invoice_line": line["id"], "amount": size}
    return {"invoice_line": line["id"]}


@settings(max_examples=hostile.EXAMPLES, deadline=None, database=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(lines=LINES, asks=ASKS)
def test_what_is_issued_adds_up_and_never_exceeds_the_invoice(client, lines, asks):
    tenant = make_tenant(client)
    invoice = open_invoice(tenant, items=[adhoc(f"L{i}", amount, quantity=quantity, tax_rate=rate)
                                          for i, (amount, quantity, rate) in enumerate(lines)])
    invoice = tenant.get(f"/invoices/{invoice['id']}").json()["data"]
    invoice_lines = invoice["lines"]["data"]
    issued = []
    for index, kind, size in asks:
        if kind == "custom":
            rate = invoice_lines[index % len(invoice_lines)]["tax_rate"]
            body = {"invoice": invoice["id"], "lines": [{"description": "Own", "amount": size, "tax_rate": rate}]}
        else:
            body = {"invoice": invoice["id"], "lines": [_line_ask(kind, invoice_lines[index % len(invoice_lines)], size)]}
        response = tenant.post("/credit-notes", json=body, idem=True)
        assert response.status_code in (201, 409, 422), response.text
        if response.status_code == 201:
            note = response.json()["data"]
            assert note["total"] == note["subtotal"] + note["tax"] > 0
            assert note["credit_amount"] + note["refund_amount"] + note["balance_amount"] == note["total"]
            assert all(Decimal(str(line["tax_amount"])) >= 0 for line in note["lines"]["data"])
            issued.append(note)
    now = tenant.get(f"/invoices/{invoice['id']}").json()["data"]
    assert sum(note["total"] for note in issued) <= invoice["total"]
    assert now["amount_credited"] == sum(note["credit_amount"] for note in issued)
    assert now["amount_due"] == (0 if now["status"] == "paid" else invoice["total"] - now["amount_credited"])
    rest = tenant.post("/credit-notes", json={"invoice": invoice["id"], "lines": [
        {"invoice_line": line["id"]} for line in invoice_lines if _remaining(line, issued)]}, idem=True)
    if any(_remaining(line, issued) for line in invoice_lines) and not any(
            line["type"] == "custom" for note in issued for line in note["lines"]["data"]):
        assert rest.status_code == 201, rest.text
        issued.append(rest.json()["data"])
        lines_credited = [line for note in issued for line in note["lines"]["data"]]
        assert sum(line["tax_amount"] for line in lines_credited) == invoice["tax"]
        assert sum(note["total"] for note in issued) == invoice["total"]
        assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["status"] == "paid"


def _remaining(line: dict, issued: list[dict]) -> bool:
    taken = sum(part["amount"] + part["tax_amount"] for note in issued for part in note["lines"]["data"]
                if part["invoice_line"] == line["id"])
    return line["amount"] + line["tax_amount"] > taken
