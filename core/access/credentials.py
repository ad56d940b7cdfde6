"""The one interface through which resource servers (REST, MCP) verify a bearer credential.

API keys are verified here; OAuth access tokens by the verifier the authorization server
registers, so resource servers never know how tokens are stored.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from core.access import apikeys
from core.access.principal import Principal, Verified
from core.base.errors import Unauthorized
from core.base.executor import Db
from core.mechanisms import ratelimit

T = TypeVar("T")


class AccessTokenVerifier(Protocol):
    def __call__(self, db: Db, token: str, *, resource: str) -> Awaitable[Verified]: ...


class CountingVerifier(Protocol):
    """PostgreSQL: the verifier's checks and the request's count in one statement; None when the
    token is refused, with nothing counted."""

    def __call__(self, db: Db, token: str, *, resource: str) -> Awaitable[tuple[Principal, ratelimit.Usage] | None]: ...


_oauth_verifier: AccessTokenVerifier | None = None
_oauth_counting: CountingVerifier | None = None
OAUTH_ACCESS_TOKEN_PREFIX = "inv_oat_"


def register_oauth_verifier(verifier: AccessTokenVerifier | None, counting: CountingVerifier | None = None) -> None:
    global _oauth_verifier, _oauth_counting
    _oauth_verifier, _oauth_counting = verifier, counting


def bearer_token(authorization: str | None) -> str:
    if not authorization:
        raise Unauthorized("No credential: send Authorization: Bearer <API key or access token>.")
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("The Authorization header is malformed: expected 'Bearer <credential>'.")
    return token


async def authenticate(db: Db, authorization: str | None, *, resource: str,
                       then: Callable[[Db, Principal], Awaitable[T]]) -> tuple[Principal, T]:
    """The caller behind an Authorization header, for the resource (`{base_url}` or `{origin}/mcp`),
    and what `then(db, principal)` gives: run among the same independent writes as noting the
    credential's use (the request's count). A unit of `core.base.executor`."""
    token = bearer_token(authorization)
    if token.startswith(OAUTH_ACCESS_TOKEN_PREFIX):
        if _oauth_verifier is None:
            raise Unauthorized("The access token is unknown.")
        verified = await _oauth_verifier(db, token, resource=resource)
    elif apikeys.looks_like_api_key(token):
        verified = await apikeys.verify(db, token)
    else:
        raise Unauthorized("The credential is malformed: expected an API key (inv_live_...) or an access token "
                           "(inv_oat_...).")
    async with db.independent_writes():
        done = await then(db, verified.principal)
        await verified.note_use(db)
    return verified.principal, done


async def authenticate_counting(db: Db, authorization: str | None, resource: str) -> tuple[Principal, ratelimit.Usage]:
    """`authenticate` with this request counted against the caller's request limit: on PostgreSQL in one
    statement (`apikeys.verify_counted`, the OAuth verifier's counting variant). A unit of
    `core.base.executor`."""
    token = bearer_token(authorization)
    counted = None
    if db.dialect == "postgresql" and apikeys.looks_like_api_key(token):
        counted = await apikeys.verify_counted(db, token)
    elif db.dialect == "postgresql" and token.startswith(OAUTH_ACCESS_TOKEN_PREFIX) and _oauth_counting is not None:
        counted = await _oauth_counting(db, token, resource=resource)
    return counted or await authenticate(db, authorization, resource=resource, then=_count)


async def _count(db: Db, principal: Principal) -> ratelimit.Usage:
    return await ratelimit.count_on(db, ratelimit.api_requests(), principal.rate_limit_subject)
