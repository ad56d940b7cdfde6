"""Every e-invoice format of a spread of invoices passes the official rules: the CEN EN 16931 rules
for every format, Peppol BIS Billing 3.0 for `peppol`, the XML Schemas, and for Factur-X the
PDF/A-3 structure with the CII inside."""

from __future__ import annotations

import io

import pikepdf
import pytest

from tests.api.invoicing import adhoc, customer, finalize
from tests.conftest import make_tenant
from tests.einvoicing import rules, schema_errors

DE_SELLER = {
    "legal_name": "Muster Handel GmbH", "trade_name": "Muster", "country_code": "DE", "currency": "EUR",
    "tax_id": "DE123456789", "email": "rechnung@muster.example", "phone": "+49 30 1234567",
    "address": {"line1": "Hauptstraße 1", "city": "Berlin", "postal_code": "10115", "country_code": "DE",
                "country": "Germany"},
    "bank": {"bank_name": "Musterbank", "account_name": "Muster Handel GmbH", "account_number": "DE89 3704 0044 0532 0130 00",
             "routing_number": "COBADEFFXXX"},
    "invoice_prefix": "RE",
}
FR_BUYER = {"name": "Client SARL", "email": "compta@client.example", "tax_id": "FR40303265045",
            "address": {"line1": "1 rue de la Paix", "city": "Paris", "postal_code": "75002", "country": "FR"}}


def e_invoice(tenant, invoice_id: str, format: str):
    return tenant.get(f"/invoices/{invoice_id}/e-invoice", params={"format": format})


def issued(tenant, items, buyer=FR_BUYER, **fields) -> dict:
    made = tenant.post("/invoices", json={"customer": customer(tenant, **buyer)["id"], "items": items, **fields},
                       idem=True)
    assert made.status_code == 201, made.text
    final = finalize(tenant, made.json()["data"]["id"])
    assert final.status_code == 200, final.text
    return final.json()["data"]


def assert_valid(tenant, invoice_id: str) -> None:
    peppol = e_invoice(tenant, invoice_id, "peppol")
    assert peppol.status_code == 200, peppol.text
    assert schema_errors("ubl", peppol.content) == []
    assert [str(f) for f in rules().errors("cen-ubl", peppol.content)] == []
    assert [str(f) for f in rules().errors("peppol", peppol.content)] == []
    cii = e_invoice(tenant, invoice_id, "cii")
    assert cii.status_code == 200, cii.text
    assert schema_errors("cii", cii.content) == []
    assert [str(f) for f in rules().errors("cen-cii", cii.content)] == []
    facturx = e_invoice(tenant, invoice_id, "facturx")
    assert facturx.status_code == 200, facturx.text
    with pikepdf.open(io.BytesIO(facturx.content)) as pdf:
        embedded = pdf.attachments["factur-x.xml"].get_file().read_bytes()
    assert [str(f) for f in rules().errors("cen-cii", embedded)] == []


@pytest.fixture
def seller(client):
    return make_tenant(client, business=DE_SELLER)


def test_standard_rated_lines(seller):
    invoice = issued(seller, [adhoc("Design", 80000, quantity=2, tax_rate=19), adhoc("Hosting", 1500, tax_rate=19)])
    assert_valid(seller, invoice["id"])


def test_mixed_rates_discounts_and_zero_rated(seller):
    invoice = issued(seller, [
        adhoc("Books", 1999, quantity=3, tax_rate=7, discount_percent=15),
        adhoc("Design", 80000, quantity="1.25", tax_rate=19, discount_percent="2.5"),
        adhoc("Exported manual", 4500, quantity=2, tax_rate=0),
        adhoc("Support", 12345, unit="HRS", quantity="0.333", tax_rate=19),
    ], description="Thank you for your order.", footer="Zahlbar innerhalb von 30 Tagen.")
    assert_valid(seller, invoice["id"])


@pytest.mark.parametrize("category, reason", [("E", "Exempt under Article 132(1)(g) of Directive 2006/112/EC"),
                                              ("E", None), ("AE", None), ("K", "Intra-community supply, Art. 138"),
                                              ("Z", None)])
