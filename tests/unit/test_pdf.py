"""core.pdf: the invoice PDF, read back with pypdf."""

from __future__ import annotations

import io
import logging
from datetime import date
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from pypdf import PdfReader

from core.base.validation import LINES_MAX, MAX_SAFE_INTEGER, NAME_MAX, PHONE_MAX, TAX_ID_MAX, TEXT_MAX
from core.billing.business import BusinessInput
from core.billing.invoice_inputs import InvoiceFields
from core.billing.invoice_lines import ItemFields
from core.billing.pdf import LINE_DESCRIPTION_LINES, MARKS_PER_CHARACTER, filename_for, render_invoice
from core.catalog.customers import CustomerCreate

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
    for expected in ("Net total 135.00 EUR", "Tax 20% 27.00 EUR", "Total 162.00 EUR", "Amount due 162.00 EUR",
                     "One hundred and sixty-two euros"):
        assert expected in text, expected


def test_the_first_total_is_the_sum_of_the_line_amounts_printed():
    lines = [line(amount=13500), line(description="Support", quantity=Decimal(1), unit_amount=5000, amount=5000,
                                      discount_percent=Decimal(0), tax_amount=1000)]
    text = text_of(render_invoice(view(lines=lines, taxable=18500, subtotal=20000, discount=1500, tax=3700,
                                       total=22200, amount_due=22200), origin=ORIGIN))
    assert "Net total 185.00 EUR" in text and "Subtotal" not in text


def test_tax_is_broken_down_by_rate():
    lines = [line(), line(description="Books", quantity=Decimal(1), unit_amount=2000, amount=2000,
                          discount_percent=Decimal(0), tax_rate=Decimal(5), tax_amount=100)]
    text = text_of(render_invoice(view(lines=lines, taxable=15500, subtotal=17000, tax=2800, total=18300,
                                       amount_due=18300), origin=ORIGIN))
    assert "Tax 5% 1.00 EUR" in text and "Tax 20% 27.00 EUR" in text


def test_discounts_are_stated_beside_the_totals():
    assert "includediscountsof15.00EUR(listprice150.00EUR)" in squeezed(render_invoice(view(), origin=ORIGIN))


def test_no_discount_note_without_a_discount():
    undiscounted = view(lines=[line(discount_percent=Decimal(0), amount=15000, tax_amount=3000)], discount=0,
                        taxable=15000, tax=3000, total=18000, amount_due=18000)
    assert "discount" not in text_of(render_invoice(undiscounted, origin=ORIGIN)).lower()


@pytest.mark.parametrize("country, address, lines", [
    ("JP", {"line1": "1-2-3 Shibuya", "city": "Shibuya-ku", "state": "Tokyo", "postal_code": "150-0002"},
     ["1-2-3 Shibuya", "Shibuya-ku, TOKYO", "150-0002", "Japan"]),
    ("US", {"line1": "1 Main St", "city": "Springfield", "state": "IL", "postal_code": "62701"},
     ["1 Main St", "SPRINGFIELD, IL 62701", "United States"]),
    ("DE", {"line1": "Hauptstr. 5", "city": "Berlin", "postal_code": "10115"}, ["Hauptstr. 5", "10115 BERLIN", "Germany"]),
])
def test_the_customer_address_follows_its_country_convention_with_the_country_named(country, address, lines):
    customer = {"name": "Customer", "email": None, "tax_id": None, "address": {**address, "country": country}}
    text = text_of(render_invoice(view(customer_details=customer), origin=ORIGIN))
    assert "\n".join(["Customer", *lines]) in text


def test_dates_read_in_the_issuers_english_with_iso_beside():
    us = view(issuer={"legal_name": "Acme Inc", "country_code": "US", "address": {}, "bank": {}})
    text = text_of(render_invoice(us, origin=ORIGIN))
    assert "Issue date: November 2, 2026 (2026-11-02)" in text and "Due date: December 2, 2026 (2026-12-02)" in text
    gb = view(issuer={"legal_name": "Acme Ltd", "country_code": "GB", "address": {}, "bank": {}})
    assert "Issue date: 2 November 2026 (2026-11-02)" in text_of(render_invoice(gb, origin=ORIGIN))


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


