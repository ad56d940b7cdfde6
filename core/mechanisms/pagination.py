"""Keyset pagination, newest first, with opaque cursors signed and bound to account and filters."""

from __future__ import annotations

import functools
import hashlib
import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import OctKey
from sqlalchemy import and_, or_

from config.settings import get_settings
from core.base.errors import ValidationFailed

DEFAULT_LIMIT = 25
MAX_LIMIT = 100


def clamp_limit(limit: int | None) -> int:
    """limit 1 to 100, default 25; larger values are capped (the spec's pagination rule)."""
    if limit is None:
        return DEFAULT_LIMIT
    if limit < 1:
        raise ValidationFailed.at("limit", "must be at least 1")
    return min(limit, MAX_LIMIT)


@dataclass(frozen=True)
class Position:
    created: datetime
    id: uuid.UUID


def _key() -> OctKey:
    return _key_of(get_settings().signing_key)


@functools.lru_cache(maxsize=4)
def _key_of(signing_key: bytes) -> OctKey:
    """Derived once per signing key (a page of a list signs its cursor on every request)."""
    return OctKey.import_key(hashlib.sha256(b"cursor:" + signing_key).digest())


def _fingerprint(filters: dict[str, Any]) -> str:
    canonical = json.dumps(filters, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def encode_cursor(kind: str, account_id: uuid.UUID, filters: dict[str, Any], after: Position) -> str:
    payload = {
        "k": kind, "a": str(account_id), "f": _fingerprint(filters),
        "t": after.created.isoformat(), "i": str(after.id),
    }
    data = json.dumps(payload, separators=(",", ":")).encode()
    return jws.serialize_compact({"alg": "HS256"}, data, _key())


def decode_cursor(cursor: str, kind: str, account_id: uuid.UUID, filters: dict[str, Any]) -> Position:
    invalid = ValidationFailed.at(
        "cursor", "is not a cursor of this list: send the next_cursor of the previous page with the same filters")
    payload = _payload(cursor)
    if payload is None or (payload["k"], payload["a"], payload["f"]) != (kind, str(account_id), _fingerprint(filters)):
        raise invalid
    return payload["position"]


def _payload(cursor: str) -> dict | None:
    if len(cursor) > 1000:
        return None
    try:
        payload = json.loads(jws.deserialize_compact(cursor, _key(), algorithms=["HS256"]).payload)
        return {"k": payload["k"], "a": payload["a"], "f": payload["f"],
                "position": Position(datetime.fromisoformat(payload["t"]), uuid.UUID(payload["i"]))}
    except (JoseError, ValueError, KeyError, TypeError):
        return None


@dataclass(frozen=True)
class Page:
    rows: list
    next_cursor: str | None


def after(created, row_id, position_created, position_id):
    """The keyset condition of the rows after a position, newest first: created before it, or at the
    same moment with a smaller id (the columns and the position's values as SQL expressions)."""
    return or_(created < position_created, and_(created == position_created, row_id < position_id))


def last_page_row(rows: list, limit: int) -> tuple[list, Any]:
    """A page read with one row more than it shows: its rows, and the last of them when there is a
    next page (the one the cursor points after), else None."""
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    return rows, rows[-1]


def paginate(session, query, model, *, kind: str, account_id: uuid.UUID, filters: dict[str, Any],
             cursor: str | None, limit: int | None, created_column: str = "created") -> Page:
    """Run `query` (already filtered to the account) newest first, one page at a time."""
    limit = clamp_limit(limit)
    created = getattr(model, created_column)
    if cursor:
        position = decode_cursor(cursor, kind, account_id, filters)
        query = query.where(after(created, model.id, position.created, position.id))
    rows, last = last_page_row(list(session.exec(query.order_by(created.desc(), model.id.desc()).limit(limit + 1))),
                               limit)
    next_cursor = None
    if last is not None:
        next_cursor = encode_cursor(kind, account_id, filters, Position(getattr(last, created_column), last.id))
    return Page(rows, next_cursor)
