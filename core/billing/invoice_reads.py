"""An invoice read from Core rows: `get_invoice` (`shown_invoice`, `view_invoice`), a page of the list
(`page_statement`, for `invoices.list_invoices`), with its customer and business profile, rendered
by the same functions as every other answer (`invoice_render`), and kept rendered under the version
of its rows on PostgreSQL (`Rendered`).

The statements are written once with Core and compiled per dialect (`core.base.executor`). On
PostgreSQL an invoice's lines can come in its row as an array of records; SQLite (before 3.44 no
ordered aggregate) reads them with a second statement in the same snapshot.
"""

from __future__ import annotations

import operator
from collections import OrderedDict, namedtuple
from datetime import date
from decimal import Decimal

from sqlalchemy import Text, bindparam, cast, func, literal, literal_column, select, tuple_
from sqlalchemy.dialects.postgresql import aggregate_order_by

from config.settings import get_settings
from core.base import ids
from core.base.clock import today
from core.base.errors import NotFound
from core.base.executor import Db
from core.base.jsonout import Encoded, dumps_read, json_number
from core.billing.business import business_to_api
from core.billing.invoice_render import assembled, customer_details, invoice_fields, is_frozen
from core.mechanisms import pagination
from core.models import BusinessProfile, Customer, Invoice, InvoiceLine

INVOICES, CUSTOMERS = Invoice.__table__, Customer.__table__
BUSINESSES, LINES = BusinessProfile.__table__, InvoiceLine.__table__
CUSTOMER_COLUMNS = ("name", "email", "tax_id", "address", "peppol_id")
BUSINESS_COLUMNS = ("id", "legal_name", "trade_name", "country_code", "currency", "tax_id", "address", "email", "phone",
                    "bank", "invoice_prefix", "credit_note_prefix", "peppol_id", "created_at")
LINE_COLUMNS = ("id", "invoice_id", "price_id", "product_id", "description", "quantity", "unit", "unit_amount", "amount",
                "discount_percent", "tax_rate", "tax_amount", "tax_category", "tax_exemption_reason")
LINE_ORDER = (LINES.c.position, LINES.c.created, LINES.c.id)


def _shown_columns() -> list:
    """The invoice's columns with the customer and business profile a draft shows (`c_…`, `b_…`)."""
    return [*INVOICES.c, *party_columns()]


def party_columns() -> list:
    return [*(CUSTOMERS.c[name].label(f"c_{name}") for name in CUSTOMER_COLUMNS),
            *(BUSINESSES.c[name].label(f"b_{name}") for name in BUSINESS_COLUMNS)]


def invoice_statement(*, lines_in_row: bool, account=None, with_version: bool = False):
    """The invoice of `:invoice_id` in `:account_id` (or the column `account`) with the customer and
    business profile a draft shows (`c_…`, `b_…`), and on PostgreSQL its lines as one array of
    records (`lines`, null for none); `with_version`: first, the version of all of it (`version`)."""
    columns = _shown_columns()
    if lines_in_row:  # an array of records, which asyncpg reads as tuples of typed values
        record = tuple_(*(LINES.c[name] for name in LINE_COLUMNS))
        lines = select(func.array_agg(aggregate_order_by(record, *LINE_ORDER))
                       ).where(LINES.c.invoice_id == INVOICES.c.id).scalar_subquery()
        columns.append(lines.label("lines"))
    if with_version:
        columns.insert(0, _version())
    return _of_invoice(columns, bindparam("account_id") if account is None else account)


def version_statement(*, account):
    """PostgreSQL: the version of what the API shows of the invoice `:invoice_id` in the column
    `account` (`version`; no row when there is none). What it renders is kept under it (`Rendered`)."""
    return _of_invoice([_version()], account)


def _of_invoice(columns: list, account):
    return _with_parties(select(*columns)).where(INVOICES.c.id == bindparam("invoice_id"),
                                                 INVOICES.c.account_id == account)


