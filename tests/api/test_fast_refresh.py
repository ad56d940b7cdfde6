"""The refresh grant in the fast lane (`authz.fast_refresh`, both databases) answers and writes as the token
endpoint does: the same answer and rows for a plain refresh; of two uses of one token exactly one wins,
and the other is the endpoint's reuse (the grant revoked); whatever it does not take (another field, a
confidential client, a browser's cross-origin request, a spent, expired or foreign token…) is the
endpoint's answer, with nothing written by the lane."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import event, func, select, update
from starlette.requests import ClientDisconnect

from authz import fast_refresh
from authz.models import OAuthGrant, OAuthToken
from core.base import db
from core.base.clock import now
from tests.api.test_operability import SCRAPE_TOKEN, delta, scrape
from tests.oauth_flow import basic, exchange, get_code, obtain, refresh, register

API = "http://testserver/api/v1"




@pytest.fixture
def public_app(client):
    return register(client, token_endpoint_auth_method="none")


@pytest.fixture
def lane(monkeypatch) -> list:
    """What the lane did with each refresh it was given: the status it answered, or "left"."""
    outcomes: list = []
    serve = fast_refresh.serve

    async def noted(scope, body, send):
        status = await serve(scope, body, send)
        if b"grant_type=refresh_token" in body:  # not the sign-in's code exchange, which it leaves too
            outcomes.append("left" if status is None else status)
        return status

    monkeypatch.setattr(fast_refresh, "serve", noted)
    return outcomes


@pytest.fixture
def endpoint_only(monkeypatch):
    monkeypatch.setattr(fast_refresh, "lane_target", lambda scope: None)


def sign_in_tokens(client, browser, app: dict, **extra) -> dict:
    code, verifier = get_code(browser, app["client_id"], resource=API, **extra)
    response = exchange(client, app["client_id"], code, verifier, resource=API)
    assert response.status_code == 200, response.text
    return response.json()


def stored() -> list[OAuthToken]:
    with db.transaction() as session:
        return list(session.exec(select(OAuthToken).order_by(OAuthToken.created_at, OAuthToken.kind)).scalars())


def token_count() -> int:
    with db.transaction() as session:
        return session.execute(select(func.count()).select_from(OAuthToken)).scalar_one()


def grant_revoked() -> bool:
    with db.transaction() as session:
        return session.execute(select(OAuthGrant.revoked_at)).scalar_one() is not None


def api_status(client, access_token: str) -> int:
    return client.get("/api/v1/customers", headers={"Authorization": f"Bearer {access_token}"}).status_code


# --- what the lane answers --------------------------------------------------------------------------


def test_a_plain_refresh_is_the_lanes(client, browser, public_app, lane):
    tokens = sign_in_tokens(client, browser, public_app)
    response = refresh(client, public_app["client_id"], tokens["refresh_token"])
    assert response.status_code == 200, response.text
    assert lane == [200]
    assert api_status(client, response.json()["access_token"]) == 200


def test_the_lanes_answer_and_rows_are_the_endpoints(client, browser, public_app, lane, monkeypatch):
    answers, rows = [], []
    for through_lane in (True, False):
        if not through_lane:
            monkeypatch.setattr(fast_refresh, "lane_target", lambda scope: None)
        tokens = sign_in_tokens(client, browser, public_app)
        before = {row.id for row in stored()}
        answers.append(refresh(client, public_app["client_id"], tokens["refresh_token"]))
        rows.append([row for row in stored() if row.id not in before])
    assert lane == [200]
    lane_answer, endpoint_answer = answers
    assert lane_answer.status_code == endpoint_answer.status_code == 200
    assert _headers(lane_answer) == _headers(endpoint_answer)
    assert _shape(lane_answer.json()) == _shape(endpoint_answer.json())
    assert [_row_shape(row) for row in rows[0]] == [_row_shape(row) for row in rows[1]]


def _headers(response) -> dict:
    return {name: value for name, value in response.headers.items() if name not in ("x-request-id", "content-length")}


def _shape(body: dict) -> dict:
    """The answer with its secrets replaced by their kind."""
    return {**body, "access_token": body["access_token"][:8], "refresh_token": body["refresh_token"][:8]}


def _row_shape(row: OAuthToken) -> tuple:
    return (row.kind, row.scopes, row.expires_at - row.created_at, row.revoked_at, row.used_at, len(row.token_hash))


def test_the_spent_token_is_marked_and_its_reuse_revokes_the_sign_in(client, browser, public_app, lane):
    tokens = sign_in_tokens(client, browser, public_app)
    new = refresh(client, public_app["client_id"], tokens["refresh_token"]).json()
    reuse = refresh(client, public_app["client_id"], tokens["refresh_token"])
    assert lane == [200, "left"]  # the reuse is the endpoint's
    assert (reuse.status_code, reuse.json()["error"]) == (400, "invalid_grant")
    assert grant_revoked()
    assert api_status(client, new["access_token"]) == 401
    assert refresh(client, public_app["client_id"], new["refresh_token"]).json()["error"] == "invalid_grant"


def test_a_chain_of_refreshes_stays_on_the_lane(client, browser, public_app, lane):
    refresh_token = sign_in_tokens(client, browser, public_app)["refresh_token"]
    for _ in range(3):
        response = refresh(client, public_app["client_id"], refresh_token)
        refresh_token = response.json()["refresh_token"]
    assert lane == [200, 200, 200]
    assert sum(row.used_at is not None for row in stored()) == 3


def test_granted_authorization_details_are_in_the_lanes_answer(client, browser, public_app, lane):
    details = [{"type": "invoice_actions", "actions": ["finalize"], "max_amount": {"currency": "USD", "amount": 100000}}]
    tokens = obtain(browser, public_app, resource=API, scopes=["invoices:read", "invoices:finalize"],
                    authorization_details=details)
    assert tokens["authorization_details"]
    response = refresh(client, public_app["client_id"], tokens["refresh_token"])
    assert lane == [200]
    assert response.json()["authorization_details"] == tokens["authorization_details"]


def test_the_lane_writes_an_access_line_and_counts_the_grant(client, browser, public_app, lane, caplog,
                                                             monkeypatch):
    from config.settings import get_settings
    monkeypatch.setattr(get_settings(), "metrics_token", SCRAPE_TOKEN)
    tokens = sign_in_tokens(client, browser, public_app)
    before = scrape(client)
    with caplog.at_level("INFO", logger="invoicing.access"):
        response = refresh(client, public_app["client_id"], tokens["refresh_token"])
    after = scrape(client)
    assert lane == [200]
    line = next(record for record in caplog.records if record.name == "invoicing.access")
    assert (line.route, line.method, line.status) == ("/oauth/token", "POST", 200)
    assert response.headers["x-request-id"].startswith("req_")
    assert delta(before, after, "invoicing_oauth_token_requests_total", grant_type="refresh_token",
                 outcome="issued") == 1
    assert delta(before, after, "invoicing_http_requests_total", route="/oauth/token", method="POST",
                 status="200") == 1


def test_a_supplied_request_id_is_kept(client, browser, public_app, lane):
    tokens = sign_in_tokens(client, browser, public_app)
    response = refresh(client, public_app["client_id"], tokens["refresh_token"], headers={"X-Request-Id": "mine-1"})
    assert lane == [200]
    assert response.headers["x-request-id"] == "mine-1"


# --- races and faults -------------------------------------------------------------------------------


def test_a_token_spent_meanwhile_is_the_endpoints_reuse(client, browser, public_app, lane, monkeypatch):
    """Two uses of one token at once: the other use marked it between the lane's read and write."""
    tokens = sign_in_tokens(client, browser, public_app)
    _before_the_write(monkeypatch, update(OAuthToken).where(OAuthToken.kind == "refresh").values(used_at=now()))
    count = token_count()
    response = refresh(client, public_app["client_id"], tokens["refresh_token"])
    assert lane == ["left"]
    assert (response.status_code, response.json()["error"]) == (400, "invalid_grant")
    assert token_count() == count  # the lane wrote no pair
    assert grant_revoked()