# --- every valid text renders: long words, many lines, scripts the fonts lack ---------------------------

LONGEST_EMAIL = "x" * 64 + "@" + "d" * 63 + "." + "e" * 63 + "." + "f" * 53 + ".example"  # 254 characters


def fill(piece: str, length: int) -> str:
    """`piece` repeated to exactly `length` characters."""
    return (piece * length)[:length]


def longest(piece: str, *, lines: int = 3) -> dict:
    """An invoice whose every printed text is as long as validation allows, made of `piece` repeated."""
    name, text = fill(piece, NAME_MAX), fill(piece, TEXT_MAX)
    issuer_address = {"line1": name, "line2": name, "city": name, "region": name, "postal_code": fill(piece, 32),
                      "country_code": "GB", "country": name}
    customer_address = {"line1": name, "line2": name, "city": name, "state": name, "postal_code": fill(piece, 32),
                        "country": name}
    return view(
        lines=[line(description=text) for _ in range(lines)], description=text, footer=text,
        issuer={"legal_name": name, "trade_name": fill(piece[::-1], NAME_MAX), "tax_id": fill(piece, TAX_ID_MAX),
                "email": LONGEST_EMAIL, "phone": fill(piece, PHONE_MAX), "address": issuer_address,
                "bank": {"bank_name": name, "account_name": name, "account_number": fill(piece, 64),
                         "routing_number": fill(piece, 64)}},
        customer_details={"name": name, "email": LONGEST_EMAIL, "tax_id": fill(piece, TAX_ID_MAX),
                          "address": customer_address})


def squeezed(pdf: bytes) -> str:
    """The text without page footers or any whitespace, so a word broken across printed lines (and pages)
    reads whole."""
    rows = [row for page in pages_of(pdf) for row in page.splitlines() if " · page " not in row]
    return "".join("".join(rows).split())


@pytest.mark.parametrize("piece", ["W", "i", "W W", "漢", "😀", "e\u0301", "\u202eשלום", "\U0001d518", "ﷺ", "a\n"],
                         ids=["widest", "narrowest", "short-words", "cjk", "emoji", "combining", "rtl", "astral",
                              "wide-ligature", "newlines"])
def test_every_text_at_its_longest_renders(piece):
    assert render_invoice(longest(piece), origin=ORIGIN).startswith(b"%PDF-")


def test_250_lines_with_the_longest_one_word_descriptions_render_a_row_per_page():
    pages = pages_of(render_invoice(view(lines=[line(description="W" * TEXT_MAX)] * LINES_MAX), origin=ORIGIN))
    # One row per page (the first may start on page 2 below a tall heading), every one cut to fit.
    assert all(page.count("…") <= 1 for page in pages) and sum(page.count("…") for page in pages) == LINES_MAX
    assert "Total 162.00 EUR" in "\n".join(pages)


def test_long_word_in_a_line_description_is_broken_across_printed_lines_whole():
    word = "Supercalifragilistic" * 20
    pdf = render_invoice(view(lines=[line(description=word)]), origin=ORIGIN)
    assert word in squeezed(pdf)
    assert "…" not in text_of(pdf)


def test_line_description_too_tall_for_a_page_is_cut_with_an_ellipsis():
    pdf = render_invoice(view(lines=[line(description="W" * TEXT_MAX), line(description="Next line")]), origin=ORIGIN)
    text = text_of(pdf)
    assert "WWWW" in text and "…" in text
    assert "Next line" in text


def test_line_description_of_many_short_lines_is_cut_with_an_ellipsis():
    text = text_of(render_invoice(view(lines=[line(description="row\n" * 2500)]), origin=ORIGIN))
    assert text.count("row") <= LINE_DESCRIPTION_LINES
    assert "…" in text


