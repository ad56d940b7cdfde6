"""Invoices: create, retrieve, edit and delete drafts; response shapes; validation; other accounts."""

import uuid
from datetime import date, timedelta

import pytest

from tests.api.invoicing import adhoc, create, customer, draft, open_invoice, price, profile_of

UNKNOWN = "0123456789abcdef0123456789abcdef"  # a well-formed id of nothing (fixed: xdist collects alike)

INVOICE_FIELDS = {
    "id", "object", "number", "status", "customer", "customer_details", "issuer", "currency", "collection_method",
    "issue_date", "due_date", "description", "footer", "subtotal", "discount", "taxable", "tax", "total",
    "amount_due", "amount_in_words", "public_url_token", "public_url", "public_pdf_url",
    "finalized_at", "paid_at", "voided_at", "void_reason",
    "created", "updated",
    "buyer_reference", "order_reference",  # beyond the specification: for e-invoices (issue 25)
    "amount_credited", "balance_applied",  # what credit notes and the customer balance took off (issue 35)
    "amount_paid",  # what payments and the balance paid (issue 36)
    "schedule", "period",  # the schedule that made it, and the period it bills (issue 37)
    "reminders_paused", "late_fee_for",  # payment reminders (issue 37)
}
LINE_FIELDS = {"id", "object", "invoice", "price", "product", "description", "quantity", "unit", "unit_amount",
               "amount", "discount_percent", "tax_rate", "tax_amount",
               "tax_category", "tax_exemption_reason"}  # beyond the specification: for e-invoices (issue 25)


# --- create --------------------------------------------------------------------------------


def test_create_returns_201_with_a_draft_and_its_lines(tenant):
    cus = customer(tenant)
    response = create(tenant, customer_id=cus["id"], items=[adhoc("Design", 150000, quantity=2, unit="HRS")])
    assert response.status_code == 201
    data = response.json()["data"]
    assert set(data) == INVOICE_FIELDS | {"lines"}
    assert data["id"].startswith("in_") and data["object"] == "invoice"
    assert data["status"] == "draft" and data["number"] is None and data["public_url_token"] is None
    assert data["public_url"] is None and data["public_pdf_url"] is None
    assert data["customer"] == cus["id"]
    assert data["total"] == 300000 and data["amount_due"] == 0
    assert data["amount_in_words"] == "Three thousand US dollars"
    [line] = data["lines"]["data"]
    assert set(line) == LINE_FIELDS
    assert line["id"].startswith("ii_") and line["object"] == "invoiceitem" and line["invoice"] == data["id"]
    assert (line["price"], line["product"], line["description"], line["quantity"], line["unit"]) == \
        (None, None, "Design", 2, "HRS")
    assert (line["unit_amount"], line["amount"], line["discount_percent"], line["tax_rate"], line["tax_amount"]) == \
        (150000, 300000, 0, 0, 0)


def test_create_defaults(tenant):
    data = create(tenant).json()["data"]
    today = date.today()  # the test runs in UTC (the service's clock) or close enough for dates
    assert data["currency"] == "USD"  # the business currency
    assert data["collection_method"] == "send_invoice"
    assert data["issue_date"] == data["created"][:10]
    assert date.fromisoformat(data["due_date"]) - date.fromisoformat(data["issue_date"]) == timedelta(days=30)
    assert data["description"] is None and data["footer"] is None
    assert data["lines"] == {"data": []}
    assert data["total"] == 0 and data["amount_in_words"] == "Zero US dollars"
    assert abs((date.fromisoformat(data["issue_date"]) - today).days) <= 1


def test_create_with_days_until_due(tenant):
    data = create(tenant, issue_date="2026-03-01", days_until_due=10).json()["data"]
    assert data["due_date"] == "2026-03-11"


def test_create_due_date_wins_over_days_until_due(tenant):
    data = create(tenant, issue_date="2026-03-01", due_date="2026-04-15", days_until_due=10).json()["data"]
    assert data["due_date"] == "2026-04-15"


@pytest.mark.parametrize("value", ["", None])
def test_create_with_empty_due_date_has_none(tenant, value):
    assert create(tenant, due_date=value).json()["data"]["due_date"] is None