def test_a_sign_in_ended_meanwhile_gets_no_pair(client, browser, public_app, lane, monkeypatch):
    tokens = sign_in_tokens(client, browser, public_app)
    _before_the_write(monkeypatch, update(OAuthGrant).values(revoked_at=now()))
    count = token_count()
    response = refresh(client, public_app["client_id"], tokens["refresh_token"])
    assert lane == ["left"]
    assert (response.status_code, response.json()["error"]) == (400, "invalid_grant")
    assert token_count() == count


def test_of_uses_of_one_token_at_once_one_wins_and_the_sign_in_ends(client, browser, public_app, lane):
    tokens = sign_in_tokens(client, browser, public_app)
    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda _: refresh(client, public_app["client_id"], tokens["refresh_token"]), range(6)))
    assert sorted(answer.status_code for answer in answers) == [200, 400, 400, 400, 400, 400]
    assert {answer.json().get("error") for answer in answers if answer.status_code == 400} == {"invalid_grant"}
    assert grant_revoked()  # the other uses were reuse
    assert sum(row.kind == "refresh" for row in stored()) == 2  # one new refresh token, not six


def _before_the_write(monkeypatch, statement) -> None:
    pair = fast_refresh._pair

    def racing(*arguments):
        with db.transaction() as session:
            session.execute(statement)
        return pair(*arguments)

    monkeypatch.setattr(fast_refresh, "_pair", racing)


