"""Invoices: drafts and their lines, finalization with a number, payment and void, with history.

State rules (spec "States and transitions"): only drafts are edited, their lines added or removed,
deleted or finalized; open (and overdue) invoices are paid or voided; paid and void are final.
Every change records its event (core.events) in the same transaction.
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from sqlalchemy import bindparam, func, insert, or_
from sqlmodel import Session, select

from core.access.principal import Principal
from core.base import executor, ids
from core.base.clock import now, today
from core.base.errors import InvalidState, NotFound, ValidationFailed
from core.base.executor import Db
from core.base.jsonout import Encoded, dumps_read
from core.base.lookup import locked_rows, owned
from core.base.validation import DATE_MAX, LINES_MAX, days_after
from core.billing import delegated_actions, events, invoice_reads
from core.billing.business import business_to_api
from core.billing.confirmations import Confirmed, require_as_confirmed
from core.billing.finalization import require_draft
from core.billing.invoice_inputs import (
    DEFAULT_DAYS_UNTIL_DUE,
    InvoiceCreate,
    InvoiceListQuery,
    InvoiceUpdate,
    ItemAdd,
    VoidInput,
)
from core.billing.invoice_lines import ItemFields, build_line, compute, price_book, price_ids, refresh_prices, renumber
from core.billing.invoice_reads import view_invoice  # noqa: F401 (re-exported)
from core.billing.invoice_render import (  # noqa: F401 (re-exported)
    INVOICE_STATUSES,
    assembled,
    customer_details,
    invoice_fields,
    invoice_to_api,
    lines_of,
    preview_to_api,
    status_of,
)
from core.mechanisms.pagination import Position, clamp_limit, decode_cursor, encode_cursor, last_page_row
from core.models import BusinessProfile, CreditNote, Customer, Invoice, InvoiceLine, Payment, Price, inserted_values, plain

__all__ = [
    "add_item", "create_invoice", "delete_draft", "get_by_public_token", "get_invoice", "get_item",
    "invoice_to_api", "lines_of", "list_invoices", "list_items", "remove_item", "status_of",
    "update_invoice", "view_invoice", "void",
]


# --- look-ups ------------------------------------------------------------------------------


def get_invoice(session: Session, account_id: uuid.UUID, id_text: str, *, lock: bool = False) -> Invoice:
    return owned(session, Invoice, "invoice", account_id, id_text, noun="invoice", lock=lock)


def get_by_public_token(session: Session, token: str) -> Invoice:
    row = None
    if isinstance(token, str) and 0 < len(token) <= 64:
        row = session.exec(select(Invoice).where(Invoice.public_url_token == token)).first()
    if row is None or row.status == "draft":
        raise NotFound("No such invoice.")
    return row


async def list_invoices(db: Db, account_id: uuid.UUID, q: InvoiceListQuery) -> dict:
    """A page of the account's invoices, newest first, as the API lists them (`{data, next_cursor}`,
    each item written as JSON): one Core statement for the page with its parties, written once per
    shape of the query. On PostgreSQL the page's ids and item versions are read first, and only when
    this process has not rendered every item under its version (`invoice_reads.LISTED`) is the page
    read whole. A unit of `core.base.executor`."""
    customer_id = (await account_customer(db, account_id, q.customer)).id if q.customer is not None else None
    limit, filters, stamp = clamp_limit(q.limit), list_filters(q, customer_id), invoice_reads.rendering_stamp()
    after = decode_cursor(q.cursor, "invoices", account_id, filters) if q.cursor else None
    shape = _page_shape(q, customer_id, after, limit + 1)  # one more: is there a next page?
    parameters = {
        "account_id": account_id, "on_day": stamp[0], "status": q.status, "customer_id": customer_id,
        "issued_from": q.from_, "issued_to": q.to, "number_prefix": _prefix_pattern(q.number or ""),
        "after_created": after.created if after else None, "after_id": after.id if after else None}
    items = None
    if db.dialect == "postgresql":
        page_ids, created, versions = (list(column or ()) for column in
                                       await db.first(_page_statement(shape, "versions")[0], parameters))
        items = invoice_reads.LISTED.kept(page_ids, versions, stamp)
    if items is None or None in items:  # read the page whole, as it is now, and render what is not kept
        statement, layout = _page_statement(shape, "whole" if db.dialect == "postgresql" else "plain")
        rows = await db.rows(statement, parameters)
        page_ids, created = [row.id for row in rows], [row.created for row in rows]
        items = [_listed_item(row, layout, stamp) for row in rows]
    items, last = last_page_row(items, limit)
    next_cursor = None
    if last is not None:
        next_cursor = encode_cursor("invoices", account_id, filters, Position(created[limit - 1], page_ids[limit - 1]))
    return {"data": [Encoded(item) for item in items], "next_cursor": next_cursor}


def _listed_item(row, layout: invoice_reads.Layout, stamp: tuple) -> bytes:
    """An item of a page as JSON: kept under its version (PostgreSQL's, the row's first value) when
    this process rendered it so, else rendered (and kept)."""
    values = tuple(row)
    if layout.versioned:
        kept = invoice_reads.LISTED.kept([row.id], [values[0]], stamp)[0]
        if kept is not None:
            return kept
    encoded = dumps_read(invoice_reads.render(values, layout, today=stamp[0], with_lines=False))
    if layout.versioned:
        invoice_reads.LISTED.keep(row.id, values[0], stamp, encoded)
    return encoded


def _page_shape(q: InvoiceListQuery, customer_id, after, rows: int) -> tuple:
    """What a page's statement is written for: the status filter, which other filters are given, a
    cursor, how many rows it reads."""
    status = q.status if q.status in ("open", "overdue") else "exact" if q.status in INVOICE_STATUSES else None
    return (status, customer_id is not None, q.from_ is not None, q.to is not None, bool(q.number),
            after is not None, rows)


@functools.cache
def _page_statement(shape: tuple, read: str):
    """The statement of a page of `shape` and the layout of its rows: its items' ids, creation times
    and versions (`versions`, PostgreSQL), the page whole with each item's version first (`whole`,
    PostgreSQL), or the page whole (`plain`)."""
    status, customer, issued_from, issued_to, number, after, rows = shape
    columns = Invoice.__table__.c
    types = {"on_day": columns.due_date.type, "status": columns.status.type, "customer_id": columns.customer_id.type,
             "issued_from": columns.issue_date.type, "issued_to": columns.issue_date.type,
             "number_prefix": columns.number.type}
    conditions = list_conditions("draft" if status == "exact" else status, uuid.UUID(int=0) if customer else None,
                                 date.min if issued_from else None, date.min if issued_to else None,
                                 "n" if number else None, date.min,
                                 bind=lambda name, _value: bindparam(name, type_=types[name]))
    if read == "versions":
        return invoice_reads.page_versions_statement(account=bindparam("account_id"), conditions=conditions,
                                                     after=after, rows=rows), None
    statement = invoice_reads.page_statement(conditions=conditions, after=after, rows=rows,
                                             with_versions=read == "whole")
    return statement, invoice_reads.Layout.of(statement, skip=1 if read == "whole" else 0)


def list_conditions(status: str | None, customer_id: uuid.UUID | None, issued_from: date | None,
                    issued_to: date | None, number: str | None, on_day: date, bind=lambda _name, value: value) -> list:
    """The conditions of a list of invoices on the `invoices` table: its status as shown (`overdue`:
    open and due before `on_day`; unknown statuses are ignored), customer, issue dates and number.
    `bind(name, value)` gives what stands for a value in the statement: the value itself, or a named
    parameter for a statement written once (`core.billing.invoice_reads`)."""
    columns = Invoice.__table__.c
    status = status if status in INVOICE_STATUSES else None
    conditions = []
    if status == "overdue":
        conditions += [columns.status == "open", columns.due_date < bind("on_day", on_day)]
    elif status == "open":
        conditions += [columns.status == "open",
                       or_(columns.due_date.is_(None), columns.due_date >= bind("on_day", on_day))]
    elif status is not None:
        conditions.append(columns.status == bind("status", status))
    if customer_id is not None:
        conditions.append(columns.customer_id == bind("customer_id", customer_id))
    if issued_from is not None:
        conditions.append(columns.issue_date >= bind("issued_from", issued_from))
    if issued_to is not None:
        conditions.append(columns.issue_date <= bind("issued_to", issued_to))
    if number:
        conditions.append(func.lower(columns.number).like(bind("number_prefix", _prefix_pattern(number)), escape="/"))
    return conditions


def _prefix_pattern(typed: str) -> str:
    """A LIKE pattern (escape `/`) of the strings starting with `typed`, in lower case."""
    return "".join("/" + c if c in "/%_" else c for c in typed.lower()) + "%"


def list_filters(q: InvoiceListQuery, customer_id: uuid.UUID | None) -> dict:
    """What a list's cursors are bound to."""
    filters = {"status": q.status if q.status in INVOICE_STATUSES else None, "customer": customer_id,
               "from": q.from_, "to": q.to}
    if q.number:  # only when given: cursors issued before this filter existed stay valid
        filters["number"] = q.number
    return filters


