"""GET /invoices/{id}/pdf."""

from __future__ import annotations

import io

import pytest
from pypdf import PdfReader

from core.base.validation import NAME_MAX, PHONE_MAX, TAX_ID_MAX, TEXT_MAX
from tests.api.invoicing import adhoc, customer, draft, open_invoice, price
from tests.conftest import BUSINESS
from tests.smtp import mail_settings, smtp_server

LONGEST_EMAIL = "x" * 64 + "@" + "d" * 63 + "." + "e" * 63 + "." + "f" * 53 + ".example"  # 254 characters


def text_of(response) -> str:
    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(response.content)).pages)


def squeezed(pdf: bytes) -> str:
    """The PDF's text without page footers or whitespace, so a word broken across printed lines reads whole."""
    rows = [row for page in PdfReader(io.BytesIO(pdf)).pages for row in page.extract_text().splitlines()
            if " · page " not in row]
    return "".join("".join(rows).split())


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
                     "Net total 5,000.00 USD", "Tax 10% 500.00 USD", "Total 5,500.00 USD", "Five thousand five hundred"):
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


# --- an invoice whose every text is as long as validation allows, each one unbroken word -------------------


@pytest.fixture
def longest(tenant_factory):
    """(tenant, open invoice): every printed text at its maximum length, made of one unbroken word."""
    name = "W" * NAME_MAX
    address = {"line1": name, "line2": name, "city": name, "postal_code": "W" * 32, "country": name}
    tenant = tenant_factory(business={
        **BUSINESS, "legal_name": "L" * NAME_MAX, "trade_name": name, "tax_id": "W" * TAX_ID_MAX,
        "email": LONGEST_EMAIL, "phone": "W" * PHONE_MAX, "address": {**address, "region": name, "country_code": "GB"},
        "bank": {"bank_name": name, "account_name": name, "account_number": "W" * 64, "routing_number": "W" * 64}})
    buyer = customer(tenant, name="C" * NAME_MAX, email=LONGEST_EMAIL, tax_id="W" * TAX_ID_MAX,
                     phone="W" * PHONE_MAX, address={**address, "state": name})
    product_price = price(tenant, 2500, product_name="P" * NAME_MAX)
    invoice = open_invoice(tenant, customer_id=buyer["id"], description="N" * TEXT_MAX, footer="F" * TEXT_MAX,
                           items=[adhoc("W" * TEXT_MAX, 1000), {"price": product_price["id"]}])
    return tenant, invoice


def test_pdf_of_an_invoice_with_every_text_at_its_longest_as_one_word(longest):
    tenant, invoice = longest
    response = tenant.get(f"/invoices/{invoice['id']}/pdf")
    assert response.status_code == 200
    text = squeezed(response.content)
    for expected in ("C" * NAME_MAX, "L" * NAME_MAX, "P" * NAME_MAX, "N" * TEXT_MAX, "F" * TEXT_MAX, LONGEST_EMAIL):
        assert expected in text


def test_public_download_of_an_invoice_with_every_text_at_its_longest(longest):
    tenant, invoice = longest
    response = tenant.client.get(f"/i/{invoice['public_url_token']}/pdf")
    assert response.status_code == 200
    assert response.content.startswith(b"%PDF-")


def test_sending_an_invoice_with_every_text_at_its_longest_attaches_its_pdf(longest):
    tenant, invoice = longest
    with smtp_server() as (mailbox, url), mail_settings(smtp_url=url):
        response = tenant.post(f"/invoices/{invoice['id']}/send", json={"to": "jane@example.com"}, idem=True)
    assert response.status_code == 200, response.text
    [received] = mailbox.received
    [attachment] = received.attachments()
    assert "C" * NAME_MAX in squeezed(attachment.get_content())
