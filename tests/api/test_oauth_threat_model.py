"""The OAuth threat model of this service, test by test, after RFC 9700 ("Best Current Practice for
OAuth 2.0 Security", BCP 240, January 2025). Each test names the section it covers; many repeat a
property tested elsewhere (test_oauth_authorize, _token, _resource, _register), so that this file
alone says which threats are met and a regression shows up here under its section.

Index (section: tests)

- §2.1, §4.1 insufficient redirect URI validation: test_4_1_redirect_uri_is_compared_as_a_string,
  test_4_1_loopback_redirect_uri_may_differ_only_in_its_port, test_4_1_loopback_redirect_uri_with_userinfo_is_refused,
  test_4_1_loopback_redirect_uri_with_a_fragment_is_refused, test_4_1_1_registered_uri_is_never_a_pattern,
  test_4_1_registration_refuses_a_fragment (RFC 6749 §3.1.2), test_2_6_registration_refuses_http_outside_loopback
- §2.1.1 authorization code grant: see §4.5 and §4.8; test_2_1_1_constant_pkce_challenges_are_not_detected (skipped)
- §2.1.2 implicit grant: test_2_1_2_implicit_grant_is_refused, test_2_1_2_response_types_issuing_tokens_are_refused,
  test_2_1_2_registration_refuses_the_token_response_type
- §2.2.1, §4.10.1 sender-constrained access tokens: test_4_10_1_sender_constrained_access_tokens (skipped)
- §2.2.2, §4.14 refresh token protection: test_4_14_refresh_token_is_rotated,
  test_4_14_replayed_refresh_token_revokes_the_whole_grant, test_4_14_refresh_token_is_bound_to_its_client,
  test_4_14_confidential_client_must_authenticate_to_refresh, test_4_14_refresh_cannot_widen_the_scopes,
  test_4_14_refresh_cannot_switch_the_resource, test_4_14_refresh_token_expires_30_days_after_it_was_issued,
  test_4_14_revoking_the_refresh_token_ends_the_grant, test_4_14_2_sign_out_does_not_revoke_refresh_tokens (skipped)
- §2.3 access token privilege restriction: test_2_3_token_carries_only_the_ticked_scopes (and §4.9/§4.10.2)
- §2.4 resource owner password credentials: test_2_4_password_grant_is_refused,
  test_2_4_registration_refuses_the_password_grant
- §2.5 client authentication: test_2_5_confidential_client_must_authenticate, test_2_5_wrong_secret_is_refused,
  test_2_5_client_is_held_to_its_registered_method, test_2_5_client_secrets_are_stored_only_as_hashes,
  test_2_5_asymmetric_client_authentication (skipped)
- §2.6 other recommendations: test_2_6_authorization_server_metadata_is_published,
  test_2_6_authorization_responses_carry_no_cors_headers,
  test_2_6_authorization_endpoint_answers_no_cors_preflight
- §4.2 credential leakage via Referer: test_4_2_flow_pages_send_no_referrer_to_other_sites,
  test_4_2_consent_page_loads_and_links_nothing_of_other_sites
- §4.3 credential leakage via browser history: test_4_3_token_responses_are_not_stored,
  test_4_3_consent_page_is_not_stored, test_4_3_1_code_works_once, test_4_3_2_access_token_in_the_query_is_not_accepted
- §4.4 mix-up (RFC 9207): test_4_4_authorization_response_names_the_issuer, test_4_4_error_responses_name_the_issuer,
  test_4_4_metadata_announces_the_iss_parameter
- §4.5 authorization code injection: test_4_5_code_needs_the_verifier_of_its_request, test_4_5_code_is_bound_to_its_client,
  test_4_5_code_is_bound_to_its_redirect_uri, test_4_5_replayed_code_revokes_what_it_issued,
  test_4_5_code_lives_60_seconds
- §4.6 access token injection: the implicit and hybrid response types are refused (§2.1.2 tests)
- §4.7 CSRF: test_4_7_state_is_returned_unchanged, test_4_7_consent_needs_a_csrf_token,
  test_4_7_csrf_token_of_another_browser_is_refused, test_4_7_a_get_never_grants (PKCE: §4.5, §4.8)
- §4.8 PKCE downgrade: test_4_8_code_challenge_is_required, test_4_8_code_challenge_method_is_required,
  test_4_8_plain_method_is_refused, test_4_8_token_request_without_verifier_is_refused,
  test_4_8_confidential_client_must_send_the_verifier_too, test_4_8_verifier_without_a_challenge_is_refused,
  test_4_8_metadata_lists_only_s256
- §4.9, §4.10.2 access token leakage / audience restriction (RFC 8707): test_4_9_mcp_token_is_refused_by_the_rest_api,
  test_4_9_rest_token_is_refused_at_mcp, test_4_9_unknown_resource_is_refused,
  test_4_9_3_tokens_are_stored_only_as_hashes
- §4.10 misuse of stolen access tokens: test_4_10_access_tokens_live_one_hour, test_4_10_expired_access_token_is_refused,
  test_4_10_1_sender_constrained_access_tokens (skipped)
- §4.11 open redirection: test_4_11_2_unregistered_redirect_uri_is_an_error_page,
  test_4_11_2_unknown_client_is_an_error_page, test_4_11_2_ambiguous_redirect_uri_is_an_error_page,
  test_4_11_2_consent_page_names_where_the_user_is_sent, test_4_11_sign_in_never_sends_the_browser_off_site,
  test_4_11_2_signed_out_user_is_not_redirected_before_signing_in
- §4.12 307 redirect: test_4_12_consent_answer_is_never_a_307, test_4_12_sign_in_answers_303
- §4.13 TLS terminating reverse proxies: test_4_13_no_proxy_is_believed_by_default,
  test_4_13_forwarded_for_is_not_believed_in_process, test_4_13_issuer_does_not_follow_request_headers
  (a live `invoicing serve`: tests/e2e/test_cli.py::test_serve_believes_no_forwarded_header_by_default)
- §4.15 client impersonating resource owner: test_4_15_client_cannot_choose_its_client_id,
  test_4_15_client_credentials_grant_is_refused, test_4_15_token_names_both_the_user_and_the_app
- §4.16 clickjacking: test_4_16_flow_pages_cannot_be_framed
- §4.17 in-browser communication flows: test_4_17_response_is_a_plain_redirect_whatever_the_response_mode,
  test_4_17_consent_page_runs_no_script
"""

