"""Invoice lines written on the command line, and read from JSON files."""

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


def _quantity(value: str, text: str) -> int | float:
    try:
        number = Decimal(value.strip())
    except InvalidOperation:
        raise typer.BadParameter(f"The quantity in {text!r} is not a number.") from None
    if not number.is_finite() or number <= 0:
        raise typer.BadParameter(f"The quantity in {text!r} must be above 0.")
    return int(number) if number == number.to_integral_value() else float(number)


def _amount(value: str, text: str) -> int:
    value = value.strip().replace("_", "")
    if not value.isdigit():
        hint = " Amounts are in minor units: 800.00 is 80000." if "." in value or "," in value else ""
        raise typer.BadParameter(f"The unit amount in {text!r} is not a whole number.{hint}")
    return int(value)


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
