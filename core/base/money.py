"""Money arithmetic, currency facts and presentation.

Standalone: depends only on the standard library, babel and num2words.

Amounts are integers in the currency's minor unit; the ISO 4217 exponent
(JPY 0, USD 2, KWD 3) comes from babel's CLDR data. Percentages and
quantities are ``Decimal`` (or ``int``); floats are refused with TypeError.
All arithmetic runs in a local decimal context of 50 significant digits with
the ``Inexact`` trap set, so a result is either exact or raises
``decimal.Inexact`` -- it is never silently rounded. Only ``round_half_up``
rounds, and it rounds half away from zero (2.5 -> 3, -2.5 -> -3).

Wording of ``amount_in_words`` (English, deterministic, first letter upper):

    <integer words> <currency name>[ and <fractional part>]

* Integer words are num2words' English cardinal with its commas removed and
  its British "and" kept: 101 -> "one hundred and one".
* The currency name is babel's English display name, singular or plural by
  the integer part: "One US dollar", "Two thousand five hundred US dollars",
  "Five thousand Japanese yen", "Zero euros and fifty cents".
* A fractional part of zero is left out. Otherwise, when num2words knows the
  currency's minor unit (USD, EUR, GBP, INR, ...) it is written in words:
  "and fifty cents", "and one cent". For every other currency it is the
  cheque-style fraction, zero-padded to the exponent: "Twelve Kuwaiti dinars
  and 034/1000", "... Swiss francs and 05/100".
* A negative amount starts with "Minus".
"""

from __future__ import annotations

import decimal
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from functools import lru_cache

from babel.numbers import get_currency_name, get_currency_precision, list_currencies
from num2words import CONVERTER_CLASSES, num2words

__all__ = [
    "LineAmounts",
    "LineInput",
    "Totals",
    "amount_in_words",
    "compute_line",
    "compute_totals",
    "currency_exponent",
    "format_money",
    "is_known_currency",
    "normalize_currency",
    "round_half_up",
    "to_major",
]

_PRECISION = 50
_CODE_RE = re.compile(r"[A-Za-z]{3}")


def _context() -> decimal.Context:
    ctx = decimal.Context(prec=_PRECISION, rounding=ROUND_HALF_UP)
    ctx.traps[decimal.Inexact] = True
    return ctx


def _dec(value: Decimal | int) -> Decimal:
    if isinstance(value, (float, bool)) or not isinstance(value, (Decimal, int)):
        raise TypeError(f"expected Decimal or int, got {type(value).__name__}")
    return Decimal(value)


# --- currencies ---------------------------------------------------------------


@lru_cache(maxsize=1)
def _iso_codes() -> frozenset[str]:
    return frozenset(list_currencies())


def is_known_currency(code: object) -> bool:
    """True for a three-letter code (any case) in babel's ISO 4217 list."""
    return (
        isinstance(code, str)
        and _CODE_RE.fullmatch(code) is not None
        and code.upper() in _iso_codes()
    )


def normalize_currency(code: str) -> str:
    """Upper-cased ISO code; ValueError("unknown currency") otherwise."""
    if not is_known_currency(code):
        raise ValueError("unknown currency")
    return code.upper()


def currency_exponent(code: str) -> int:
    """ISO 4217 minor-unit exponent: JPY 0, USD 2, KWD 3."""
    return get_currency_precision(normalize_currency(code))


# --- arithmetic ---------------------------------------------------------------


def round_half_up(value: Decimal | int) -> int:
    """Round to an integer, halves away from zero: 0.5 -> 1, -0.5 -> -1."""
    return int(_dec(value).to_integral_value(rounding=ROUND_HALF_UP))


@dataclass(frozen=True)
class LineInput:
    unit_amount: int
    quantity: Decimal
    discount_percent: Decimal = Decimal(0)
    tax_rate: Decimal = Decimal(0)


@dataclass(frozen=True)
class LineAmounts:
    gross: int  # round_half_up(unit_amount * quantity)
    amount: int  # after discount, before tax
    tax_amount: int


