"""The resource-server side: turn an `inv_oat_…` access token into a Principal.

Registered with `core.access.credentials` by `service/app.py`, so REST and MCP accept OAuth access
tokens exactly like API keys. Checked on every request: the token's hash, expiry,
revocation, its grant (disconnect, refresh-token reuse) and the audience (RFC 8707).
"""

from __future__ import annotations

from collections import namedtuple
from types import SimpleNamespace

from sqlalchemy import Text, and_, bindparam, cast, literal, select, update

from authz import clients, tokens
from authz.models import OAuthClient
from core.access import authorization_details
from core.access.principal import Principal, Verified, stale_before, stale_use, stale_use_clause
from core.base.clock import now
from core.base.errors import Unauthorized
from core.base.executor import Db
from core.mechanisms import ratelimit
from core.models import Membership


async def verify_access_token(db: Db, token: str, *, resource: str) -> Verified:
    """The caller of an access token for `resource`, and how its grant's use is noted; a unit of
    `core.base.executor`."""
    moment = now()
    found = await db.first(ACCESS_STATEMENT, {"token_hash": tokens.hashed(token)}) \
        if token and len(token) <= 200 else None
    principal = _principal(found, moment, resource)

    async def note_use(writer: Db) -> None:
        """The grant's last use, written at most once a minute (the dashboard shows it)."""
        if stale_use(found.last_used_at, moment):
            await writer.execute(NOTE_USE_STATEMENT, {"grant_id": found.grant_id, "moment": moment})
    return Verified(principal, note_use)


async def verify_access_token_counted(db: Db, token: str, *, resource: str) -> tuple[Principal, ratelimit.Usage] | None:
    """PostgreSQL: `verify_access_token`, the request counted against the request limit and the
    grant's use noted, in one statement; None when the token is refused, with nothing counted
    (`verify_access_token` then says why)."""
    if not token or len(token) > 200:
        return None
    moment = now()
    counted = await ratelimit.count_through(db, COUNTED_GATE, ACCESS_COLUMNS, _touched, {
        "token_hash": tokens.hashed(token), "moment": moment, "resource": resource.rstrip("/"),
        "stale_before": stale_before(moment)})
    if counted is None:
        return None
    found, usage = counted
    return _principal(_Access._make(found), moment, resource), usage


def _principal(found, moment, resource: str) -> Principal:
    """The caller of a token read by `ACCESS_STATEMENT` (None: no such token), or Unauthorized saying why."""
    if found is None:
        raise Unauthorized("The access token is unknown.")
    if found.g_revoked_at is not None:
        raise Unauthorized("The access token has been revoked: the app was disconnected or its sign-in ended.")
    if found.revoked_at is not None:
        raise Unauthorized("The access token has been revoked.")
    if found.expires_at <= moment:
        raise Unauthorized("The access token has expired: use the refresh token to get a new one.")
    if found.resource != resource.rstrip("/"):
        raise Unauthorized(f"The access token was issued for another resource ({found.resource}), not {resource}.")
    if found.role is None:
        raise Unauthorized("The access token's person is no longer a member of the business it was granted for.")
    client = clients.Client(SimpleNamespace(**{name: getattr(found, f"c_{name}") for name in CLIENTS.c.keys()})) \
        if found.c_client_id is not None else None
    return Principal(
        account_id=found.account_id, granted_scopes=frozenset(found.scopes), actor="oauth_app", role=found.role,
        client_id=found.client_id, client_name=client.name if client else None, user_id=found.user_id,
        credential_id=f"{CREDENTIAL_PREFIX}{found.grant_id}", grant_id=found.grant_id, resource=found.resource,
        # The grant's current limits: a person lowering them in the dashboard reaches the next request.
        authorization_details=authorization_details.from_stored(found.authorization_details),
    )


def _access_statement():
    grants = tokens.GRANTS
    return (select(tokens.TOKENS.c.scopes, tokens.TOKENS.c.revoked_at, tokens.TOKENS.c.expires_at,
                   grants.c.id.label("grant_id"), grants.c.revoked_at.label("g_revoked_at"), grants.c.resource,
                   grants.c.account_id, grants.c.user_id, grants.c.client_id, grants.c.authorization_details,
                   grants.c.last_used_at, MEMBERS.c.role, *(column.label(f"c_{column.name}") for column in CLIENTS.c))
            .select_from(tokens.TOKENS.join(grants, grants.c.id == tokens.TOKENS.c.grant_id)
                         .outerjoin(CLIENTS, CLIENTS.c.client_id == grants.c.client_id)
                         # The person's role in the business the grant is bound to, now: the bound of its scopes.
                         .outerjoin(MEMBERS, and_(MEMBERS.c.account_id == grants.c.account_id,
                                                  MEMBERS.c.user_id == grants.c.user_id)))
            .where(tokens.TOKENS.c.token_hash == bindparam("token_hash"), tokens.TOKENS.c.kind == "access"))


def _counted_gate():
    """`_principal`'s checks as a CTE, a filter before it (`verify_access_token_counted`): the access
    token of `:token_hash`, unrevoked and unexpired at `:moment`, of a standing grant for
    `:resource` whose person is a member of its business, with `ACCESS_STATEMENT`'s columns and
    `bucket` (the request limit's, per grant)."""
    statement = _access_statement()
    grants, bucket_prefix = tokens.GRANTS, ratelimit.bucket_prefix(ratelimit.API_REQUESTS) + CREDENTIAL_PREFIX
    return statement.add_columns((literal(bucket_prefix) + cast(grants.c.id, Text)).label("bucket")).where(
        tokens.TOKENS.c.revoked_at.is_(None), tokens.TOKENS.c.expires_at > bindparam("moment"),
        grants.c.revoked_at.is_(None), grants.c.resource == bindparam("resource"),
        MEMBERS.c.role.is_not(None)).cte("valid_token")


def _touched(gate, counted):
    """The grant's last use written when it is a minute old, for a request the count allowed."""
    grants = tokens.GRANTS
    return (update(grants).where(grants.c.id == gate.c.grant_id, counted.c.allowed, stale_use_clause(gate.c.last_used_at))
            .values(last_used_at=bindparam("moment")).returning(grants.c.id))


CLIENTS = OAuthClient.__table__
MEMBERS = Membership.__table__
CREDENTIAL_PREFIX = "grant:"  # a grant's credential id (and per-grant limit subject): the prefix, then its id
ACCESS_STATEMENT = _access_statement()
ACCESS_COLUMNS = tuple(ACCESS_STATEMENT.selected_columns.keys())
_Access = namedtuple("_Access", ACCESS_COLUMNS)
COUNTED_GATE = _counted_gate()
NOTE_USE_STATEMENT = (update(tokens.GRANTS).where(tokens.GRANTS.c.id == bindparam("grant_id"))
                      .values(last_used_at=bindparam("moment")))