def test_create_requires_an_idempotency_key(tenant):
    cus = customer(tenant)
    response = tenant.post("/invoices", json={"customer": cus["id"]})
    assert response.status_code == 428
    assert response.json()["code"] == "idempotency_key_required"


def test_create_replays_with_the_same_key(tenant):
    cus = customer(tenant)
    first = tenant.post("/invoices", json={"customer": cus["id"]}, idem="k1")
    second = tenant.post("/invoices", json={"customer": cus["id"]}, idem="k1")
    assert second.status_code == 201 and second.headers["Idempotent-Replayed"] == "true"
    assert second.json() == first.json()
    assert len(tenant.get("/invoices").json()["data"]) == 1


def test_create_without_customer_is_422(tenant):
    response = tenant.post("/invoices", json={}, idem=True)
    assert response.status_code == 422
    assert {"path": "customer", "message": "is required"} in response.json()["errors"]


def test_create_for_an_archived_customer_is_422_at_customer(tenant):
    cus = customer(tenant)
    tenant.delete(f"/customers/{cus['id']}")
    response = create(tenant, customer_id=cus["id"])
    assert response.status_code == 422
    assert response.json()["errors"][0]["path"] == "customer"


@pytest.mark.parametrize("customer_id", ["cus_nope", f"cus_{UNKNOWN}"])
def test_create_for_an_unknown_customer_is_404(tenant, customer_id):
    assert create(tenant, customer_id=customer_id).status_code == 404


def test_create_for_another_accounts_customer_is_404(tenant, other_tenant):
    assert create(tenant, customer_id=customer(other_tenant)["id"]).status_code == 404


def test_customer_may_be_given_by_uuid(tenant):
    cus = customer(tenant)
    data = create(tenant, customer_id=str(uuid.UUID(cus["id"][4:]))).json()["data"]
    assert data["customer"] == cus["id"]


@pytest.mark.parametrize("field, value", [
    ("currency", "XYZ"), ("currency", None), ("collection_method", "cash"), ("issue_date", "2026-02-30"),
    ("issue_date", "01/02/2026"), ("due_date", "tomorrow"), ("days_until_due", 366), ("days_until_due", -1),
    ("days_until_due", "5"), ("description", "x" * 5001), ("footer", "x" * 5001), ("color", "red"),
])
def test_create_field_errors_are_422_at_the_field(tenant, field, value):
    response = create(tenant, **{field: value})
    assert response.status_code == 422, response.text
    assert [e["path"] for e in response.json()["errors"]] == [field]


def test_currency_is_uppercased(tenant):
    assert create(tenant, currency="eur").json()["data"]["currency"] == "EUR"


def test_due_date_before_issue_date_is_422(tenant):
    response = create(tenant, issue_date="2026-03-10", due_date="2026-03-09")
    assert response.status_code == 422
    assert response.json()["errors"][0]["path"] == "due_date"


@pytest.mark.parametrize("item, path", [
    ({"unit_amount": 100}, "items.0.description"),
    ({"description": "x"}, "items.0.unit_amount"),
    ({"description": "x", "unit_amount": 12.5}, "items.0.unit_amount"),
    ({"description": "x", "unit_amount": "100"}, "items.0.unit_amount"),
    ({"description": "x", "unit_amount": -1}, "items.0.unit_amount"),
    ({"description": "x", "unit_amount": 9007199254740992}, "items.0.unit_amount"),
    ({"description": "x", "unit_amount": 1, "quantity": 0}, "items.0.quantity"),
    ({"description": "x", "unit_amount": 1, "quantity": -2}, "items.0.quantity"),
    ({"description": "x", "unit_amount": 1, "quantity": 1.0000001}, "items.0.quantity"),
    ({"description": "x", "unit_amount": 1, "unit": "XXX"}, "items.0.unit"),
    ({"description": "x", "unit_amount": 1, "discount_percent": 100.5}, "items.0.discount_percent"),
    ({"description": "x", "unit_amount": 1, "discount_percent": -1}, "items.0.discount_percent"),
    ({"description": "x", "unit_amount": 1, "tax_rate": 101}, "items.0.tax_rate"),
    ({"description": "x" * 5001, "unit_amount": 1}, "items.0.description"),
    ({"description": "x", "unit_amount": 1, "colour": "red"}, "items.0.colour"),
    ({"price": "price_nope"}, None),
])
def test_item_errors_name_the_item_path(tenant, item, path):
    response = create(tenant, items=[adhoc(), item])
    if path is None:
        assert response.status_code == 404
        return
    assert response.status_code == 422, response.text
    assert path.replace("items.0", "items.1") in [e["path"] for e in response.json()["errors"]]


