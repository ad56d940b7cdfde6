"""GET /invoices/{id}/e-invoice as callers meet it: formats and their media types, drafts, unknown
formats, other accounts, and every refusal naming the field to fill in and the business term."""

from __future__ import annotations

import pytest

from tests.api.invoicing import adhoc, customer, draft
from tests.conftest import make_tenant
from tests.einvoices.test_spread import DE_SELLER, FR_BUYER, e_invoice, issued


@pytest.fixture
def seller(client):
    return make_tenant(client, business=DE_SELLER)


def errors_of(response) -> dict[str, str]:
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "validation"
    return {error["path"]: error["message"] for error in response.json()["errors"]}


@pytest.mark.parametrize("format, media_type, ending", [("peppol", "application/xml", "-peppol.xml"),
                                                        ("cii", "application/xml", "-cii.xml"),
                                                        ("facturx", "application/pdf", "-facturx.pdf")])
def test_each_format_has_its_media_type_and_file_name(seller, format, media_type, ending):
    invoice = issued(seller, [adhoc("Design", 1000, tax_rate=19)])
    response = e_invoice(seller, invoice["id"], format)
    assert response.status_code == 200 and response.headers["content-type"].startswith(media_type)
    assert response.headers["content-disposition"] == f'attachment; filename="{invoice["number"]}{ending}"'
    assert response.headers["x-request-id"].startswith("req_")


def test_a_draft_has_none(seller):
    response = e_invoice(seller, draft(seller)["id"], "peppol")
    assert response.status_code == 409 and response.json()["code"] == "invalid_state"


@pytest.mark.parametrize("query", [{"format": "xrechnung"}, {"format": ""}, {}])
def test_an_unknown_or_missing_format_is_a_validation_error(seller, query):
    invoice = issued(seller, [adhoc("Design", 1000, tax_rate=19)])
    response = seller.get(f"/invoices/{invoice['id']}/e-invoice", params=query)
    assert "format" in errors_of(response)


def test_another_accounts_invoice_is_not_found(seller, other_tenant):
    invoice = issued(seller, [adhoc("Design", 1000, tax_rate=19)])
    response = e_invoice(other_tenant, invoice["id"], "cii")
    assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_it_needs_invoices_read(client, seller):
    invoice = issued(seller, [adhoc("Design", 1000, tax_rate=19)])
    narrow = make_tenant(client, business=DE_SELLER, scopes=["clients:read"])
    other = narrow.get(f"/invoices/{invoice['id']}/e-invoice", params={"format": "cii"})
    assert other.status_code in (403, 404)
    narrow_own = make_tenant(client, business=DE_SELLER, scopes=["invoices:read"])
    assert e_invoice(narrow_own, invoice["id"], "cii").status_code == 404  # not theirs, and allowed to ask


def test_a_currency_with_three_decimals_cannot_be_written(client):
    tenant = make_tenant(client, business={**DE_SELLER, "currency": "KWD"})
    invoice = issued(tenant, [adhoc("Design", 1000, tax_rate=19)], currency="KWD")
    assert "BT-5" in errors_of(e_invoice(tenant, invoice["id"], "cii"))["currency"]


def test_a_customer_without_a_country(seller):
    invoice = issued(seller, [adhoc("Design", 1000, tax_rate=19)], buyer={"name": "Nowhere Ltd", "tax_id": "FR40303265045"})
    assert "BT-55" in errors_of(e_invoice(seller, invoice["id"], "cii"))["customer.address.country"]


def test_standard_rate_without_a_seller_vat_number(client):
    tenant = make_tenant(client, business={**DE_SELLER, "tax_id": None, "peppol_id": "0088:5790000435975"})
    invoice = issued(tenant, [adhoc("Design", 1000, tax_rate=19)])
    assert "BT-31" in errors_of(e_invoice(tenant, invoice["id"], "cii"))["business.tax_id"]


def test_a_seller_named_by_nothing(client):
    tenant = make_tenant(client, business={**DE_SELLER, "tax_id": None})
    invoice = issued(tenant, [adhoc("Design", 1000)])
    assert "BT-31" in errors_of(e_invoice(tenant, invoice["id"], "cii"))["business.tax_id"]


