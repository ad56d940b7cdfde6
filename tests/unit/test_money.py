"""Tests for core.money: hand-computed tables plus property tests against an
independent reference written with fractions.Fraction."""

from decimal import Decimal as D
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.base.money import (
    LineAmounts,
    LineInput,
    Totals,
    amount_in_words,
    compute_line,
    compute_totals,
    currency_exponent,
    format_money,
    from_major,
    is_known_currency,
    normalize_currency,
    round_half_up,
    to_major,
)

# --- currencies -------------------------------------------------------------------


@pytest.mark.parametrize("code, exponent", [("JPY", 0), ("USD", 2), ("EUR", 2), ("KWD", 3), ("usd", 2)])
def test_currency_exponent(code, exponent):
    assert currency_exponent(code) == exponent


@pytest.mark.parametrize("code", ["USD", "eur", "Jpy", "KWD"])
def test_known_currencies(code):
    assert is_known_currency(code)
    assert normalize_currency(code) == code.upper()


@pytest.mark.parametrize("code", ["ZZZ", "US", "USDX", "", "ÜSD", " USD", None, 840])
def test_unknown_currencies(code):
    assert not is_known_currency(code)
    with pytest.raises(ValueError, match="^unknown currency$"):
        normalize_currency(code)


def test_currency_exponent_rejects_unknown():
    with pytest.raises(ValueError):
        currency_exponent("ZZZ")


# --- rounding ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, expected",
    [
        ("0.5", 1), ("1.5", 2), ("2.5", 3), ("2.4999", 2), ("2.5001", 3), ("0", 0),
        ("-0.5", -1), ("-2.5", -3), ("-2.4999", -2), ("-2.5001", -3),
        ("123456789012345678901234.5", 123456789012345678901235),
    ],
)
def test_round_half_up(value, expected):
    assert round_half_up(D(value)) == expected


def test_float_is_refused():
    with pytest.raises(TypeError):
        round_half_up(0.5)
    with pytest.raises(TypeError):
        compute_line(LineInput(unit_amount=1, quantity=0.5))


# --- line arithmetic: hand-computed -----------------------------------------------

LINE_CASES = [
    # unit, quantity, discount%, tax%, (gross, amount, tax)
    (1, "0.5", "0", "0", (1, 1, 0)),  # 0.5 -> 1
    (5, "1", "10", "0", (5, 5, 0)),  # 4.5 -> 5
    (5, "1", "0", "10", (5, 5, 1)),  # tax 0.5 -> 1
    (25, "1", "0", "10", (25, 25, 3)),  # tax 2.5 -> 3
    (14, "1", "0", "10", (14, 14, 1)),  # tax 1.4 -> 1
    (1, "2.5", "50", "0", (3, 1, 0)),  # gross 2.5 -> 3, amount 1.25 -> 1
    (12345, "1.5", "0", "20", (18518, 18518, 3704)),  # 18517.5; tax 3703.6
    (1000, "3", "0", "10", (3000, 3000, 300)),  # JPY
    (999, "1", "15", "8", (999, 849, 68)),  # JPY: 849.15; tax 67.92
    (1234, "2.5", "5", "5", (3085, 2931, 147)),  # KWD: 2930.75; tax 146.55
    (9999, "3", "100", "20", (29997, 0, 0)),  # 100% discount
    (2000, "2", "0", "0", (4000, 4000, 0)),  # 0 tax
    (2000, "2", "0", "100", (4000, 4000, 4000)),  # 100 tax
    (333, "1", "33.33", "0", (333, 222, 0)),  # 222.0111
    (1000, "2", "12.5", "7.5", (2000, 1750, 131)),  # tax 131.25
    (1, "0.0001", "0", "0", (0, 0, 0)),
    (0, "7", "0", "20", (0, 0, 0)),
    (9007199254740991, "1000000", "0.01", "99.99", (
        9007199254740991000000,
        9006298534815516900900,  # x 0.9999 (exact)
        9005397904962035349210,  # x 0.9999 = ...349209.91 -> up
    )),
]


