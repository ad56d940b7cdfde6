"""Finding one row of the caller's account by its public id."""

from __future__ import annotations

import uuid
from typing import TypeVar

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
    row = session.exec(query.with_for_update() if lock else query).first()
    if row is None:
        raise NotFound(f"No such {noun}: {id_text}")
    return row