import re
from datetime import timedelta
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from sqlmodel import select
from starlette.testclient import TestClient

from authz.models import OAuthAuthorizationCode, OAuthClient, OAuthToken
from config.settings import Settings, get_settings
from core.base import crypto, db
from core.base.clock import now
from tests.mcp.jsonrpc import post as mcp_post
from tests.oauth_flow import (
    REDIRECT_URI,
    authorize_query,
    basic,
    csrf_token,
    exchange,
    form_action,
    get_code,
    obtain,
    pkce_pair,
    redirect_params,
    refresh,
    register,
    submit_consent,
    user_id_of,
)
from tests.units import principal_of

ISSUER = "http://testserver"
API = "http://testserver/api/v1"
MCP = "http://testserver/mcp"
METADATA = "/.well-known/oauth-authorization-server"


@pytest.fixture
def public_app(client):
    return register(client, token_endpoint_auth_method="none", client_name="Threat Model App")


@pytest.fixture
def confidential_app(client):
    return register(client, client_name="Threat Model Server App")  # client_secret_basic


@pytest.fixture
def tokens(client, browser, public_app):
    """A token response for the REST API, obtained by the public client."""
    return obtain(client, public_app, resource=API)


def query(app, **extra):
    return authorize_query(app["client_id"], pkce_pair()[1], state="s-1", **extra)


def api_get(http, access_token, path="/customers"):
    return http.get("/api/v1" + path, headers={"Authorization": f"Bearer {access_token}"})


def assert_error_page(response):
    """An authorization error shown to the user: never a redirect to anywhere."""
    assert response.status_code in (400, 403)
    assert "location" not in response.headers
    assert response.headers["content-type"].startswith("text/html")


def flow_page(request, page: str):
    """The consent page (signed in), the authorization error page or the sign-in page (signed out)."""
    if page == "consent":
        browser, app = request.getfixturevalue("browser"), request.getfixturevalue("public_app")
        return browser.get(query(app), follow_redirects=False)
    client = request.getfixturevalue("client")
    url = authorize_query("cl_unknown", pkce_pair()[1]) if page == "error" else "/login"
    response = client.get(url, follow_redirects=False)
    assert response.status_code == (400 if page == "error" else 200)
    return response


def error_redirect(response) -> dict[str, list[str]]:
    params = redirect_params(response)
    assert response.headers["location"].startswith(REDIRECT_URI + "?")
    assert "code" not in params
    return params


# --- §2.1, §4.1 insufficient redirect URI validation ------------------------------------------------


@pytest.mark.parametrize("redirect_uri", [
    "https://app.example.com/cb/",
    "https://app.example.com/cb?next=x",
    "https://APP.example.com/cb",
    "https://app.example.com:443/cb",
    "https://app.example.com/CB",
    "https://app.example.com/%63b",
    "https://app.example.com/cb#",
    "https://user@app.example.com/cb",
    "https://app.example.com.evil.example/cb",
])
def test_4_1_redirect_uri_is_compared_as_a_string(client, browser, redirect_uri):
    """RFC 9700 §4.1.3 (and §2.1): exact string matching, no normalization, no prefix or suffix."""
    app = register(client, redirect_uris=["https://app.example.com/cb"], token_endpoint_auth_method="none")
    assert_error_page(browser.get(query(app, redirect_uri=redirect_uri), follow_redirects=False))


def test_4_1_loopback_redirect_uri_may_differ_only_in_its_port(browser, public_app):
    """RFC 9700 §4.1.3, RFC 8252 §7.3: a loopback redirect URI matches on any port."""
    response = submit_consent(browser, query(public_app, redirect_uri="http://127.0.0.1:53682/callback"))
    assert response.headers["location"].startswith("http://127.0.0.1:53682/callback?code=")


@pytest.mark.parametrize("redirect_uri", ["http://user@127.0.0.1:53682/callback", "http://x:y@127.0.0.1:8765/callback"])
def test_4_1_loopback_redirect_uri_with_userinfo_is_refused(browser, public_app, redirect_uri):
    """RFC 9700 §4.1.3: besides the loopback port, nothing may differ; userinfo is a difference."""
    assert_error_page(browser.get(query(public_app, redirect_uri=redirect_uri), follow_redirects=False))


@pytest.mark.parametrize("redirect_uri", ["http://127.0.0.1:53682/callback#x", "http://127.0.0.1:8765/callback#"])
def test_4_1_loopback_redirect_uri_with_a_fragment_is_refused(browser, public_app, redirect_uri):
    """RFC 9700 §4.1.3 and §4.1.2 (fragments survive redirects): a fragment is a difference."""
    assert_error_page(browser.get(query(public_app, redirect_uri=redirect_uri), follow_redirects=False))


