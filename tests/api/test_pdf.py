"""GET /invoices/{id}/pdf."""

from __future__ import annotations

import io

from pypdf import PdfReader

from tests.api.invoicing import adhoc, draft, open_invoice


def text_of(response) -> str:
    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(response.content)).pages)


def test_pdf_of_an_open_invoice(tenant):
    invoice = open_invoice(tenant, items=[adhoc("Design work", 250000, quantity=2, tax_rate=10)])
    response = tenant.get(f"/invoices/{invoice['id']}/pdf")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/pdf"
    assert response.headers["content-disposition"] == 'attachment; filename="INV-0001.pdf"'
    assert response.headers["RateLimit-Limit"] == "120"
    assert response.headers["X-Request-Id"].startswith("req_")
    text = text_of(response)
    for expected in ("INV-0001", "Acme", "Acme Trading Ltd", "Jane Doe", "Design work",
                     "Subtotal 5,000.00 USD", "Tax 500.00 USD", "Total 5,500.00 USD", "Five thousand five hundred"):
        assert expected in text, expected
    assert f"/i/{invoice['public_url_token']}" in text
    assert "DRAFT" not in text


def test_pdf_of_a_draft_has_the_draft_mark(tenant):
    invoice = draft(tenant)
    response = tenant.get(f"/invoices/{invoice['id']}/pdf")
    assert response.status_code == 200
    assert response.headers["content-disposition"] == f'attachment; filename="draft-{invoice["id"]}.pdf"'
    assert "DRAFT" in text_of(response)


def test_finalized_pdf_keeps_the_customer_it_was_issued_to(tenant):
    invoice = open_invoice(tenant)
    tenant.patch(f"/customers/{invoice['customer']}", json={"name": "Renamed Later"})
    text = text_of(tenant.get(f"/invoices/{invoice['id']}/pdf"))
    assert "Jane Doe" in text and "Renamed Later" not in text


def test_other_accounts_and_malformed_ids_are_404(tenant, other_tenant):
    invoice = draft(other_tenant)
    assert tenant.get(f"/invoices/{invoice['id']}/pdf").status_code == 404
    response = tenant.get("/invoices/in_nope/pdf")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_needs_invoices_read(tenant):
    invoice = draft(tenant)
    key = tenant.as_key(tenant.key_with(["clients:read"]))
    response = key.get(f"/invoices/{invoice['id']}/pdf")
    assert response.status_code == 403
    assert "invoices:read" in response.json()["detail"]


def test_pdf_is_in_the_openapi_document(client):
    document = client.get("/api/v1/openapi.json").json()
    pdf = document["paths"]["/invoices/{id}/pdf"]["get"]
    assert "application/pdf" in pdf["responses"]["200"]["content"]
    send = document["paths"]["/invoices/{id}/send"]["post"]
    assert send["x-required-scope"] == "invoices:send"
    assert "502" in send["responses"] or "default" in send["responses"]
