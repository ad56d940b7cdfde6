"""The one interface through which resource servers (REST, MCP) verify a bearer credential.

API keys are verified here; OAuth access tokens by the verifier the authorization server
registers, so resource servers never know how tokens are stored.
"""

from __future__ import annotations

from typing import Protocol

from sqlmodel import Session

from core.access import apikeys
from core.access.principal import Principal
from core.base.errors import Unauthorized


class AccessTokenVerifier(Protocol):
    def __call__(self, session: Session, token: str, *, resource: str) -> Principal: ...


_oauth_verifier: AccessTokenVerifier | None = None
OAUTH_ACCESS_TOKEN_PREFIX = "inv_oat_"


def register_oauth_verifier(verifier: AccessTokenVerifier | None) -> None:
    global _oauth_verifier
    _oauth_verifier = verifier


def bearer_token(authorization: str | None) -> str:
    if not authorization:
        raise Unauthorized("No credential: send Authorization: Bearer <API key or access token>.")
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("The Authorization header is malformed: expected 'Bearer <credential>'.")
    return token


def authenticate(session: Session, authorization: str | None, *, resource: str) -> Principal:
    """The caller behind an Authorization header, for the resource (`{base_url}` or `{origin}/mcp`)."""
    token = bearer_token(authorization)
    if token.startswith(OAUTH_ACCESS_TOKEN_PREFIX):
        if _oauth_verifier is None:
            raise Unauthorized("The access token is unknown.")
        return _oauth_verifier(session, token, resource=resource)
    if apikeys.looks_like_api_key(token):
        return apikeys.authenticate(session, token)
    raise Unauthorized("The credential is malformed: expected an API key (inv_live_...) or an access token (inv_oat_...).")
