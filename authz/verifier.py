"""The resource-server side: turn an `inv_oat_…` access token into a Principal.

Registered with `core.access.credentials` by `service/app.py`, so REST and MCP accept OAuth access
tokens exactly like API keys. Checked on every request: the token's hash, expiry,
revocation, its grant (disconnect, refresh-token reuse) and the audience (RFC 8707).
"""

from __future__ import annotations

from datetime import timedelta

from sqlmodel import Session

from authz import clients, tokens
from core.access import authorization_details
from core.access.principal import Principal
from core.base.clock import now
from core.base.errors import Unauthorized

LAST_USED_PRECISION = timedelta(seconds=60)


def verify_access_token(session: Session, token: str, *, resource: str) -> Principal:
    stored = tokens.find(session, token, kind="access")
    if stored is None:
        raise Unauthorized("The access token is unknown.")
    if stored.grant.revoked_at is not None:
        raise Unauthorized("The access token has been revoked: the app was disconnected or its sign-in ended.")
    if stored.row.revoked_at is not None:
        raise Unauthorized("The access token has been revoked.")
    if stored.is_expired():
        raise Unauthorized("The access token has expired: use the refresh token to get a new one.")
    if stored.grant.resource != resource.rstrip("/"):
        raise Unauthorized(
            f"The access token was issued for another resource ({stored.grant.resource}), not {resource}.")
    _note_use(session, stored)
    client = clients.find(session, stored.grant.client_id)
    return Principal(
        account_id=stored.grant.account_id, granted_scopes=frozenset(stored.row.scopes), actor="oauth_app",
        client_id=stored.grant.client_id, client_name=client.name if client else None, user_id=stored.grant.user_id,
        credential_id=f"grant:{stored.grant.id}", grant_id=stored.grant.id, resource=stored.grant.resource,
        # The grant's current limits: a person lowering them in the dashboard reaches the next request.
        authorization_details=authorization_details.from_stored(stored.grant.authorization_details),
    )


def _note_use(session: Session, stored: tokens.StoredToken) -> None:
    moment = now()
    grant = stored.grant
    if grant.last_used_at is None or moment - grant.last_used_at >= LAST_USED_PRECISION:
        grant.last_used_at = moment
        session.add(grant)
