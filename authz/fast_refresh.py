"""The refresh grant in the fast lane (`service.fast_lane`).

A connected assistant refreshes its access token every hour, all day long. Through the token endpoint
a refresh costs the middleware stack, a hop into a thread and a transaction held across Authlib's
work. Here Authlib's own grant (`authz.grants.RefreshGrant`, its client authentication and token
generation) runs on rows read up front by one statement: the client, the token, its grant and whether
the grant's person exists. Then the new pair is written and the spent token marked, on condition that
it is still unspent and unrevoked and its grant still stands: of two uses of one token, exactly one
wins. On PostgreSQL that is one more statement, on the event loop (asyncpg); on SQLite two statements
in one write turn, in a thread (sqlite3).

The lane takes only a public client's plain refresh: a form of `grant_type`, `refresh_token` and
`client_id`, with no Authorization header, no Origin (the endpoint's CORS answers browsers), no query,
and a client, token and person the grant accepts. Everything else goes on to the token endpoint, and
so do an OAuth error, a spent token (whose reuse revokes the grant there) and a lost race. The lane
has written nothing for any of them, so the endpoint answers as it always does.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from types import SimpleNamespace

import anyio
from authlib.oauth2.rfc6749 import ClientAuthentication, OAuth2Error
from sqlalchemy import JSON, bindparam, exists, insert, select, union_all, update
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, Response
from starlette.types import Scope, Send

from authz import metadata_documents, tokens
from authz.adapter import HttpInput, urlencoded_fields
from authz.clients import Client
from authz.grants import RefreshGrant
from authz.models import OAuthClient
from authz.server import server
from core.base import context, metrics, raw
from core.base.clock import now
from core.base.db import get_engine
from core.base.validation import unacceptable_parameters

log = logging.getLogger("invoicing.oauth")
PATH = ROUTE = "/oauth/token"
FIELDS = ["client_id", "grant_type", "refresh_token"]  # sorted
FORM = b"application/x-www-form-urlencoded"
MAX_BODY = 1024  # a refresh is ~120 bytes; anything larger goes to the endpoint
CLIENTS, TOKENS, GRANTS = OAuthClient.__table__, tokens.TOKENS, tokens.GRANTS
# What the endpoint's CORS middleware adds to an answer to a request without Origin.
ANSWERED_HEADERS = [(b"vary", b"Origin")]
UNAVAILABLE = JSONResponse({"error": "temporarily_unavailable", "error_description": "The database is unavailable; "
                            "retry the request."}, status_code=503, headers={"Cache-Control": "no-store"})


def lane_target(scope: Scope) -> int | None:
    """The declared length of the body of a request the lane may take, or None."""
    if (scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != PATH or scope.get("root_path")
            or scope["query_string"]):
        return None
    length, form = None, False
    for name, value in scope["headers"]:
        if name == b"content-length":
            if length is not None or not value.isdigit():
                return None
            length = int(value)
        elif name == b"content-type":
            form = value == FORM
        elif name in (b"authorization", b"origin", b"transfer-encoding"):
            return None
    return length if form and length is not None and 0 < length <= MAX_BODY else None


async def serve(scope: Scope, body: bytes, send: Send) -> int | None:
    """Answer the refresh (its status), or None having sent and written nothing: the endpoint answers."""
    form = _plain_refresh(body)
    if form is None:
        return None
    if get_engine().dialect.name == "postgresql":
        response = await _answer_postgresql(scope, form)
    else:  # sqlite3 has no asynchronous driver: a thread
        response = await anyio.to_thread.run_sync(_answer_sqlite, scope, form)
    if response is None:
        return None
    if response.status_code == 200:
        metrics.oauth_token("refresh_token", "issued")
    await send({"type": "http.response.start", "status": response.status_code,
                "headers": [*response.raw_headers, *ANSWERED_HEADERS, (b"x-request-id", context.request_id().encode())]})
    await send({"type": "http.response.body", "body": response.body})
    return response.status_code


async def _answer_postgresql(scope: Scope, form: dict[str, str]) -> Response | None:
    try:
        row = await raw.postgres_connections().fetchrow(READ.sql, READ.arguments(_read_parameters(form)))
    except Exception:  # the endpoint meets the same fault and answers it
        return None
    found = _found(_parsed(row)) if row is not None else None
    answer = _granted(scope, form, found) if found is not None else None
    if answer is None:
        return None
    try:
        written = await _write_postgresql(_write_parameters(found.token, answer.issued))
    except Exception:
        return _unknown_outcome()
    return answer.response if written else None  # not written: spent or revoked meanwhile, the endpoint's


async def _write_postgresql(parameters: dict) -> bool:
    """The new pair written and the spent token marked, in one statement; False when it was not."""
    return await raw.postgres_connections(durable=True).fetchrow(WRITE.sql, WRITE.arguments(_as_text(parameters))) \
        is not None


def _answer_sqlite(scope: Scope, form: dict[str, str]) -> Response | None:
    with raw.sqlite_connection() as connection:
        try:
            rows = raw.sqlite_text(READ_STATEMENT).run(connection, _read_parameters(form))
        except Exception:
            return None
        found = _found(rows[0]._asdict()) if rows else None
        answer = _granted(scope, form, found) if found is not None else None
        if answer is None:
            return None
        try:
            written = _write_sqlite(connection, _write_parameters(found.token, answer.issued))
        except Exception:
            return _unknown_outcome()
    return answer.response if written else None


def _write_sqlite(connection, parameters: dict) -> bool:
    """The spent token marked, then the new pair written, in one write turn (SQLite has no UPDATE in a
    WITH); False, and nothing written, when it could not be marked."""
    try:
        with raw.sqlite_writing(connection):
            if raw.sqlite_text(ROTATE_STATEMENT).execute(connection, parameters).rowcount != 1:
                raise raw.Rollback
            for prefix in ("a_", "r_"):
                raw.sqlite_text(tokens.STORE_STATEMENT).execute(connection, {
                    name[2:]: value for name, value in parameters.items() if name.startswith(prefix)})
    except raw.Rollback:
        return False
    return True


def _unknown_outcome() -> Response:
    """A write that failed: whether it was made is unknown. Answered as the endpoint answers a
    database fault."""
    log.error("the refresh lane's write failed (request %s)", context.request_id(), exc_info=True)
    return UNAVAILABLE


def _plain_refresh(body: bytes) -> dict[str, str] | None:
    """The form of a plain refresh by a client that is no metadata document, or None."""
    try:
        fields = urlencoded_fields(body)
    except HTTPException:
        return None
    form = dict(fields)
    if len(fields) != len(FIELDS) or sorted(form) != FIELDS or form["grant_type"] != "refresh_token":
        return None
    if unacceptable_parameters(fields) or metadata_documents.is_document_client_id(form["client_id"]):
        return None
    if not 0 < len(form["refresh_token"]) <= 200 or not 0 < len(form["client_id"]) <= 2048:
        return None
    return form


@dataclass(frozen=True)
class _Found:
    client: Client
    token: tokens.StoredToken


def _parsed(row) -> dict:
    """An asyncpg row of the read as a mapping, its JSON columns parsed (asyncpg leaves them text)."""
    return {name: json.loads(value) if name in JSON_COLUMNS and value is not None else value
            for name, value in row.items()}


def _found(values: dict) -> _Found | None:
    """The client and token of the read (its columns by name, valued as the ORM reads them), when the
    grant may exchange the token (else the endpoint answers: a spent one revokes its grant there)."""
    if values["c_id"] is None:
        return None
    token = tokens.stored_refresh_token(values)
    if token.row.used_at is not None or token.is_revoked() or token.is_expired() or not token.user_exists:
        return None
    return _Found(Client(SimpleNamespace(**{name: values[f"c_{name}"] for name in CLIENTS.c.keys()})), token)


@dataclass(frozen=True)
class _Answer:
    response: Response  # Authlib's token response
    issued: dict  # the token it holds, to be written


def _granted(scope: Scope, form: dict[str, str], found: _Found) -> _Answer | None:
    """Authlib's answer to the refresh on the rows read, or None for an OAuth error (the endpoint's)."""
    grant = _Prefetched(server.create_oauth2_request(HttpInput(
        "POST", "https://" + _host(scope) + PATH, Headers(raw=scope["headers"]), list(form.items()))), found)
    try:
        grant.validate_token_request()
        status, payload, headers = grant.create_token_response()
    except OAuth2Error:
        return None
    return _Answer(server.handle_response(status, payload, headers), grant.issued)


def _host(scope: Scope) -> str:
    for name, value in scope["headers"]:
        if name == b"host":
            return value.decode("latin-1")
    return "localhost"


class _Prefetched(RefreshGrant):
    """Authlib's refresh grant on the rows the lane read; the new pair is kept (`issued`) for the
    lane's write instead of written."""

    def __init__(self, request, found: _Found) -> None:
        super().__init__(request, server)
        self.found = found
        self.issued: dict | None = None

    def authenticate_token_endpoint_client(self):
        # Authlib's client authentication, on the client read up front.
        return ClientAuthentication(self._query_client)(self.request, self.TOKEN_ENDPOINT_AUTH_METHODS, "token")

    def _query_client(self, client_id: str) -> Client | None:
        return self.found.client if client_id == self.found.client.get_client_id() else None

    def authenticate_refresh_token(self, refresh_token):
        return self.found.token

    def save_token(self, token):
        self.issued = token
        tokens.with_granted_details(token, self.found.token.grant)

    def revoke_old_credential(self, refresh_token):
        pass  # the lane's write marks it spent, if it still is not


