"""Invoice totals through the API, against hand-computed cases (decisions.md's arithmetic:
per line amount = round_half_up(unit × qty × (1 − discount/100)), tax = round_half_up(amount × rate/100);
subtotal = Σ round_half_up(unit × qty); totals are sums of the rounded lines)."""

import pytest

from tests.api.invoicing import adhoc, draft, finalize

CASES = [
    # currency, lines (unit_amount, quantity, discount %, tax %), subtotal, discount, taxable, tax, total, words
    ("USD", [(1999, 3, 10, 20)], 5997, 600, 5397, 1079, 6476, "Sixty-four US dollars and seventy-six cents"),
    # 1 × 2.5 = 2.5 rounds up to 3; tax 3 × 50% = 1.5 rounds up to 2
    ("USD", [(1, "2.5", 0, 50)], 3, 0, 3, 2, 5, "Zero US dollars and five cents"),
    # 333 × 50% = 166.5 → 167, tax 25.05 → 25; 101 × 0.25 = 25.25 → 25, tax 1.875 → 2
    ("USD", [(333, 1, 50, 15), (101, "0.25", 0, "7.5")], 358, 166, 192, 27, 219, "Two US dollars and nineteen cents"),
    # each line rounds on its own: 3.5 → 4 twice
    ("USD", [(7, "0.5", 0, 0), (7, "0.5", 0, 0)], 8, 0, 8, 0, 8, "Zero US dollars and eight cents"),
    ("USD", [(300, "0.333333", 0, 0)], 100, 0, 100, 0, 100, "One US dollar"),
    ("USD", [(1000, 2, 100, 20)], 2000, 2000, 0, 0, 0, "Zero US dollars"),
    # zero-decimal currency
    ("JPY", [(1234, "1.5", 0, 10)], 1851, 0, 1851, 185, 2036, "Two thousand and thirty-six Japanese yen"),
    ("JPY", [(5, 1, 0, 10)], 5, 0, 5, 1, 6, "Six Japanese yen"),
    # three-decimal currency: 37035 × 0.875 = 32405.625 → 32406; tax 1620.3 → 1620
    ("KWD", [(12345, 3, "12.5", 5)], 37035, 4629, 32406, 1620, 34026, "Thirty-four Kuwaiti dinars and 026/1000"),
]


def number(value):
    return float(value) if isinstance(value, str) else value


@pytest.mark.parametrize("currency, lines, subtotal, discount, taxable, tax, total, words", CASES)
def test_hand_computed_totals(tenant, currency, lines, subtotal, discount, taxable, tax, total, words):
    items = [adhoc(unit_amount=unit, quantity=number(qty), discount_percent=number(disc), tax_rate=number(rate))
             for unit, qty, disc, rate in lines]
    invoice = draft(tenant, currency=currency, items=items)
    got = {key: invoice[key] for key in ("subtotal", "discount", "taxable", "tax", "total", "amount_in_words")}
    assert got == {"subtotal": subtotal, "discount": discount, "taxable": taxable, "tax": tax, "total": total,
                   "amount_in_words": words}
    opened = finalize(tenant, invoice["id"]).json()["data"]
    assert opened["amount_due"] == total and opened["total"] == total


def test_line_amounts_are_shown_per_line(tenant):
    items = [adhoc(unit_amount=333, quantity=1, discount_percent=50, tax_rate=15),
             adhoc(unit_amount=101, quantity=0.25, tax_rate=7.5)]
    lines = draft(tenant, items=items)["lines"]["data"]
    assert [(line["amount"], line["tax_amount"]) for line in lines] == [(167, 25), (25, 2)]
    assert [(line["quantity"], line["discount_percent"], line["tax_rate"]) for line in lines] == [(1, 50, 15),
                                                                                                 (0.25, 0, 7.5)]


def test_decimals_are_exact_in_and_out(tenant):
    [line] = draft(tenant, items=[adhoc(unit_amount=100, quantity=0.1, tax_rate=0.3)])["lines"]["data"]
    assert line["quantity"] == 0.1 and line["tax_rate"] == 0.3 and line["amount"] == 10
