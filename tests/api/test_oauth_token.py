"""/oauth/token: code exchange with PKCE and client authentication, refresh rotation, reuse
detection, narrowing, audience; /oauth/revoke."""

from datetime import timedelta

import pytest
from sqlmodel import select

from authz.models import OAuthAuthorizationCode, OAuthToken
from core.base import crypto, db
from core.base.clock import now
from tests.oauth_flow import (
    REDIRECT_URI,
    basic,
    exchange,
    get_code,
    pkce_pair,
    refresh,
    register,
)

API = "http://testserver/api/v1"
MCP = "http://testserver/mcp"


@pytest.fixture
def public_app(client):
    return register(client, token_endpoint_auth_method="none")


@pytest.fixture
def tokens(client, browser, public_app):
    code, verifier = get_code(browser, public_app["client_id"], resource=API)
    response = exchange(client, public_app["client_id"], code, verifier, resource=API)
    assert response.status_code == 200, response.text
    return response.json()


def api_get(client, access_token, path="/customers"):
    return client.get("/api/v1" + path, headers={"Authorization": f"Bearer {access_token}"})


# --- code exchange ---------------------------------------------------------------------------------


def test_token_response_shape(client, browser, public_app):
    code, verifier = get_code(browser, public_app["client_id"])
    response = exchange(client, public_app["client_id"], code, verifier)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "no-store"
    body = response.json()
    assert body["token_type"] == "Bearer"
    assert body["access_token"].startswith("inv_oat_")
    assert body["refresh_token"].startswith("inv_ort_")
    assert body["expires_in"] == 3600
    assert body["scope"] == "business:read clients:read clients:write products:read invoices:read invoices:write"


def test_tokens_are_stored_hashed_with_their_lifetimes(tokens):
    with db.transaction() as session:
        rows = {row.kind: row for row in session.exec(select(OAuthToken))}
    assert rows["access"].token_hash == crypto.sha256_hex(tokens["access_token"])
    assert rows["refresh"].token_hash == crypto.sha256_hex(tokens["refresh_token"])
    assert rows["access"].expires_at - rows["access"].created_at == timedelta(hours=1)
    assert rows["refresh"].expires_at - rows["refresh"].created_at == timedelta(days=30)


def test_unticked_scopes_are_not_granted(client, browser, public_app):
    code, verifier = get_code(browser, public_app["client_id"], scopes=["clients:read", "invoices:send"])
    assert exchange(client, public_app["client_id"], code, verifier).json()["scope"] == "clients:read invoices:send"


def test_ticked_scopes_outside_the_request_are_ignored(client, browser, public_app):
    code, verifier = get_code(browser, public_app["client_id"], scope="clients:read",
                              scopes=["clients:read", "payments:write"])
    assert exchange(client, public_app["client_id"], code, verifier).json()["scope"] == "clients:read"


def test_wrong_code_verifier_is_invalid_grant(client, browser, public_app):
    code, _ = get_code(browser, public_app["client_id"])
    response = exchange(client, public_app["client_id"], code, pkce_pair()[0])
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"


def test_missing_code_verifier_is_refused(client, browser, public_app):
    code, _ = get_code(browser, public_app["client_id"])
    response = client.post("/oauth/token", data={"grant_type": "authorization_code", "code": code,
                                                  "redirect_uri": REDIRECT_URI, "client_id": public_app["client_id"]})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"
    assert response.headers["cache-control"] == "no-store"


def test_redirect_uri_must_repeat_the_authorization_request(client, browser, public_app):
    code, verifier = get_code(browser, public_app["client_id"])
    response = exchange(client, public_app["client_id"], code, verifier, redirect_uri="http://127.0.0.1:9/callback")
    assert response.json()["error"] == "invalid_grant"


def test_code_works_once_and_reuse_revokes_its_tokens(client, browser, public_app):
    code, verifier = get_code(browser, public_app["client_id"], resource=API)
    first = exchange(client, public_app["client_id"], code, verifier, resource=API).json()
    assert api_get(client, first["access_token"]).status_code == 200
    second = exchange(client, public_app["client_id"], code, verifier, resource=API)
    assert second.status_code == 400
    assert second.json()["error"] == "invalid_grant"
    assert api_get(client, first["access_token"]).status_code == 401
    assert refresh(client, public_app["client_id"], first["refresh_token"]).json()["error"] == "invalid_grant"


