"""Authorization codes and tokens at rest: issued, looked up by hash, used once, revoked.

Codes live 60 seconds and work once; presenting a used code again revokes the grant it produced.
Access tokens `inv_oat_…` live an hour, refresh tokens `inv_ort_…` 30 days and are rotated on
every use; presenting a rotated refresh token again revokes the whole grant (every token of that
sign-in), since either the client or an attacker holds a stolen copy.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta
from types import SimpleNamespace

from sqlalchemy import bindparam, exists, insert, union_all, update
from sqlmodel import Session, select

from authz.models import OAuthAuthorizationCode, OAuthGrant, OAuthToken
from core.base import crypto, executor
from core.base.clock import now
from core.base.executor import Db

ACCESS_TOKEN_PREFIX = "inv_oat_"
REFRESH_TOKEN_PREFIX = "inv_ort_"
ACCESS_TOKEN_LIFETIME = timedelta(hours=1)
REFRESH_TOKEN_LIFETIME = timedelta(days=30)
CODE_LIFETIME = timedelta(seconds=60)
TOKENS, GRANTS = OAuthToken.__table__, OAuthGrant.__table__


def new_access_token(**_: object) -> str:
    return ACCESS_TOKEN_PREFIX + crypto.token(32)


def new_refresh_token(**_: object) -> str:
    return REFRESH_TOKEN_PREFIX + crypto.token(32)


def hashed(value: str) -> str:
    return crypto.sha256_hex(value)


# --- authorization codes ----------------------------------------------------------------------


@dataclass
class IssuedCode:
    """Authlib's view of a redeemed code (AuthorizationCodeMixin)."""

    row: OAuthAuthorizationCode

    def get_redirect_uri(self) -> str | None:
        return self.row.redirect_uri

    def get_scope(self) -> str:
        return " ".join(self.row.scopes)

    @property
    def code_challenge(self) -> str:
        return self.row.code_challenge

    @property
    def code_challenge_method(self) -> str:
        return self.row.code_challenge_method


def save_code(session: Session, code: str, *, client_id: str, user_id: uuid.UUID, account_id: uuid.UUID,
              redirect_uri: str | None, scopes: list[str], resource: str, code_challenge: str,
              code_challenge_method: str, authorization_details: list | None = None) -> None:
    issued = now()
    session.add(OAuthAuthorizationCode(
        code_hash=hashed(code), client_id=client_id, user_id=user_id, account_id=account_id,
        redirect_uri=redirect_uri, scopes=scopes, resource=resource, code_challenge=code_challenge,
        authorization_details=authorization_details,
        code_challenge_method=code_challenge_method, created_at=issued, expires_at=issued + CODE_LIFETIME,
    ))


def redeem_code(session: Session, code: str, client_id: str) -> IssuedCode | None:
    """The code if it is valid for this client; it is used up by being presented."""
    row = session.exec(
        select(OAuthAuthorizationCode).where(OAuthAuthorizationCode.code_hash == hashed(code)).with_for_update()
    ).first()
    if row is None:
        return None
    if row.used_at is not None:
        if row.grant_id is not None:
            revoke_grant(session, row.grant_id)
        return None
    row.used_at = now()
    session.add(row)
    if row.client_id != client_id or row.expires_at <= now():
        return None
    return IssuedCode(row)


# --- grants and tokens --------------------------------------------------------------------------


@dataclass
class StoredToken:
    """Authlib's view of a stored token (TokenMixin)."""

    row: OAuthToken
    grant: OAuthGrant
    user_exists: bool = True  # the person the grant was made for (a refresh needs one)

    def check_client(self, client) -> bool:
        return self.grant.client_id == client.get_client_id()

    def get_scope(self) -> str:
        return " ".join(self.row.scopes)

    def get_expires_in(self) -> int:
        return int((self.row.expires_at - self.row.created_at).total_seconds())

    def is_expired(self) -> bool:
        return self.row.expires_at <= now()

    def is_revoked(self) -> bool:
        return self.row.revoked_at is not None or self.grant.revoked_at is not None

    @property
    def is_refresh_token(self) -> bool:
        return self.row.kind == "refresh"