def get_item(session: Session, account_id: uuid.UUID, id_text: str) -> InvoiceLine:
    return owned(session, InvoiceLine, "invoiceitem", account_id, id_text, noun="invoice item")


def list_items(session: Session, account_id: uuid.UUID, invoice_id_text: str) -> list[InvoiceLine]:
    return lines_of(session, get_invoice(session, account_id, invoice_id_text))


# --- drafts --------------------------------------------------------------------------------


def _due_after(issue_date: date, days_until_due: int | None) -> date:
    """The due date `days_until_due` after the issue date; by default 30 days after, or the
    calendar's last day when that is sooner."""
    if days_until_due is not None:
        return days_after(issue_date, days_until_due, "days_until_due")
    return issue_date + min(DATE_MAX - issue_date, timedelta(days=DEFAULT_DAYS_UNTIL_DUE))


def _check_dates(invoice: Invoice) -> None:
    if invoice.due_date is not None and invoice.due_date < invoice.issue_date:
        raise ValidationFailed.at("due_date", "must not be before issue_date")


def _build_lines(book: dict, invoice: Invoice, items, line_type: type = InvoiceLine) -> list[InvoiceLine]:
    """New (unsaved) lines of `invoice` from the elements of `items`, priced from `book`; errors name
    `items.N.…`."""
    return [build_line(book, invoice, item, prefix=f"items.{index}.", line_type=line_type)
            for index, item in enumerate(items)]