def test_4_1_1_registered_uri_is_never_a_pattern(client, browser):
    """RFC 9700 §4.1.1: a registered URI that looks like a pattern matches only itself."""
    app = register(client, redirect_uris=["https://*.example.com/cb"], token_endpoint_auth_method="none")
    assert_error_page(browser.get(query(app, redirect_uri="https://evil.example.com/cb"), follow_redirects=False))


@pytest.mark.parametrize("uri", ["https://app.example.com/cb#x", "https://app.example.com/cb#", "com.example.app:/cb#x"])
def test_4_1_registration_refuses_a_fragment(client, uri):
    """RFC 6749 §3.1.2 (a redirection endpoint has no fragment), behind RFC 9700 §4.1.2."""
    response = client.post("/oauth/register", json={"redirect_uris": [uri]})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_redirect_uri"


@pytest.mark.parametrize("uri", ["http://app.example.com/cb", "http://192.168.1.10/cb", "http://localhost.evil.example/cb"])
def test_2_6_registration_refuses_http_outside_loopback(client, uri):
    """RFC 9700 §2.6: authorization responses never travel unencrypted, except to a loopback app."""
    response = client.post("/oauth/register", json={"redirect_uris": [uri]})
    assert response.json()["error"] == "invalid_redirect_uri"


# --- §2.1.1 authorization code grant ----------------------------------------------------------------


@pytest.mark.skip(reason="Not implemented: RFC 9700 §2.1.1 encourages (does not require) detecting constant "
                         "PKCE challenges; each challenge is only checked for S256 syntax.")
def test_2_1_1_constant_pkce_challenges_are_not_detected():
    """RFC 9700 §2.1.1: 'Authorization servers are encouraged to ... detect ... constant values'."""


# --- §2.1.2, §4.6 implicit grant and access token injection ------------------------------------------


def test_2_1_2_implicit_grant_is_refused(browser, public_app):
    """RFC 9700 §2.1.2 and §4.6: no access token is ever issued in an authorization response."""
    response = browser.get(query(public_app, response_type="token"), follow_redirects=False)
    params = error_redirect(response)
    assert params["error"] == ["unsupported_response_type"]
    assert "access_token" not in response.headers["location"]


@pytest.mark.parametrize("response_type", ["code token", "code id_token token", "id_token token"])
def test_2_1_2_response_types_issuing_tokens_are_refused(browser, public_app, response_type):
    """RFC 9700 §2.1.2: other response types issuing access tokens at the authorization endpoint."""
    response = browser.get(query(public_app, response_type=response_type), follow_redirects=False)
    assert error_redirect(response)["error"] == ["unsupported_response_type"]


def test_2_1_2_registration_refuses_the_token_response_type(client):
    """RFC 9700 §2.1.2: a client cannot register for the implicit grant."""
    response = client.post("/oauth/register", json={"redirect_uris": [REDIRECT_URI], "response_types": ["token"]})
    assert response.json()["error"] == "invalid_client_metadata"


# --- §2.3 access token privilege restriction ----------------------------------------------------------


def test_2_3_token_carries_only_the_ticked_scopes(client, browser, public_app):
    """RFC 9700 §2.3: the token is limited to what the user allowed, and the API enforces it."""
    body = obtain(client, public_app, resource=API, scopes=["clients:read"])
    assert body["scope"] == "clients:read"
    assert api_get(client, body["access_token"]).status_code == 200
    assert api_get(client, body["access_token"], "/invoices").status_code == 403


# --- §2.4 resource owner password credentials grant ---------------------------------------------------


def test_2_4_password_grant_is_refused(client, tenant, confidential_app):
    """RFC 9700 §2.4: the password grant MUST NOT be used."""
    response = client.post("/oauth/token", headers=basic(confidential_app["client_id"], confidential_app["client_secret"]),
                           data={"grant_type": "password", "username": tenant.user_email,
                                 "password": "correct horse battery"})
    assert response.status_code == 400
    assert response.json()["error"] == "unsupported_grant_type"
    assert "access_token" not in response.json()


def test_2_4_registration_refuses_the_password_grant(client):
    """RFC 9700 §2.4: no client can even be registered for it."""
    response = client.post("/oauth/register", json={"redirect_uris": [REDIRECT_URI], "grant_types": ["password"]})
    assert response.json()["error"] == "invalid_client_metadata"


# --- §2.5 client authentication -----------------------------------------------------------------------


def test_2_5_confidential_client_must_authenticate(client, browser, confidential_app):
    """RFC 9700 §2.5: a client registered with a secret cannot redeem a code without it."""
    code, verifier_ = get_code(browser, confidential_app["client_id"])
    response = exchange(client, confidential_app["client_id"], code, verifier_)
    assert response.json()["error"] == "invalid_client"


def test_2_5_wrong_secret_is_refused(client, browser, confidential_app):
    """RFC 9700 §2.5: the secret is checked."""
    code, verifier_ = get_code(browser, confidential_app["client_id"])
    response = exchange(client, confidential_app["client_id"], code, verifier_,
                        headers=basic(confidential_app["client_id"], "not-the-secret"))
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"