def test_ad_hoc_line_without_description_and_amount_reports_both(tenant):
    response = create(tenant, items=[{"quantity": 1}])
    assert response.status_code == 422
    assert {e["path"] for e in response.json()["errors"]} == {"items.0.description", "items.0.unit_amount"}


def test_every_unit_code_is_accepted(tenant):
    codes = ["NOS", "PCS", "KGS", "GMS", "LTR", "MTR", "SQF", "SQM", "HRS", "DAY", "MON", "BOX", "SET", "OTH"]
    data = draft(tenant, items=[adhoc(unit=code) for code in codes])
    assert [line["unit"] for line in data["lines"]["data"]] == codes


def test_unit_defaults_to_nos_and_quantity_to_one(tenant):
    [line] = draft(tenant, items=[adhoc()])["lines"]["data"]
    assert (line["unit"], line["quantity"]) == ("NOS", 1)


def test_250_lines_are_accepted_and_251_refused(tenant):
    assert len(draft(tenant, items=[adhoc()] * 250)["lines"]["data"]) == 250
    response = create(tenant, items=[adhoc()] * 251)
    assert response.status_code == 422
    assert response.json()["errors"][0]["path"] == "items"


def test_line_too_large_for_safe_integers_is_422(tenant):
    response = create(tenant, items=[adhoc(unit_amount=9007199254740991, quantity=2)])
    assert response.status_code == 422
    assert response.json()["errors"][0]["path"] == "items.0.quantity"


def test_priced_line_inherits_amount_tax_and_product_name(tenant):
    p = price(tenant, 2500, tax_rate=20, product_name="Gadget")
    [line] = draft(tenant, items=[{"price": p["id"], "quantity": 3}])["lines"]["data"]
    assert (line["price"], line["product"]) == (p["id"], p["product"])
    assert (line["description"], line["unit_amount"], line["tax_rate"]) == ("Gadget", 2500, 20)
    assert (line["amount"], line["tax_amount"]) == (7500, 1500)


def test_priced_line_overrides(tenant):
    p = price(tenant, 2500, tax_rate=20)
    item = {"price": p["id"], "description": "Special", "unit_amount": 2000, "tax_rate": 0}
    [line] = draft(tenant, items=[item])["lines"]["data"]
    assert (line["description"], line["unit_amount"], line["tax_rate"]) == ("Special", 2000, 0)


def test_price_in_another_currency_is_422_at_the_item_price(tenant):
    p = price(tenant, 1000, "EUR")
    response = create(tenant, items=[adhoc(), {"price": p["id"]}])
    assert response.status_code == 422
    assert response.json()["errors"][0]["path"] == "items.1.price"


def test_archived_price_cannot_start_a_line(tenant):
    p = price(tenant)
    tenant.delete(f"/prices/{p['id']}")
    response = create(tenant, items=[{"price": p["id"]}])
    assert response.status_code == 422
    assert response.json()["errors"][0]["path"] == "items.0.price"


def test_price_of_an_archived_product_cannot_start_a_line(tenant):
    p = price(tenant)
    tenant.delete(f"/products/{p['product']}")
    response = create(tenant, items=[{"price": p["id"]}])
    assert response.status_code == 422
    assert response.json()["errors"][0]["path"] == "items.0.price"


def test_archived_product_keeps_billing_its_existing_lines(tenant):
    p = price(tenant, 1000)
    invoice = draft(tenant, items=[{"price": p["id"]}])
    tenant.delete(f"/products/{p['product']}")
    response = tenant.patch(f"/invoices/{invoice['id']}", json={"footer": "x"})
    assert response.status_code == 200 and response.json()["data"]["total"] == 1000


