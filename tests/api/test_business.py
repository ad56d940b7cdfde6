"""GET /business: the read-only business profile."""

from tests.conftest import BUSINESS

FIELDS = {"id", "legal_name", "trade_name", "country_code", "currency", "tax_id", "address", "email",
          "phone", "bank", "invoice_prefix", "created_at",
          "peppol_id",  # beyond the specification: the e-invoicing address (issue 25)
          "credit_note_prefix"}  # and the credit notes' own series (issue 35)
ADDRESS_FIELDS = {"line1", "line2", "city", "region", "postal_code", "country_code", "country"}
BANK_FIELDS = {"bank_name", "account_name", "account_number", "routing_number"}


def test_business_has_exactly_the_spec_fields(tenant):
    response = tenant.get("/business")
    assert response.status_code == 200
    data = response.json()["data"]
    # The specification's fields, and which business the credential acts for (issue 39).
    assert set(data) == FIELDS | {"object", "account", "role"}
    assert set(data["address"]) == ADDRESS_FIELDS
    assert set(data["bank"]) == BANK_FIELDS


def test_business_values(tenant):
    data = tenant.get("/business").json()["data"]
    assert data["legal_name"] == BUSINESS["legal_name"]
    assert data["currency"] == "USD"
    assert data["country_code"] == "GB"
    assert data["invoice_prefix"] == "INV"
    assert data["address"]["city"] == "London"
    assert data["address"]["line2"] is None
    assert data["bank"]["account_number"] == "12345678"
    assert data["created_at"].endswith("Z") and len(data["created_at"]) == 24
    assert len(data["id"]) == 36


def test_business_before_onboarding_is_404(tenant_factory):
    tenant = tenant_factory(business=None)
    response = tenant.get("/business")
    assert response.status_code == 404
    body = response.json()
    assert body["code"] == "not_found"
    assert body["type"] == "http://testserver/problems/not-found"
    assert "onboarding" in body["detail"]


def test_business_is_read_only(tenant):
    for method in ("POST", "PATCH", "PUT", "DELETE"):
        response = tenant.request(method, "/business", json={"legal_name": "X"})
        assert response.status_code in (404, 405), method
        assert response.headers["content-type"] == "application/problem+json"
    assert tenant.get("/business").json()["data"]["legal_name"] == BUSINESS["legal_name"]


def test_business_needs_business_read(tenant_factory):
    tenant = tenant_factory(scopes=["clients:read"])
    response = tenant.get("/business")
    assert response.status_code == 403
    assert "business:read" in response.json()["detail"]


def test_each_account_sees_its_own_business(tenant, tenant_factory):
    other = tenant_factory(business={**BUSINESS, "legal_name": "Other Co"})
    assert other.get("/business").json()["data"]["legal_name"] == "Other Co"
    assert tenant.get("/business").json()["data"]["legal_name"] == BUSINESS["legal_name"]