def test_2_5_client_is_held_to_its_registered_method(client, browser, confidential_app):
    """RFC 9700 §2.5: a client_secret_basic client cannot switch to client_secret_post."""
    code, verifier_ = get_code(browser, confidential_app["client_id"])
    response = exchange(client, confidential_app["client_id"], code, verifier_, secret=confidential_app["client_secret"])
    assert response.json()["error"] == "invalid_client"


def test_2_5_client_secrets_are_stored_only_as_hashes(confidential_app):
    """RFC 9700 §2.5 (symmetric keys at the server are a leakage risk): only a sha256 is kept."""
    with db.transaction() as session:
        row = session.exec(select(OAuthClient).where(OAuthClient.client_id == confidential_app["client_id"])).one()
    assert row.secret_hash == crypto.sha256_hex(confidential_app["client_secret"])


@pytest.mark.skip(reason="Not implemented: RFC 9700 §2.5 recommends asymmetric client authentication "
                         "(private_key_jwt, mutual TLS); clients authenticate with a secret or are public (PKCE).")
def test_2_5_asymmetric_client_authentication():
    """RFC 9700 §2.5: private_key_jwt or mTLS client authentication."""


# --- §2.6 other recommendations ------------------------------------------------------------------------


def test_2_6_authorization_server_metadata_is_published(client):
    """RFC 9700 §2.6: RFC 8414 metadata, so clients configure themselves."""
    metadata = client.get(METADATA).json()
    assert metadata["issuer"] == ISSUER
    assert metadata["authorization_endpoint"] == ISSUER + "/oauth/authorize"
    assert metadata["token_endpoint"] == ISSUER + "/oauth/token"


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_2_6_authorization_responses_carry_no_cors_headers(browser, public_app, method):
    """RFC 9700 §2.6: 'CORS MUST NOT be supported at the authorization endpoint': a cross-origin
    script cannot read what /oauth/authorize answers."""
    response = browser.request(method, query(public_app), headers={"Origin": "https://inspector.example"},
                               follow_redirects=False)
    assert "access-control-allow-origin" not in response.headers


def test_2_6_authorization_endpoint_answers_no_cors_preflight(client):
    """RFC 9700 §2.6: no preflight of the authorization endpoint is approved."""
    preflight = client.options("/oauth/authorize", headers={"Origin": "https://inspector.example",
                                                            "Access-Control-Request-Method": "POST"})
    assert "access-control-allow-origin" not in preflight.headers


# --- §4.2 credential leakage via Referer headers ------------------------------------------------------


@pytest.mark.parametrize("page", ["consent", "error", "sign-in"])
def test_4_2_flow_pages_send_no_referrer_to_other_sites(request, page):
    """RFC 9700 §4.2.4: a Referrer-Policy keeps the authorization request (state, ...) on this site."""
    assert flow_page(request, page).headers["referrer-policy"] in ("no-referrer", "same-origin")


def test_4_2_consent_page_loads_and_links_nothing_of_other_sites(browser, public_app):
    """RFC 9700 §4.2.4: the authorization endpoint SHOULD NOT include third-party resources or links."""
    page = browser.get(query(public_app))
    targets = re.findall(r'(?:src|href|action)="([^"]*)"', page.text)
    assert targets
    assert all(t.startswith("#") or (t.startswith("/") and not t.startswith("//")) for t in targets), targets
    assert "default-src 'self'" in page.headers["content-security-policy"]


# --- §4.3 credential leakage via browser history ------------------------------------------------------


def test_4_3_token_responses_are_not_stored(client, browser, public_app):
    """RFC 9700 §4.3 (and RFC 6749 §5.1): token responses, refreshes and their errors carry no-store."""
    code, verifier_ = get_code(browser, public_app["client_id"])
    issued = exchange(client, public_app["client_id"], code, verifier_)
    refreshed = refresh(client, public_app["client_id"], issued.json()["refresh_token"])
    failed = exchange(client, public_app["client_id"], code, verifier_)
    assert [r.status_code for r in (issued, refreshed, failed)] == [200, 200, 400]
    assert all(r.headers["cache-control"] == "no-store" for r in (issued, refreshed, failed))


def test_4_3_consent_page_is_not_stored(browser, public_app):
    """RFC 9700 §4.3: the page holding the authorization request is not cached."""
    assert browser.get(query(public_app)).headers["cache-control"] == "no-store"


def test_4_3_1_code_works_once(client, browser, public_app):
    """RFC 9700 §4.3.1: a code read from the browser history after use is worthless."""
    code, verifier_ = get_code(browser, public_app["client_id"])
    assert exchange(client, public_app["client_id"], code, verifier_).status_code == 200
    assert exchange(client, public_app["client_id"], code, verifier_).json()["error"] == "invalid_grant"


def test_4_3_2_access_token_in_the_query_is_not_accepted(client, tokens):
    """RFC 9700 §4.3.2, RFC 6750 §2.3: an access_token query parameter is not a credential here."""
    response = client.get("/api/v1/customers?" + urlencode({"access_token": tokens["access_token"]}))
    assert response.status_code == 401


# --- §4.4 mix-up attacks -----------------------------------------------------------------------------------


def test_4_4_authorization_response_names_the_issuer(client, browser, public_app):
    """RFC 9700 §4.4.2.1, RFC 9207: the code comes back with `iss`, the metadata's issuer."""
    params = redirect_params(submit_consent(browser, query(public_app)))
    assert params["code"]
    assert params["iss"] == [client.get(METADATA).json()["issuer"]]