@pytest.mark.parametrize("unit, quantity, discount, tax, expected", LINE_CASES)
def test_compute_line_table(unit, quantity, discount, tax, expected):
    line = LineInput(unit_amount=unit, quantity=D(quantity), discount_percent=D(discount), tax_rate=D(tax))
    assert compute_line(line) == LineAmounts(*expected)


def test_defaults_are_zero_discount_and_tax():
    assert compute_line(LineInput(unit_amount=250, quantity=D(2))) == LineAmounts(500, 500, 0)


def test_several_lines_summed():
    lines = [
        LineInput(12345, D("1.5"), D(0), D(20)),
        LineInput(5, D(1), D(10), D(0)),
        LineInput(9999, D(3), D(100), D(20)),
        LineInput(1000, D(2), D("12.5"), D("7.5")),
    ]
    amounts, totals = compute_totals(lines)
    assert [a.amount for a in amounts] == [18518, 5, 0, 1750]
    assert totals == Totals(subtotal=50520, discount=30247, taxable=20273, tax=3835, total=24108)


def test_totals_sum_rounded_lines():
    # each line 0.5 -> 1, so the subtotal is 2, not round(1.0)
    _, totals = compute_totals([LineInput(1, D("0.5")), LineInput(1, D("0.5"))])
    assert totals == Totals(subtotal=2, discount=0, taxable=2, tax=0, total=2)


def test_no_lines():
    assert compute_totals([]) == ([], Totals(0, 0, 0, 0, 0))


# --- line arithmetic: properties against a Fraction reference ---------------------


def ref_half_up(f: Fraction) -> int:
    n = abs(f)
    r = (2 * n.numerator + n.denominator) // (2 * n.denominator)  # floor(n + 1/2)
    return r if f >= 0 else -r


def ref_line(unit, quantity, discount, tax):
    base = Fraction(unit) * Fraction(quantity)
    amount = ref_half_up(base * (1 - Fraction(discount) / 100))
    return ref_half_up(base), amount, ref_half_up(amount * Fraction(tax) / 100)


units = st.integers(0, 9007199254740991)
quantities = st.integers(1, 10**10).map(lambda n: D(n).scaleb(-4))  # (0, 10^6], 4 dp
percents = st.integers(0, 10000).map(lambda n: D(n).scaleb(-2))  # 0..100, 2 dp
lines = st.builds(LineInput, units, quantities, percents, percents)


@settings(max_examples=500, deadline=None)
@given(lines)
def test_line_matches_reference(line):
    got = compute_line(line)
    gross, amount, tax = ref_line(line.unit_amount, line.quantity, line.discount_percent, line.tax_rate)
    assert (got.gross, got.amount, got.tax_amount) == (gross, amount, tax)
    assert 0 <= got.amount <= got.gross
    assert 0 <= got.tax_amount <= got.amount


@settings(max_examples=200, deadline=None)
@given(st.lists(lines, max_size=12))
def test_totals_match_reference(items):
    amounts, t = compute_totals(items)
    refs = [ref_line(i.unit_amount, i.quantity, i.discount_percent, i.tax_rate) for i in items]
    assert [(a.gross, a.amount, a.tax_amount) for a in amounts] == refs
    assert t.subtotal == sum(r[0] for r in refs)
    assert t.taxable == sum(r[1] for r in refs)
    assert t.tax == sum(r[2] for r in refs)
    assert t.total == t.taxable + t.tax
    assert t.discount == t.subtotal - t.taxable
    assert 0 <= t.taxable <= t.subtotal


@given(st.integers(-(10**30), 10**30), st.integers(0, 6))
def test_round_half_up_matches_reference(n, places):
    value = D(n).scaleb(-places)
    assert round_half_up(value) == ref_half_up(Fraction(value))


# --- presentation -------------------------------------------------------------------


@pytest.mark.parametrize(
    "amount, currency, expected",
    [
        (250000, "USD", "2,500.00 USD"),
        (5000, "JPY", "5,000 JPY"),
        (1234, "KWD", "1.234 KWD"),
        (1234567, "kwd", "1,234.567 KWD"),
        (0, "EUR", "0.00 EUR"),
        (5, "EUR", "0.05 EUR"),
        (100, "USD", "1.00 USD"),
        (-5, "USD", "-0.05 USD"),
        (-123456789, "USD", "-1,234,567.89 USD"),
        (-5000, "JPY", "-5,000 JPY"),
        (9007199254740991000000, "USD", "90,071,992,547,409,910,000.00 USD"),
    ],
)
def test_format_money(amount, currency, expected):
    assert format_money(amount, currency) == expected


