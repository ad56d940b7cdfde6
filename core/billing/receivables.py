"""Receivables: what customers owe on open invoices, per currency and per customer, by age.

What is outstanding on an open invoice is `total − amount_credited − amount_paid` (its `amount_due`);
drafts, paid and void invoices owe nothing. An invoice's age is the number of days past its due date
on `as_of` (today, UTC): `current` when it is not yet due, due that very day, or has no due date;
`days_1_30`, `days_31_60`, `days_61_90` and `days_over_90` past that. `overdue` is every bucket
but `current`: the open invoices the API shows as `overdue`.

The database adds it all up, in two statements in one snapshot: the figures per currency, and a page
of them per customer and currency, largest outstanding first. Each reads only the open invoices of
the account through the partial index `ix_invoices_open_receivable` (`core.models.RECEIVABLE_COLUMNS`,
`WHERE status = 'open'`), whatever history of paid and void invoices lies beside them; the buckets
come from sums of CASEs on the due date against dates computed here (no date arithmetic in SQL: the
same statement on both databases). No invoice is read into Python: a row is a currency, or a customer
in a currency.

Money is integers in the currency's minor unit, as everywhere in the API (MCP adds `formatted`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import uuid
from datetime import date, timedelta
from typing import Literal

from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import OctKey
from pydantic import BaseModel, Field, field_validator
from sqlalchemy import BigInteger, Integer, and_, bindparam, case, cast, func, literal_column, or_, select

from config.settings import get_settings
from core.base import ids
from core.base.clock import today
from core.base.errors import ValidationFailed
from core.base.executor import Db
from core.base.validation import QueryInput, known_currency
from core.mechanisms.pagination import clamp_limit
from core.models import Customer, Invoice

INVOICES, CUSTOMERS = Invoice.__table__, Customer.__table__

BucketName = Literal["current", "days_1_30", "days_31_60", "days_61_90", "days_over_90"]
# The aging buckets, youngest first: (name, last day past due it holds; None for no end). `current`
# holds what is not past due (0 days or fewer, or no due date); the others 1–30, 31–60, 61–90, 91 and more.
BUCKETS: tuple[tuple[str, int | None], ...] = (
    ("current", 0), ("days_1_30", 30), ("days_31_60", 60), ("days_61_90", 90), ("days_over_90", None))
BUCKET_NAMES: tuple[str, ...] = tuple(name for name, _ in BUCKETS)


def days_past_due(due_date: date | None, as_of: date) -> int | None:
    """Days from the due date to `as_of` (0 on the day it is due, negative before); None without one."""
    return None if due_date is None else (as_of - due_date).days


def bucket_of(due_date: date | None, as_of: date) -> str:
    """The aging bucket of an open invoice due on `due_date`, counted on `as_of`."""
    days = days_past_due(due_date, as_of)
    if days is None:
        return "current"
    return next(name for name, last in BUCKETS if last is None or days <= last)


# --- what callers send and get ----------------------------------------------------------------------


class ReceivablesQuery(QueryInput):
    currency: str | None = Field(default=None, description="ISO 4217 code, any case: only this currency's figures "
                                                           "and customers")
    cursor: str | None = Field(default=None, description="The next_cursor of the previous page of customers (with "
                                                         "the same currency filter); omit for the first")
    limit: int | None = Field(default=None, description="Customer rows per page, 1 to 100 (default 25)")

    _currency = field_validator("currency")(known_currency)


class AgingBucketOut(BaseModel):
    """The open invoices of one age: how many days past their due date they are on `as_of`."""

    bucket: BucketName = Field(description="`current` (not yet due, due today, or no due date), `days_1_30`, "
                                           "`days_31_60`, `days_61_90` or `days_over_90` (91 days or more) past due")
    amount: int = Field(description="Outstanding on these invoices, in minor units")
    invoices: int = Field(description="How many invoices")


_OUTSTANDING = "Sum of the open invoices' amount_due (total − amount_credited − amount_paid), in minor units"
_OVERDUE = "Outstanding on the invoices past their due date (every bucket but `current`), in minor units"
_BUCKETS = "Every bucket, youngest first, zeros included; their amounts add up to `outstanding`"


class CurrencyReceivablesOut(BaseModel):
    """What the account's customers owe in one currency."""

    currency: str = Field(description="ISO 4217 code: every amount of this row is in it")
    outstanding: int = Field(description=_OUTSTANDING)
    overdue: int = Field(description=_OVERDUE)
    invoices: int = Field(description="How many open invoices")
    overdue_invoices: int = Field(description="How many of them are past their due date")
    buckets: list[AgingBucketOut] = Field(description=_BUCKETS)


class CustomerReceivablesOut(CurrencyReceivablesOut):
    """What one customer owes in one currency (a customer owing in two currencies has two rows)."""

    customer: str = Field(description="The customer, `cus_…`")
    name: str = Field(description="The customer's name, as it is now")


