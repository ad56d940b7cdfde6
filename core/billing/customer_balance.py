"""A customer's credit balance, per currency: what credit notes credited to it (`balance_amount`) and
what payments paid beyond an invoice's amount due (their `balance_amount`, `overpayment: "balance"`),
less what later invoices have used (each source's `balance_remaining`).

When an invoice is finalized, the balance in its currency is applied to it, oldest credit first, up
to its total (`balance_applied`, EN 16931 BT-113, paid in advance): what is due falls by as much, and
an invoice the balance covers whole is paid at once. A credit note or payment whose balance was
applied, even in part, can no longer be voided or reversed.
"""

from __future__ import annotations

import uuid

from sqlalchemy import bindparam, exists, literal_column, or_, select, update

from core.base import money
from core.base.executor import Db
from core.models import CreditNote, Payment

NOTES, PAYMENTS = CreditNote.__table__, Payment.__table__
SOURCES = {"credit_note": NOTES, "payment": PAYMENTS}
LIVE = {"credit_note": "issued", "payment": "recorded"}


def _credits(kind: str):
    """A source's rows with balance left for `:customer_id` in `:currency`, oldest first, under their row lock."""
    table = SOURCES[kind]
    return (select(table.c.id, table.c.balance_remaining, table.c.created, literal_column(f"'{kind}'").label("kind"))
            .where(table.c.customer_id == bindparam("customer_id", type_=table.c.customer_id.type),
                   table.c.currency == bindparam("currency"), table.c.status == LIVE[kind],
                   table.c.balance_remaining > 0)
            .order_by(table.c.created, table.c.id).with_for_update())


AVAILABLE = {kind: _credits(kind) for kind in SOURCES}
SPEND = {kind: update(table).where(table.c.id == bindparam("source_id", type_=table.c.id.type))
         .values(balance_remaining=bindparam("remaining", type_=table.c.balance_remaining.type))
         for kind, table in SOURCES.items()}


def applied_elsewhere(source) -> str | None:
    """What of a credit note's or payment's balance a later invoice has used, as money text; None when
    nothing was (so undoing it takes back only what is still on the balance)."""
    used = source.balance_amount - source.balance_remaining
    return money.format_money(used, source.currency) if used else None


def has_credit(customer_id, currency):
    """Whether the customer has balance left in `currency` (values or columns), as SQL."""
    return or_(*(exists().where(table.c.customer_id == customer_id, table.c.currency == currency,
                                table.c.status == LIVE[kind], table.c.balance_remaining > 0)
                 for kind, table in SOURCES.items()))


async def available(db: Db, customer_id: uuid.UUID, currency: str) -> list:
    """The credits a finalization may use, oldest first, locked until its transaction ends (credit notes'
    rows, then payments': the lock order of every writer). A unit of `core.base.executor`."""
    values = {"customer_id": customer_id, "currency": currency}
    found = [row for kind in SOURCES for row in await db.rows(AVAILABLE[kind], values)]
    return sorted(found, key=lambda row: (row.created, row.kind, row.id))


def allocate(credits: list, total: int) -> tuple[int, list[dict]]:
    """How much of `credits` (rows of `available`) goes to an invoice of `total`, oldest first: the amount
    applied and what remains of each credit used."""
    applied, spent = 0, []
    for credit in credits:
        if applied >= total:
            break
        used = min(credit.balance_remaining, total - applied)
        applied += used
        spent.append({"kind": credit.kind, "source_id": credit.id, "remaining": credit.balance_remaining - used})
    return applied, spent


async def spend(db: Db, spent: list[dict]) -> None:
    """Write what `allocate` used. A unit, in the finalization's transaction."""
    for kind in SOURCES:
        rows = [{"source_id": row["source_id"], "remaining": row["remaining"]} for row in spent if row["kind"] == kind]
        if rows:
            await db.execute_many(SPEND[kind], rows)