def _with_parties(statement):
    return statement.select_from(INVOICES.outerjoin(CUSTOMERS, CUSTOMERS.c.id == INVOICES.c.customer_id)
                                 .outerjoin(BUSINESSES, BUSINESSES.c.account_id == INVOICES.c.account_id))


def _version(*, with_lines: bool = True):
    """The row versions of the invoice, its customer, the business profile and (`with_lines`) every
    line, so any write to any of them, by any code path, gives another."""
    parts = [_row_version(INVOICES), ".", _row_version(CUSTOMERS), ".", _row_version(BUSINESSES)]
    if with_lines:
        parts += [".", select(func.md5(func.string_agg(_row_version(LINES), aggregate_order_by(literal(","), *LINE_ORDER)))
                              ).where(LINES.c.invoice_id == INVOICES.c.id).scalar_subquery()]
    return func.concat(*parts).label("version")


# --- a page of the list ---------------------------------------------------------------------------
# A page is the account's invoices under `list_conditions` (`core.billing.invoices`), newest first (as
# `core.mechanisms.pagination` reads it), a page and one more of them, after the
# position `:after_created`, `:after_id` when a cursor gives one. Its items show no lines, so their
# version (PostgreSQL's) is that of the invoice, its customer and the business profile.

PAGE_ORDER = (INVOICES.c.created.desc(), INVOICES.c.id.desc())


def _page(*, account, conditions: list, after: bool, rows: int, versions: bool = True):
    """The page's `rows` invoices (a subquery `chosen`, with each invoice's own row version as
    `invoice_version`) and the parties they show, joined, and the page's order. The page is chosen
    among the invoices alone (the account's index gives them newest first and only `rows` are read)
    before their parties are joined: joined first, every invoice of the account would be read and
    sorted. `rows` is written into the statement: as a parameter, PostgreSQL's plan for any value
    would read a tenth of the account's invoices and sort them."""
    own_version = [_row_version(INVOICES).label("invoice_version")] if versions else []
    chosen = select(*INVOICES.c, *own_version).where(INVOICES.c.account_id == account, *conditions)
    if after:
        chosen = chosen.where(pagination.after(INVOICES.c.created, INVOICES.c.id,
                                               bindparam("after_created", type_=INVOICES.c.created.type),
                                               bindparam("after_id", type_=INVOICES.c.id.type)))
    chosen = chosen.order_by(*PAGE_ORDER).limit(literal_column(str(int(rows)))).subquery("chosen")
    parties = (chosen.outerjoin(CUSTOMERS, CUSTOMERS.c.id == chosen.c.customer_id)
               .outerjoin(BUSINESSES, BUSINESSES.c.account_id == chosen.c.account_id))
    return chosen, parties, (chosen.c.created.desc(), chosen.c.id.desc())


def _item_version(chosen):
    """An item's version: the row versions of the invoice, its customer and the business profile."""
    return func.concat(chosen.c.invoice_version, ".", _row_version(CUSTOMERS), ".", _row_version(BUSINESSES)
                       ).label("version")


def page_versions_statement(*, account, conditions: list, after: bool, rows: int):
    """The page's ids, creation times and item versions, as three arrays in its order (`ids`,
    `created`, `versions`; null for an empty page)."""
    chosen, parties, order = _page(account=account, conditions=conditions, after=after, rows=rows)
    return (select(*(func.array_agg(aggregate_order_by(column, *order)).label(label)
                     for column, label in ((chosen.c.id, "ids"), (chosen.c.created, "created"),
                                           (_item_version(chosen), "versions"))))
            .select_from(parties))


def page_statement(*, conditions: list, after: bool, rows: int, with_versions: bool = True):
    """The page in `:account_id` whole, each row with its item version first (`version`; PostgreSQL's,
    left out `with_versions=False`)."""
    chosen, parties, order = _page(account=bindparam("account_id"), conditions=conditions, after=after, rows=rows,
                                   versions=with_versions)
    columns = [*([_item_version(chosen)] if with_versions else []), *(chosen.c[column.name] for column in INVOICES.c),
               *party_columns()]
    return select(*columns).select_from(parties).order_by(*order)