def test_a_write_the_database_refuses_is_a_502_and_nothing_stays_written(client, browser, public_app, lane,
                                                                         monkeypatch):
    """The spent token's mark goes with the pair: a pair the database refuses (here a hash it holds
    already) leaves the token unspent, on SQLite as on PostgreSQL (one statement there)."""
    tokens = sign_in_tokens(client, browser, public_app)
    pair = fast_refresh._pair

    def clashing(*arguments):
        rows, moment = pair(*arguments)
        rows[0]["token_hash"] = fast_refresh.tokens.hashed(tokens["refresh_token"])
        return rows, moment

    monkeypatch.setattr(fast_refresh, "_pair", clashing)
    count = token_count()
    response = refresh(client, public_app["client_id"], tokens["refresh_token"])
    assert lane == [502]  # as the endpoint answers an unreachable database
    assert response.json()["error"] == "temporarily_unavailable"
    assert response.headers["cache-control"] == "no-store"
    assert token_count() == count
    assert all(row.used_at is None for row in stored())
    monkeypatch.undo()
    assert refresh(client, public_app["client_id"], tokens["refresh_token"]).status_code == 200


def test_a_fault_of_ours_in_the_write_is_a_500_not_an_outage(client, browser, public_app, lane, monkeypatch):
    tokens = sign_in_tokens(client, browser, public_app)

    def broken(*_arguments):
        raise TypeError("a bug")

    monkeypatch.setattr(fast_refresh.tokens, "rotating_parameters", broken)  # PostgreSQL's write
    monkeypatch.setattr(fast_refresh, "_write_sqlite", broken)
    response = refresh(client, public_app["client_id"], tokens["refresh_token"])
    assert lane == [500]
    assert response.status_code == 500


def test_a_fault_of_ours_before_the_write_is_left_to_the_endpoint(client, browser, public_app, lane, monkeypatch):
    tokens = sign_in_tokens(client, browser, public_app)

    def broken(*_arguments):
        raise TypeError("a bug")

    monkeypatch.setattr(fast_refresh, "_found", broken)
    response = refresh(client, public_app["client_id"], tokens["refresh_token"])
    assert lane == ["left"]
    assert response.status_code == 200


