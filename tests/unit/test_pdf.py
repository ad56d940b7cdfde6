"""core.pdf: the invoice PDF, read back with pypdf."""

from __future__ import annotations

import io
from datetime import date
from decimal import Decimal

import pytest
from pypdf import PdfReader

from core.billing.pdf import filename_for, render_invoice

ORIGIN = "https://billing.example.com"


def line(description="Consulting", **fields) -> dict:
    values = dict(id="ii_1", description=description, quantity=Decimal("1.5"), unit="HRS", unit_amount=10000,
                  amount=13500, discount_percent=Decimal("10"), tax_rate=Decimal("20"), tax_amount=2700)
    return {**values, **fields}


def view(*, lines=None, status="open", number="INV-0042", **fields) -> dict:
    lines = [line()] if lines is None else lines
    values = dict(
        id="in_0123456789abcdef0123456789abcdef", number=number, status=status, currency="EUR",
        issue_date=date(2026, 11, 2), due_date=date(2026, 12, 2),
        customer_details={"name": "Zürich Kunde GmbH", "email": "ap@kunde.example", "tax_id": "CHE-123.456.789",
                          "address": {"line1": "Bahnhofstrasse 1", "city": "Zürich", "postal_code": "8001",
                                      "country": "Switzerland"}},
        issuer={"legal_name": "Acme Trading Ltd", "trade_name": "Acme", "tax_id": "GB123456789",
                "email": "billing@acme.test", "phone": "+44 20 7946 0000",
                "address": {"line1": "1 High Street", "city": "London", "postal_code": "EC1A 1AA",
                            "country": "United Kingdom"},
                "bank": {"bank_name": "First Bank", "account_name": "Acme Trading Ltd",
                         "account_number": "12345678", "routing_number": "12-34-56"}},
        subtotal=15000, discount=1500, taxable=13500, tax=2700, total=16200,
        amount_due=16200 if status in ("open", "overdue") else 0,
        amount_in_words="One hundred and sixty-two euros", description="Thank you for your business.",
        footer="Payment within 30 days.", public_url_token="tok_abcdefghijklmnop" if number else None,
        lines={"data": lines},
    )
    return {**values, **fields}


def text_of(pdf: bytes) -> str:
    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(pdf)).pages)


def pages_of(pdf: bytes) -> list[str]:
    return [page.extract_text() for page in PdfReader(io.BytesIO(pdf)).pages]


def test_output_is_a_pdf():
    assert render_invoice(view(), origin=ORIGIN).startswith(b"%PDF-")


def test_holds_number_issuer_and_customer():
    text = text_of(render_invoice(view(), origin=ORIGIN))
    for expected in ("INV-0042", "Acme", "Acme Trading Ltd", "1 High Street", "GB123456789",
                     "Zürich Kunde GmbH", "Bahnhofstrasse 1", "CHE-123.456.789", "2026-11-02", "2026-12-02"):
        assert expected in text, expected


def test_holds_bank_details():
    text = text_of(render_invoice(view(), origin=ORIGIN))
    for expected in ("First Bank", "12345678", "12-34-56"):
        assert expected in text, expected


def test_holds_line_with_unit_quantity_discount_and_tax():
    text = text_of(render_invoice(view(), origin=ORIGIN))
    assert "Consulting 1.5 h 100.00 10% 20% 27.00 135.00" in text


def test_holds_totals_formatted_and_in_words():
    text = text_of(render_invoice(view(), origin=ORIGIN))
    for expected in ("Subtotal 150.00 EUR", "Discount -15.00 EUR", "Taxable amount 135.00 EUR", "Tax 27.00 EUR",
                     "Total 162.00 EUR", "Amount due 162.00 EUR", "One hundred and sixty-two euros"):
        assert expected in text, expected


def test_zero_decimal_currency_prints_no_decimals():
    jpy = view(currency="JPY", lines=[line(unit_amount=5000, amount=5000, quantity=Decimal(1),
                                           discount_percent=Decimal(0), tax_rate=Decimal(0), tax_amount=0)],
               subtotal=5000, discount=0, taxable=5000, tax=0, total=5000, amount_due=5000)
    assert "Total 5,000 JPY" in text_of(render_invoice(jpy, origin=ORIGIN))


def test_holds_description_footer_and_public_link():
    text = text_of(render_invoice(view(), origin=ORIGIN))
    assert "Thank you for your business." in text
    assert "Payment within 30 days." in text
    assert f"{ORIGIN}/i/tok_abcdefghijklmnop" in text


def test_finalized_invoice_has_no_draft_mark():
    assert "DRAFT" not in text_of(render_invoice(view(), origin=ORIGIN))


def test_draft_has_draft_mark_and_no_number_or_link():
    text = text_of(render_invoice(view(status="draft", number=None, amount_due=0), origin=ORIGIN))
    assert "DRAFT" in text
    assert "Draft" in text
    assert "/i/" not in text


def test_greek_cyrillic_and_latin_extended_text_survives():
    names = "Łódź Ελληνικά Москва Ærøskøbing"
    pdf = render_invoice(view(lines=[line(description=names)],
                              customer_details={"name": "ООО Ромашка", "email": None, "tax_id": None,
                                                "address": {"city": "Θεσσαλονίκη"}}), origin=ORIGIN)
    text = text_of(pdf)
    assert names in text
    assert "ООО Ромашка" in text and "Θεσσαλονίκη" in text


def test_font_is_embedded():
    assert b"DejaVu" in render_invoice(view(), origin=ORIGIN)


def test_250_lines_break_across_pages_with_repeated_headings():
    lines = [line(description=f"Item number {i:03d}") for i in range(1, 251)]
    pages = pages_of(render_invoice(view(lines=lines), origin=ORIGIN))
    assert len(pages) >= 5
    for page in pages[:-1]:
        assert "Description Qty Unit Unit price" in page
    every = "\n".join(pages)
    assert all(f"Item number {i:03d}" in every for i in range(1, 251))
    assert "Total 162.00 EUR" in pages[-1]
    assert f"page {len(pages)} of {len(pages)}" in pages[-1]


def test_draft_mark_is_on_every_page_of_a_long_draft():
    lines = [line(description=f"Item {i}") for i in range(120)]
    pages = pages_of(render_invoice(view(lines=lines, status="draft", number=None, amount_due=0), origin=ORIGIN))
    assert len(pages) > 1
    assert all("DRAFT" in page for page in pages)


def test_very_long_line_description_is_cut_to_fit_a_page():
    pdf = render_invoice(view(lines=[line(description="word " * 1000)]), origin=ORIGIN)
    assert "…" in text_of(pdf)


@pytest.mark.parametrize("number, expected", [("INV-0042", "INV-0042.pdf"), (None, "draft-in_0123.pdf"),
                                              ("A/B 1", "A_B_1.pdf")])
def test_filename(number, expected):
    assert filename_for({"number": number, "id": "in_0123"}) == expected
