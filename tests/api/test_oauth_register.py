"""Dynamic client registration (RFC 7591) with the redirect URI rules of the specification."""

import pytest
from sqlmodel import select

from authz.models import OAuthClient
from config.settings import get_settings
from core.base import db
from tests.oauth_flow import REDIRECT_URI


def post(client, body):
    return client.post("/oauth/register", json=body)


def test_default_auth_method_is_client_secret_basic_with_a_secret(client):
    response = post(client, {"redirect_uris": [REDIRECT_URI], "client_name": "Reporter"})
    assert response.status_code == 201
    assert response.headers["cache-control"] == "no-store"
    body = response.json()
    assert body["token_endpoint_auth_method"] == "client_secret_basic"
    assert body["client_id"] and body["client_secret"]
    assert body["client_secret_expires_at"] == 0
    assert body["redirect_uris"] == [REDIRECT_URI]
    assert body["client_name"] == "Reporter"
    assert body["grant_types"] == ["authorization_code", "refresh_token"]
    assert body["response_types"] == ["code"]


def test_public_client_gets_no_secret(client):
    body = post(client, {"redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none"}).json()
    assert body["token_endpoint_auth_method"] == "none"
    assert "client_secret" not in body


def test_client_secret_post_is_accepted(client):
    body = post(client, {"redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "client_secret_post"}).json()
    assert body["token_endpoint_auth_method"] == "client_secret_post"
    assert body["client_secret"]


def test_secret_is_stored_hashed(client):
    body = post(client, {"redirect_uris": [REDIRECT_URI]}).json()
    with db.transaction() as session:
        row = session.exec(select(OAuthClient).where(OAuthClient.client_id == body["client_id"])).one()
    assert row.secret_hash and body["client_secret"] not in row.secret_hash
    assert not row.metadata_document


@pytest.mark.parametrize("uris", [
    ["http://app.example.com/callback"],
    ["javascript:alert(1)"],
    ["https://app.example.com/cb#fragment"],
    ["https://app.example.com/cb#"],
    ["com.example.app:/cb#x"],
    ["http://user@127.0.0.1/cb"],
    ["https://app.example.com\\@evil.example/cb"],
    ["https://app.example.com/c\\b"],
    ["https://app.example.com:0/cb"],
    ["http://127.0.0.1:/cb"],
    ["HTTP://LOCALHOST/cb"],
    [REDIRECT_URI, "http://192.168.1.10/cb"],
    [],
    "https://app.example.com/cb",
])
def test_bad_redirect_uris_are_refused(client, uris):
    response = post(client, {"redirect_uris": uris})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_redirect_uri"


def test_missing_redirect_uris_are_refused(client):
    assert post(client, {"client_name": "x"}).json()["error"] == "invalid_redirect_uri"


def test_redirect_uri_with_quotes_gets_a_clean_error(client):
    response = post(client, {"redirect_uris": ['http://evil.example/"\\é']})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_redirect_uri"


@pytest.mark.parametrize("field,value", [
    ("token_endpoint_auth_method", "private_key_jwt"),
    ("grant_types", ["client_credentials"]),
    ("response_types", ["token"]),
    ("scope", "clients:read admin"),
    ("client_name", "x" * 257),
    ("client_uri", "not a url"),
])
def test_unsupported_metadata_is_refused(client, field, value):
    response = post(client, {"redirect_uris": [REDIRECT_URI], field: value})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b"{" + b" " * 16000 + b"1}"])
def test_body_must_be_a_json_object(client, body):
    response = client.post("/oauth/register", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"


def test_preflight_allows_browser_clients(client):
    response = client.options("/oauth/register", headers={
        "Origin": "https://inspector.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"})
    assert response.status_code == 200  # Starlette's CORSMiddleware answers preflights with 200
    assert response.headers["access-control-allow-origin"] == "*"


def test_cross_origin_answers_allow_any_origin(client):
    response = client.post("/oauth/register", content=b"{}", headers={
        "Origin": "https://inspector.example", "content-type": "application/json"})
    assert response.headers["access-control-allow-origin"] == "*"


def test_registrations_per_address_are_limited(client, monkeypatch):
    monkeypatch.setattr(get_settings(), "rate_limit_registrations", 2)
    assert post(client, {"redirect_uris": [REDIRECT_URI]}).status_code == 201
    assert post(client, {"redirect_uris": [REDIRECT_URI]}).status_code == 201
    response = post(client, {"redirect_uris": [REDIRECT_URI]})
    assert response.status_code == 429
    assert response.json()["error"] == "invalid_request"
    assert int(response.headers["retry-after"]) > 0


def test_registrations_count_by_the_ipv6_64_network(app, monkeypatch):
    from starlette.testclient import TestClient
    monkeypatch.setattr(get_settings(), "rate_limit_registrations", 2)
    statuses = []
    for address in ("2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2:ffff::9", "2001:db8:1:3::1"):
        with TestClient(app, base_url="http://testserver", client=(address, 5000)) as client:
            statuses.append(post(client, {"redirect_uris": [REDIRECT_URI]}).status_code)
    assert statuses == [201, 201, 429, 201]