@pytest.mark.parametrize("case", ["deny", "invalid_scope"])
def test_4_4_error_responses_name_the_issuer(browser, public_app, case):
    """RFC 9700 §4.4.2.1, RFC 9207 §2: error responses carry `iss` too."""
    if case == "deny":
        response = submit_consent(browser, query(public_app), decision="deny")
    else:
        response = browser.get(query(public_app, scope="no:such"), follow_redirects=False)
    assert error_redirect(response)["iss"] == [ISSUER]


def test_4_4_metadata_announces_the_iss_parameter(client):
    """RFC 9700 §4.4.2.1, RFC 9207 §3: clients learn they can require `iss`."""
    assert client.get(METADATA).json()["authorization_response_iss_parameter_supported"] is True


# --- §4.5 authorization code injection -----------------------------------------------------------------------


def test_4_5_code_needs_the_verifier_of_its_request(client, browser, public_app):
    """RFC 9700 §4.5.3.1: an injected code fails because the victim's verifier is not its own."""
    code, _ = get_code(browser, public_app["client_id"])
    response = exchange(client, public_app["client_id"], code, pkce_pair()[0])
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"


def test_4_5_code_is_bound_to_its_client(client, browser, public_app):
    """RFC 9700 §4.5 (RFC 6749 §4.1.3): a code issued to one client cannot be redeemed by another."""
    other = register(client, token_endpoint_auth_method="none")
    code, verifier_ = get_code(browser, public_app["client_id"])
    assert exchange(client, other["client_id"], code, verifier_).json()["error"] == "invalid_grant"


def test_4_5_code_is_bound_to_its_redirect_uri(client, browser, public_app):
    """RFC 9700 §4.5 (RFC 6749 §4.1.3): the token request repeats the authorization's redirect_uri."""
    code, verifier_ = get_code(browser, public_app["client_id"])
    response = exchange(client, public_app["client_id"], code, verifier_, redirect_uri="http://127.0.0.1:9/callback")
    assert response.json()["error"] == "invalid_grant"


def test_4_5_replayed_code_revokes_what_it_issued(client, browser, public_app):
    """RFC 9700 §4.2.4 (RFC 6749 §4.1.2): a second redemption revokes the tokens of the first."""
    code, verifier_ = get_code(browser, public_app["client_id"], resource=API)
    first = exchange(client, public_app["client_id"], code, verifier_, resource=API).json()
    assert exchange(client, public_app["client_id"], code, verifier_, resource=API).status_code == 400
    assert api_get(client, first["access_token"]).status_code == 401
    assert refresh(client, public_app["client_id"], first["refresh_token"]).json()["error"] == "invalid_grant"


def test_4_5_code_lives_60_seconds(browser, public_app):
    """RFC 9700 §4.5 (RFC 6749 §4.1.2: short-lived codes): a code lives 60 seconds."""
    get_code(browser, public_app["client_id"])
    with db.transaction() as session:
        row = session.exec(select(OAuthAuthorizationCode)).one()
    assert row.expires_at - row.created_at == timedelta(seconds=60)


# --- §4.7 cross-site request forgery ------------------------------------------------------------------------


def test_4_7_state_is_returned_unchanged(browser, public_app):
    """RFC 9700 §4.7.1: the client's `state` comes back exactly as sent."""
    state = "a b+c/d=e&f~%20"
    params = redirect_params(submit_consent(browser, authorize_query(public_app["client_id"], pkce_pair()[1], state=state)))
    assert params["state"] == [state]


def test_4_7_consent_needs_a_csrf_token(browser, public_app):
    """RFC 9700 §4.7 (the consent form itself): an Allow without this site's CSRF token is refused."""
    url = query(public_app)
    response = browser.post(url, data={"decision": "allow", "scope": "clients:read"}, follow_redirects=False)
    assert response.status_code == 403
    assert "location" not in response.headers


def test_4_7_csrf_token_of_another_browser_is_refused(app, browser, public_app, tenant):
    """RFC 9700 §4.7: the CSRF token is bound to the browser that was shown the page."""
    from tests.oauth_flow import sign_in
    url = query(public_app)
    page = browser.get(url).text
    with TestClient(app, base_url=ISSUER) as other:
        sign_in(other, tenant.user_email)
        other.get(url)  # the other browser gets its own CSRF cookie
        response = other.post(form_action(page), data={"csrf_token": csrf_token(page), "decision": "allow",
                                                       "scope": "clients:read"}, follow_redirects=False)
    assert response.status_code == 403
    assert "location" not in response.headers


def test_4_7_a_get_never_grants(browser, public_app):
    """RFC 9700 §4.7: a link (GET) cannot approve a request on the user's behalf; only the form can."""
    response = browser.get(query(public_app) + "&decision=allow&scope=clients:read", follow_redirects=False)
    assert response.status_code == 200
    assert "location" not in response.headers
    assert '<form id="consent"' in response.text


# --- §4.8 PKCE downgrade attack ---------------------------------------------------------------------------------


def test_4_8_code_challenge_is_required(browser, public_app):
    """RFC 9700 §4.8.2 (and §2.1.1): no code_challenge, no code."""
    response = browser.get(query(public_app, code_challenge=None, code_challenge_method=None), follow_redirects=False)
    assert error_redirect(response)["error"] == ["invalid_request"]


def test_4_8_code_challenge_method_is_required(browser, public_app):
    """RFC 9700 §4.8.1: without a method RFC 7636 defaults to plain; here the request is refused."""
    response = browser.get(query(public_app, code_challenge_method=None), follow_redirects=False)
    assert error_redirect(response)["error"] == ["invalid_request"]


