"""Invoice numbers: `{prefix}-{n:04d}`, consecutive per account from 1, with no gaps.

The number is taken inside the finalizing transaction from the account's counter row. The
upsert holds that row's lock until the transaction ends (PostgreSQL), and SQLite's
`BEGIN IMMEDIATE` serializes writers anyway, so two finalizations never get the same number;
if the finalization fails later, the rollback returns the number to the counter (no gap).
"""

from __future__ import annotations

import uuid

from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session

from core.models import InvoiceCounter


def format_number(prefix: str, n: int) -> str:
    return f"{prefix}-{n:04d}"


def next_number(session: Session, account_id: uuid.UUID, prefix: str) -> str:
    """Take the account's next number; call it in the transaction that finalizes the invoice. One
    upsert: the account's first finalization creates the counter at 1, a concurrent one waits on
    the row the other inserted and then counts on from it."""
    dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
    statement = dialect.insert(InvoiceCounter).values(account_id=account_id, last_number=1)
    taken = session.execute(
        statement.on_conflict_do_update(index_elements=["account_id"],
                                        set_={"last_number": InvoiceCounter.last_number + 1})
        .returning(InvoiceCounter.last_number)
        .execution_options(synchronize_session=False)
    ).scalar_one()
    return format_number(prefix, taken)


def upcoming_number(session: Session, account_id: uuid.UUID, prefix: str) -> str:
    """The number the next finalization will take, unless another is finalized first (a preview for
    people; never reserved)."""
    row = session.get(InvoiceCounter, account_id)
    return format_number(prefix, (row.last_number if row is not None else 0) + 1)