def test_code_expires_after_60_seconds(client, browser, public_app):
    code, verifier = get_code(browser, public_app["client_id"])
    with db.transaction() as session:
        row = session.exec(select(OAuthAuthorizationCode)).one()
        assert row.expires_at - row.created_at == timedelta(seconds=60)
        row.expires_at = now() - timedelta(seconds=1)
        session.add(row)
    assert exchange(client, public_app["client_id"], code, verifier).json()["error"] == "invalid_grant"


def test_code_of_another_client_is_invalid_grant(client, browser, public_app):
    other = register(client, token_endpoint_auth_method="none")
    code, verifier = get_code(browser, public_app["client_id"])
    assert exchange(client, other["client_id"], code, verifier).json()["error"] == "invalid_grant"


def test_token_request_may_repeat_the_resource_but_not_change_it(client, browser, public_app):
    code, verifier = get_code(browser, public_app["client_id"])
    response = exchange(client, public_app["client_id"], code, verifier, resource=API)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_target"


# --- client authentication -------------------------------------------------------------------------


def test_client_secret_basic(client, browser):
    app = register(client)
    code, verifier = get_code(browser, app["client_id"])
    response = exchange(client, app["client_id"], code, verifier, headers=basic(app["client_id"], app["client_secret"]))
    assert response.status_code == 200, response.text


def test_client_secret_post(client, browser):
    app = register(client, token_endpoint_auth_method="client_secret_post")
    code, verifier = get_code(browser, app["client_id"])
    response = exchange(client, app["client_id"], code, verifier, secret=app["client_secret"])
    assert response.status_code == 200, response.text


def test_wrong_secret_is_invalid_client(client, browser):
    app = register(client)
    code, verifier = get_code(browser, app["client_id"])
    response = exchange(client, app["client_id"], code, verifier, headers=basic(app["client_id"], "wrong"))
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"


def test_confidential_client_cannot_skip_authentication(client, browser):
    app = register(client)
    code, verifier = get_code(browser, app["client_id"])
    response = exchange(client, app["client_id"], code, verifier)
    assert response.status_code in (400, 401)
    assert response.json()["error"] == "invalid_client"


def test_basic_client_cannot_use_post_method(client, browser):
    app = register(client)
    code, verifier = get_code(browser, app["client_id"])
    response = exchange(client, app["client_id"], code, verifier, secret=app["client_secret"])
    assert response.json()["error"] == "invalid_client"


def test_unknown_grant_type(client):
    response = client.post("/oauth/token", data={"grant_type": "password"})
    assert response.status_code == 400
    assert response.json()["error"] == "unsupported_grant_type"


# --- refresh ---------------------------------------------------------------------------------------


def test_refresh_rotates_and_the_old_refresh_token_stops(client, public_app, tokens):
    response = refresh(client, public_app["client_id"], tokens["refresh_token"])
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"
    new = response.json()
    assert new["refresh_token"].startswith("inv_ort_") and new["refresh_token"] != tokens["refresh_token"]
    assert new["access_token"] != tokens["access_token"]
    assert new["scope"] == tokens["scope"]
    assert api_get(client, new["access_token"]).status_code == 200


def test_reusing_a_rotated_refresh_token_revokes_the_whole_sign_in(client, public_app, tokens):
    new = refresh(client, public_app["client_id"], tokens["refresh_token"]).json()
    reuse = refresh(client, public_app["client_id"], tokens["refresh_token"])
    assert reuse.status_code == 400
    assert reuse.json()["error"] == "invalid_grant"
    assert api_get(client, new["access_token"]).status_code == 401
    assert api_get(client, tokens["access_token"]).status_code == 401
    assert refresh(client, public_app["client_id"], new["refresh_token"]).json()["error"] == "invalid_grant"


def test_refresh_may_narrow_scopes(client, public_app, tokens):
    narrowed = refresh(client, public_app["client_id"], tokens["refresh_token"], scope="clients:read").json()
    assert narrowed["scope"] == "clients:read"
    assert api_get(client, narrowed["access_token"]).status_code == 200
    assert api_get(client, narrowed["access_token"], "/invoices").status_code == 403