def test_reverse_charge_without_the_customers_vat_number(seller):
    invoice = issued(seller, [adhoc("Design", 1000, tax_rate=0, tax_category="AE")], buyer={**FR_BUYER, "tax_id": None})
    assert "BT-48" in errors_of(e_invoice(seller, invoice["id"], "cii"))["customer.tax_id"]


def test_peppol_without_the_buyers_electronic_address(seller):
    buyer = {"name": "Globex Corp", "address": {"city": "Springfield", "country": "US"}}
    invoice = issued(seller, [adhoc("Machine", 1000, tax_rate=0, tax_category="G")], buyer=buyer)
    assert e_invoice(seller, invoice["id"], "cii").status_code == 200  # only Peppol needs it
    assert "BT-49" in errors_of(e_invoice(seller, invoice["id"], "peppol"))["customer.peppol_id"]


def test_peppol_without_the_sellers_electronic_address(client):
    tenant = make_tenant(client, business={**DE_SELLER, "country_code": "US", "tax_id": "12-3456789",
                                           "address": {"city": "Austin", "country_code": "US"}})
    invoice = issued(tenant, [adhoc("Design", 1000, tax_rate=8)])
    assert e_invoice(tenant, invoice["id"], "cii").status_code == 200  # named by its tax number (BT-32, BT-30)
    assert "BT-34" in errors_of(e_invoice(tenant, invoice["id"], "peppol"))["business.peppol_id"]


# --- the line's VAT category, checked when it is written ----------------------------------------------

@pytest.mark.parametrize("line, path, words", [
    ({"tax_rate": 0, "tax_category": "S"}, "items.0.tax_category", "needs a tax_rate above 0"),
    ({"tax_rate": 19, "tax_category": "E"}, "items.0.tax_category", "must be 0"),
    ({"tax_rate": 19, "tax_exemption_reason": "Because"}, "items.0.tax_exemption_reason", "E, AE, K, G or O"),
    ({"tax_rate": 0, "tax_category": "Q"}, "items.0.tax_category", ""),
])
def test_a_category_that_contradicts_the_line_is_refused(seller, line, path, words):
    response = seller.post("/invoices", json={"customer": customer(seller, **FR_BUYER)["id"],
                                              "items": [adhoc("Design", 1000, **line)]}, idem=True)
    assert words in errors_of(response)[path]


def test_one_exemption_reason_per_category(seller):
    items = [adhoc("A", 1000, tax_rate=0, tax_category="E", tax_exemption_reason="Art. 132(1)(g)"),
             adhoc("B", 1000, tax_rate=0, tax_category="E", tax_exemption_reason="Art. 135(1)(b)")]
    response = seller.post("/invoices", json={"customer": customer(seller, **FR_BUYER)["id"], "items": items}, idem=True)
    assert "one reason per tax_category" in errors_of(response)["items.1.tax_exemption_reason"]


def test_not_subject_to_vat_stands_alone(seller):
    items = [adhoc("A", 1000, tax_rate=0, tax_category="O"), adhoc("B", 1000, tax_rate=19)]
    response = seller.post("/invoices", json={"customer": customer(seller, **FR_BUYER)["id"], "items": items}, idem=True)
    assert "cannot share" in errors_of(response)["items.0.tax_category"]


def test_the_category_and_reason_are_shown_on_the_line(seller):
    invoice = draft(seller, items=[adhoc("A", 1000, tax_rate=0, tax_category="AE")])
    assert invoice["lines"]["data"][0]["tax_category"] == "AE"
    assert invoice["lines"]["data"][0]["tax_exemption_reason"] is None


@pytest.mark.parametrize("value, accepted", [("0088:5790000435975", True), (" 9930:DE123456789 ", True),
                                             ("1234:ABC", False), ("0088", False), ("0088:", False), ("", True)])
def test_a_customers_peppol_id_is_checked(seller, value, accepted):
    response = seller.post("/customers", json={"name": "Globex", "peppol_id": value})
    assert response.status_code == (201 if accepted else 422), response.text
    if not accepted:
        assert "peppol_id" in errors_of(response)
    else:
        assert response.json()["data"]["peppol_id"] == (value.strip() or None)