def test_4_8_plain_method_is_refused(browser, public_app):
    """RFC 9700 §2.1.1: S256 only, so an attacker reading the request (A4) learns no verifier."""
    response = browser.get(query(public_app, code_challenge="a" * 43, code_challenge_method="plain"),
                           follow_redirects=False)
    assert error_redirect(response)["error"] == ["invalid_request"]


def test_4_8_token_request_without_verifier_is_refused(client, browser, public_app):
    """RFC 9700 §2.1.1: a code with a challenge needs the verifier."""
    code, _ = get_code(browser, public_app["client_id"])
    response = exchange(client, public_app["client_id"], code, None)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


def test_4_8_confidential_client_must_send_the_verifier_too(client, browser, confidential_app):
    """RFC 9700 §2.1.1: PKCE is enforced for confidential clients as well."""
    code, _ = get_code(browser, confidential_app["client_id"])
    response = exchange(client, confidential_app["client_id"], code, None,
                        headers=basic(confidential_app["client_id"], confidential_app["client_secret"]))
    assert response.json()["error"] == "invalid_request"


def test_4_8_verifier_without_a_challenge_is_refused(client, browser, public_app):
    """RFC 9700 §4.8.2: a code_verifier for a code whose request had no challenge is rejected (a
    code without challenge cannot be issued here; the row is altered to prove the second line)."""
    code, verifier_ = get_code(browser, public_app["client_id"])
    with db.transaction() as session:
        row = session.exec(select(OAuthAuthorizationCode)).one()
        row.code_challenge = ""
        session.add(row)
    response = exchange(client, public_app["client_id"], code, verifier_)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


def test_4_8_metadata_lists_only_s256(client):
    """RFC 9700 §2.1.1: PKCE support is discoverable; only S256 is offered."""
    assert client.get(METADATA).json()["code_challenge_methods_supported"] == ["S256"]


# --- §4.9, §4.10.2 access token leakage at the resource server: audience restriction (RFC 8707) ---------------


def test_4_9_mcp_token_is_refused_by_the_rest_api(client, browser, public_app):
    """RFC 9700 §4.9.3, §4.10.2: a token for {origin}/mcp (the default resource) is refused at /api/v1."""
    token = obtain(client, public_app)["access_token"]
    response = api_get(client, token)
    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["www-authenticate"]


def test_4_9_rest_token_is_refused_at_mcp(client, tokens):
    """RFC 9700 §4.9.3, §4.10.2: a token for {base_url} is refused at /mcp."""
    response = mcp_post(client, "tools/list", key=tokens["access_token"])
    assert response.status_code == 401


def test_4_9_unknown_resource_is_refused(browser, public_app):
    """RFC 9700 §4.10.2: no token is issued for a resource server the authorization server does not know."""
    response = browser.get(query(public_app, resource="https://counterfeit.example/api/v1"), follow_redirects=False)
    assert error_redirect(response)["error"] == ["invalid_target"]


def test_4_9_3_tokens_are_stored_only_as_hashes(tokens):
    """RFC 9700 §4.9.3: tokens are not stored in plaintext (only sha256 hashes)."""
    with db.transaction() as session:
        stored = {row.token_hash for row in session.exec(select(OAuthToken))}
    assert stored == {crypto.sha256_hex(tokens["access_token"]), crypto.sha256_hex(tokens["refresh_token"])}


# --- §4.10 misuse of stolen access tokens ------------------------------------------------------------------------


def test_4_10_access_tokens_live_one_hour(client, browser, public_app):
    """RFC 9700 §4.10, §4.14: without sender-constraining, a stolen access token is useful for an hour at most."""
    body = obtain(client, public_app, resource=API)
    assert body["expires_in"] == 3600
    with db.transaction() as session:
        row = session.exec(select(OAuthToken).where(OAuthToken.kind == "access")).one()
    assert row.expires_at - row.created_at == timedelta(hours=1)


def test_4_10_expired_access_token_is_refused(client, tokens):
    """RFC 9700 §4.10: expiry is checked on every request."""
    with db.transaction() as session:
        row = session.exec(select(OAuthToken).where(OAuthToken.kind == "access")).one()
        row.expires_at = now() - timedelta(seconds=1)
        session.add(row)
    assert api_get(client, tokens["access_token"]).status_code == 401


@pytest.mark.skip(reason="Not implemented: RFC 9700 §2.2.1/§4.10.1 recommend (SHOULD) sender-constrained access "
                         "tokens (DPoP, RFC 9449, or mTLS, RFC 8705); tokens here are bearer tokens, limited by "
                         "audience (§4.10.2), scope (§2.3) and a one-hour lifetime.")
def test_4_10_1_sender_constrained_access_tokens():
    """RFC 9700 §4.10.1: a token replayed without the client's key would be refused."""


# --- §4.11 open redirection ---------------------------------------------------------------------------------------


def test_4_11_2_unregistered_redirect_uri_is_an_error_page(browser, public_app):
    """RFC 9700 §4.11.2 (RFC 6749 §4.1.2.1): an invalid client_id/redirect_uri pair is never redirected to."""
    assert_error_page(browser.get(query(public_app, redirect_uri="https://evil.example/cb"), follow_redirects=False))


def test_4_11_2_unknown_client_is_an_error_page(browser):
    """RFC 9700 §4.11.2: an unknown client_id with any redirect_uri is an error page."""
    url = authorize_query("cl_unknown", pkce_pair()[1], redirect_uri="https://evil.example/cb")
    assert_error_page(browser.get(url, follow_redirects=False))


