"""The refresh grant, on the event loop: one read, Authlib's grant on what it read, one write.

A connected assistant refreshes its access token every hour, all day long. The token endpoint
(`authz.app`) hands every refresh here after checking the request as it checks any: one statement
reads the client named (the form's `client_id`, or Basic credentials) and the refresh token
presented, with its grant and whether the grant's person exists; Authlib's own grant
(`authz.grants.RefreshGrant`: client authentication, the token's checks, scopes, resource and
authorization details) runs on those rows with no database inside; then `tokens.rotate` writes the
new pair and marks the spent token, only while it is unspent and its grant stands. A spent token
presented again (reuse), and a token spent by another use meanwhile, end the sign-in: of several
uses of one token at once exactly one gets a pair.
"""

from __future__ import annotations

from types import SimpleNamespace

from authlib.oauth2.rfc6749 import InvalidGrantError, OAuth2Error, UnsupportedGrantTypeError
from sqlalchemy import bindparam, select, true
from starlette.responses import Response

from authz import tokens
from authz.adapter import HttpInput
from authz.clients import Client
from authz.grants import Prefetched, RefreshGrant
from authz.models import OAuthClient
from authz.server import server
from core.base import executor
from core.base.executor import Db

CLIENTS = OAuthClient.__table__
MAX_TOKEN, MAX_CLIENT_ID = 200, 2048


async def token_response(http: HttpInput, client_id: str | None) -> Response:
    """The token endpoint's answer to a refresh (`grant_type=refresh_token`) by `client_id`."""
    request = server.create_oauth2_request(http)
    try:
        grant = server.get_token_grant(request)
    except UnsupportedGrantTypeError as error:
        return server.handle_error_response(request, error)
    if not isinstance(grant, RefreshGrant):
        raise TypeError("only a refresh comes here")
    grant.prefetched = await executor.run(_read, request.payload.data.get("refresh_token"), client_id,
                                          repeatable=True)
    presented = grant.prefetched.token
    if presented is not None and presented.row.used_at is not None:
        await executor.run(tokens.revoke_grant_on, presented.grant.id)  # reuse: the sign-in ends
    try:
        grant.validate_token_request()
        status, body, headers = grant.create_token_response()
    except OAuth2Error as error:
        return server.handle_error_response(request, error)
    if not await executor.run(tokens.rotate, presented, grant.issued):
        # Spent by another use meanwhile (so this one is reuse), or the sign-in ended: no pair.
        await executor.run(tokens.revoke_grant_on, presented.grant.id)
        return server.handle_error_response(request, InvalidGrantError())
    return server.handle_response(status, body, headers)


async def _read(db: Db, value: object, client_id: str | None) -> Prefetched:
    """The client of `client_id` and the refresh token `value`, each None when there is none."""
    if not client_id or len(client_id) > MAX_CLIENT_ID:
        return Prefetched(None, None)
    if not isinstance(value, str) or not 0 < len(value) <= MAX_TOKEN:
        value = ""  # no token has an empty hash: the client alone
    row = await db.first(READ_STATEMENT, {"client_id": client_id, "token_hash": tokens.hashed(value)})
    if row is None:
        return Prefetched(None, None)
    values = row._asdict()
    client = Client(SimpleNamespace(**{name: values[f"c_{name}"] for name in CLIENTS.c.keys()}))
    token = tokens.stored_refresh_token(values) if values["id"] is not None else None
    return Prefetched(client, token)


def _read_statement():
    """The client of `:client_id` (`c_…`; no row when there is none) and, when there is one, the
    refresh token of `:token_hash` with its grant and person (`tokens.refresh_statement`)."""
    client = select(CLIENTS).where(CLIENTS.c.client_id == bindparam("client_id")).subquery("client")
    found = tokens.refresh_statement().subquery("found")
    return (select(*found.c, *(client.c[name].label(f"c_{name}") for name in CLIENTS.c.keys()))
            .select_from(client.outerjoin(found, true())))


READ_STATEMENT = _read_statement()
