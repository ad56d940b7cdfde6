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
