"""Refresh tokens rotate once: of several uses of one token at once exactly one gets a pair and the
others are reuse, which ends the sign-in; a sign-in ended between the token's read and the write
gets no pair (both databases, through the token endpoint, `authz.refreshing`)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import func, select, update

from authz.models import OAuthGrant, OAuthToken
from core.base import db
from core.base.clock import now
from tests.oauth_flow import exchange, get_code, refresh, register

API = "http://testserver/api/v1"


@pytest.fixture
def public_app(client):
    return register(client, token_endpoint_auth_method="none")


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


def _change(statement) -> None:
    with db.transaction() as session:
        session.execute(statement)


def test_of_uses_of_one_token_at_once_one_wins_and_the_sign_in_ends(client, browser, public_app):
    tokens = sign_in_tokens(client, browser, public_app)
    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda _: refresh(client, public_app["client_id"], tokens["refresh_token"]), range(6)))
    assert sorted(answer.status_code for answer in answers) == [200, 400, 400, 400, 400, 400]
    assert {answer.json().get("error") for answer in answers if answer.status_code == 400} == {"invalid_grant"}
    assert grant_revoked()  # the other uses were reuse
    assert sum(row.kind == "refresh" for row in stored()) == 2  # one new refresh token, not six


@pytest.mark.parametrize("meanwhile", ["sign-in ended", "token spent"])
def test_a_change_between_the_read_and_the_write_gets_no_pair(client, browser, public_app, monkeypatch, meanwhile):
    """The write is conditional: a grant revoked, or the token spent by another use, after the read
    and before the write gets no pair, and the sign-in ends."""
    from authz import refreshing
    tokens = sign_in_tokens(client, browser, public_app)
    read = refreshing._read

    async def changing(db, value, client_id):
        found = await read(db, value, client_id)
        _change(update(OAuthGrant).values(revoked_at=now()) if meanwhile == "sign-in ended"
                else update(OAuthToken).where(OAuthToken.kind == "refresh").values(used_at=now()))
        return found

    monkeypatch.setattr(refreshing, "_read", changing)
    count = token_count()
    response = refresh(client, public_app["client_id"], tokens["refresh_token"])
    assert (response.status_code, response.json()["error"]) == (400, "invalid_grant")
    assert token_count() == count
    assert grant_revoked()


def test_an_unknown_token_of_a_known_client_is_invalid_grant_and_nothing_ends(client, browser, public_app):
    tokens = sign_in_tokens(client, browser, public_app)
    response = refresh(client, public_app["client_id"], "inv_ort_" + "x" * 40)
    assert (response.status_code, response.json()["error"]) == (400, "invalid_grant")
    assert not grant_revoked() and refresh(client, public_app["client_id"], tokens["refresh_token"]).status_code == 200


@pytest.mark.parametrize("order", [("authorization_code", "refresh_token"), ("refresh_token", "authorization_code")])
def test_a_repeated_grant_type_is_answered_as_oauth_reads_it_never_a_500(client, browser, public_app, order):
    tokens = sign_in_tokens(client, browser, public_app)
    body = (f"grant_type={order[0]}&grant_type={order[1]}&client_id={public_app['client_id']}"
            f"&refresh_token={tokens['refresh_token']}")
    response = client.post("/oauth/token", content=body, headers={"Content-Type": "application/x-www-form-urlencoded"})
    # Authlib reads the first value, and so does the endpoint's choice of path.
    assert response.status_code == (200 if order[0] == "refresh_token" else 400), response.text


def test_a_database_out_of_reach_during_a_refresh_is_a_502(client, browser, public_app, monkeypatch):
    from authz import refreshing
    from core.base.errors import UpstreamFailed
    tokens = sign_in_tokens(client, browser, public_app)

    async def unreachable(*_arguments):
        raise UpstreamFailed("The database is unavailable; retry shortly.")
    monkeypatch.setattr(refreshing, "_read", unreachable)
    response = refresh(client, public_app["client_id"], tokens["refresh_token"])
    assert (response.status_code, response.json()["error"]) == (502, "temporarily_unavailable")
    monkeypatch.undo()
    assert refresh(client, public_app["client_id"], tokens["refresh_token"]).status_code == 200  # nothing was spent