def _prices(session: Session, account_id: uuid.UUID, *, items=(), lines=()) -> dict:
    """The price book (`invoice_lines.price_book`) of new lines from `items` and of existing `lines`."""
    wanted = price_ids(items, lines)
    return executor.within(session, price_book, account_id, wanted) if wanted else {}


def _replace_lines(session: Session, invoice: Invoice, old: list[InvoiceLine], items) -> list[InvoiceLine]:
    for line in old:
        session.delete(line)
    session.flush()
    return _build_lines(_prices(session, invoice.account_id, items=items), invoice, items)


def _price_and_compute(book: dict, invoice: Invoice, lines: list[InvoiceLine], *, path: str) -> None:
    """Re-read the prices (`book`) and recompute every amount of the draft and its lines (in memory)."""
    refresh_prices(book, invoice, lines)
    compute(invoice, lines, path=path)


def _save(session: Session, invoice: Invoice, lines: list[InvoiceLine], *, path: str = "lines") -> None:
    """Re-read prices, recompute every amount and write the draft and its lines."""
    renumber(lines)
    _price_and_compute(_prices(session, invoice.account_id, lines=lines), invoice, lines, path=path)
    invoice.updated = now()
    session.add(invoice)
    session.add_all(lines)
    session.flush()


def preview_lines(session: Session, account_id: uuid.UUID, id_text: str,
                  items: list[ItemFields]) -> tuple[Invoice, list[InvoiceLine]]:
    """The draft and its lines as they would be with `items`, saving nothing: the lines are built,
    priced and computed exactly as `update_invoice` does (the dashboard's live totals). Use a
    read-only session and discard it: the invoice returned holds the previewed totals."""
    invoice = get_invoice(session, account_id, id_text)
    require_draft(invoice, "edited")
    book = _prices(session, account_id, items=items)
    lines = _build_lines(book, invoice, items)
    _price_and_compute(book, invoice, lines, path="items")
    return invoice, lines