def test_zero_rate_categories(seller, category, reason):
    line = adhoc("Service", 50000, tax_rate=0, tax_category=category, **({"tax_exemption_reason": reason} if reason else {}))
    invoice = issued(seller, [line, adhoc("Other", 1000, tax_rate=0, tax_category=category)])
    assert_valid(seller, invoice["id"])


def test_a_seller_with_a_vat_number_invoicing_a_supply_not_subject_to_vat(seller):
    # BR-O-02: such an invoice carries no seller VAT number (BT-31); the number names the seller as its
    # tax registration instead.
    invoice = issued(seller, [adhoc("Membership", 5000, tax_rate=0, tax_category="O")])
    assert_valid(seller, invoice["id"])


def test_an_uncategorized_zero_rate_line_beside_a_not_subject_line_is_not_subject_too(seller):
    # Finalizing accepts it, so the e-invoice must too: the 0 % line is O, not zero-rated (BR-O-11).
    items = [adhoc("Membership", 5000, tax_rate=0, tax_category="O"), adhoc("Newsletter", 500, tax_rate=0)]
    invoice = issued(seller, items)
    assert_valid(seller, invoice["id"])


def test_export_outside_the_eu_to_a_buyer_with_a_peppol_id(seller):
    buyer = {"name": "Globex Corp", "address": {"line1": "1 Main St", "city": "Springfield", "state": "IL",
                                                "postal_code": "62701", "country": "United States"},
             "peppol_id": "0060:123456789"}
    invoice = issued(seller, [adhoc("Machine", 250000, tax_rate=0, tax_category="G")], buyer=buyer)
    assert_valid(seller, invoice["id"])


def test_a_seller_without_a_vat_number_is_not_subject_to_vat(client):
    small = make_tenant(client, business={**DE_SELLER, "tax_id": None, "peppol_id": "0088:5790000435975"})
    invoice = issued(small, [adhoc("Workshop", 30000), adhoc("Materials", 2500)])
    assert_valid(small, invoice["id"])


def test_yen_with_quantities_that_leave_fractions_of_a_yen(client):
    tenant = make_tenant(client, business={**DE_SELLER, "currency": "JPY"})
    invoice = issued(tenant, [adhoc("Tea", 333, quantity="1.5", tax_rate=10), adhoc("Cups", 1001, quantity="0.7",
                                                                                    tax_rate=8, discount_percent=3)],
                     currency="JPY")
    assert invoice["currency"] == "JPY"
    assert_valid(tenant, invoice["id"])


def test_many_small_lines_whose_tax_rounds_apart(seller):
    lines = [adhoc(f"Part {n}", 3, tax_rate=19) for n in range(250)]
    invoice = issued(seller, lines)
    assert invoice["tax"] == 250  # one cent a line, where 7.50 EUR at 19 % is 1.43 EUR
    assert_valid(seller, invoice["id"])
    document = e_invoice(seller, invoice["id"], "peppol").text
    assert '<cbc:PayableRoundingAmount currencyID="EUR">1.07</cbc:PayableRoundingAmount>' in document
    assert '<cbc:PayableAmount currencyID="EUR">10.00</cbc:PayableAmount>' in document  # the invoice's own total


def test_long_texts_markup_characters_and_other_scripts(seller):
    buyer = {**FR_BUYER, "name": "Ελληνικά & 日本語 <株式会社> \"Ünïcødé\""}
    invoice = issued(seller, [adhoc("Überlange Beschreibung " + "x" * 4900, 1000, tax_rate=19),
                              adhoc("Ligne <b>&amp;</b> ، العربية", 2000, tax_rate=19)], buyer=buyer,
                     description="Notes with < & > and\na second line")
    assert_valid(seller, invoice["id"])
    assert "Ελληνικά &amp; 日本語 &lt;株式会社&gt;" in e_invoice(seller, invoice["id"], "cii").text


def test_references_the_buyer_gave(seller):
    invoice = issued(seller, [adhoc("Design", 1000, tax_rate=19)], buyer_reference="DEPT-42",
                     order_reference="PO-2026-0117")
    assert_valid(seller, invoice["id"])
    document = e_invoice(seller, invoice["id"], "peppol").text
    assert "<cbc:BuyerReference>DEPT-42</cbc:BuyerReference>" in document and "<cbc:ID>PO-2026-0117</cbc:ID>" in document