def test_a_failed_read_is_left_to_the_endpoint(client, browser, public_app, lane, monkeypatch):
    tokens = sign_in_tokens(client, browser, public_app)

    class Failing:
        async def fetchrow(self, *_arguments):
            raise ConnectionResetError("the database went away")

        def run(self, *_arguments):
            raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(fast_refresh.raw, "postgres_connections", lambda **_: Failing())
    monkeypatch.setattr(fast_refresh.raw, "sqlite_text", lambda _statement: Failing())
    response = refresh(client, public_app["client_id"], tokens["refresh_token"])
    assert lane == ["left"]
    assert response.status_code == 200


# --- what the lane leaves ---------------------------------------------------------------------------


@pytest.mark.parametrize(("extra", "expected"), [
    ({"scope": "clients:read"}, (200, None)),  # narrowing: another field
    ({"resource": API}, (200, None)),
    ({"client_secret": "x"}, (401, "invalid_client")),
    ({"extra": "1"}, (200, None)),
])
def test_a_refresh_with_other_fields_is_the_endpoints(client, browser, public_app, lane, extra, expected):
    tokens = sign_in_tokens(client, browser, public_app)
    response = refresh(client, public_app["client_id"], tokens["refresh_token"], **extra)
    assert lane == ["left"]
    assert (response.status_code, response.json().get("error")) == expected