def start_grant(session: Session, code: IssuedCode) -> OAuthGrant:
    """The sign-in a code was issued for; every token of it will point here."""
    row = code.row
    grant = OAuthGrant(client_id=row.client_id, user_id=row.user_id, account_id=row.account_id,
                       resource=row.resource, scopes=list(row.scopes), authorization_details=row.authorization_details)
    session.add(grant)
    session.flush()
    row.grant_id = grant.id
    session.add(row)
    return grant


def pair_rows(grant_id: uuid.UUID, token: dict, issued) -> list[dict]:
    """The rows of a token response's access token (and refresh token), hashed, as issued at `issued`."""
    row = {"id": uuid.uuid4(), "grant_id": grant_id, "kind": "access", "token_hash": hashed(token["access_token"]),
           "scopes": token.get("scope", "").split(), "created_at": issued,
           "expires_at": issued + ACCESS_TOKEN_LIFETIME, "revoked_at": None, "used_at": None}
    if not token.get("refresh_token"):
        return [row]
    return [row, {**row, "id": uuid.uuid4(), "kind": "refresh", "token_hash": hashed(token["refresh_token"]),
                  "expires_at": issued + REFRESH_TOKEN_LIFETIME}]


def store_pair(session: Session, grant: OAuthGrant, token: dict) -> None:
    """Store the access token (and refresh token) of a token response, hashed: one INSERT (Core:
    the ORM's unit of work cost ~20 % of a token request; the statement is compiled once)."""
    session.connection().execute(STORE_STATEMENT, pair_rows(grant.id, token, now()))  # SQLAlchemy's "insertmanyvalues"


class _NotRotated(Exception):
    """The spent token was not marked: nothing of the pair is written."""


async def rotate(db: Db, spent: StoredToken, token: dict) -> bool:
    """The new pair of a refresh written and the spent token marked, all or nothing, only while the
    spent token is unspent and unrevoked and its grant stands (of two uses of one token, one wins):
    whether it was. On PostgreSQL one statement, on SQLite (no UPDATE in a WITH) two in one write
    transaction. A unit of `core.base.executor`."""
    moment = now()
    rows = pair_rows(spent.grant.id, token, moment)
    if db.dialect == "postgresql":
        async with db.transaction() as tx:  # on the connections whose commit is flushed to disk
            return await tx.first(STORE_ROTATING_STATEMENT, rotating_parameters(spent, moment, rows)) is not None
    try:
        async with db.transaction() as tx:
            if await tx.first(_ROTATED, {"rotated_id": spent.row.id, "moment": moment}) is None:
                raise _NotRotated
            for row in rows:
                await tx.execute(STORE_STATEMENT, row)
    except _NotRotated:
        return False
    return True


def rotating_parameters(spent: StoredToken, moment, rows: list[dict]) -> dict:
    """The parameters of `STORE_ROTATING_STATEMENT`: the spent token's mark and the new pair's rows."""
    access, refresh = rows
    return {"rotated_id": spent.row.id, "moment": moment, **{f"a_{name}": value for name, value in access.items()},
            **{f"r_{name}": value for name, value in refresh.items()}}


def with_granted_details(token: dict, grant) -> None:
    """RFC 9396 §7: a token response says which authorization details were granted."""
    if grant.authorization_details is not None:
        token["authorization_details"] = grant.authorization_details


def find(session: Session, value: str, *, kind: str | None = None, lock: bool = False) -> StoredToken | None:
    if not value or len(value) > 200:
        return None
    query = select(OAuthToken).where(OAuthToken.token_hash == hashed(value))
    if kind:
        query = query.where(OAuthToken.kind == kind)
    row = session.exec(query.with_for_update() if lock else query).first()
    if row is None:
        return None
    return StoredToken(row, session.get(OAuthGrant, row.grant_id))


