"""Finding one row of the caller's account by its public id."""

from __future__ import annotations

import uuid
from typing import TypeVar

from sqlalchemy import event
from sqlmodel import Session, SQLModel, select

from core.base import ids
from core.base.errors import NotFound

Row = TypeVar("Row", bound=SQLModel)


def owned(session: Session, model: type[Row], kind: str, account_id: uuid.UUID, id_text: str, *,
          noun: str, lock: bool = False) -> Row:
    """The row with this prefixed id or UUID in this account; NotFound for a malformed id,
    a missing row or another account's row alike, so ids cannot be probed."""
    row_id = ids.parse(kind, id_text, what=noun)
    query = select(model).where(model.id == row_id, model.account_id == account_id)
    if lock:  # read as it is under the lock, whatever the session held of it before
        query = query.with_for_update().execution_options(populate_existing=True)
    row = session.exec(query).first()
    if row is None:
        raise NotFound(f"No such {noun}: {id_text}")
    if lock:
        locked_rows(session).add(row_id)
    return row


def locked(session: Session, model: type[Row], row_id: uuid.UUID, *, skip_locked: bool = False) -> Row | None:
    """The row with this id read under its row lock (`FOR UPDATE`; SQLite's writers are serialized
    already), as it is now whatever the session held of it; None when there is none, or, with
    `skip_locked`, when another transaction holds it (PostgreSQL)."""
    query = select(model).where(model.id == row_id).with_for_update(skip_locked=skip_locked)
    row = session.exec(query.execution_options(populate_existing=True)).first()
    if row is not None:
        locked_rows(session).add(row_id)
    return row


def locked_rows(session: Session) -> set[uuid.UUID]:
    """The ids of the rows this session's transaction has read under a row lock (`FOR UPDATE`)."""
    return session.info.setdefault(LOCKED_ROWS, set())


LOCKED_ROWS = "locked_rows"


@event.listens_for(Session, "after_transaction_end")
def _locks_released(session: Session, transaction) -> None:
    # The transaction's end released its locks; a savepoint's rollback releases those taken inside it
    # (its commit keeps them: forgetting them too only costs a second locked read).
    if transaction.parent is None or transaction.nested:
        session.info.pop(LOCKED_ROWS, None)
