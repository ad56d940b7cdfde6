"""How commands answer: Rich tables and key-value panels for people, the API's JSON for scripts."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from invoicing_client.models import InvoicingObject

# Piped into a file or another program, tables are not folded to 80 columns.
out = Console(soft_wrap=False, width=None if sys.stdout.isatty() or "COLUMNS" in os.environ else 240)
err = Console(stderr=True)

# ISO 4217 currencies whose minor unit is not a hundredth.
EXPONENTS = {**dict.fromkeys("BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF".split(), 0),
             **dict.fromkeys("BHD IQD JOD KWD LYD OMR TND".split(), 3), "CLF": 4, "UYW": 4}


def money(minor: int | None, currency: str | None) -> str:
    """`250000, "USD"` → `2,500.00 USD` (the API's amounts are in minor units)."""
    if minor is None or currency is None:
        return ""
    return f"{amount(minor, currency)} {currency.upper()}"


def amount(minor: int, currency: str) -> str:
    """`250000, "USD"` → `2,500.00`: the number alone, where the currency is said once beside it."""
    exponent = EXPONENTS.get(currency.upper(), 2)
    return f"{Decimal(minor).scaleb(-exponent):,.{exponent}f}"


def when(value: Any) -> str:
    if value is None:
        return ""
    text = value.isoformat() if hasattr(value, "isoformat") else str(value)
    return text[:16].replace("T", " ") if "T" in text else text


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")


def as_json(obj: InvoicingObject | Iterable[InvoicingObject]) -> Any:
    if isinstance(obj, InvoicingObject):
        return obj.to_dict()
    return [item.to_dict() for item in obj]


Column = tuple[str, Callable[[Any], Any]]
MONEY_COLUMNS = ("Total", "Amount", "Unit amount", "Tax amount", "Outstanding", "Overdue", "Current", "1–30 days",
                 "31–60 days", "61–90 days", "Over 90 days")
TEXT_COLUMNS = ("Name", "Email", "Customer", "Description", "Nickname", "URL", "Events", "Product", "Recurrence",
                "Subject", "Text")


def table(rows: Iterable[InvoicingObject], columns: list[Column], *, empty: str) -> int:
    """Print `rows` as a table; how many there were."""
    grid = Table(show_edge=False, header_style="bold", pad_edge=False)
    cells = [[_text(cell(row)) for _, cell in columns] for row in rows]
    for index, (title, _) in enumerate(columns):
        if title in TEXT_COLUMNS:  # shortened to fit, never folded over lines
            grid.add_column(title, no_wrap=True, overflow="ellipsis", ratio=1, min_width=8)
        else:  # ids, amounts, dates: whole, so they can be read and copied
            longest = max((len(line[index]) for line in [[title] * len(columns), *cells]), default=2)
            grid.add_column(title, no_wrap=True, min_width=longest, justify="right" if title in MONEY_COLUMNS else "left")
    for line in cells:
        grid.add_row(*(Text(cell) for cell in line))  # data, never markup
    count = len(cells)
    if count:
        out.print(grid)
    else:
        out.print(Text(empty, style="dim"))
    return count


def matrix(header: list[str], rows: list[list[str]]) -> None:
    """A table of text: the first column names each row (bold), the others are figures (right-aligned)."""
    grid = Table(show_edge=False, header_style="bold", pad_edge=False)
    for index, title in enumerate(header):
        grid.add_column(title, no_wrap=True, style="bold" if index == 0 else None,
                        justify="left" if index == 0 else "right")
    for row in rows:
        grid.add_row(*(Text(cell) for cell in row))
    out.print(grid)


def fields(obj: InvoicingObject, pairs: list[Column], *, title: str | None = None) -> None:
    """One object as `name  value` lines."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(overflow="fold")
    for name, cell in pairs:
        value = _text(cell(obj))
        if value:
            grid.add_row(name, Text(value))
    if title:
        out.print(f"[bold]{title}[/bold]")
    out.print(grid)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(item) for item in value)
    return str(value)


def done(message: str) -> None:
    """A confirmation for people (on stderr, so stdout stays the data); `message` is plain text."""
    err.print(f"[green]✓[/green] {escape(message)}", highlight=False)


def say(message: str) -> None:
    """Plain text for people on stderr (no markup is read in it)."""
    err.print(message, markup=False, highlight=False, soft_wrap=True)