def test_refresh_cannot_widen_scopes(client, public_app, tokens):
    response = refresh(client, public_app["client_id"], tokens["refresh_token"], scope="clients:read payments:write")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_scope"


def test_refresh_cannot_widen_back_after_narrowing(client, public_app, tokens):
    narrowed = refresh(client, public_app["client_id"], tokens["refresh_token"], scope="clients:read").json()
    response = refresh(client, public_app["client_id"], narrowed["refresh_token"], scope="clients:read invoices:read")
    assert response.json()["error"] == "invalid_scope"


def test_refresh_may_repeat_the_resource(client, public_app, tokens):
    assert refresh(client, public_app["client_id"], tokens["refresh_token"], resource=API).status_code == 200


def test_refresh_for_another_resource_is_invalid_target(client, public_app, tokens):
    response = refresh(client, public_app["client_id"], tokens["refresh_token"], resource=MCP)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_target"


def test_refresh_by_another_client_is_invalid_grant(client, public_app, tokens):
    other = register(client, token_endpoint_auth_method="none")
    assert refresh(client, other["client_id"], tokens["refresh_token"]).json()["error"] == "invalid_grant"


def test_expired_refresh_token_is_invalid_grant(client, public_app, tokens):
    with db.transaction() as session:
        row = session.exec(select(OAuthToken).where(OAuthToken.kind == "refresh")).one()
        row.expires_at = now() - timedelta(seconds=1)
        session.add(row)
    assert refresh(client, public_app["client_id"], tokens["refresh_token"]).json()["error"] == "invalid_grant"


def test_unknown_refresh_token_is_invalid_grant(client, public_app):
    assert refresh(client, public_app["client_id"], "inv_ort_nope").json()["error"] == "invalid_grant"


# --- revocation ------------------------------------------------------------------------------------


def test_revoking_the_access_token_stops_it(client, public_app, tokens):
    response = client.post("/oauth/revoke", data={"token": tokens["access_token"], "client_id": public_app["client_id"]})
    assert response.status_code == 200
    assert api_get(client, tokens["access_token"]).status_code == 401
    assert refresh(client, public_app["client_id"], tokens["refresh_token"]).status_code == 200


def test_revoking_the_refresh_token_ends_the_sign_in(client, public_app, tokens):
    response = client.post("/oauth/revoke", data={"token": tokens["refresh_token"], "token_type_hint": "refresh_token",
                                                   "client_id": public_app["client_id"]})
    assert response.status_code == 200
    assert api_get(client, tokens["access_token"]).status_code == 401
    assert refresh(client, public_app["client_id"], tokens["refresh_token"]).json()["error"] == "invalid_grant"


def test_revoking_an_unknown_token_is_ok(client, public_app):
    response = client.post("/oauth/revoke", data={"token": "inv_oat_unknown", "client_id": public_app["client_id"]})
    assert response.status_code == 200


def test_revocation_needs_client_authentication(client, tokens):
    confidential = register(client)
    response = client.post("/oauth/revoke", data={"token": tokens["access_token"], "client_id": confidential["client_id"]})
    assert response.json()["error"] == "invalid_client"


def test_revocation_ignores_an_unknown_hint(client, public_app, tokens):
    response = client.post("/oauth/revoke", data={"token": tokens["access_token"], "token_type_hint": "weird",
                                                   "client_id": public_app["client_id"]})
    assert response.status_code == 200
    assert api_get(client, tokens["access_token"]).status_code == 401


def test_revocation_without_token_is_invalid_request(client, public_app):
    response = client.post("/oauth/revoke", data={"client_id": public_app["client_id"]})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


@pytest.mark.parametrize("data", [
    {"grant_type": 'x"\u00e9'},
    {"grant_type": "authorization_code", "client_id": '\u00e9"', "code": "x"},
    {"grant_type": "refresh_token", "refresh_token": '\u00e9"' * 300, "client_id": "x"},
])
def test_hostile_token_parameters_get_oauth_errors(client, data):
    response = client.post("/oauth/token", data=data)
    assert 400 <= response.status_code < 500
    assert response.json()["error"]