@dataclass(frozen=True)
class Totals:
    subtotal: int
    discount: int
    taxable: int
    tax: int
    total: int


def compute_line(line: LineInput) -> LineAmounts:
    """Gross, discounted amount and tax of one line, exactly, then rounded."""
    with decimal.localcontext(_context()):
        base = _dec(line.unit_amount) * _dec(line.quantity)
        amount = round_half_up(base * (1 - _dec(line.discount_percent) / 100))
        tax_amount = round_half_up(amount * _dec(line.tax_rate) / 100)
        return LineAmounts(gross=round_half_up(base), amount=amount, tax_amount=tax_amount)


def compute_totals(lines: Sequence[LineInput]) -> tuple[list[LineAmounts], Totals]:
    """Per-line amounts and the invoice totals (sums of the rounded lines)."""
    amounts = [compute_line(line) for line in lines]
    subtotal = sum(a.gross for a in amounts)
    taxable = sum(a.amount for a in amounts)
    tax = sum(a.tax_amount for a in amounts)
    totals = Totals(
        subtotal=subtotal,
        discount=subtotal - taxable,
        taxable=taxable,
        tax=tax,
        total=taxable + tax,
    )
    return amounts, totals


# --- presentation -------------------------------------------------------------


def to_major(amount_minor: int, currency: str) -> Decimal:
    """Minor units as a Decimal in major units: 250050 USD -> Decimal('2500.50')."""
    exponent = currency_exponent(currency)
    with decimal.localcontext(_context()):
        return _dec(amount_minor).scaleb(-exponent)


def from_major(text: str, currency: str) -> int | None:
    """An amount typed by a person in major units ('2,500.50', '2500.5') as minor units (250050);
    None when it is not a plain amount with at most the currency's decimals ('1.234' in USD)."""
    cleaned = text.strip().replace(",", "").replace("\u00a0", "").replace(" ", "")
    if not cleaned or not all(c in "0123456789." for c in cleaned) or cleaned.count(".") > 1:
        return None
    exponent = currency_exponent(currency)
    with decimal.localcontext(_context()):
        value = Decimal(cleaned)
        if -value.as_tuple().exponent > exponent:
            return None
        return int(value.scaleb(exponent))


def format_money(amount_minor: int, currency: str) -> str:
    """'2,500.00 USD', '5,000 JPY', '1.234 KWD', '-0.05 EUR'."""
    code, exponent = _currency_facts(currency)
    major, minor = divmod(abs(int(amount_minor)), 10**exponent)
    sign = "-" if amount_minor < 0 else ""
    return f"{sign}{major:,}.{minor:0{exponent}d} {code}" if exponent else f"{sign}{major:,} {code}"


@lru_cache(maxsize=1024)
def _currency_facts(currency: str) -> tuple[str, int]:
    """The ISO code and its exponent (ValueError for an unknown currency, which is not kept)."""
    code = normalize_currency(currency)
    return code, currency_exponent(code)


def _words(n: int) -> str:
    return num2words(n, lang="en").replace(",", "")


def _minor_unit_names(code: str) -> tuple[str, str] | None:
    forms = getattr(CONVERTER_CLASSES.get("en"), "CURRENCY_FORMS", {}).get(code)
    if not forms or len(forms) < 2 or len(forms[1]) < 2:
        return None
    return forms[1][0], forms[1][1]


def amount_in_words(amount_minor: int, currency: str) -> str:
    """The amount in English words; see the module docstring for the wording."""
    code = normalize_currency(currency)
    exponent = currency_exponent(code)
    sign = "minus " if amount_minor < 0 else ""
    major, minor = divmod(abs(int(amount_minor)), 10**exponent)
    text = f"{sign}{_words(major)} {get_currency_name(code, count=major, locale='en')}"
    if minor:
        names = _minor_unit_names(code)
        if names:
            text += f" and {_words(minor)} {names[0] if minor == 1 else names[1]}"
        else:
            text += f" and {minor:0{exponent}d}/{10**exponent}"
    return text[0].upper() + text[1:]
