"""E-invoices beyond the REST download: the assistant's tool, the dashboard's links, the webhook
of a finalized invoice, the PDF's VAT note, and the fields the e-invoice reads, set where people set them."""

from __future__ import annotations

import base64
import io

import pikepdf
import pypdf
import pytest
from sqlmodel import select

from core.base import db
from core.models import InvoiceEvent
from tests.api.invoicing import adhoc, customer
from tests.einvoices.test_spread import FR_BUYER, assert_valid, issued
from tests.einvoicing import rules
from tests.mcp.jsonrpc import call, error_of, structured
from tests.web.conftest import Browser

BRITISH_BUYER = {"name": "Northwind Ltd", "tax_id": "GB987654321", "address": {"city": "Leeds", "country": "GB"}}


def test_an_assistant_gets_the_xml_as_text(client, tenant):
    invoice = issued(tenant, [adhoc("Design", 1000, tax_rate=20)], buyer=BRITISH_BUYER)
    got = structured(client, tenant.key, "get_e_invoice", invoice=invoice["id"], format="peppol")
    assert got["encoding"] == "utf-8" and got["media_type"] == "application/xml"
    assert rules().errors("peppol", got["content"].encode()) == []


def test_an_assistant_gets_the_factur_x_pdf_in_base64(client, tenant):
    invoice = issued(tenant, [adhoc("Design", 1000, tax_rate=20)], buyer=BRITISH_BUYER)
    got = structured(client, tenant.key, "get_e_invoice", invoice=invoice["id"], format="facturx")
    with pikepdf.open(io.BytesIO(base64.b64decode(got["content"]))) as pdf:
        assert "factur-x.xml" in pdf.attachments


def test_an_assistant_is_told_what_to_fill_in(client, tenant):
    invoice = issued(tenant, [adhoc("Design", 1000, tax_rate=20)], buyer={"name": "Somewhere Ltd"})
    result = call(client, tenant.key, "get_e_invoice", invoice=invoice["id"], format="cii")
    problem = error_of(result)
    assert problem["code"] == "validation"
    assert problem["errors"][0]["path"] == "customer.address.country" and "BT-55" in problem["errors"][0]["message"]


def test_the_invoice_page_offers_the_downloads(client, tenant):
    from tests.web.conftest import OWNER_PASSWORD
    person = Browser(client)
    assert person.sign_in(tenant.user_email, OWNER_PASSWORD).status_code == 303
    invoice = issued(tenant, [adhoc("Design", 1000, tax_rate=20)], buyer=BRITISH_BUYER)
    page = person.get(f"/invoices/{invoice['id']}").text
    assert f'/invoices/{invoice["id"]}/e-invoice?format=peppol' in page and "Factur-X" in page
    download = person.get(f"/invoices/{invoice['id']}/e-invoice?format=cii")
    assert download.status_code == 200 and download.headers["content-disposition"].endswith('-cii.xml"')
    assert rules().errors("cen-cii", download.content) == []


def test_the_invoice_page_says_what_to_fill_in(client, tenant):
    from tests.web.conftest import OWNER_PASSWORD
    person = Browser(client)
    assert person.sign_in(tenant.user_email, OWNER_PASSWORD).status_code == 303
    invoice = issued(tenant, [adhoc("Design", 1000, tax_rate=20)], buyer={"name": "Somewhere Ltd"})
    refused = person.get(f"/invoices/{invoice['id']}/e-invoice?format=peppol")
    assert refused.status_code == 422 and "customer.address.country" in refused.text and "BT-55" in refused.text


@pytest.mark.parametrize("query", ["?format=xrechnung", ""])
def test_the_invoice_page_refuses_an_unknown_format(client, tenant, query):
    from tests.web.conftest import OWNER_PASSWORD
    person = Browser(client)
    assert person.sign_in(tenant.user_email, OWNER_PASSWORD).status_code == 303
    invoice = issued(tenant, [adhoc("Design", 1000, tax_rate=20)], buyer=BRITISH_BUYER)
    refused = person.get(f"/invoices/{invoice['id']}/e-invoice{query}")
    assert refused.status_code == 422 and "peppol" in refused.text


def test_a_draft_page_offers_none(client, tenant):
    from tests.api.invoicing import draft
    from tests.web.conftest import OWNER_PASSWORD
    person = Browser(client)
    assert person.sign_in(tenant.user_email, OWNER_PASSWORD).status_code == 303
    assert "e-invoice?format" not in person.get(f"/invoices/{draft(tenant)['id']}").text


def test_the_finalized_webhook_links_the_e_invoices(tenant):
    invoice = issued(tenant, [adhoc("Design", 1000, tax_rate=20)], buyer=BRITISH_BUYER)
    with db.transaction() as session:
        events = {row.type: row.payload for row in session.exec(select(InvoiceEvent))}
    links = events["invoice.finalized"]["data"]["e_invoices"]
    assert links["peppol"].endswith(f"/api/v1/invoices/{invoice['id']}/e-invoice?format=peppol")
    assert set(links) == {"peppol", "cii", "facturx"} and "e_invoices" not in events["invoice.created"]["data"]


def test_the_pdf_states_why_lines_bear_no_vat(tenant):
    invoice = issued(tenant, [adhoc("Consulting", 50000, tax_rate=0, tax_category="AE")], buyer=FR_BUYER)
    text = "".join(page.extract_text() for page in pypdf.PdfReader(io.BytesIO(
        tenant.get(f"/invoices/{invoice['id']}/pdf").content)).pages)
    assert "Reverse charge: VAT to be paid by the customer" in text


def test_a_seller_outside_the_eu_with_a_peppol_id(client):
    from tests.conftest import make_tenant
    from tests.einvoices.test_spread import DE_SELLER
    us = make_tenant(client, business={**DE_SELLER, "country_code": "US", "currency": "USD", "tax_id": "12-3456789",
                                       "peppol_id": "0060:123456789",
                                       "address": {"line1": "1 Congress Ave", "city": "Austin", "region": "TX",
                                                   "postal_code": "78701", "country_code": "US"}})
    invoice = issued(us, [adhoc("Design", 1000, tax_rate=8)], currency="USD",
                     buyer={**FR_BUYER, "peppol_id": "0009:12345678200077"})
    assert_valid(us, invoice["id"])


def test_the_business_peppol_id_is_set_on_the_business_page(client):
    from tests.web.conftest import BUSINESS_FORM
    person = Browser(client)
    assert person.sign_up().status_code == 303
    assert person.submit("/onboarding", {**BUSINESS_FORM, "peppol_id": "0088:5790000435975"}).status_code == 303
    assert 'value="0088:5790000435975"' in person.get("/settings/business").text
    refused = person.submit("/settings/business", {**BUSINESS_FORM, "peppol_id": "not an id"})
    assert refused.status_code == 422 and "scheme:identifier" in refused.text


def test_the_customers_peppol_id_is_set_on_their_page(client, tenant):
    from tests.web.conftest import OWNER_PASSWORD
    person = Browser(client)
    assert person.sign_in(tenant.user_email, OWNER_PASSWORD).status_code == 303
    buyer = customer(tenant)
    saved = person.submit(f"/customers/{buyer['id']}", {"name": "Jane Doe", "peppol_id": "0208:0123456749"})
    assert saved.status_code == 303
    assert tenant.get(f"/customers/{buyer['id']}").json()["data"]["peppol_id"] == "0208:0123456749"