class ReceivablesOut(BaseModel):
    """What customers owe on open invoices, by age: per currency (never added across currencies) and per
    customer."""

    object: Literal["receivables"] = Field("receivables", description="Always `receivables`")
    as_of: date = Field(description="The day (UTC) ages are counted on: today")
    currencies: list[CurrencyReceivablesOut] = Field(description="One row per currency owed, by currency code; "
                                                                 "all of them on every page")
    customers: list[CustomerReceivablesOut] = Field(description="This page of rows per customer and currency, "
                                                                "largest outstanding first, then by customer id and "
                                                                "currency")


class ReceivablesPageOut(BaseModel):
    """The receivables with a page of their customers."""

    data: ReceivablesOut = Field(description="The receivables")
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page of customers; null on the last")


# --- the statements ----------------------------------------------------------------------------------
# Both read the account's open invoices (`:account_id`, and `:currency` when filtered) in the order of
# the partial index, grouped by its leading columns. `status = 'open'` is written as a literal, so both
# databases see the index's own condition and use it. Each bucket but the oldest ends at a due date
# (`:due_before_<index>`, `as_of` less its last day past due): the sums of what is due before each
# such date (`past_<index>_…`) give every bucket by difference, with one comparison per sum and row
# (a CASE naming each row's bucket, summed per bucket, took three times as long on SQLite).

OUTSTANDING = INVOICES.c.total - INVOICES.c.amount_credited - INVOICES.c.amount_paid
ENDS = tuple(index for index, (_, last) in enumerate(BUCKETS) if last is not None)  # buckets with a last day


def _sums() -> list:
    """Outstanding and how many invoices, in all and due before each bucket's end. PostgreSQL's sum
    of bigints is a numeric: cast back."""
    def total(value):
        return cast(func.sum(value), BigInteger)
    columns = [total(OUTSTANDING).label("outstanding"), func.count().label("invoices")]
    for index in ENDS:
        past = INVOICES.c.due_date < bindparam(f"due_before_{index}", type_=INVOICES.c.due_date.type)
        columns += [total(case((past, OUTSTANDING), else_=literal_column("0"))).label(f"past_{index}_amount"),
                    func.count(case((past, literal_column("1")))).label(f"past_{index}_invoices")]
    return columns


def _open_invoices(statement, *, currency: bool):
    conditions = [INVOICES.c.account_id == bindparam("account_id", type_=INVOICES.c.account_id.type),
                  INVOICES.c.status == literal_column("'open'")]
    if currency:
        conditions.append(INVOICES.c.currency == bindparam("currency", type_=INVOICES.c.currency.type))
    return statement.where(*conditions)


@functools.cache
def currencies_statement(*, currency: bool):
    """Per currency, by code: the sums of the account's open invoices."""
    return (_open_invoices(select(INVOICES.c.currency, *_sums()), currency=currency)
            .group_by(INVOICES.c.currency).order_by(INVOICES.c.currency))


@functools.cache
def customers_statement(*, currency: bool, after: bool):
    """Per customer and currency, a page (`:rows` rows) of the sums, largest outstanding first, then
    by customer id and currency; after the position (`:after_outstanding`, `:after_customer`,
    `:after_currency`) when a cursor gives one; with the customer's name. Grouped in the index's own
    order (currency, customer), the groups are sorted, the page taken, and only then are its customers
    joined."""
    groups = (_open_invoices(select(INVOICES.c.currency, INVOICES.c.customer_id, *_sums()), currency=currency)
              .group_by(INVOICES.c.currency, INVOICES.c.customer_id).subquery("receivable"))
    chosen = select(groups)
    if after:
        outstanding = bindparam("after_outstanding", type_=BigInteger)
        customer = bindparam("after_customer", type_=INVOICES.c.customer_id.type)
        currency_after = bindparam("after_currency", type_=INVOICES.c.currency.type)
        chosen = chosen.where(or_(
            groups.c.outstanding < outstanding,
            and_(groups.c.outstanding == outstanding, groups.c.customer_id > customer),
            and_(groups.c.outstanding == outstanding, groups.c.customer_id == customer,
                 groups.c.currency > currency_after)))
    page = (chosen.order_by(groups.c.outstanding.desc(), groups.c.customer_id, groups.c.currency)
            .limit(bindparam("rows", type_=Integer)).subquery("page"))
    return (select(page, CUSTOMERS.c.name.label("customer_name"))
            .select_from(page.join(CUSTOMERS, CUSTOMERS.c.id == page.c.customer_id))
            .order_by(page.c.outstanding.desc(), page.c.customer_id, page.c.currency))


def statement_parameters(account_id: uuid.UUID, as_of: date, currency: str | None) -> dict:
    """The parameters both statements share: the account, the currency filter, and the end of each
    bucket but the oldest as a due date: due before it, an invoice is past that bucket on `as_of`."""
    parameters = {"account_id": account_id, "currency": currency}
    for index in ENDS:
        parameters[f"due_before_{index}"] = as_of - timedelta(days=BUCKETS[index][1])
    return parameters


