"""The dashboard's customers, products, prices and business profile."""

from __future__ import annotations

import re

import pytest

from tests.api.invoicing import customer, price
from tests.conftest import make_tenant
from tests.web.conftest import OWNER_PASSWORD, Browser
from tests.web.test_dashboard_invoices import KEY_FIELD, submit_form


def created_id(response, prefix: str) -> str:
    assert response.status_code == 303, response.text
    return re.search(rf"/{prefix}/([^/?]+)", response.headers["location"]).group(1)


def test_a_customer_is_added_with_an_address(person, tenant):
    response = submit_form(person, "/customers/new", "/customers/new", {
        "name": "Globex GmbH", "email": "ap@globex.test", "address.city": "Berlin", "address.country": "DE"})
    customer_id = created_id(response, "customers")
    stored = tenant.get(f"/customers/{customer_id}").json()["data"]
    assert (stored["name"], stored["email"], stored["address"]["city"]) == ("Globex GmbH", "ap@globex.test", "Berlin")


def test_a_customer_without_a_name_is_refused_next_to_the_field(person):
    response = submit_form(person, "/customers/new", "/customers/new", {"name": "", "email": "not an address"})
    assert response.status_code == 422
    assert 'id="f-name-error"' in response.text and 'id="f-email-error"' in response.text


def test_editing_a_customer_clears_blank_fields(person, tenant):
    buyer = customer(tenant, phone="+1 555 0100", address={"city": "Paris"})
    response = person.submit(f"/customers/{buyer['id']}", {"name": "Jane Roe", "email": "jane@example.com",
                                                          "phone": "", "address.city": "Lyon"})
    assert response.status_code == 303
    stored = tenant.get(f"/customers/{buyer['id']}").json()["data"]
    assert (stored["name"], stored["phone"], stored["address"]["city"]) == ("Jane Roe", None, "Lyon")


def test_archiving_and_restoring_a_customer(person, tenant):
    buyer = customer(tenant, name="Old Client")
    person.submit(f"/customers/{buyer['id']}/archive", page=f"/customers/{buyer['id']}")
    assert tenant.get(f"/customers/{buyer['id']}").json()["data"]["deleted"] is True
    assert "Old Client" not in person.get("/customers").text
    assert "Old Client" in person.get("/customers?archived=1").text
    person.submit(f"/customers/{buyer['id']}/restore", page=f"/customers/{buyer['id']}")
    assert tenant.get(f"/customers/{buyer['id']}").json()["data"]["deleted"] is False


def test_customers_are_searched_by_name(person, tenant):
    customer(tenant, name="Initech")
    customer(tenant, name="Hooli")
    page = person.get("/customers?query=init").text
    assert "Initech" in page and "Hooli" not in page


def test_a_product_with_a_recurring_price(person, tenant):
    product_id = created_id(submit_form(person, "/products/new", "/products/new",
                                        {"name": "Support plan", "description": "Priority e-mail"}), "products")
    response = submit_form(person, f"/products/{product_id}", f"/products/{product_id}/prices", {
        "unit_amount": "99.50", "currency": "eur", "type": "recurring", "interval": "month", "interval_count": "3",
        "tax_rate": "19", "nickname": "Quarterly"})
    assert response.status_code == 303, response.text
    (stored,) = tenant.get(f"/prices?product={product_id}").json()["data"]
    assert (stored["unit_amount"], stored["currency"], stored["recurring"], stored["tax_rate"]) == (
        9950, "EUR", {"interval": "month", "interval_count": 3}, 19)
    assert "99.50 EUR" in person.get(f"/products/{product_id}").text
    assert "every 3 months" in person.get(f"/products/{product_id}").text


@pytest.mark.parametrize(("fields", "message"), [
    ({"unit_amount": "9.999", "currency": "USD"}, "at most 2 decimals"),
    ({"unit_amount": "10", "currency": "ZZZ"}, "ISO 4217"),
    ({"unit_amount": "10", "currency": "USD", "tax_rate": "101"}, "Tax rate %"),
])
def test_a_bad_price_is_refused_with_the_field(person, tenant, fields, message):
    product_id = tenant.post("/products", json={"name": "Thing"}).json()["data"]["id"]
    response = submit_form(person, f"/products/{product_id}", f"/products/{product_id}/prices",
                           {"type": "one_time", **fields})
    assert response.status_code == 422
    assert message in response.text


def test_archiving_a_price_and_a_product(person, tenant):
    widget = price(tenant)
    person.submit(f"/prices/{widget['id']}/archive", page=f"/products/{widget['product']}")
    assert tenant.get(f"/prices/{widget['id']}").json()["data"]["active"] is False
    person.submit(f"/prices/{widget['id']}/restore", page=f"/products/{widget['product']}")
    assert tenant.get(f"/prices/{widget['id']}").json()["data"]["active"] is True
    person.submit(f"/products/{widget['product']}/archive", page=f"/products/{widget['product']}")
    assert "Widget" not in person.get("/products").text
    assert "Widget" in person.get("/products?archived=1").text


def test_renaming_a_product(person, tenant):
    product_id = tenant.post("/products", json={"name": "Thing"}).json()["data"]["id"]
    person.submit(f"/products/{product_id}", {"name": "Better thing", "description": ""})
    assert tenant.get(f"/products/{product_id}").json()["data"]["name"] == "Better thing"


def test_the_business_profile_is_edited_in_the_dashboard(person, tenant):
    page = person.get("/settings/business").text
    assert 'value="Acme Trading Ltd"' in page
    fields = dict(re.findall(r'name="([a-z_.]+)" type="[a-z]+" value="([^"]*)"', page))
    response = person.submit("/settings/business", fields | {"trade_name": "Acme Rockets", "invoice_prefix": "ACR"})
    assert response.status_code == 303
    business = tenant.get("/business").json()["data"]
    assert (business["trade_name"], business["invoice_prefix"], business["address"]["city"]) == (
        "Acme Rockets", "ACR", "London")


def test_a_bad_business_profile_is_refused(person):
    response = person.submit("/settings/business", {"legal_name": "", "country_code": "GB", "currency": "USD"})
    assert response.status_code == 422


def test_without_a_profile_the_business_page_leads_to_onboarding(client):
    tenant = make_tenant(client, business=None)
    browser = Browser(client)
    browser.sign_in(tenant.user_email, OWNER_PASSWORD)
    assert browser.get("/settings/business").headers["location"] == "/onboarding"


def test_forms_carry_an_idempotency_key(person):
    assert KEY_FIELD.search(person.get("/customers/new").text)
    assert KEY_FIELD.search(person.get("/products/new").text)


def test_a_page_acts_when_every_request_thread_is_taken_by_pages(test_settings, tenant):
    """A page runs in a thread of its own set: acting, it waits for the pipeline's threads, which
    pages must not hold (with one thread of each, a page waiting for its own set's only thread would
    wait for ever)."""
    import threading

    from starlette.testclient import TestClient

    from config.settings import set_settings
    from service.app import create_app
    from tests.conftest import TEST_ORIGIN
    set_settings(test_settings.model_copy(update={"request_threads": 1}))
    statuses = []
    with TestClient(create_app(), base_url=TEST_ORIGIN) as client:
        browser = Browser(client)
        assert browser.sign_in(tenant.user_email, OWNER_PASSWORD).status_code == 303
        acting = threading.Thread(target=lambda: statuses.append(
            submit_form(browser, "/customers/new", "/customers/new", {"name": "Globex GmbH"}).status_code), daemon=True)
        acting.start()
        acting.join(30)
        assert statuses == [303]