def test_another_accounts_price_is_404(tenant, other_tenant):
    p = price(other_tenant)
    assert create(tenant, items=[{"price": p["id"]}]).status_code == 404


# --- retrieve ------------------------------------------------------------------------------


def test_retrieve_by_prefixed_id_and_uuid_includes_lines(tenant):
    invoice = draft(tenant)
    raw = str(uuid.UUID(invoice["id"][3:]))
    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"] == invoice
    assert tenant.get(f"/invoices/{raw}").json()["data"] == invoice


@pytest.mark.parametrize("bad", ["in_nope", "nope", f"in_{UNKNOWN}", f"cus_{UNKNOWN}"])
def test_unknown_or_malformed_invoice_is_404(tenant, bad):
    response = tenant.get(f"/invoices/{bad}")
    assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_draft_shows_live_customer_details_and_issuer(tenant):
    cus = customer(tenant, name="Old Name", tax_id="T1", address={"city": "Paris"})
    invoice = draft(tenant, customer_id=cus["id"])
    assert invoice["customer_details"] == {
        "name": "Old Name", "email": "jane@example.com", "tax_id": "T1",
        "address": {"line1": None, "line2": None, "city": "Paris", "state": None, "postal_code": None,
                    "country": None}, "peppol_id": None}
    assert invoice["issuer"] == profile_of(tenant)
    tenant.patch(f"/customers/{cus['id']}", json={"name": "New Name"})
    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["customer_details"]["name"] == "New Name"


# --- update --------------------------------------------------------------------------------


def test_patch_changes_only_the_fields_sent_and_returns_lines(tenant):
    invoice = draft(tenant, description="Notes", footer="Terms")
    response = tenant.patch(f"/invoices/{invoice['id']}", json={"footer": "Net 15"})
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["footer"] == "Net 15" and data["description"] == "Notes"
    assert data["lines"] == invoice["lines"]


@pytest.mark.parametrize("field", ["description", "footer"])
def test_patch_null_clears_text(tenant, field):
    invoice = draft(tenant, **{field: "text"})
    assert tenant.patch(f"/invoices/{invoice['id']}", json={field: None}).json()["data"][field] is None


def test_patch_empty_due_date_clears_it(tenant):
    invoice = draft(tenant)
    assert tenant.patch(f"/invoices/{invoice['id']}", json={"due_date": ""}).json()["data"]["due_date"] is None


def test_patch_days_until_due_counts_from_issue_date(tenant):
    invoice = draft(tenant, issue_date="2026-05-01")
    data = tenant.patch(f"/invoices/{invoice['id']}", json={"days_until_due": 0}).json()["data"]
    assert data["due_date"] == "2026-05-01"
    data = tenant.patch(f"/invoices/{invoice['id']}", json={"issue_date": "2026-06-01", "days_until_due": 365}).json()
    assert data["data"]["due_date"] == "2027-06-01"


def test_patch_days_until_due_is_ignored_when_due_date_is_sent(tenant):
    invoice = draft(tenant, issue_date="2026-05-01")
    data = tenant.patch(f"/invoices/{invoice['id']}", json={"due_date": "2026-05-20", "days_until_due": 3}).json()
    assert data["data"]["due_date"] == "2026-05-20"