async def _new_draft(db: Db, principal: Principal, data: InvoiceCreate, *,
                     rows: tuple[type, type] = (Invoice, InvoiceLine)) -> tuple:
    """The draft `data` describes and its lines, built, priced and computed in memory (nothing saved),
    with the customer and business profile it was made for (Core rows): (invoice, lines, customer,
    profile). A unit of `core.base.executor`."""
    account_id = principal.account_id
    customer = await billable_customer(db, account_id, data.customer)
    profile = await db.first(PROFILE_ROW, {"account_id": account_id})
    currency = data.currency
    if currency is None:
        if profile is None:
            raise ValidationFailed.at("currency", "is required until the business profile sets a default")
        currency = profile.currency
    wanted = price_ids(data.items)
    book = await price_book(db, account_id, wanted) if wanted else {}
    return (*draft_of(book, account_id, customer.id, currency, data, rows=rows), customer, profile)


CUSTOMER_ROW = select(Customer.__table__).where(Customer.__table__.c.id == bindparam("customer_id"),
                                                Customer.__table__.c.account_id == bindparam("account_id"))
PROFILE_ROW = select(BusinessProfile.__table__).where(BusinessProfile.__table__.c.account_id == bindparam("account_id"))


async def account_customer(db: Db, account_id: uuid.UUID, id_text: str):
    """The account's customer (a Core row), archived or not; NotFound as `lookup.owned` says it. A unit."""
    customer = await db.first(CUSTOMER_ROW, {"customer_id": ids.parse("customer", id_text, what="customer"),
                                             "account_id": account_id})
    if customer is None:
        raise NotFound(f"No such customer: {id_text}")
    return customer


async def billable_customer(db: Db, account_id: uuid.UUID, id_text: str):
    """The account's customer (a Core row) that an invoice may bill: not archived. A unit."""
    customer = await account_customer(db, account_id, id_text)
    if customer.archived_at is not None:
        raise ValidationFailed.at("customer", "is archived: restore the customer to invoice them")
    return customer


def draft_of(book: dict, account_id: uuid.UUID, customer_id: uuid.UUID, currency: str | None,
             data: InvoiceCreate, *, rows: tuple[type, type] = (Invoice, InvoiceLine)) -> tuple[Invoice, list[InvoiceLine]]:
    """The draft `data` describes for a customer found billable, in `currency` (None: not known yet, and
    no amount in words until it is): built, priced from `book` (`invoice_lines.price_book` of its
    items) and computed in memory, nothing saved; `rows` the types of the invoice and its lines (a
    new draft's are `models.plain`)."""
    invoice_type, line_type = rows
    issue_date = data.issue_date or today()
    if "due_date" in data.sent():
        due_date = data.due_date
    else:
        due_date = _due_after(issue_date, data.days_until_due)
    invoice = invoice_type(account_id=account_id, customer_id=customer_id, currency=currency,
                      collection_method=data.collection_method or "send_invoice", issue_date=issue_date,
                      due_date=due_date, description=data.description, footer=data.footer,
                      buyer_reference=data.buyer_reference, order_reference=data.order_reference)
    _check_dates(invoice)
    lines = _build_lines(book, invoice, data.items, line_type)
    renumber(lines)
    _price_and_compute(book, invoice, lines, path="items")
    return invoice, lines


def numbers_starting_with(session: Session, account_id: uuid.UUID, typed: str, limit: int) -> list[tuple[str, str]]:
    """(id, number or "Draft") of the account's invoices whose number or id starts with `typed`, newest first."""
    typed = typed.strip()
    condition = func.lower(Invoice.number).startswith(typed.lower(), autoescape=True)
    try:
        condition = or_(condition, Invoice.id == ids.parse("invoice", typed, what="invoice"))
    except NotFound:
        pass
    query = select(Invoice.id, Invoice.number).where(Invoice.account_id == account_id, condition)
    return [(ids.public_id("invoice", row_id), number or "Draft")
            for row_id, number in session.exec(query.order_by(Invoice.created.desc(), Invoice.id.desc()).limit(limit))]


PLAIN_ROWS = plain(Invoice), plain(InvoiceLine)  # a new draft is built and written without the ORM