def _read_parameters(form: dict[str, str]) -> dict:
    return {"token_hash": tokens.hashed(form["refresh_token"]), "client_id": form["client_id"]}


def _write_parameters(spent: tokens.StoredToken, token: dict) -> dict:
    """The new pair's rows (`a_…`, `r_…`) and the spent token's mark."""
    moment = now()
    access, refresh = tokens.pair_rows(spent.grant.id, token, moment)
    return {"rotated_id": spent.row.id, "moment": moment, **{f"a_{name}": value for name, value in access.items()},
            **{f"r_{name}": value for name, value in refresh.items()}}


def _as_text(parameters: dict) -> dict:
    """JSON values as asyncpg takes them: text."""
    return {name: json.dumps(value) if name in JSON_COLUMNS else value for name, value in parameters.items()}


def _read_statement():
    """The token, its grant and person (`tokens.refresh_statement`), and the client (`c_…`)."""
    statement = tokens.refresh_statement()
    return statement.add_columns(*(column.label(f"c_{column.name}") for column in CLIENTS.c)).outerjoin(
        CLIENTS, CLIENTS.c.client_id == bindparam("client_id"))


def _rotate_statement():
    """The spent token marked, only while it is unspent and unrevoked, and its grant stands."""
    standing = exists().where(GRANTS.c.id == TOKENS.c.grant_id, GRANTS.c.revoked_at.is_(None))
    return (update(TOKENS).where(TOKENS.c.id == bindparam("rotated_id"), TOKENS.c.used_at.is_(None),
                                 TOKENS.c.revoked_at.is_(None), standing).values(used_at=bindparam("moment")))