@pytest.mark.parametrize("body, path", [
    ({"days_until_due": 366}, "days_until_due"), ({"customer": None}, "customer"), ({"items": None}, "items"),
    ({"items": []}, "items"), ({"currency": "ABC"}, "currency"), ({"issue_date": None}, "issue_date"),
    ({"collection_method": "barter"}, "collection_method"), ({"number": "INV-9"}, "number"),
])
def test_patch_field_errors(tenant, body, path):
    invoice = draft(tenant)
    response = tenant.patch(f"/invoices/{invoice['id']}", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["path"] == path


def test_patch_collection_method_and_customer(tenant):
    invoice = draft(tenant)
    other = customer(tenant, name="Other Co")
    data = tenant.patch(f"/invoices/{invoice['id']}", json={"collection_method": "charge_automatically",
                                                            "customer": other["id"]}).json()["data"]
    assert data["collection_method"] == "charge_automatically" and data["customer"] == other["id"]
    assert data["customer_details"]["name"] == "Other Co"


def test_patch_to_an_archived_customer_is_422(tenant):
    invoice = draft(tenant)
    other = customer(tenant)
    tenant.delete(f"/customers/{other['id']}")
    response = tenant.patch(f"/invoices/{invoice['id']}", json={"customer": other["id"]})
    assert response.status_code == 422 and response.json()["errors"][0]["path"] == "customer"


def test_patch_items_replaces_every_line(tenant):
    invoice = draft(tenant, items=[adhoc("A"), adhoc("B")])
    data = tenant.patch(f"/invoices/{invoice['id']}", json={"items": [adhoc("C", 500)]}).json()["data"]
    assert [line["description"] for line in data["lines"]["data"]] == ["C"]
    assert data["total"] == 500


def test_patch_without_items_keeps_the_lines(tenant):
    invoice = draft(tenant, items=[adhoc("A"), adhoc("B")])
    data = tenant.patch(f"/invoices/{invoice['id']}", json={"description": "x"}).json()["data"]
    assert [line["id"] for line in data["lines"]["data"]] == [line["id"] for line in invoice["lines"]["data"]]


def test_patch_item_errors_name_the_item_path(tenant):
    invoice = draft(tenant)
    response = tenant.patch(f"/invoices/{invoice['id']}", json={"items": [adhoc(), {"description": "x"}]})
    assert response.status_code == 422
    assert response.json()["errors"][0]["path"] == "items.1.unit_amount"
    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["lines"] == invoice["lines"]


def test_currency_change_clears_catalog_lines_of_the_old_currency(tenant):
    p = price(tenant, 1000, "USD")
    invoice = draft(tenant, items=[{"price": p["id"]}, adhoc("Kept", 700)])
    data = tenant.patch(f"/invoices/{invoice['id']}", json={"currency": "EUR"}).json()["data"]
    assert data["currency"] == "EUR"
    assert [line["description"] for line in data["lines"]["data"]] == ["Kept"]
    assert data["total"] == 700 and data["amount_in_words"] == "Seven euros"


def test_currency_change_with_items_uses_the_new_items(tenant):
    usd, eur = price(tenant, 1000, "USD"), price(tenant, 900, "EUR")
    invoice = draft(tenant, items=[{"price": usd["id"]}])
    data = tenant.patch(f"/invoices/{invoice['id']}", json={"currency": "EUR", "items": [{"price": eur["id"]}]})
    assert data.status_code == 200, data.text
    assert [line["price"] for line in data.json()["data"]["lines"]["data"]] == [eur["id"]]


def test_same_currency_patch_keeps_catalog_lines(tenant):
    p = price(tenant)
    invoice = draft(tenant, items=[{"price": p["id"]}])
    data = tenant.patch(f"/invoices/{invoice['id']}", json={"currency": "usd"}).json()["data"]
    assert len(data["lines"]["data"]) == 1


def test_saving_a_draft_rereads_changed_prices(tenant):
    p = price(tenant, 1000, tax_rate=10)
    invoice = draft(tenant, items=[{"price": p["id"], "quantity": 2}])
    tenant.patch(f"/prices/{p['id']}", json={"unit_amount": 1500, "tax_rate": 0})
    unchanged = tenant.get(f"/invoices/{invoice['id']}").json()["data"]
    assert unchanged["total"] == 2200  # reading does not re-price
    data = tenant.patch(f"/invoices/{invoice['id']}", json={}).json()["data"]
    assert data["lines"]["data"][0]["unit_amount"] == 1500 and data["total"] == 3000


def test_saving_a_draft_rereads_the_product_name(tenant):
    p = price(tenant, product_name="Old")
    invoice = draft(tenant, items=[{"price": p["id"]}])
    tenant.patch(f"/products/{p['product']}", json={"name": "New"})
    data = tenant.patch(f"/invoices/{invoice['id']}", json={}).json()["data"]
    assert data["lines"]["data"][0]["description"] == "New"


def test_archived_price_keeps_billing_its_existing_lines(tenant):
    p = price(tenant, 1000)
    invoice = draft(tenant, items=[{"price": p["id"]}])
    tenant.delete(f"/prices/{p['id']}")
    tenant.patch(f"/prices/{p['id']}", json={"unit_amount": 1200})
    data = tenant.patch(f"/invoices/{invoice['id']}", json={"footer": "x"}).json()["data"]
    assert data["total"] == 1200


def test_price_moved_to_another_currency_blocks_saving_until_removed(tenant):
    p = price(tenant, 1000)
    invoice = draft(tenant, items=[adhoc(), {"price": p["id"]}])
    tenant.patch(f"/prices/{p['id']}", json={"currency": "EUR"})
    response = tenant.patch(f"/invoices/{invoice['id']}", json={"footer": "x"})
    assert response.status_code == 422 and response.json()["errors"][0]["path"] == "lines.1.price"
    line_id = invoice["lines"]["data"][1]["id"]
    assert tenant.delete(f"/invoice-items/{line_id}").status_code == 200


def test_patch_records_invoice_updated(tenant):
    invoice = draft(tenant)
    tenant.patch(f"/invoices/{invoice['id']}", json={"footer": "x"})
    types = [e["type"] for e in tenant.get(f"/invoices/{invoice['id']}/events").json()["data"]]
    assert types == ["invoice.updated", "invoice.created"]


def test_patch_updates_the_updated_timestamp(tenant):
    invoice = draft(tenant)
    data = tenant.patch(f"/invoices/{invoice['id']}", json={"footer": "x"}).json()["data"]
    assert data["updated"] >= invoice["updated"] and data["created"] == invoice["created"]


# --- delete --------------------------------------------------------------------------------


def test_delete_removes_a_draft(tenant):
    invoice = draft(tenant)
    response = tenant.delete(f"/invoices/{invoice['id']}")
    assert response.status_code == 200
    assert response.json() == {"data": {"id": invoice["id"], "object": "invoice", "deleted": True}}
    assert tenant.get(f"/invoices/{invoice['id']}").status_code == 404
    assert tenant.get(f"/invoice-items/{invoice['lines']['data'][0]['id']}").status_code == 404


def test_delete_twice_is_404(tenant):
    invoice = draft(tenant)
    tenant.delete(f"/invoices/{invoice['id']}")
    assert tenant.delete(f"/invoices/{invoice['id']}").status_code == 404


def test_delete_with_an_idempotency_key_replays(tenant):
    invoice = draft(tenant)
    first = tenant.delete(f"/invoices/{invoice['id']}", idem="del-1")
    second = tenant.delete(f"/invoices/{invoice['id']}", idem="del-1")
    assert second.status_code == 200 and second.json() == first.json()
    assert second.headers["Idempotent-Replayed"] == "true"


# --- other accounts ------------------------------------------------------------------------


def test_other_accounts_invoice_is_404_everywhere(tenant, other_tenant):
    invoice = open_invoice(other_tenant)
    other_draft = draft(other_tenant)
    line_id = other_draft["lines"]["data"][0]["id"]
    calls = [
        ("GET", f"/invoices/{invoice['id']}", None), ("PATCH", f"/invoices/{other_draft['id']}", {}),
        ("DELETE", f"/invoices/{other_draft['id']}", None), ("POST", f"/invoices/{other_draft['id']}/finalize", None),
        ("POST", f"/invoices/{invoice['id']}/pay", {}), ("POST", f"/invoices/{invoice['id']}/void", {}),
        ("GET", f"/invoices/{invoice['id']}/events", None),
        ("GET", f"/invoice-items?invoice={other_draft['id']}", None),
        ("GET", f"/invoice-items/{line_id}", None), ("DELETE", f"/invoice-items/{line_id}", None),
        ("POST", "/invoice-items", adhoc(invoice=other_draft["id"])),
    ]
    for method, path, body in calls:
        response = tenant.request(method, path, json=body, idem=True)
        assert response.status_code == 404, (method, path, response.text)
    assert tenant.get("/invoices").json()["data"] == []