async def create_invoice(db: Db, principal: Principal, data: InvoiceCreate,
                         period: tuple[uuid.UUID, date, date] | None = None) -> Drafted:
    """A new draft with its lines and its `invoice.created` event, written with Core statements in one
    transaction: the draft as `Drafted`, its API object made from what was written (no read back). A
    unit of `core.base.executor` (on the ORM: `executor.within(session, create_invoice, …)`). `period`:
    the schedule that makes it and the first and last day of the period it bills."""
    invoice, lines, customer, profile = await _new_draft(db, principal, data, rows=PLAIN_ROWS)
    if period is not None:
        invoice.schedule_id, invoice.period_start, invoice.period_end = period
    invoice_row, line_rows = inserted_values(invoice), [inserted_values(line) for line in lines]
    shown, whole = draft_shown(invoice, lines, customer, profile)
    async with db.transaction() as tx:
        await tx.execute(INSERT_INVOICE, invoice_row)
        if line_rows:
            await tx.execute_many(INSERT_LINE, line_rows)
        await events.record_created(tx, invoice, principal.event_meta(), shown)
    return Drafted(invoice, lines, whole)


INSERT_INVOICE, INSERT_LINE = insert(Invoice.__table__), insert(InvoiceLine.__table__)


def draft_shown(invoice, lines: list, customer, profile) -> tuple[dict, dict]:
    """A new draft's API object as its event shows it (no lines) and as it is answered (with its
    lines), from its rows as written (`inserted_values`), the customer and the business profile
    (None, or a row whose `id` is None, when the account has none)."""
    issuer = business_to_api(profile) if profile is not None and profile.id is not None else None
    fields = invoice_fields(invoice), customer_details(customer), issuer
    return assembled(*fields, None), assembled(*fields, lines)


@dataclass(frozen=True)
class Drafted:
    """A draft just written: its row and lines (plain rows, not ORM objects) and its API object."""

    invoice: Any
    lines: list
    shown: dict

    @property
    def id(self) -> uuid.UUID:
        return self.invoice.id


def preview_invoice(session: Session, principal: Principal, data: InvoiceCreate) -> dict:
    """What `create_invoice` would create with `data` (`InvoicePreviewOut`), with the same checks
    and arithmetic, saving, numbering and recording nothing (a read-only session will do)."""
    invoice, lines, _customer, _profile = executor.within(session, _new_draft, principal, data)
    return preview_to_api(session, invoice, lines)


def _clear_lines_priced_in(session: Session, lines: list[InvoiceLine], currency: str) -> list[InvoiceLine]:
    kept = []
    for line in lines:
        if line.price_id is not None and session.get(Price, line.price_id).currency == currency:
            session.delete(line)
        else:
            kept.append(line)
    return kept


def update_invoice(session: Session, principal: Principal, id_text: str, data: InvoiceUpdate) -> Invoice:
    invoice = get_invoice(session, principal.account_id, id_text, lock=True)
    require_draft(invoice, "edited")
    sent = data.sent()
    lines = lines_of(session, invoice)
    if "customer" in sent:
        invoice.customer_id = executor.within(session, billable_customer, principal.account_id, data.customer).id
    if "currency" in sent and data.currency != invoice.currency:
        lines = _clear_lines_priced_in(session, lines, invoice.currency)
        invoice.currency = data.currency
    for key in ("collection_method", "issue_date", "description", "footer", "buyer_reference", "order_reference"):
        if key in sent:
            setattr(invoice, key, getattr(data, key))
    if "due_date" in sent:
        invoice.due_date = data.due_date
    elif "days_until_due" in sent:
        invoice.due_date = days_after(invoice.issue_date, data.days_until_due, "days_until_due")
    _check_dates(invoice)
    if "items" in sent:
        lines = _replace_lines(session, invoice, lines, data.items)
    _save(session, invoice, lines, path="items" if "items" in sent else "lines")
    events.record(session, invoice, "invoice.updated", principal.event_meta())
    return invoice