# --- the answer ----------------------------------------------------------------------------------------


def _figures_of(row) -> dict:
    """A row's figures: each bucket is what is due before the end of the one younger than it, less
    what is due before its own end."""
    amounts = [row.outstanding, *(getattr(row, f"past_{index}_amount") for index in ENDS), 0]
    counts = [row.invoices, *(getattr(row, f"past_{index}_invoices") for index in ENDS), 0]
    buckets = [{"bucket": name, "amount": amounts[index] - amounts[index + 1],
                "invoices": counts[index] - counts[index + 1]} for index, name in enumerate(BUCKET_NAMES)]
    return {"outstanding": row.outstanding, "overdue": amounts[1], "invoices": row.invoices,
            "overdue_invoices": counts[1], "buckets": buckets}


async def receivables(db: Db, account_id: uuid.UUID, query: ReceivablesQuery | None = None, *,
                      as_of: date | None = None) -> dict:
    """The account's receivables as the API answers them: `{data: {object, as_of, currencies,
    customers}, next_cursor}`, the customers paginated by `query` (`ReceivablesQuery`: currency,
    cursor, limit). `as_of`: the day ages are counted on (default today, UTC). A unit of
    `core.base.executor` (on the ORM: `executor.within(session, receivables, account_id, query)`)."""
    query = query or ReceivablesQuery()
    as_of = as_of or today()
    limit = clamp_limit(query.limit)
    after = decode_cursor(query.cursor, account_id, query.currency) if query.cursor else None
    parameters = statement_parameters(account_id, as_of, query.currency)
    parameters["rows"] = limit + 1  # one more: is there a next page?
    if after is not None:
        parameters.update(after_outstanding=after[0], after_customer=after[1], after_currency=after[2])
    filtered = query.currency is not None
    async with db.reading():  # one snapshot on SQLite (PostgreSQL: one per statement)
        currencies = await db.rows(currencies_statement(currency=filtered), parameters)
        customers = await db.rows(customers_statement(currency=filtered, after=after is not None), parameters)
    next_cursor = None
    if len(customers) > limit:
        customers = customers[:limit]
        last = customers[-1]
        next_cursor = encode_cursor(account_id, query.currency, (last.outstanding, last.customer_id, last.currency))
    return {"data": {
        "object": "receivables", "as_of": as_of.isoformat(),
        "currencies": [{"currency": row.currency, **_figures_of(row)} for row in currencies],
        "customers": [{"customer": ids.public_id("customer", row.customer_id), "name": row.customer_name,
                       "currency": row.currency, **_figures_of(row)} for row in customers],
    }, "next_cursor": next_cursor}


# --- cursors ---------------------------------------------------------------------------------------------
# Signed like every list's (`core.mechanisms.pagination`), bound to the account and the currency filter,
# but holding this list's position: the last row's outstanding, customer and currency. Their key is
# derived from the signing key for this list alone.

_KIND = "receivables"


@functools.lru_cache(maxsize=4)
def _key_of(signing_key: bytes) -> OctKey:
    return OctKey.import_key(hashlib.sha256(b"receivables-cursor:" + signing_key).digest())


def encode_cursor(account_id: uuid.UUID, currency: str | None, position: tuple[int, uuid.UUID, str]) -> str:
    outstanding, customer_id, row_currency = position
    payload = {"k": _KIND, "a": str(account_id), "f": currency or "", "o": int(outstanding), "u": customer_id.hex,
               "c": row_currency}
    return jws.serialize_compact({"alg": "HS256"}, json.dumps(payload, separators=(",", ":")).encode(),
                                 _key_of(get_settings().signing_key))


def decode_cursor(cursor: str, account_id: uuid.UUID, currency: str | None) -> tuple[int, uuid.UUID, str]:
    """The position a cursor of this account and filter holds; 422 at `cursor` for any other."""
    invalid = ValidationFailed.at(
        "cursor", "is not a cursor of this list: send the next_cursor of the previous page with the same currency")
    if len(cursor) > 1000:
        raise invalid
    try:
        payload = json.loads(jws.deserialize_compact(cursor, _key_of(get_settings().signing_key),
                                                     algorithms=["HS256"]).payload)
        if (payload["k"], payload["a"], payload["f"]) != (_KIND, str(account_id), currency or ""):
            raise invalid
        outstanding, customer_id, row_currency = payload["o"], uuid.UUID(hex=payload["u"]), payload["c"]
    except (JoseError, ValueError, KeyError, TypeError):
        raise invalid from None
    if not isinstance(outstanding, int) or isinstance(outstanding, bool) or not isinstance(row_currency, str):
        raise invalid
    return outstanding, customer_id, row_currency
