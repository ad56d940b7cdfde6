"""One invoice read for the fast path: one statement with its customer, business profile and (on
PostgreSQL) its lines, rows rendered by the same functions as every other read (`invoice_render`).

The statement is written once with Core and compiled per dialect (`core.base.raw`). On PostgreSQL the
lines come in the same row as a JSON array; SQLite (before 3.44 no ordered aggregate) reads them with
a second statement in the same thread.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from types import SimpleNamespace

import orjson
from sqlalchemy import bindparam, func, select, tuple_
from sqlalchemy.dialects.postgresql import aggregate_order_by

from core.base.jsonout import json_number
from core.billing.business import business_to_api
from core.billing.invoice_render import assembled, customer_details, invoice_fields, is_frozen
from core.models import BusinessProfile, Customer, Invoice, InvoiceLine

INVOICES, CUSTOMERS = Invoice.__table__, Customer.__table__
BUSINESSES, LINES = BusinessProfile.__table__, InvoiceLine.__table__
CUSTOMER_COLUMNS = ("name", "email", "tax_id", "address", "peppol_id")
BUSINESS_COLUMNS = ("id", "legal_name", "trade_name", "country_code", "currency", "tax_id", "address", "email", "phone",
                    "bank", "invoice_prefix", "peppol_id", "created_at")
LINE_COLUMNS = ("id", "invoice_id", "price_id", "product_id", "description", "quantity", "unit", "unit_amount", "amount",
                "discount_percent", "tax_rate", "tax_amount", "tax_category", "tax_exemption_reason")
LINE_ORDER = (LINES.c.position, LINES.c.created, LINES.c.id)
JSON_FIELDS = frozenset({"c_address", "b_address", "b_bank", "customer_snapshot", "issuer_snapshot"})


def invoice_statement(*, lines_in_row: bool, account=None):
    """The invoice of `:invoice_id` in `:account_id` (or the column `account`) with the customer and
    business profile a draft shows (`c_…`, `b_…`), and on PostgreSQL its lines as one array of
    records (`lines`, null for none)."""
    columns = [*INVOICES.c, *(CUSTOMERS.c[name].label(f"c_{name}") for name in CUSTOMER_COLUMNS),
               *(BUSINESSES.c[name].label(f"b_{name}") for name in BUSINESS_COLUMNS)]
    if lines_in_row:  # an array of records, which asyncpg reads as tuples of typed values
        record = tuple_(*(LINES.c[name] for name in LINE_COLUMNS))
        lines = select(func.array_agg(aggregate_order_by(record, *LINE_ORDER))
                       ).where(LINES.c.invoice_id == INVOICES.c.id).scalar_subquery()
        columns.append(lines.label("lines"))
    return (select(*columns)
            .select_from(INVOICES.outerjoin(CUSTOMERS, CUSTOMERS.c.id == INVOICES.c.customer_id)
                         .outerjoin(BUSINESSES, BUSINESSES.c.account_id == INVOICES.c.account_id))
            .where(INVOICES.c.id == bindparam("invoice_id"),
                   INVOICES.c.account_id == (bindparam("account_id") if account is None else account)))


def lines_statement():
    return select(*(LINES.c[name] for name in LINE_COLUMNS)).where(
        LINES.c.invoice_id == bindparam("invoice_id")).order_by(*LINE_ORDER)


def _split(row, *, parse_json: bool) -> tuple[SimpleNamespace, SimpleNamespace, SimpleNamespace]:
    """The statement's row as the invoice, its customer (`c_…`) and business profile (`b_…`), each with
    attribute access (the render functions read ORM objects and these alike), JSON text parsed."""
    parts: tuple[dict, dict, dict] = ({}, {}, {})
    for name, value in row.items():
        if parse_json and name in JSON_FIELDS and isinstance(value, str):
            value = orjson.loads(value)
        if name.startswith("c_"):
            parts[1][name[2:]] = value
        elif name.startswith("b_"):
            parts[2][name[2:]] = value
        else:
            parts[0][name] = value
    return SimpleNamespace(**parts[0]), SimpleNamespace(**parts[1]), SimpleNamespace(**parts[2])


class RecordLine:
    """A line from the row's array of records, with its exact decimals as the JSON they are written as
    (`jsonout`: a whole number, or the shortest float repr), so the encoder walks it without help."""

    __slots__ = LINE_COLUMNS

    def __init__(self, values: tuple) -> None:
        (self.id, self.invoice_id, self.price_id, self.product_id, self.description, quantity, self.unit,
         self.unit_amount, self.amount, discount, tax_rate, self.tax_amount, self.tax_category,
         self.tax_exemption_reason) = values
        self.quantity, self.discount_percent, self.tax_rate = _number(quantity), _number(discount), _number(tax_rate)


def _number(text: str):
    """A decimal column's text as `jsonout` writes the number (stored normalized: `2`, `1.5`)."""
    if "." not in text and "E" not in text:
        return int(text)
    return json_number(Decimal(text))


def render(row, lines: list | None = None, *, parse_json: bool = False, today: date | None = None) -> dict:
    """The invoice's API object from the statement's row (a mapping) and its lines: rows of
    `lines_statement`, or None to take the row's array of records."""
    invoice, customer, business = _split(row, parse_json=parse_json)
    if lines is None:
        lines = [RecordLine(values) for values in invoice.lines or ()]
    if is_frozen(invoice):
        customer_shown, issuer = invoice.customer_snapshot, invoice.issuer_snapshot
    else:
        customer_shown = customer_details(customer)
        issuer = business_to_api(business) if business.id is not None else None
    return assembled(invoice_fields(invoice, today), customer_shown, issuer, lines)


def key_view(row, prefix: str, *, parse_json: bool = False) -> SimpleNamespace:
    """The `api_keys` columns of a row, named `prefix` + column, with attribute access, its scopes
    parsed when they are JSON text."""
    key = {name[len(prefix):]: value for name, value in row.items() if name.startswith(prefix)}
    if parse_json and isinstance(key.get("scopes"), str):
        key["scopes"] = orjson.loads(key["scopes"])
    return SimpleNamespace(**key)