@pytest.mark.parametrize(
    "amount, currency, expected",
    [(250050, "USD", D("2500.50")), (5000, "JPY", D(5000)), (1234, "KWD", D("1.234")), (-5, "EUR", D("-0.05"))],
)
def test_to_major(amount, currency, expected):
    got = to_major(amount, currency)
    assert got == expected and str(got) == str(expected)


@given(st.integers(-(10**25), 10**25), st.sampled_from(["USD", "JPY", "KWD", "EUR"]))
def test_format_money_round_trips(amount, currency):
    number, code = format_money(amount, currency).split(" ")
    assert code == currency
    assert D(number.replace(",", "")).scaleb(currency_exponent(currency)) == amount


@pytest.mark.parametrize(
    "amount, currency, expected",
    [
        (250000, "USD", "Two thousand five hundred US dollars"),
        (250050, "USD", "Two thousand five hundred US dollars and fifty cents"),
        (100, "USD", "One US dollar"),
        (101, "usd", "One US dollar and one cent"),
        (0, "USD", "Zero US dollars"),
        (
            123456789,
            "USD",
            "One million two hundred and thirty-four thousand five hundred and sixty-seven"
            " US dollars and eighty-nine cents",
        ),
        (5000, "JPY", "Five thousand Japanese yen"),
        (1, "JPY", "One Japanese yen"),
        (12000, "KWD", "Twelve Kuwaiti dinars"),
        (12034, "KWD", "Twelve Kuwaiti dinars and 034/1000"),
        (1000, "KWD", "One Kuwaiti dinar"),
        (10100, "EUR", "One hundred and one euros"),
        (100, "EUR", "One euro"),
        (50, "EUR", "Zero euros and fifty cents"),
        (105, "CHF", "One Swiss franc and 05/100"),
        (-250050, "USD", "Minus two thousand five hundred US dollars and fifty cents"),
    ],
)
def test_amount_in_words(amount, currency, expected):
    assert amount_in_words(amount, currency) == expected


@given(st.integers(0, 10**22), st.sampled_from(["USD", "JPY", "KWD", "EUR", "GBP", "CHF", "INR"]))
def test_amount_in_words_shape(amount, currency):
    words = amount_in_words(amount, currency)
    assert words[0].isupper() and "," not in words
    assert words == amount_in_words(amount, currency)  # deterministic


def test_presentation_rejects_unknown_currency():
    with pytest.raises(ValueError, match="unknown currency"):
        format_money(100, "ZZZ")
    with pytest.raises(ValueError, match="unknown currency"):
        amount_in_words(100, "ZZZ")


# --- amounts typed by people ----------------------------------------------------------------------

@pytest.mark.parametrize(("text", "currency", "minor"), [
    ("2,500.50", "USD", 250050), ("2500.5", "USD", 250050), (" 12 ", "USD", 1200), (".5", "USD", 50),
    ("5000", "JPY", 5000), ("1.234", "KWD", 1234), ("1\u00a0000.00", "EUR", 100000), ("0", "USD", 0),
])
def test_from_major_reads_amounts_in_major_units(text, currency, minor):
    assert from_major(text, currency) == minor


@pytest.mark.parametrize(("text", "currency"), [
    ("1.234", "USD"), ("5000.5", "JPY"), ("-1", "USD"), ("1e3", "USD"), ("ten", "USD"), ("", "USD"),
    ("1.2.3", "USD"), ("NaN", "USD"), ("١٢", "USD"),
])
def test_from_major_refuses_what_is_not_a_plain_amount(text, currency):
    assert from_major(text, currency) is None


@given(st.integers(min_value=0, max_value=10**15), st.sampled_from(["USD", "JPY", "KWD"]))
def test_from_major_reads_what_to_major_writes(minor, currency):
    assert from_major(str(to_major(minor, currency)), currency) == minor
