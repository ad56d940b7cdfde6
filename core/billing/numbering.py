"""Document numbers: `{prefix}-{n:04d}`, consecutive per account from 1, with no gaps; invoices and
credit notes each count in a series of their own (`InvoiceCounter`, `CreditNoteCounter`).

The number is taken inside the finalizing transaction from the account's counter row. The
upsert holds that row's lock until the transaction ends (PostgreSQL), and SQLite's
`BEGIN IMMEDIATE` serializes writers anyway, so two finalizations never get the same number;
if the finalization fails later, the rollback returns the number to the counter (no gap).
"""

from __future__ import annotations

import uuid

from sqlalchemy import bindparam
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session

from core.base.executor import Db
from core.models import CreditNoteCounter, InvoiceCounter


def format_number(prefix: str, n: int) -> str:
    return f"{prefix}-{n:04d}"


async def take_next(db: Db, account_id: uuid.UUID, prefix: str, series: str = "invoice") -> str:
    """Take the account's next number of `series` (`invoice` or `credit_note`); a unit of
    `core.base.executor`, in the transaction that issues the document. One upsert: the account's first
    creates the counter at 1, a concurrent one waits on the row the other inserted and then counts on
    from it."""
    taken = await db.first(NEXT[series][db.dialect], {"account_id": account_id})
    return format_number(prefix, taken.last_number)


def _next(dialect, counter):
    counters = counter.__table__
    return (dialect.insert(counters).values(account_id=bindparam("account_id", type_=counters.c.account_id.type),
                                            last_number=1)
            .on_conflict_do_update(index_elements=["account_id"], set_={"last_number": counters.c.last_number + 1})
            .returning(counters.c.last_number))


NEXT = {series: {"postgresql": _next(postgresql, counter), "sqlite": _next(sqlite, counter)}
        for series, counter in (("invoice", InvoiceCounter), ("credit_note", CreditNoteCounter))}


def upcoming_number(session: Session, account_id: uuid.UUID, prefix: str, series: str = "invoice") -> str:
    """The number the next document of `series` will take (the next finalization, the next credit note),
    unless another takes it first (a preview for people; never reserved)."""
    row = session.get(CreditNoteCounter if series == "credit_note" else InvoiceCounter, account_id)
    return format_number(prefix, (row.last_number if row is not None else 0) + 1)