def _row_version(table):
    """PostgreSQL's id of the transaction that wrote the row as it is now (`xmin`): every UPDATE,
    whatever wrote it, makes a new one."""
    return cast(literal_column(f"{table.name}.xmin"), Text)


def lines_statement():
    return select(*(LINES.c[name] for name in LINE_COLUMNS)).where(
        LINES.c.invoice_id == bindparam("invoice_id")).order_by(*LINE_ORDER)


class Layout:
    """Where the parts of a statement's row are, from its columns' names (once per statement): the
    invoice's columns, its customer's (`c_…`) and its business profile's (`b_…`). The first `skip`
    columns (the row's version) belong to none."""

    def __init__(self, names, *, skip: int = 0) -> None:
        self.versioned = skip > 0 and names[0] == "version"  # the row's first value is its version
        groups: dict[str, list[tuple[int, str]]] = {"": [], "c_": [], "b_": []}
        for index, name in enumerate(names):
            if index >= skip:
                groups[name[:2] if name[:2] in groups else ""].append((index, name))
        self.parts = {prefix: _Part(entries, prefix) for prefix, entries in groups.items()}

    @classmethod
    def of(cls, statement, *, skip: int = 0) -> Layout:
        return cls(list(statement.selected_columns.keys()), skip=skip)


class _Part:
    """One part's columns: picked from the row's values by position, named without their prefix."""

    def __init__(self, entries: list[tuple[int, str]], prefix: str) -> None:
        self.names = tuple(name[len(prefix):] for _, name in entries)
        self.row = namedtuple("Row", self.names)  # attribute access by position: no dict per row
        self.pick = operator.itemgetter(*(index for index, _ in entries)) if len(entries) > 1 else None
        self.single = entries[0][0] if len(entries) == 1 else None

    def view(self, values: tuple) -> tuple:
        """The part of a row's `values` with attribute access (the render functions read ORM objects
        and these alike)."""
        if self.pick is not None:
            picked = self.pick(values)
        else:
            picked = (values[self.single],) if self.single is not None else ()
        return self.row._make(picked)


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


def render(values: tuple, layout: Layout, lines: list | None = None, *, today: date | None = None,
           with_lines: bool = True) -> dict:
    """The invoice's API object from the values of the statement's row, laid out by `layout`, and its
    lines: rows of `lines_statement`, or None to take the row's array of records; without them
    (`with_lines=False`) as a list shows it."""
    parts = layout.parts
    invoice, customer, business = parts[""].view(values), parts["c_"].view(values), parts["b_"].view(values)
    if not with_lines:
        lines = None
    elif lines is None:
        lines = [RecordLine(values) for values in invoice.lines or ()]
    if is_frozen(invoice):
        customer_shown, issuer = invoice.customer_snapshot, invoice.issuer_snapshot
    else:
        customer_shown = customer_details(customer)
        issuer = business_to_api(business) if business.id is not None else None
    return assembled(invoice_fields(invoice, today), customer_shown, issuer, lines)


async def view_invoice(db: Db, account_id, id_text: str, *, on_day: date | None = None) -> dict:
    """One invoice of the account with its lines, as the API shows it, in two Core statements: the
    invoice with the live customer and issuer a draft shows, then the lines (one statement joining
    the lines would repeat the invoice's long texts and snapshots on each of up to 250 rows). A unit
    of `core.base.executor` (on the ORM: `executor.within(session, view_invoice, …)`)."""
    invoice_id = ids.parse("invoice", id_text, what="invoice")
    async with db.reading():
        found = await db.first(VIEW_STATEMENT, {"invoice_id": invoice_id, "account_id": account_id})
        if found is None:
            raise NotFound(f"No such invoice: {id_text}")
        lines = await db.rows(VIEW_LINES_STATEMENT, {"invoice_id": invoice_id})
    return render(tuple(found), VIEW_LAYOUT, lines, today=on_day)


