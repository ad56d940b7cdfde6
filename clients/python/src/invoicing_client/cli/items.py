"""Invoice and credit note lines and amounts written on the command line, and read from JSON files."""

from __future__ import annotations

import json
import sys
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import typer

ITEM_FORMAT = ("DESCRIPTION:QUANTITYxUNIT_AMOUNT (\"Design:2x80000\": two at 800.00, amounts in minor units), "
               "DESCRIPTION:UNIT_AMOUNT for one, or PRICE_ID[:QUANTITY] (\"price_…:3\")")


def parse_item(text: str) -> dict[str, Any]:
    """`Design:2x80000` → {"description": "Design", "quantity": 2, "unit_amount": 80000}."""
    text = text.strip()
    if text.startswith("price_"):
        price, _, quantity = text.partition(":")
        return {"price": price, **({"quantity": _quantity(quantity, text)} if quantity else {})}
    description, colon, amounts = text.rpartition(":")
    if not colon or not description.strip():
        raise typer.BadParameter(f"{text!r} is not a line. Write {ITEM_FORMAT}.")
    quantity, times, unit_amount = amounts.lower().partition("x")
    if not times:
        quantity, unit_amount = "1", quantity
    return {"description": description.strip(), "quantity": _quantity(quantity, text),
            "unit_amount": _amount(unit_amount, text)}


CREDIT_LINE_FORMAT = ("ii_ID for all that remains of a line of the invoice, ii_ID:QUANTITY for some of its units, "
                      "ii_ID:amount=AMOUNT for part of its amount before tax, or DESCRIPTION:AMOUNT[@TAX_RATE] for a "
                      "line of its own (\"Goodwill:700@20\": 7.00 at 20 %; amounts in minor units)")


def parse_credit_line(text: str) -> dict[str, Any]:
    """`ii_…` → {"invoice_line": "ii_…"}; `ii_…:2` → with "quantity": 2; `ii_…:amount=2500` → with
    "amount": 2500; `Goodwill:700@20` → {"description": "Goodwill", "amount": 700, "tax_rate": 20}."""
    text = text.strip()
    if text.startswith("ii_"):
        line, _, part = text.partition(":")
        part = part.strip()
        if not part:
            return {"invoice_line": line}
        name, equals, value = part.partition("=")
        if equals and name.strip().lower() == "amount":
            return {"invoice_line": line, "amount": _amount(value, text, "amount")}
        if equals and name.strip().lower() == "quantity":
            return {"invoice_line": line, "quantity": _quantity(value, text)}
        if equals:
            raise typer.BadParameter(f"{text!r}: write ii_ID:QUANTITY or ii_ID:amount=AMOUNT.")
        return {"invoice_line": line, "quantity": _quantity(part, text)}
    description, colon, amounts = text.rpartition(":")
    if not colon or not description.strip():
        raise typer.BadParameter(f"{text!r} is not a credit note line. Write {CREDIT_LINE_FORMAT}.")
    amount, at, rate = amounts.partition("@")
    line: dict[str, Any] = {"description": description.strip(), "amount": _amount(amount, text, "amount")}
    if at:
        line["tax_rate"] = _rate(rate, text)
    return line


def _rate(value: str, text: str) -> int | float:
    try:
        number = Decimal(value.strip().removesuffix("%").strip())
    except InvalidOperation:
        raise typer.BadParameter(f"The tax rate in {text!r} is not a number.") from None
    if not number.is_finite() or not 0 <= number <= 100:
        raise typer.BadParameter(f"The tax rate in {text!r} must be a percent from 0 to 100.")
    return int(number) if number == number.to_integral_value() else float(number)


def _quantity(value: str, text: str) -> int | float:
    try:
        number = Decimal(value.strip())
    except InvalidOperation:
        raise typer.BadParameter(f"The quantity in {text!r} is not a number.") from None
    if not number.is_finite() or number <= 0:
        raise typer.BadParameter(f"The quantity in {text!r} must be above 0.")
    return int(number) if number == number.to_integral_value() else float(number)


def _amount(value: str, text: str, what: str = "unit amount") -> int:
    value = value.strip().replace("_", "")
    if not value.isdigit():
        hint = " Amounts are in minor units: 800.00 is 80000." if "." in value or "," in value else ""
        raise typer.BadParameter(f"The {what} in {text!r} is not a whole number.{hint}")
    return int(value)


def parse_amount(value: str, option: str) -> int:
    """An amount option in minor units, above 0: `50000` → 50000; `500.00` is refused with the hint."""
    amount = _amount(value, f"{option} {value}", "amount")
    if amount <= 0:
        raise typer.BadParameter(f"{option} must be above 0 (in minor units: 500.00 is 50000).")
    return amount


def read_json(source: str) -> Any:
    """A JSON file's content (`-` reads standard input)."""
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text()
    except OSError as exc:
        raise typer.BadParameter(f"Cannot read {source}: {exc.strerror}.") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise typer.BadParameter(f"{source} is not JSON: {exc}.") from None
