"""OAuth parameters and registration metadata holding control characters or invalid Unicode are
refused with the endpoint's own error (invalid_request, invalid_client_metadata), never a 500."""

import json

import pytest

from tests.oauth_flow import REDIRECT_URI, authorize_query, pkce_pair, register


@pytest.mark.parametrize("field", ["client_name", "client_uri", "scope", "software_id"])
def test_a_nul_in_registration_metadata_is_invalid_client_metadata(client, field):
    body = {"client_name": "App", "redirect_uris": [REDIRECT_URI], field: "a\x00b"}
    response = client.post("/oauth/register", json=body)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"


def test_an_unpaired_surrogate_in_registration_metadata_is_invalid_client_metadata(client):
    raw = json.dumps({"client_name": "A", "redirect_uris": [REDIRECT_URI]})[:-1] + ', "logo_uri": "\\udc00"}'
    response = client.post("/oauth/register", content=raw, headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"


def test_a_nul_in_a_redirect_uri_is_refused_at_registration(client):
    response = client.post("/oauth/register", json={"client_name": "A", "redirect_uris": [REDIRECT_URI + "\x00"]})
    assert response.status_code == 400


@pytest.mark.parametrize("field", ["code", "code_verifier", "redirect_uri", "client_id"])
def test_a_nul_in_a_token_request_is_invalid_request(client, field):
    data = {"grant_type": "authorization_code", "code": "c", "code_verifier": "v" * 43,
            "redirect_uri": REDIRECT_URI, "client_id": "cl_x", field: "a\x00"}
    response = client.post("/oauth/token", data=data)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


def test_a_nul_in_a_revocation_request_is_invalid_request(client):
    response = client.post("/oauth/revoke", data={"token": "t\x00", "client_id": "cl_x"})
    assert response.status_code == 400


@pytest.mark.parametrize("field", ["state", "client_id", "scope", "redirect_uri", "resource"])
def test_a_nul_in_an_authorization_request_is_an_error_page(browser, field):
    registered = register(browser, token_endpoint_auth_method="none")
    _, challenge = pkce_pair()
    params = {"client_id": registered["client_id"], field: "x\x00"}
    response = browser.get(authorize_query(params.pop("client_id"), challenge, **params), follow_redirects=False)
    assert response.status_code == 400
    assert "location" not in response.headers


@pytest.mark.parametrize("credentials", [b"\xff:x", b"\x00:x", b"%00:x", b"cl_x:%00", b"cl_x:\x1b"])
@pytest.mark.parametrize("endpoint", ["/oauth/token", "/oauth/revoke"])
def test_basic_credentials_that_are_not_clean_text_are_invalid_client(client, endpoint, credentials):
    import base64
    header = {"Authorization": "Basic " + base64.b64encode(credentials).decode()}
    response = client.post(endpoint, data={"grant_type": "refresh_token", "refresh_token": "r", "token": "t"},
                           headers=header)
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"


def test_basic_credentials_that_are_not_base64_are_invalid_client(client):
    response = client.post("/oauth/token", data={"grant_type": "refresh_token", "refresh_token": "r"},
                           headers={"Authorization": "Basic %%%"})
    assert response.status_code == 401


@pytest.mark.parametrize("extra", [
    {"grant_types": [["authorization_code"]]}, {"response_types": [1]}, {"scope": 5}, {"logo_uri": ["x"]},
    {"jwks_uri": 5}, {"tos_uri": True}, {"token_endpoint_auth_method": ["none"]}, {"software_version": 1.5},
    {"contacts": "a@example.com"}, {"jwks": "keys"},
])
def test_metadata_of_the_wrong_json_type_is_invalid_client_metadata(client, extra):
    response = client.post("/oauth/register", json={"client_name": "A", "redirect_uris": [REDIRECT_URI], **extra})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"


@pytest.mark.parametrize("raw", [b'{"redirect_uris": ["' + REDIRECT_URI.encode() + b'"], "x": 1e999}',
                                 b'{"redirect_uris": ["' + REDIRECT_URI.encode() + b'"], "x": NaN}',
                                 b"[" * 5000, b'{"a":' * 20 + b"1" + b"}" * 20])
def test_metadata_json_that_is_not_finite_or_too_deep_is_invalid_client_metadata(client, raw):
    response = client.post("/oauth/register", content=raw, headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"