async def shown_invoice(db: Db, account_id, id_text: str) -> Encoded:
    """`view_invoice` written as JSON. On PostgreSQL the invoice's version is read first; when this
    process rendered it under that version (`SHOWN`) that JSON is the answer, else the invoice is read
    whole (its lines in the row) and rendered. A unit of `core.base.executor`."""
    if db.dialect != "postgresql":
        return Encoded(dumps_read(await view_invoice(db, account_id, id_text, on_day=today())))
    invoice_id = ids.parse("invoice", id_text, what="invoice")
    parameters, stamp = {"invoice_id": invoice_id, "account_id": account_id}, rendering_stamp()
    current = await db.first(SHOWN_VERSION, parameters)
    kept = SHOWN.kept([invoice_id], [current.version], stamp)[0] if current is not None else None
    if kept is not None:
        return Encoded(kept)
    whole = await db.first(SHOWN_WHOLE, parameters) if current is not None else None
    if whole is None:  # none, or deleted since
        raise NotFound(f"No such invoice: {id_text}")
    values = tuple(whole)
    encoded = dumps_read(render(values, SHOWN_WHOLE_LAYOUT, today=stamp[0]))
    SHOWN.keep(invoice_id, values[0], stamp, encoded)
    return Encoded(encoded)


def rendering_stamp() -> tuple:
    """What an invoice's JSON depends on besides its rows: the day (overdue) and the public links' origin."""
    return today(), get_settings().origin


VIEW_STATEMENT, VIEW_LINES_STATEMENT = invoice_statement(lines_in_row=False), lines_statement()
VIEW_LAYOUT = Layout.of(VIEW_STATEMENT)
SHOWN_VERSION = version_statement(account=bindparam("account_id"))
SHOWN_WHOLE = invoice_statement(lines_in_row=True, with_version=True)
SHOWN_WHOLE_LAYOUT = Layout.of(SHOWN_WHOLE, skip=1)


class Rendered:
    """Invoices' API JSON as this process last rendered them, each under the version of the rows it
    came from (`version_statement`) and what else it depends on (`stamp`: the day, as an open invoice
    turns overdue with the date, and the origin of its public links). A read takes the invoice's version
    first (`shown_invoice`, a page's in `invoices.list_invoices`); only when it differs from the one
    kept is the invoice read whole and rendered again. Nothing here decides who may read: the
    statement that reads the version does, every time.
    At most `limit` bytes of JSON are kept, the least recently read dropped first."""

    def __init__(self, limit: int) -> None:
        self.limit, self.size = limit, 0
        self.entries: OrderedDict = OrderedDict()  # invoice id -> (version, stamp, JSON)

    def kept(self, invoice_ids: list, versions: list, stamp: tuple) -> list[bytes | None]:
        """For each invoice, the JSON kept under its version in `versions` and `stamp`, else None."""
        entries, found = self.entries, []
        for invoice_id, version in zip(invoice_ids, versions, strict=True):
            entry = entries.get(invoice_id)
            if entry is not None and entry[0] == version and entry[1] == stamp:
                entries.move_to_end(invoice_id)
                found.append(entry[2])
            else:
                found.append(None)
        return found

    def keep(self, invoice_id, version: str, stamp: tuple, encoded: bytes) -> None:
        previous = self.entries.pop(invoice_id, None)
        if previous is not None:
            self.size -= len(previous[2])
        if len(encoded) > self.limit:
            return
        self.entries[invoice_id] = (version, stamp, encoded)
        self.size += len(encoded)
        while self.size > self.limit:
            _, (_, _, dropped) = self.entries.popitem(last=False)
            self.size -= len(dropped)


SHOWN = Rendered(limit=4 * 1024 * 1024)  # of JSON; a ten-line invoice is ~4.5 KB
LISTED = Rendered(limit=2 * 1024 * 1024)  # invoices as a list shows them, ~1.3 KB each
