"""API keys `inv_live_<8>_<32>`: the 8-character part finds the row, the rest is kept only hashed."""

from __future__ import annotations

import re
import uuid
from collections import namedtuple
from dataclasses import dataclass
from datetime import timedelta

import sqlalchemy as sa
from sqlmodel import Session, select

from core.access import activity
from core.access.principal import Principal, Verified, stale_before, stale_use, stale_use_clause
from core.access.scopes import PRESETS, ordered, unknown_scopes
from core.base import crypto
from core.base.clock import now
from core.base.errors import NotFound, Unauthorized, ValidationFailed
from core.base.executor import Db
from core.base.validation import NAME_MAX, acceptable_text
from core.mechanisms import ratelimit
from core.models import ApiKey, Membership

KEY_PATTERN = re.compile(r"^inv_live_([A-Za-z0-9]{8})_([A-Za-z0-9]{32})$")
MAX_EXPIRY_DAYS = 3650


@dataclass(frozen=True)
class CreatedKey:
    row: ApiKey
    key: str  # shown once, never stored


def resolve_scopes(*, preset: str | None = None, scopes: list[str] | None = None) -> list[str]:
    if preset:
        if preset not in PRESETS:
            raise ValidationFailed.at("preset", f"unknown preset (one of {', '.join(PRESETS)})")
        return list(PRESETS[preset])
    scopes = [s.strip() for s in scopes or [] if s.strip()]
    if not scopes:
        raise ValidationFailed.at("scopes", "choose a preset or at least one scope")
    if bad := unknown_scopes(scopes):
        raise ValidationFailed.at("scopes", f"unknown scope {bad[0]}")
    return ordered(scopes)


def create_key(session: Session, account_id: uuid.UUID, *, created_by: uuid.UUID, name: str, scopes: list[str],
               expires_in_days: int = 0) -> CreatedKey:
    """A key of the business that acts as `created_by` (a member): bounded by their role there."""
    name = acceptable_text(name.strip(), "name", max_length=NAME_MAX)
    if not scopes:
        raise ValidationFailed.at("scopes", "choose a preset or at least one scope")
    if bad := unknown_scopes(scopes):
        raise ValidationFailed.at("scopes", f"unknown scope {bad[0]}")
    if not 0 <= expires_in_days <= MAX_EXPIRY_DAYS:
        raise ValidationFailed.at("expires_in_days", f"must be 0 (never) to {MAX_EXPIRY_DAYS}")
    lookup_id = crypto.random_string(8)
    secret = crypto.random_string(32)
    row = ApiKey(
        account_id=account_id, created_by_user_id=created_by, name=name, lookup_id=lookup_id,
        secret_hash=crypto.sha256_hex(secret), scopes=ordered(scopes),
        expires_at=now() + timedelta(days=expires_in_days) if expires_in_days else None,
    )
    session.add(row)
    session.flush()
    activity.by_person(session, account_id, created_by, "api_key.created",
                       f"Created the API key “{row.name}” ({', '.join(row.scopes)})")
    return CreatedKey(row=row, key=f"inv_live_{lookup_id}_{secret}")


def list_keys(session: Session, account_id: uuid.UUID) -> list[ApiKey]:
    query = select(ApiKey).where(ApiKey.account_id == account_id).order_by(ApiKey.created_at.desc())
    return list(session.exec(query))


def revoke_key(session: Session, account_id: uuid.UUID, key_id: str, *, by: uuid.UUID | None = None) -> ApiKey:
    """Revoke a key of the business (`by`: the person who did, for its activity)."""
    try:
        row_id = uuid.UUID(key_id)
    except ValueError:
        row = session.exec(select(ApiKey).where(ApiKey.lookup_id == key_id)).first()
    else:
        row = session.get(ApiKey, row_id)
    if row is None or row.account_id != account_id:
        raise NotFound("No such API key.")
    if row.revoked_at is None:
        row.revoked_at = now()
        session.add(row)
        if by is not None:
            activity.by_person(session, account_id, by, "api_key.revoked", f"Revoked the API key “{row.name}”")
    return row


CREDENTIAL_PREFIX = "key:"  # a key's credential id (and per-key limit subject): the prefix, then its id


def looks_like_api_key(token: str) -> bool:
    return token.startswith("inv_live_")


async def verify(db: Db, token: str) -> Verified:
    """The caller of an API key, and how its use is noted (at most once a minute)."""
    lookup_id, secret = split(token)
    row = await db.first(KEY_STATEMENT, {"lookup_id": lookup_id})
    moment = now()
    principal = verified(row, secret, moment)

    async def note_use(writer: Db) -> None:
        if stale_use(row.last_used_at, moment):
            await writer.execute(TOUCH_STATEMENT, {"key_id": row.id, "moment": moment})
    return Verified(principal, note_use)