def test_long_words_in_the_customer_block_print_whole():
    customer = {"name": "N" * NAME_MAX, "email": LONGEST_EMAIL, "tax_id": "T" * TAX_ID_MAX,
                "address": {"line1": "S" * 256, "city": "C" * 256}}
    text = squeezed(render_invoice(view(customer_details=customer), origin=ORIGIN))
    for expected in ("N" * NAME_MAX, LONGEST_EMAIL, "T" * TAX_ID_MAX, "S" * 256, "C" * 256):
        assert expected in text


def test_long_words_in_the_issuer_block_and_bank_details_print_whole():
    issuer = {"legal_name": "L" * NAME_MAX, "trade_name": "T" * NAME_MAX, "phone": "P" * PHONE_MAX,
              "address": {"line1": "S" * 256}, "bank": {"bank_name": "B" * 256, "account_number": "A" * 64}}
    text = squeezed(render_invoice(view(issuer=issuer), origin=ORIGIN))
    for expected in ("L" * NAME_MAX, "T" * NAME_MAX, "P" * PHONE_MAX, "S" * 256, "B" * 256, "A" * 64):
        assert expected in text


def test_issuer_block_taller_than_a_page_continues_on_the_next_one():
    pages = pages_of(render_invoice(longest("W", lines=1), origin=ORIGIN))
    assert "INVOICE" in pages[0] and "Bill to" not in pages[0]
    assert any("Bill to" in page for page in pages[1:])


def test_longest_notes_and_terms_of_one_word_print_whole_across_pages():
    pdf = render_invoice(view(description="N" * TEXT_MAX, footer="F" * TEXT_MAX), origin=ORIGIN)
    text = squeezed(pdf)
    assert "N" * TEXT_MAX in text and "F" * TEXT_MAX in text
    assert len(pages_of(pdf)) > 1


def test_notes_keep_their_line_breaks():
    text = text_of(render_invoice(view(description="First row\r\nSecond row"), origin=ORIGIN))
    assert "First row\nSecond row" in text


def test_one_line_fields_print_a_line_break_as_a_space():
    customer = {"name": "Jane\nDoe", "address": {"line1": "1 Main St\r\nFloor 2"}}
    text = text_of(render_invoice(view(customer_details=customer), origin=ORIGIN))
    assert "Jane Doe" in text and "1 Main St Floor 2" in text


def test_characters_the_fonts_lack_print_as_the_replacement_character():
    text = text_of(render_invoice(view(customer_details={"name": "王小明 Ltd"}), origin=ORIGIN))
    assert "\ufffd\ufffd\ufffd Ltd" in text


def test_rendering_logs_no_missing_glyph_warning(caplog):
    with caplog.at_level(logging.WARNING):
        render_invoice(longest("漢😀\U0001d518\t"), origin=ORIGIN)
    assert not [record for record in caplog.records if "missing" in record.getMessage()]


def test_emoji_and_combining_marks_the_fonts_have_print():
    text = text_of(render_invoice(view(lines=[line(description="Cafe\u0301 😀 Ελληνικά")]), origin=ORIGIN))
    assert "Café 😀 Ελληνικά" in text


def test_bidi_and_other_invisible_format_characters_are_not_printed():
    text = text_of(render_invoice(view(lines=[line(description="\u202eabc\u202c\u200b\u2066def\u2069\ufeff")]),
                                  origin=ORIGIN))
    assert "abcdef" in text
    assert not any(char in text for char in "\u202e\u202c\u200b\u2066\u2069\ufeff")


def test_control_characters_are_dropped_and_tabs_print_as_spaces():
    text = text_of(render_invoice(view(description="a\tb\x07c\x00d\x85e"), origin=ORIGIN))
    assert "a bcd\ne" in text


def test_unpaired_surrogate_prints_as_the_replacement_character():
    text = text_of(render_invoice(view(lines=[line(description="bad \ud800 text")]), origin=ORIGIN))
    assert "bad \ufffd text" in text


