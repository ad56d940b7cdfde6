"""A customer's credit balance, per currency: what credit notes credited to it (`balance_amount`) and
no later invoice has used yet (`balance_remaining`).

When an invoice is finalized, the balance in its currency is applied to it, oldest credit first, up
to its total (`balance_applied`, EN 16931 BT-113, paid in advance): what is due falls by as much, and
an invoice the balance covers whole is paid at once. A credit note whose balance was applied, even
in part, can no longer be voided (`credit_notes.void_credit_note`).
"""

from __future__ import annotations

import uuid

from sqlalchemy import bindparam, exists, select, update

from core.base.executor import Db
from core.models import CreditNote

NOTES = CreditNote.__table__

# The issued credit notes of a customer with balance left in a currency, oldest first, under their row lock.
AVAILABLE = (select(NOTES.c.id, NOTES.c.balance_remaining)
             .where(NOTES.c.customer_id == bindparam("customer_id", type_=NOTES.c.customer_id.type),
                    NOTES.c.currency == bindparam("currency"), NOTES.c.status == "issued",
                    NOTES.c.balance_remaining > 0)
             .order_by(NOTES.c.created, NOTES.c.id).with_for_update())
SPEND = (update(NOTES).where(NOTES.c.id == bindparam("note_id", type_=NOTES.c.id.type))
         .values(balance_remaining=bindparam("remaining", type_=NOTES.c.balance_remaining.type)))
def has_credit(customer_id, currency):
    """Whether the customer has balance left in `currency` (values or columns), as SQL."""
    return exists().where(NOTES.c.customer_id == customer_id, NOTES.c.currency == currency,
                          NOTES.c.status == "issued", NOTES.c.balance_remaining > 0)


async def available(db: Db, customer_id: uuid.UUID, currency: str) -> list:
    """The credits a finalization may use, locked until its transaction ends. A unit of `core.base.executor`."""
    return await db.rows(AVAILABLE, {"customer_id": customer_id, "currency": currency})


def allocate(credits: list, total: int) -> tuple[int, list[dict]]:
    """How much of `credits` (rows of `available`) goes to an invoice of `total`, oldest first: the amount
    applied and what remains of each credit used."""
    applied, spent = 0, []
    for credit in credits:
        if applied >= total:
            break
        used = min(credit.balance_remaining, total - applied)
        applied += used
        spent.append({"note_id": credit.id, "remaining": credit.balance_remaining - used})
    return applied, spent


async def spend(db: Db, spent: list[dict]) -> None:
    """Write what `allocate` used. A unit, in the finalization's transaction."""
    if spent:
        await db.execute_many(SPEND, spent)