def delete_draft(session: Session, principal: Principal, id_text: str) -> uuid.UUID:
    """Remove a draft and its lines; its history stays (webhooks may still deliver it)."""
    invoice = get_invoice(session, principal.account_id, id_text, lock=True)
    require_draft(invoice, "deleted")
    for line in lines_of(session, invoice):
        session.delete(line)
    session.flush()
    session.delete(invoice)
    session.flush()
    return invoice.id


def add_item(session: Session, principal: Principal, data: ItemAdd) -> Invoice:
    invoice = get_invoice(session, principal.account_id, data.invoice, lock=True)
    require_draft(invoice, "given new lines")
    lines = lines_of(session, invoice)
    if len(lines) >= LINES_MAX:
        raise ValidationFailed.at("invoice", f"already has {LINES_MAX} lines, the most an invoice holds")
    lines.append(build_line(_prices(session, principal.account_id, items=[data]), invoice, data))
    _save(session, invoice, lines)
    events.record(session, invoice, "invoice.updated", principal.event_meta())
    return invoice


def remove_item(session: Session, principal: Principal, item_id_text: str,
                invoice_id_text: str | None = None) -> Invoice:
    line = get_item(session, principal.account_id, item_id_text)
    if invoice_id_text is not None and ids.parse("invoice", invoice_id_text) != line.invoice_id:
        raise NotFound(f"No such invoice item on invoice {invoice_id_text}: {item_id_text}")
    invoice = get_invoice(session, principal.account_id, str(line.invoice_id), lock=True)
    require_draft(invoice, "stripped of lines")
    line = get_item(session, principal.account_id, item_id_text)  # again, under the lock: a racing removal wins
    session.delete(line)
    session.flush()
    _save(session, invoice, lines_of(session, invoice))
    events.record(session, invoice, "invoice.updated", principal.event_meta())
    return invoice


# --- lifecycle -----------------------------------------------------------------------------


def _locked(session: Session, invoice: Invoice) -> Invoice:
    """The invoice re-read under a row lock, so two callers never both move it (unless this
    transaction read it under the lock already)."""
    if invoice.id not in locked_rows(session):
        session.refresh(invoice, with_for_update=True)
        locked_rows(session).add(invoice.id)
    return invoice


def _require_open(invoice: Invoice, action: str) -> None:
    if invoice.status != "open":
        raise InvalidState(f"Invoice {ids.public_id('invoice', invoice.id)} is {status_of(invoice)}: "
                           f"only an open or overdue invoice can be {action}.")


def _require_uncorrected(session: Session, invoice: Invoice) -> None:
    """An invoice with credit notes, payments, or paid in part by the customer's balance, is not voided:
    what those moved (money received, a balance given or used) would stay moved. Reverse its payments,
    void its credit notes, or credit the rest."""
    if invoice.balance_applied:
        raise InvalidState(f"Invoice {invoice.number} used the customer's balance when it was finalized: correct it "
                           "with a credit note (balance_amount gives the balance back) rather than voiding it.")
    issued = session.exec(select(func.count()).select_from(CreditNote).where(
        CreditNote.invoice_id == invoice.id, CreditNote.status == "issued")).one()
    if issued:
        raise InvalidState(f"Invoice {invoice.number} has credit notes: void them first, or credit what remains "
                           "rather than voiding it.")
    if session.exec(select(func.count()).select_from(Payment).where(Payment.invoice_id == invoice.id,
                                                                      Payment.status == "recorded")).one():
        raise InvalidState(f"Invoice {invoice.number} has payments: reverse them first, or correct it with a credit "
                           "note rather than voiding it.")


def void(session: Session, principal: Principal, invoice: Invoice, data: VoidInput | None = None, *,
         confirmed: Confirmed | None = None) -> Invoice:
    """Cancel an open invoice; it keeps its number (never reused)."""
    data = data or VoidInput()
    _locked(session, invoice)
    _require_open(invoice, "voided")
    _require_uncorrected(session, invoice)
    executor.within(session, delegated_actions.act_for, principal, "void", invoice)
    require_as_confirmed(session, invoice, "void", data, confirmed)
    invoice.status = "void"
    invoice.voided_at = invoice.updated = now()
    invoice.void_reason = data.reason
    session.add(invoice)
    session.flush()
    events.record(session, invoice, "invoice.voided", principal.event_meta())
    return invoice