def test_4_11_2_ambiguous_redirect_uri_is_an_error_page(client, browser):
    """RFC 9700 §4.11.2: without redirect_uri and with several registered, nothing is guessed."""
    app = register(client, redirect_uris=[REDIRECT_URI, "http://127.0.0.1:9999/other"], token_endpoint_auth_method="none")
    assert_error_page(browser.get(query(app, redirect_uri=None), follow_redirects=False))


def test_4_11_2_consent_page_names_where_the_user_is_sent(client, browser):
    """RFC 9700 §4.11.2: for an untrusted (self-registered) client the user is told where they go back to."""
    app = register(client, redirect_uris=["https://phish.example/cb"], token_endpoint_auth_method="none")
    page = browser.get(query(app, redirect_uri="https://phish.example/cb")).text
    assert '<strong id="redirect-host">phish.example</strong>' in page
    assert "Unverified app" in page


@pytest.mark.parametrize("next_url", ["https://evil.example/", "//evil.example/", "/\\evil.example/", "http:/evil.example"])
def test_4_11_sign_in_never_sends_the_browser_off_site(browser, next_url):
    """RFC 9700 §4.11 (§2.1: no open redirectors): /login?next= only goes to a path of this site."""
    response = browser.get("/login?" + urlencode({"next": next_url}), follow_redirects=False)
    location = response.headers["location"]
    assert location.startswith("/") and not location.startswith("//") and "evil" not in location