def _write_statement():
    """PostgreSQL: the new pair (`a_…`, `r_…`), inserted only when the same statement marked the spent
    token (`_rotate_statement`)."""
    rotated = ROTATE_STATEMENT.returning(TOKENS.c.id).cte("rotated")
    pair = union_all(*(select(*(bindparam(f"{prefix}_{name}", type_=column.type) for name, column in TOKENS.c.items()))
                       .select_from(rotated) for prefix in ("a", "r")))
    return insert(TOKENS).from_select(list(TOKENS.c.keys()), pair).add_cte(rotated).returning(TOKENS.c.id)


# JSON columns: asyncpg reads and takes them as text (in the read, of every prefix; in the write, of both rows).
JSON_COLUMNS = frozenset(
    [f"{prefix}{column.name}" for prefix, table in (("", TOKENS), ("g_", GRANTS), ("c_", CLIENTS))
     for column in table.c if isinstance(column.type, JSON)]
    + [f"{prefix}{column.name}" for prefix in ("a_", "r_") for column in TOKENS.c if isinstance(column.type, JSON)])
READ_STATEMENT, ROTATE_STATEMENT = _read_statement(), _rotate_statement()
READ = raw.postgres_text(READ_STATEMENT)
WRITE = raw.postgres_text(_write_statement())
