"""Invoice items: list, add, retrieve and remove the lines of a draft."""

import uuid

import pytest
from sqlmodel import select

from core.base import db
from core.models import InvoiceLine
from tests.api.invoicing import adhoc, draft, history, price

UNKNOWN = "0123456789abcdef0123456789abcdef"  # a well-formed id of nothing (fixed: xdist collects alike)


def add(tenant, invoice_id: str, **fields):
    return tenant.post("/invoice-items", json={"invoice": invoice_id, **fields}, idem=True)


def test_add_ad_hoc_line_returns_201_with_the_whole_invoice(tenant):
    invoice = draft(tenant, items=[adhoc("First", 1000)])
    response = add(tenant, invoice["id"], description="Second", unit_amount=250, quantity=2)
    assert response.status_code == 201
    data = response.json()["data"]
    assert data["id"] == invoice["id"] and data["object"] == "invoice"
    assert [line["description"] for line in data["lines"]["data"]] == ["First", "Second"]
    assert data["total"] == 1500


def test_add_priced_line(tenant):
    p = price(tenant, 4200, tax_rate=5, product_name="Plan")
    invoice = draft(tenant, items=[])
    data = add(tenant, invoice["id"], price=p["id"], quantity=2, unit="MON").json()["data"]
    [line] = data["lines"]["data"]
    assert (line["price"], line["product"], line["description"], line["unit"]) == (p["id"], p["product"], "Plan", "MON")
    assert (line["unit_amount"], line["amount"], line["tax_rate"], line["tax_amount"]) == (4200, 8400, 5, 420)


def test_add_priced_line_with_empty_description_uses_the_product_name(tenant):
    p = price(tenant, product_name="Plan")
    invoice = draft(tenant, items=[])
    assert add(tenant, invoice["id"], price=p["id"], description="").json()["data"]["lines"]["data"][0][
        "description"] == "Plan"


def test_add_requires_an_idempotency_key(tenant):
    invoice = draft(tenant)
    response = tenant.post("/invoice-items", json=adhoc(invoice=invoice["id"]))
    assert response.status_code == 428 and response.json()["code"] == "idempotency_key_required"


def test_a_retried_key_adds_no_second_line(tenant):
    invoice = draft(tenant, items=[])
    body = adhoc(invoice=invoice["id"])
    first = tenant.post("/invoice-items", json=body, idem="add-1")
    second = tenant.post("/invoice-items", json=body, idem="add-1")
    assert second.status_code == 201 and second.json() == first.json()
    assert len(tenant.get(f"/invoices/{invoice['id']}").json()["data"]["lines"]["data"]) == 1


@pytest.mark.parametrize("fields, path", [
    ({"unit_amount": 100}, "description"), ({"description": "x"}, "unit_amount"),
    ({"description": "x", "unit_amount": 1.5}, "unit_amount"),
    ({"description": "x", "unit_amount": 1, "quantity": 0}, "quantity"),
    ({"description": "x", "unit_amount": 1, "unit": "KG"}, "unit"),
    ({"description": "x", "unit_amount": 1, "discount_percent": 101}, "discount_percent"),
    ({"description": "x", "unit_amount": 1, "tax_rate": -0.5}, "tax_rate"),
    ({"description": "x", "unit_amount": 1, "lines": []}, "lines"),
])
def test_add_validation_names_the_field(tenant, fields, path):
    invoice = draft(tenant)
    response = add(tenant, invoice["id"], **fields)
    assert response.status_code == 422, response.text
    assert path in [e["path"] for e in response.json()["errors"]]


def test_add_without_invoice_is_422(tenant):
    response = tenant.post("/invoice-items", json=adhoc(), idem=True)
    assert response.status_code == 422 and response.json()["errors"][0]["path"] == "invoice"


@pytest.mark.parametrize("invoice_id", ["in_nope", f"in_{UNKNOWN}"])
def test_add_to_an_unknown_invoice_is_404(tenant, invoice_id):
    assert add(tenant, invoice_id, **adhoc()).status_code == 404


def test_add_price_of_another_currency_is_422_at_price(tenant):
    p = price(tenant, currency="JPY")
    invoice = draft(tenant)
    response = add(tenant, invoice["id"], price=p["id"])
    assert response.status_code == 422 and response.json()["errors"][0]["path"] == "price"


def test_add_archived_price_is_422_at_price(tenant):
    p = price(tenant)
    tenant.delete(f"/prices/{p['id']}")
    response = add(tenant, draft(tenant)["id"], price=p["id"])
    assert response.status_code == 422 and response.json()["errors"][0]["path"] == "price"


def test_the_251st_line_is_refused(tenant):
    invoice = draft(tenant, items=[adhoc()] * 250)
    response = add(tenant, invoice["id"], **adhoc())
    assert response.status_code == 422 and response.json()["errors"][0]["path"] == "invoice"


def test_adding_rereads_the_prices_of_existing_lines(tenant):
    p = price(tenant, 1000)
    invoice = draft(tenant, items=[{"price": p["id"]}])
    tenant.patch(f"/prices/{p['id']}", json={"unit_amount": 3000})
    data = add(tenant, invoice["id"], **adhoc(unit_amount=1)).json()["data"]
    assert data["lines"]["data"][0]["unit_amount"] == 3000 and data["total"] == 3001