def test_an_endless_run_of_combining_marks_keeps_only_a_few():
    text = text_of(render_invoice(view(lines=[line(description="a" + "\u0301" * TEXT_MAX)]), origin=ORIGIN))
    assert text.count("\u0301") <= MARKS_PER_CHARACTER


def test_largest_amounts_render_and_totals_stay_on_one_line():
    big = MAX_SAFE_INTEGER
    jpy = view(currency="JPY", lines=[line(quantity=Decimal("999999999.999999"), unit_amount=big, amount=big,
                                           discount_percent=Decimal("99.999999"), tax_rate=Decimal("99.999999"),
                                           tax_amount=big)],
               subtotal=big, discount=big, taxable=big, tax=big, total=big, amount_due=big)
    text = text_of(render_invoice(jpy, origin=ORIGIN))
    assert "Total 9,007,199,254,740,991 JPY" in text
    assert "Amount due 9,007,199,254,740,991 JPY" in text


# Any invoice whose texts pass validation renders (property test over the real input models).

_CONTROLS = [chr(code) for code in range(32)]


def _texts(max_size: int, *, multi_line: bool = False, min_size: int = 0):
    excluded = [char for char in _CONTROLS if not (multi_line and char in "\t\n\r")]
    alphabet = st.characters(exclude_categories=("Cs",), exclude_characters=excluded)
    repeated = st.builds(lambda piece, size: fill(piece, size), st.text(alphabet, min_size=1, max_size=6),
                         st.one_of(st.just(max_size), st.integers(max(min_size, 1), max_size)))
    return st.one_of(st.text(alphabet, min_size=min_size, max_size=40), repeated)


def _address(region_key: str):
    keys = ("line1", "line2", "city", region_key, "country")
    return st.fixed_dictionaries({key: st.none() | _texts(256) for key in keys}
                                 | {"postal_code": st.none() | _texts(32)})


@st.composite
def _valid_invoices(draw) -> dict:
    name = _texts(NAME_MAX, min_size=1)
    try:
        business = BusinessInput.model_validate({
            "legal_name": draw(name), "trade_name": draw(st.none() | name), "country_code": "GB", "currency": "EUR",
            "tax_id": draw(st.none() | _texts(TAX_ID_MAX)), "email": draw(st.sampled_from([None, LONGEST_EMAIL])),
            "phone": draw(st.none() | _texts(PHONE_MAX)), "address": draw(_address("region")),
            "bank": draw(st.fixed_dictionaries({key: st.none() | _texts(size) for key, size in
                                                (("bank_name", 256), ("account_name", 256), ("account_number", 64),
                                                 ("routing_number", 64))}))})
        customer = CustomerCreate.model_validate({
            "name": draw(name), "email": draw(st.sampled_from([None, LONGEST_EMAIL])),
            "tax_id": draw(st.none() | _texts(TAX_ID_MAX)), "address": draw(_address("state"))})
        fields = InvoiceFields.model_validate({"description": draw(st.none() | _texts(TEXT_MAX, multi_line=True)),
                                               "footer": draw(st.none() | _texts(TEXT_MAX, multi_line=True))})
        items = [ItemFields.model_validate({"description": description, "unit_amount": 10000, "quantity": "1.5",
                                            "unit": "HRS", "discount_percent": "10", "tax_rate": "20"})
                 for description in draw(st.lists(_texts(TEXT_MAX, multi_line=True, min_size=1), min_size=1, max_size=3))]
    except ValidationError:
        assume(False)
    return view(issuer=business.model_dump(), customer_details=customer.model_dump(),
                description=fields.description, footer=fields.footer,
                lines=[line(description=item.description) for item in items])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_valid_invoices())
def test_any_invoice_whose_texts_pass_validation_renders(invoice):
    assert render_invoice(invoice, origin=ORIGIN).startswith(b"%PDF-")