def test_explicit_peppol_ids_are_used(client):
    tenant = make_tenant(client, business={**DE_SELLER, "peppol_id": "0088:5790000435975"})
    invoice = issued(tenant, [adhoc("Design", 1000, tax_rate=19)], buyer={**FR_BUYER, "peppol_id": "0208:0123456749"})
    assert_valid(tenant, invoice["id"])
    document = e_invoice(tenant, invoice["id"], "peppol").text
    assert '<cbc:EndpointID schemeID="0088">5790000435975</cbc:EndpointID>' in document
    assert '<cbc:EndpointID schemeID="0208">0123456749</cbc:EndpointID>' in document


def test_a_paid_invoice_owes_nothing(seller):
    invoice = issued(seller, [adhoc("Design", 1000, tax_rate=19)])
    assert seller.post(f"/invoices/{invoice['id']}/pay", json={}, idem=True).status_code == 200
    assert_valid(seller, invoice["id"])
    document = e_invoice(seller, invoice["id"], "peppol").text
    assert '<cbc:PrepaidAmount currencyID="EUR">11.90</cbc:PrepaidAmount>' in document
    assert '<cbc:PayableAmount currencyID="EUR">0.00</cbc:PayableAmount>' in document


def test_the_default_business_of_the_tests_in_pounds(tenant):
    invoice = issued(tenant, [adhoc("Consulting", 150000, tax_rate=20)], currency="GBP")
    assert_valid(tenant, invoice["id"])


def test_factur_x_is_a_pdf_a_3_with_the_cii_as_its_data(seller):
    import re

    import facturx
    invoice = issued(seller, [adhoc("Design", 80000, quantity=2, tax_rate=19)])
    content = e_invoice(seller, invoice["id"], "facturx").content
    with pikepdf.open(io.BytesIO(content)) as pdf:
        associated = pdf.Root.AF[0]
        assert associated.F == "factur-x.xml" and associated.AFRelationship == "/Data"
        assert associated.EF.F.Subtype == "/text/xml"
        intents = pdf.Root.OutputIntents
        assert intents[0].S == "/GTS_PDFA1" and intents[0].OutputConditionIdentifier == "sRGB"
        metadata = str(pdf.open_metadata())
        for font in pdf.pages[0].Resources.Font.values():
            descriptor = font.DescendantFonts[0].FontDescriptor if "/DescendantFonts" in font else font.FontDescriptor
            assert "/FontFile2" in descriptor, font.BaseFont  # every font embedded
    assert re.search(r"pdfaid:part[^0-9]*3", metadata) and re.search(r"pdfaid:conformance[^A-Z]*B", metadata)
    assert "<fx:ConformanceLevel>EN 16931</fx:ConformanceLevel>" in metadata
    assert "<fx:DocumentFileName>factur-x.xml</fx:DocumentFileName>" in metadata
    filename, xml = facturx.get_facturx_xml_from_pdf(content, check_xsd=True)
    assert filename == "factur-x.xml" and xml == e_invoice(seller, invoice["id"], "cii").content


def test_an_invoice_a_schedule_made_carries_its_invoicing_period(seller):
    buyer = customer(seller, **FR_BUYER)
    schedule = seller.post("/invoice-schedules", json={
        "customer": buyer["id"], "mode": "finalize", "time_zone": "Europe/Berlin",
        "invoice": {"items": [adhoc("Retainer", 250000, tax_rate=19)]},
        "recurrence": {"interval": "month", "day_of_month": 1, "start_date": "2030-01-01"}}, idem=True)
    assert schedule.status_code == 201, schedule.text
    run = seller.post(f"/invoice-schedules/{schedule.json()['data']['id']}/run", idem=True)
    assert run.status_code == 201, run.text
    invoice_id = run.json()["data"]["invoice"]
    assert_valid(seller, invoice_id)
    peppol = e_invoice(seller, invoice_id, "peppol").text
    assert ("<cac:InvoicePeriod>\n    <cbc:StartDate>2030-01-01</cbc:StartDate>\n    <cbc:EndDate>2030-01-31</cbc:EndDate>"
            in peppol)
    cii = e_invoice(seller, invoice_id, "cii").text
    assert "<ram:BillingSpecifiedPeriod>" in cii and '>20300131</udt:DateTimeString>' in cii