def test_4_11_2_signed_out_user_is_not_redirected_before_signing_in(client, public_app):
    """RFC 9700 §4.11.2: a signed-out visitor is asked to sign in before any redirect to the client."""
    response = client.get(query(public_app, scope="no:such"), follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"].startswith("/login?next=")


# --- §4.12 307 redirect -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("decision", ["allow", "deny"])
def test_4_12_consent_answer_is_never_a_307(browser, public_app, decision):
    """RFC 9700 §4.12: the POSTed consent form is not forwarded to the client (302 or 303, never 307/308)."""
    response = submit_consent(browser, query(public_app), decision=decision)
    assert response.status_code in (302, 303)


def test_4_12_sign_in_answers_303(client, tenant, public_app):
    """RFC 9700 §4.12: the form carrying the user's password leaves with a 303 See Other."""
    url = query(public_app)
    page = client.get("/login?" + urlencode({"next": url})).text
    response = client.post("/login", data={"csrf_token": csrf_token(page), "email": tenant.user_email,
                                           "password": "correct horse battery", "next": url}, follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == url


# --- §4.13 TLS terminating reverse proxies ------------------------------------------------------------------------


def test_4_13_no_proxy_is_believed_by_default():
    """RFC 9700 §4.13: forwarded headers are believed only from proxies the operator names (none by
    default). A live server: tests/e2e/test_cli.py::test_serve_believes_no_forwarded_header_by_default."""
    assert Settings.model_fields["forwarded_allow_ips"].default == ""


def test_4_13_forwarded_for_is_not_believed_in_process(client, monkeypatch):
    """RFC 9700 §4.13: a client cannot dodge a per-address limit with X-Forwarded-For."""
    monkeypatch.setattr(get_settings(), "rate_limit_registrations", 2)
    statuses = [client.post("/oauth/register", json={"redirect_uris": [REDIRECT_URI]},
                            headers={"X-Forwarded-For": f"203.0.113.{n}"}).status_code for n in range(3)]
    assert statuses == [201, 201, 429]


def test_4_13_issuer_does_not_follow_request_headers(browser, public_app):
    """RFC 9700 §4.13 (and §4.4): the issuer is the configured origin, whatever Host or X-Forwarded-* say."""
    spoof = {"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https", "Forwarded": "host=evil.example"}
    assert browser.get(METADATA, headers=spoof).json()["issuer"] == ISSUER
    page = browser.get(query(public_app), headers=spoof).text
    response = browser.post(form_action(page), headers=spoof, follow_redirects=False,
                            data={"csrf_token": csrf_token(page), "decision": "allow", "scope": "clients:read"})
    assert redirect_params(response)["iss"] == [ISSUER]


# --- §2.2.2, §4.14 refresh token protection --------------------------------------------------------------------------


def test_4_14_refresh_token_is_rotated(client, public_app, tokens):
    """RFC 9700 §4.14.2 (rotation for public clients): each refresh issues a new refresh token."""
    new = refresh(client, public_app["client_id"], tokens["refresh_token"]).json()
    assert new["refresh_token"] != tokens["refresh_token"]
    assert refresh(client, public_app["client_id"], new["refresh_token"]).status_code == 200


def test_4_14_replayed_refresh_token_revokes_the_whole_grant(client, public_app, tokens):
    """RFC 9700 §4.14.2: presenting a rotated refresh token revokes the active one and its access tokens."""
    new = refresh(client, public_app["client_id"], tokens["refresh_token"]).json()
    assert refresh(client, public_app["client_id"], tokens["refresh_token"]).json()["error"] == "invalid_grant"
    assert refresh(client, public_app["client_id"], new["refresh_token"]).json()["error"] == "invalid_grant"
    assert api_get(client, new["access_token"]).status_code == 401


def test_4_14_refresh_token_is_bound_to_its_client(client, public_app, tokens):
    """RFC 9700 §4.14.1: another (public) client cannot use the refresh token."""
    other = register(client, token_endpoint_auth_method="none")
    assert refresh(client, other["client_id"], tokens["refresh_token"]).json()["error"] == "invalid_grant"


def test_4_14_confidential_client_must_authenticate_to_refresh(client, browser, confidential_app):
    """RFC 9700 §2.2.2, §4.14.2: a confidential client's refresh token is useless without its secret."""
    code, verifier_ = get_code(browser, confidential_app["client_id"])
    auth = basic(confidential_app["client_id"], confidential_app["client_secret"])
    refresh_token = exchange(client, confidential_app["client_id"], code, verifier_, headers=auth).json()["refresh_token"]
    assert refresh(client, confidential_app["client_id"], refresh_token).json()["error"] == "invalid_client"
    assert refresh(client, None, refresh_token, headers=auth).status_code == 200


def test_4_14_refresh_cannot_widen_the_scopes(client, public_app, tokens):
    """RFC 9700 §4.14.2: refresh tokens are bound to the consented scope."""
    response = refresh(client, public_app["client_id"], tokens["refresh_token"], scope="clients:read payments:write")
    assert response.json()["error"] == "invalid_scope"


def test_4_14_refresh_cannot_switch_the_resource(client, public_app, tokens):
    """RFC 9700 §4.14.2: refresh tokens are bound to the consented resource server."""
    response = refresh(client, public_app["client_id"], tokens["refresh_token"], resource=MCP)
    assert response.json()["error"] == "invalid_target"


def test_4_14_refresh_token_expires_30_days_after_it_was_issued(client, public_app, tokens):
    """RFC 9700 §4.14.2 (expire when unused): every rotation issues a token living 30 days, so a client
    inactive for 30 days needs a new authorization; an expired one is refused."""
    new = refresh(client, public_app["client_id"], tokens["refresh_token"]).json()["refresh_token"]
    with db.transaction() as session:
        rows = session.exec(select(OAuthToken).where(OAuthToken.kind == "refresh")).all()
        assert len(rows) == 2 and all(r.expires_at - r.created_at == timedelta(days=30) for r in rows)
        active = next(r for r in rows if r.token_hash == crypto.sha256_hex(new))
        active.expires_at = now() - timedelta(seconds=1)
        session.add(active)
    assert refresh(client, public_app["client_id"], new).json()["error"] == "invalid_grant"


def test_4_14_revoking_the_refresh_token_ends_the_grant(client, public_app, tokens):
    """RFC 9700 §4.14 (RFC 7009): revoking the refresh token stops its access tokens too."""
    client.post("/oauth/revoke", data={"token": tokens["refresh_token"], "client_id": public_app["client_id"]})
    assert api_get(client, tokens["access_token"]).status_code == 401


@pytest.mark.skip(reason="Not implemented: RFC 9700 §4.14.2 says servers MAY revoke refresh tokens on a password "
                         "change or sign-out; connected apps stay connected until disconnected in Settings.")
def test_4_14_2_sign_out_does_not_revoke_refresh_tokens():
    """RFC 9700 §4.14.2: revocation on security events."""


# --- §4.15 client impersonating resource owner -----------------------------------------------------------------------


def test_4_15_client_cannot_choose_its_client_id(client, tenant):
    """RFC 9700 §4.15.1, §2.6: the server assigns client ids; a registration cannot take a user's id."""
    wanted = str(user_id_of(tenant))
    body = register(client, client_id=wanted)
    assert body["client_id"] != wanted
    assert body["client_id"].startswith("cl_")


def test_4_15_client_credentials_grant_is_refused(client, confidential_app):
    """RFC 9700 §4.15: no token is ever issued without a resource owner, so none can pass for one."""
    response = client.post("/oauth/token", data={"grant_type": "client_credentials"},
                           headers=basic(confidential_app["client_id"], confidential_app["client_secret"]))
    assert response.json()["error"] == "unsupported_grant_type"


def test_4_15_token_names_both_the_user_and_the_app(client, public_app, tokens, tenant):
    """RFC 9700 §4.15.1: the resource server tells the app from the user it acts for."""
    principal = principal_of("Bearer " + tokens["access_token"], API)
    assert principal.actor == "oauth_app"
    assert principal.client_id == public_app["client_id"]
    assert principal.user_id == user_id_of(tenant)


# --- §4.16 clickjacking ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("page", ["consent", "error", "sign-in"])
def test_4_16_flow_pages_cannot_be_framed(request, page):
    """RFC 9700 §4.16: X-Frame-Options and CSP frame-ancestors on the consent, error and sign-in pages."""
    response = flow_page(request, page)
    assert response.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]


# --- §4.17 attacks on in-browser communication flows -----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["web_message", "fragment", "form_post"])
def test_4_17_response_is_a_plain_redirect_whatever_the_response_mode(browser, public_app, mode):
    """RFC 9700 §4.17 (and §2.6): the response never goes through postMessage or the page; it is a
    redirect to the registered URI with the code in the query (response_modes_supported: query)."""
    response = submit_consent(browser, query(public_app, response_mode=mode))
    location = urlsplit(response.headers["location"])
    assert response.headers["location"].startswith(REDIRECT_URI + "?")
    assert parse_qs(location.query)["code"] and not location.fragment


def test_4_17_consent_page_runs_no_script(browser, public_app):
    """RFC 9700 §4.17: no in-browser messaging: the consent page has no script, and CSP allows none inline."""
    page = browser.get(query(public_app))
    assert "<script" not in page.text.lower()
    policy = page.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "script-src" not in policy  # scripts: this site's files only