def split(token: str) -> tuple[str, str]:
    """The lookup id and the secret of an API key; Unauthorized when it is not shaped like one."""
    match = KEY_PATTERN.match(token)
    if not match:
        raise Unauthorized("The API key is malformed.")
    return match.group(1), match.group(2)


def verified(row, secret: str, moment) -> Principal:
    """The caller of a key `row` (an `api_keys` row, ORM object or Core row; None when no key has the
    lookup id) presented with `secret`, or Unauthorized saying why."""
    # Compare even when the row is missing so timing does not reveal which lookup ids exist.
    expected = row.secret_hash if row is not None else crypto.sha256_hex("")
    if not crypto.same(crypto.sha256_hex(secret), expected) or row is None:
        raise Unauthorized("The API key is unknown.")
    if row.revoked_at is not None:
        raise Unauthorized("The API key has been revoked.")
    if row.expires_at is not None and row.expires_at <= moment:
        raise Unauthorized("The API key has expired.")
    if row.role is None:
        raise Unauthorized("The person who created this API key is no longer a member of its business.")
    return Principal(
        account_id=row.account_id, granted_scopes=frozenset(row.scopes), actor="api_key", role=row.role,
        api_key_id=row.id, user_id=row.created_by_user_id, credential_id=f"{CREDENTIAL_PREFIX}{row.id}",
    )


# The same rules as SQL, for the statement that checks a key and counts its request (PostgreSQL). The
# key's creator's role in its business comes with it: the bound of its scopes, read on every request.

KEYS = ApiKey.__table__
MEMBERS = Membership.__table__
_KEY_AND_ROLE = KEYS.outerjoin(MEMBERS, sa.and_(MEMBERS.c.account_id == KEYS.c.account_id,
                                                MEMBERS.c.user_id == KEYS.c.created_by_user_id))
_SELECTED = (*(KEYS.c[name] for name in ("id", "account_id", "created_by_user_id", "secret_hash", "scopes",
                                         "revoked_at", "expires_at", "last_used_at")), MEMBERS.c.role)
KEY_COLUMNS = tuple(column.name for column in _SELECTED)
KEY_STATEMENT = sa.select(*_SELECTED).select_from(_KEY_AND_ROLE).where(KEYS.c.lookup_id == sa.bindparam("lookup_id"))
TOUCH_STATEMENT = sa.update(KEYS).where(KEYS.c.id == sa.bindparam("key_id")).values(last_used_at=sa.bindparam("moment"))


def valid_key(bucket_prefix: str):
    """`verified` as a CTE, a filter before it (`verify_counted`): the key of `:lookup_id` whose secret
    hashes to `:secret_hash`, not revoked, not expired at `:moment`, of a member of its business,
    with its columns (and the member's role) and `bucket`
    (`bucket_prefix` + its credential id); no row otherwise."""
    from sqlalchemy import Text, and_, bindparam, cast, literal, or_
    from sqlalchemy import select as core_select
    bucket = literal(bucket_prefix + CREDENTIAL_PREFIX) + cast(KEYS.c.id, Text)
    return core_select(*_SELECTED, bucket.label("bucket")).select_from(_KEY_AND_ROLE).where(and_(
        MEMBERS.c.role.is_not(None),
        KEYS.c.lookup_id == bindparam("lookup_id"), KEYS.c.secret_hash == bindparam("secret_hash"),
        KEYS.c.revoked_at.is_(None), or_(KEYS.c.expires_at.is_(None), KEYS.c.expires_at > bindparam("moment")))
    ).cte("valid_key")


# The key checked and the request counted in one statement (PostgreSQL): the caller's first round trip.
COUNTED_GATE = valid_key(ratelimit.bucket_prefix(ratelimit.API_REQUESTS))


async def verify_counted(db: Db, token: str) -> tuple[Principal, ratelimit.Usage] | None:
    """PostgreSQL: `verify`, the request counted against the request limit and the key's use noted, in
    one statement; None when the key is refused, with nothing counted (`verify` then says why)."""
    lookup_id, secret = split(token)
    moment = now()
    counted = await ratelimit.count_through(db, COUNTED_GATE, KEY_COLUMNS, _touched, {
        "lookup_id": lookup_id, "secret_hash": crypto.sha256_hex(secret), "moment": moment,
        "stale_before": stale_before(moment)})
    if counted is None:
        return None
    key, usage = counted
    return verified(_CountedKey._make(key), secret, moment), usage


_CountedKey = namedtuple("_CountedKey", KEY_COLUMNS)


def _touched(gate, counted):
    """The key's last use written when it is a minute old, for a request the count allowed."""
    return (sa.update(KEYS).where(KEYS.c.id == gate.c.id, counted.c.allowed, stale_use_clause(gate.c.last_used_at))
            .values(last_used_at=sa.bindparam("moment")).returning(KEYS.c.id))