def stored_refresh_token(values) -> StoredToken:
    """A refresh token from a row of `refresh_statement`'s columns (by name)."""
    return StoredToken(SimpleNamespace(**{name: values[name] for name in TOKENS.c.keys()}),
                       SimpleNamespace(**{name: values[f"g_{name}"] for name in GRANTS.c.keys()}),
                       user_exists=values["u_id"] is not None)


def refresh_statement():
    """A refresh token by its hash, with its grant's columns (`g_…`) and its person's id (`u_id`, NULL
    when the person is gone)."""
    from core.models import User
    users = User.__table__
    return (select(*TOKENS.c, *(column.label(f"g_{column.name}") for column in GRANTS.c), users.c.id.label("u_id"))
            .select_from(TOKENS.join(GRANTS, GRANTS.c.id == TOKENS.c.grant_id)
                         .outerjoin(users, users.c.id == GRANTS.c.user_id))
            .where(TOKENS.c.token_hash == bindparam("token_hash"), TOKENS.c.kind == "refresh"))


def revoke_token(session: Session, token: StoredToken) -> None:
    """RFC 7009: revoking a refresh token ends the grant; an access token ends alone."""
    if token.is_refresh_token:
        revoke_grant(session, token.grant.id)
    elif token.row.revoked_at is None:
        token.row.revoked_at = now()
        session.add(token.row)


def revoke_grant(session: Session, grant_id: uuid.UUID) -> None:
    executor.within(session, revoke_grant_on, grant_id)


async def revoke_grant_on(db: Db, grant_id: uuid.UUID) -> None:
    """The sign-in ended: its grant and every token of it revoked. A unit of `core.base.executor`."""
    parameters = {"ended_grant": grant_id, "moment": now()}
    async with db.transaction() as tx:
        await tx.execute(_REVOKE_GRANT, parameters)
        await tx.execute(_REVOKE_GRANTS_TOKENS, parameters)


_REVOKE_GRANT = (update(GRANTS).where(GRANTS.c.id == bindparam("ended_grant"), GRANTS.c.revoked_at.is_(None))
                 .values(revoked_at=bindparam("moment")))
_REVOKE_GRANTS_TOKENS = (update(TOKENS).where(TOKENS.c.grant_id == bindparam("ended_grant"), TOKENS.c.revoked_at.is_(None))
                         .values(revoked_at=bindparam("moment")))


def _rotate_statement():
    """A spent refresh token marked, only while it is unspent and unrevoked and its grant stands (so
    of two uses of one token, one marks it)."""
    standing = exists().where(GRANTS.c.id == TOKENS.c.grant_id, GRANTS.c.revoked_at.is_(None))
    return (update(TOKENS).where(TOKENS.c.id == bindparam("rotated_id"), TOKENS.c.used_at.is_(None),
                                 TOKENS.c.revoked_at.is_(None), standing).values(used_at=bindparam("moment")))


def _store_rotating_statement():
    """PostgreSQL: the new pair (`a_…`, `r_…`), inserted only when the same statement marked the spent
    token (`ROTATE_STATEMENT` in a CTE; SQLite has no UPDATE in a WITH); its ids, none when it did not."""
    rotated = ROTATE_STATEMENT.returning(TOKENS.c.id).cte("rotated")
    pair = union_all(*(select(*(bindparam(f"{prefix}_{name}", type_=column.type) for name, column in TOKENS.c.items()))
                       .select_from(rotated) for prefix in ("a", "r")))
    return insert(TOKENS).from_select(list(TOKENS.c.keys()), pair).add_cte(rotated).returning(TOKENS.c.id)


ROTATE_STATEMENT = _rotate_statement()
_ROTATED = ROTATE_STATEMENT.returning(TOKENS.c.id)
# Written once with a parameter per value, so it is compiled once (`values(rows)` is compiled each time).
STORE_STATEMENT = insert(TOKENS).values({name: bindparam(name, type_=column.type) for name, column in TOKENS.c.items()})
STORE_ROTATING_STATEMENT = _store_rotating_statement()