def test_add_and_remove_record_invoice_updated(tenant):
    invoice = draft(tenant)
    data = add(tenant, invoice["id"], **adhoc()).json()["data"]
    tenant.delete(f"/invoice-items/{data['lines']['data'][1]['id']}")
    assert [e["type"] for e in history(tenant, invoice["id"])] == ["invoice.updated", "invoice.updated",
                                                                  "invoice.created"]


def test_list_items_of_an_invoice(tenant):
    invoice = draft(tenant, items=[adhoc("A"), adhoc("B"), adhoc("C")])
    response = tenant.get("/invoice-items", params={"invoice": invoice["id"]})
    assert response.status_code == 200
    assert response.json() == {"data": invoice["lines"]["data"]}


def test_list_items_accepts_the_invoice_uuid(tenant):
    invoice = draft(tenant)
    response = tenant.get("/invoice-items", params={"invoice": str(uuid.UUID(invoice["id"][3:]))})
    assert response.json()["data"] == invoice["lines"]["data"]


def test_list_items_needs_the_invoice_parameter(tenant):
    response = tenant.get("/invoice-items")
    assert response.status_code == 422 and response.json()["errors"][0]["path"] == "invoice"


def test_list_items_of_unknown_invoice_is_404(tenant):
    assert tenant.get("/invoice-items", params={"invoice": "in_nope"}).status_code == 404


def test_list_items_is_not_paginated(tenant):
    invoice = draft(tenant, items=[adhoc()] * 120)
    assert len(tenant.get("/invoice-items", params={"invoice": invoice["id"], "limit": 10}).json()["data"]) == 120


def test_retrieve_an_item(tenant):
    invoice = draft(tenant)
    line = invoice["lines"]["data"][0]
    assert tenant.get(f"/invoice-items/{line['id']}").json() == {"data": line}
    assert tenant.get(f"/invoice-items/{uuid.UUID(line['id'][3:])}").json() == {"data": line}


@pytest.mark.parametrize("bad", ["ii_nope", f"ii_{UNKNOWN}"])
def test_unknown_item_is_404(tenant, bad):
    assert tenant.get(f"/invoice-items/{bad}").status_code == 404
    assert tenant.delete(f"/invoice-items/{bad}").status_code == 404


def test_remove_returns_the_invoice_with_totals_recomputed(tenant):
    invoice = draft(tenant, items=[adhoc("A", 100), adhoc("B", 200)])
    response = tenant.delete(f"/invoice-items/{invoice['lines']['data'][0]['id']}")
    assert response.status_code == 200
    data = response.json()["data"]
    assert [line["description"] for line in data["lines"]["data"]] == ["B"]
    assert data["total"] == 200 and data["subtotal"] == 200


def test_remove_the_last_line_leaves_an_empty_draft(tenant):
    invoice = draft(tenant)
    data = tenant.delete(f"/invoice-items/{invoice['lines']['data'][0]['id']}").json()["data"]
    assert data["lines"] == {"data": []} and data["total"] == 0


def test_remove_narrowed_to_the_right_invoice(tenant):
    invoice = draft(tenant)
    line_id = invoice["lines"]["data"][0]["id"]
    response = tenant.delete(f"/invoice-items/{line_id}", params={"invoice": invoice["id"]})
    assert response.status_code == 200


def test_remove_narrowed_to_another_invoice_is_404(tenant):
    invoice, other = draft(tenant), draft(tenant)
    line_id = invoice["lines"]["data"][0]["id"]
    assert tenant.delete(f"/invoice-items/{line_id}", params={"invoice": other["id"]}).status_code == 404
    assert tenant.delete(f"/invoice-items/{line_id}", params={"invoice": "in_nope"}).status_code == 404
    assert tenant.get(f"/invoice-items/{line_id}").status_code == 200


def test_remove_twice_is_404(tenant):
    invoice = draft(tenant)
    line_id = invoice["lines"]["data"][0]["id"]
    tenant.delete(f"/invoice-items/{line_id}")
    assert tenant.delete(f"/invoice-items/{line_id}").status_code == 404


def test_lines_keep_their_order_after_removals(tenant):
    invoice = draft(tenant, items=[adhoc("A"), adhoc("B"), adhoc("C")])
    tenant.delete(f"/invoice-items/{invoice['lines']['data'][1]['id']}")
    data = add(tenant, invoice["id"], **adhoc("D")).json()["data"]
    assert [line["description"] for line in data["lines"]["data"]] == ["A", "C", "D"]
    with db.transaction() as session:
        positions = session.exec(select(InvoiceLine.position).order_by(InvoiceLine.position)).all()
    assert positions == [0, 1, 2]


def test_item_scopes(tenant):
    invoice = draft(tenant)
    reader = tenant.as_key(tenant.key_with(["invoices:read"]))
    assert reader.get("/invoice-items", params={"invoice": invoice["id"]}).status_code == 200
    assert add(reader, invoice["id"], **adhoc()).status_code == 403
    assert reader.delete(f"/invoice-items/{invoice['lines']['data'][0]['id']}").status_code == 403