def test_a_repeated_field_is_the_endpoints(client, browser, public_app, lane):
    tokens = sign_in_tokens(client, browser, public_app)
    body = (f"grant_type=refresh_token&refresh_token={tokens['refresh_token']}&client_id={public_app['client_id']}"
            f"&client_id={public_app['client_id']}")
    response = client.post("/oauth/token", content=body,
                           headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert lane == ["left"]
    assert response.status_code == 200  # as the endpoint reads a repeated client_id


@pytest.mark.parametrize("case", ["spent", "expired", "revoked", "other client", "unknown token", "unknown client"])
def test_a_token_the_grant_refuses_is_the_endpoints(client, browser, public_app, lane, case):
    tokens = sign_in_tokens(client, browser, public_app)
    client_id, token = public_app["client_id"], tokens["refresh_token"]
    if case == "spent":
        refresh(client, client_id, token)
        lane.clear()
    elif case == "expired":
        _change(update(OAuthToken).where(OAuthToken.kind == "refresh").values(expires_at=now()))
    elif case == "revoked":
        _change(update(OAuthToken).where(OAuthToken.kind == "refresh").values(revoked_at=now()))
    elif case == "other client":
        client_id = register(client, token_endpoint_auth_method="none")["client_id"]
    elif case == "unknown token":
        token = "inv_ort_nope"
    else:
        client_id = "nobody"
    response = refresh(client, client_id, token)
    assert lane == ["left"]
    assert (response.status_code, response.json()["error"]) == \
        (400, "invalid_client" if case == "unknown client" else "invalid_grant")


def _change(statement) -> None:
    with db.transaction() as session:
        session.execute(statement)


def test_a_confidential_client_is_the_endpoints(client, browser, lane):
    app = register(client, token_endpoint_auth_method="client_secret_basic")
    code, verifier = get_code(browser, app["client_id"], resource=API)
    tokens = exchange(client, app["client_id"], code, verifier, headers=basic(app["client_id"], app["client_secret"]),
                      resource=API).json()
    response = refresh(client, None, tokens["refresh_token"], headers=basic(app["client_id"], app["client_secret"]))
    assert response.status_code == 200
    assert lane == []  # not even read: the lane takes no Authorization header


def test_a_browsers_cross_origin_refresh_is_the_endpoints(client, browser, public_app, lane):
    tokens = sign_in_tokens(client, browser, public_app)
    response = refresh(client, public_app["client_id"], tokens["refresh_token"],
                       headers={"Origin": "https://assistant.example"})
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "*"
    assert lane == []


def test_a_query_or_another_form_type_is_the_endpoints(client, browser, public_app, lane):
    tokens = sign_in_tokens(client, browser, public_app)
    body = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": public_app["client_id"]}
    assert client.post("/oauth/token?x=1", data=body).status_code == 200
    response = client.post("/oauth/token", json=body)
    assert response.status_code == 400
    assert lane == []


def test_a_refresh_costs_two_statements_on_postgresql_and_none_through_the_engine(client, browser, public_app, lane,
                                                                                   monkeypatch):
    if db.get_engine().dialect.name != "postgresql":
        pytest.skip("the one read and one write are PostgreSQL's (SQLite: a read, then two in a write turn)")
    import asyncpg
    tokens = sign_in_tokens(client, browser, public_app)
    lane_statements, engine_statements = [], []
    fetchrow = asyncpg.Connection.fetchrow

    async def noted(connection, sql, *arguments, **options):
        lane_statements.append(sql.split()[0])
        return await fetchrow(connection, sql, *arguments, **options)

    monkeypatch.setattr(asyncpg.Connection, "fetchrow", noted)
    listener = lambda *arguments: engine_statements.append(arguments[2])  # noqa: E731
    event.listen(db.get_engine(), "before_cursor_execute", listener)
    try:
        response = refresh(client, public_app["client_id"], tokens["refresh_token"])
    finally:
        event.remove(db.get_engine(), "before_cursor_execute", listener)
    assert response.status_code == 200 and lane == [200]
    assert lane_statements == ["SELECT", "WITH"]  # the rows read; the spent token marked and the pair written
    assert engine_statements == []


def test_a_client_that_leaves_mid_body_gets_nothing_rotated(client, browser, public_app, lane, app):
    """A prefix of a refresh's form is a plain refresh too: it must not be taken for the whole."""
    tokens = sign_in_tokens(client, browser, public_app)
    whole = (f"grant_type=refresh_token&refresh_token={tokens['refresh_token']}&client_id={public_app['client_id']}"
             "&resource=" + API).encode()
    cut = whole.index(b"&resource")
    messages = [{"type": "http.request", "body": whole[:cut], "more_body": True}, {"type": "http.disconnect"}]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/oauth/token", "raw_path": b"/oauth/token", "root_path": "", "query_string": b"",
             "client": ("127.0.0.1", 5000), "server": ("testserver", 80), "state": {},
             "headers": [(b"host", b"testserver"), (b"content-type", b"application/x-www-form-urlencoded"),
                         (b"content-length", str(len(whole)).encode())]}

    async def receive():
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(_message):
        pass

    with pytest.raises(ClientDisconnect):  # the endpoint meets the disconnect, as without the lane
        client.portal.call(app, scope, receive, send)
    assert lane == []  # not served: the body never came whole
    assert all(row.used_at is None for row in stored())
    assert refresh(client, public_app["client_id"], tokens["refresh_token"]).status_code == 200


def test_the_endpoint_writes_no_pair_for_a_sign_in_ended_after_its_read(client, browser, public_app, endpoint_only,
                                                                        monkeypatch):
    """The token endpoint's own write is the same conditional statement: a grant revoked between its
    read (the token locked, not the grant) and its insert gets no pair."""
    if db.get_engine().dialect.name != "postgresql":
        pytest.skip("the rotating insert is PostgreSQL's (SQLite's writes take turns)")
    from authz import tokens as stored_tokens
    tokens = sign_in_tokens(client, browser, public_app)
    read = stored_tokens.refresh_token_for_use

    def ending(session, value):
        found = read(session, value)
        _change(update(OAuthGrant).values(revoked_at=now()))
        return found

    monkeypatch.setattr(stored_tokens, "refresh_token_for_use", ending)
    count = token_count()
    response = refresh(client, public_app["client_id"], tokens["refresh_token"])
    assert (response.status_code, response.json()["error"]) == (400, "invalid_grant")
    assert token_count() == count
