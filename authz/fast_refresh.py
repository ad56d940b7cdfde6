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

import asyncio
import json
import logging
import sqlite3
from dataclasses import dataclass
from types import SimpleNamespace

import anyio
from authlib.oauth2.rfc6749 import ClientAuthentication, OAuth2Error
from sqlalchemy import JSON, bindparam
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.responses import PlainTextResponse, Response
from starlette.types import Scope, Send

from asgi.lanes import declared_length, first_header, send_answer
from authz import metadata_documents, tokens
from authz.adapter import HttpInput, urlencoded_fields
from authz.clients import Client
from authz.errors import database_fault_response
from authz.grants import RefreshGrant
from authz.models import OAuthClient
from authz.server import server
from core.base import context, metrics, raw
from core.base.clock import now
from core.base.db import UNAVAILABLE, get_engine
from core.base.errors import UpstreamFailed
from core.base.validation import unacceptable_parameters

log = logging.getLogger("invoicing.oauth")
PATH = "/oauth/token"
FIELDS = ["client_id", "grant_type", "refresh_token"]  # sorted
FORM = b"application/x-www-form-urlencoded"
MAX_BODY = 1024  # a refresh is ~120 bytes; anything larger goes to the endpoint
CLIENTS, TOKENS, GRANTS = OAuthClient.__table__, tokens.TOKENS, tokens.GRANTS
# What the endpoint's CORS middleware adds to an answer to a request without Origin.
ANSWERED_HEADERS = ((b"vary", b"Origin"),)


def lane_target(scope: Scope) -> int | None:
    """The declared length of the body of a request the lane may take, or None."""
    if (scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != PATH or scope.get("root_path")
            or scope["query_string"] or first_header(scope, b"content-type") != FORM
            or first_header(scope, b"authorization") is not None or first_header(scope, b"origin") is not None):
        return None
    length = declared_length(scope)
    return length if length is not None and 0 < length <= MAX_BODY else None


async def serve(scope: Scope, body: bytes, send: Send) -> int | None:
    """Answer the refresh (its status), or None having sent and written nothing: the endpoint answers."""
    form = _plain_refresh(body)
    if form is None:
        return None
    try:
        if get_engine().dialect.name == "postgresql":
            response = await _answer_postgresql(scope, form)
        else:  # sqlite3 has no asynchronous driver: a thread
            response = await anyio.to_thread.run_sync(_answer_sqlite, scope, form)
    except Exception:  # a fault of ours before anything was written: logged, and the endpoint answers
        log.error("the refresh lane failed before writing (request %s)", context.request_id(), exc_info=True)
        return None
    if response is None:
        return None
    if response.status_code == 200:
        metrics.oauth_token("refresh_token", "issued")
    return await send_answer(send, response, *ANSWERED_HEADERS, (b"x-request-id", context.request_id().encode()))


async def _answer_postgresql(scope: Scope, form: dict[str, str]) -> Response | None:
    try:
        row = await raw.postgres_connections().fetchrow(READ.sql, READ.arguments(_read_parameters(form)))
    except DATABASE_FAULTS:  # the endpoint meets the same fault and answers it
        return None
    found = _found(_parsed(row)) if row is not None else None
    answer = _granted(scope, form, found) if found is not None else None
    if answer is None:
        return None
    rows, moment = _pair(found, answer)
    try:
        written = await raw.postgres_connections(durable=True).fetchrow(STORE_ROTATING.sql, STORE_ROTATING.arguments(
            _as_text(tokens.rotating_parameters(found.token, moment, rows)))) is not None
    except Exception as exc:
        return _unknown_outcome(exc)
    return answer.response if written else None  # not written: spent or revoked meanwhile, the endpoint's


def _answer_sqlite(scope: Scope, form: dict[str, str]) -> Response | None:
    with raw.sqlite_connection() as connection:
        try:
            rows = raw.sqlite_text(READ_STATEMENT).run(connection, _read_parameters(form))
        except DATABASE_FAULTS:
            return None
        found = _found(rows[0]._asdict()) if rows else None
        answer = _granted(scope, form, found) if found is not None else None
        if answer is None:
            return None
        try:
            written = _write_sqlite(connection, found.token, *_pair(found, answer))
        except Exception as exc:
            return _unknown_outcome(exc)
    return answer.response if written else None


def _write_sqlite(connection, spent: tokens.StoredToken, rows: list[dict], moment) -> bool:
    """The spent token marked, then the new pair written, in one write turn (SQLite has no UPDATE in a
    WITH); False, and nothing written, when it could not be marked."""
    try:
        with raw.sqlite_writing(connection):
            marked = raw.sqlite_text(tokens.ROTATE_STATEMENT).execute(connection, {
                "rotated_id": spent.row.id, "moment": moment})
            if marked.rowcount != 1:
                raise raw.Rollback
            for row in rows:
                raw.sqlite_text(tokens.STORE_STATEMENT).execute(connection, row)
    except raw.Rollback:
        return False
    return True


def _pair(found: _Found, answer: _Answer) -> tuple[list[dict], object]:
    """The new pair's rows, issued now."""
    moment = now()
    return tokens.pair_rows(found.token.grant.id, answer.issued, moment), moment


def _unknown_outcome(exc: Exception) -> Response:
    """A write that failed, whether it was made unknown: answered as the endpoint answers a database
    fault (502), or, for a fault of ours, as it answers one (500)."""
    log.error("the refresh lane's write failed (request %s)", context.request_id(), exc_info=exc)
    if isinstance(exc, DATABASE_FAULTS):
        return database_fault_response(UpstreamFailed(UNAVAILABLE))
    return PlainTextResponse("Internal Server Error", status_code=500)


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
    headers = Headers(raw=scope["headers"])
    grant = _Prefetched(server.create_oauth2_request(HttpInput(
        "POST", "https://" + headers.get("host", "localhost") + PATH, headers, list(form.items()))), found)
    try:
        grant.validate_token_request()
        status, payload, answer_headers = grant.create_token_response()
    except OAuth2Error:
        return None
    return _Answer(server.handle_response(status, payload, answer_headers), grant.issued)


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


def _as_text(parameters: dict) -> dict:
    """JSON values as asyncpg takes them: text."""
    return {name: json.dumps(value) if name in JSON_COLUMNS else value for name, value in parameters.items()}


def _read_statement():
    """The token, its grant and person (`tokens.refresh_statement`), and the client (`c_…`)."""
    statement = tokens.refresh_statement()
    return statement.add_columns(*(column.label(f"c_{column.name}") for column in CLIENTS.c)).outerjoin(
        CLIENTS, CLIENTS.c.client_id == bindparam("client_id"))


def _database_faults() -> tuple[type[BaseException], ...]:
    import asyncpg
    return (asyncpg.PostgresError, asyncpg.InterfaceError, sqlite3.Error, ConnectionError, OSError,
            asyncio.TimeoutError)


DATABASE_FAULTS = _database_faults()
# JSON columns: asyncpg reads and takes them as text (in the read, of every prefix; in the write, of both rows).
JSON_COLUMNS = frozenset(
    [f"{prefix}{column.name}" for prefix, table in (("", TOKENS), ("g_", GRANTS), ("c_", CLIENTS))
     for column in table.c if isinstance(column.type, JSON)]
    + [f"{prefix}{column.name}" for prefix in ("a_", "r_") for column in TOKENS.c if isinstance(column.type, JSON)])
READ_STATEMENT = _read_statement()
READ = raw.postgres_text(READ_STATEMENT)
STORE_ROTATING = raw.postgres_text(tokens.STORE_ROTATING_STATEMENT)
