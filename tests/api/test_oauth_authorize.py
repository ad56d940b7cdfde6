"""/oauth/authorize: request validation, where errors go, the consent page and its decisions."""

from urllib.parse import parse_qs, urlsplit

import pytest

from tests.oauth_flow import (
    REDIRECT_URI,
    authorize_query,
    csrf_token,
    form_action,
    offered_scopes,
    pkce_pair,
    redirect_params,
    register,
    submit_consent,
    ticked_scopes,
)

ISSUER = "http://testserver"


@pytest.fixture
def app_client(client):
    return register(client, token_endpoint_auth_method="none", client_name="Helpful Assistant")


def query(app_client, **extra):
    return authorize_query(app_client["client_id"], pkce_pair()[1], state="xyz", **extra)


# --- errors before the redirect URI is trusted: a page ------------------------------------------


def test_unknown_client_is_an_error_page(browser):
    response = browser.get(authorize_query("cl_unknown", pkce_pair()[1]), follow_redirects=False)
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("text/html")
    assert "invalid_client" in response.text


def test_unregistered_redirect_uri_is_an_error_page(browser, app_client):
    response = browser.get(query(app_client, redirect_uri="https://evil.example/cb"), follow_redirects=False)
    assert response.status_code == 400
    assert "evil.example" not in response.headers.get("location", "")
    assert "invalid_request" in response.text


def test_missing_client_id_is_an_error_page(browser):
    response = browser.get("/oauth/authorize?response_type=code", follow_redirects=False)
    assert response.status_code == 400
    assert "invalid_client" in response.text


# --- loopback redirect URIs: only the port may differ (RFC 8252 §7.3, RFC 9700 §4.1.3) -----------


def test_loopback_redirect_uri_may_use_another_port(browser, app_client):
    response = submit_consent(browser, query(app_client, redirect_uri="http://127.0.0.1:53682/callback"))
    assert response.headers["location"].startswith("http://127.0.0.1:53682/callback?code=")


def assert_error_page(response):
    assert response.status_code == 400
    assert "location" not in response.headers
    assert "invalid_request" in response.text


@pytest.mark.parametrize("redirect_uri", [
    "http://user@127.0.0.1:53682/callback",
    "http://evil.example@127.0.0.1:8765/callback",
])
def test_loopback_redirect_uri_with_userinfo_is_an_error_page(browser, app_client, redirect_uri):
    assert_error_page(browser.get(query(app_client, redirect_uri=redirect_uri), follow_redirects=False))


@pytest.mark.parametrize("redirect_uri", ["http://127.0.0.1:53682/callback#x", "http://127.0.0.1:8765/callback#"])
def test_loopback_redirect_uri_with_fragment_is_an_error_page(browser, app_client, redirect_uri):
    assert_error_page(browser.get(query(app_client, redirect_uri=redirect_uri), follow_redirects=False))


@pytest.mark.parametrize("redirect_uri", [
    "HTTP://127.0.0.1:53682/callback",
    "http://localhost:53682/callback",
    "http://127.0.0.1:53682/Callback",
    "http://127.0.0.1:53682/callback?",
    "http://127.0.0.1:0/callback",
    "http://127.0.0.1:/callback",
    "http://127.0.0.1:53682\\@evil.example/callback",
])
def test_loopback_redirect_uri_differing_beyond_the_port_is_an_error_page(browser, app_client, redirect_uri):
    assert_error_page(browser.get(query(app_client, redirect_uri=redirect_uri), follow_redirects=False))


# --- errors after: a redirect with error, state and iss -----------------------------------------


def assert_error_redirect(response, error):
    params = redirect_params(response)
    assert response.headers["location"].startswith(REDIRECT_URI + "?")
    assert params["error"] == [error]
    assert params["state"] == ["xyz"]
    assert params["iss"] == [ISSUER]
    assert "code" not in params


def test_missing_code_challenge_is_redirected_as_invalid_request(browser, app_client):
    url = query(app_client, code_challenge=None, code_challenge_method=None)
    assert_error_redirect(browser.get(url, follow_redirects=False), "invalid_request")


def test_plain_pkce_is_refused(browser, app_client):
    url = query(app_client, code_challenge="a" * 43, code_challenge_method="plain")
    assert_error_redirect(browser.get(url, follow_redirects=False), "invalid_request")


def test_pkce_method_is_required(browser, app_client):
    url = query(app_client, code_challenge_method=None)
    assert_error_redirect(browser.get(url, follow_redirects=False), "invalid_request")


def test_unsupported_response_type(browser, app_client):
    url = query(app_client, response_type="token")
    assert_error_redirect(browser.get(url, follow_redirects=False), "unsupported_response_type")


def test_unknown_resource_is_invalid_target(browser, app_client):
    url = query(app_client, resource="https://elsewhere.example/api")
    assert_error_redirect(browser.get(url, follow_redirects=False), "invalid_target")


def test_unknown_scope_is_invalid_scope(browser, app_client):
    url = query(app_client, scope="clients:read admin:everything")
    assert_error_redirect(browser.get(url, follow_redirects=False), "invalid_scope")


def test_mcp_request_with_only_unoffered_scopes_is_invalid_scope(browser, app_client):
    url = query(app_client, scope="products:write webhooks:manage")
    assert_error_redirect(browser.get(url, follow_redirects=False), "invalid_scope")


def test_a_signed_out_visitor_signs_in_before_an_error_is_redirected(client, app_client):
    url = query(app_client, resource="https://elsewhere.example/api")
    response = client.get(url, follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"].startswith("/login?next=")


# --- signed out ------------------------------------------------------------------------------------


def test_signed_out_user_is_sent_to_login_with_next(client, app_client):
    url = query(app_client)
    response = client.get(url, follow_redirects=False)
    assert response.status_code == 303
    location = urlsplit(response.headers["location"])
    assert location.path == "/login"
    assert parse_qs(location.query)["next"] == [url]


# --- the consent page ------------------------------------------------------------------------------


def test_mcp_consent_offers_ten_scopes_with_defaults(browser, app_client):
    page = browser.get(query(app_client))
    assert page.status_code == 200
    assert page.headers["cache-control"] == "no-store"
    assert offered_scopes(page.text) == [
        "business:read", "clients:read", "products:read", "invoices:read",
        "clients:write", "invoices:write",
        "invoices:finalize", "invoices:send", "payments:write", "credit_notes:write",
    ]
    assert ticked_scopes(page.text) == [
        "business:read", "clients:read", "products:read", "invoices:read", "clients:write", "invoices:write",
    ]


def test_mcp_client_is_never_offered_products_write_or_webhooks(browser, app_client):
    page = browser.get(query(app_client, scope="clients:read products:write webhooks:manage invoices:send"))
    assert offered_scopes(page.text) == ["clients:read", "invoices:send"]
    assert ticked_scopes(page.text) == ["clients:read"]


def test_rest_api_client_may_be_offered_all_twelve(browser, app_client):
    page = browser.get(query(app_client, resource="http://testserver/api/v1"))
    assert len(offered_scopes(page.text)) == 12
    assert "webhooks:manage" not in ticked_scopes(page.text)
    assert "REST API" in page.text


def test_finalize_send_and_pay_are_never_pre_ticked(browser, app_client):
    page = browser.get(query(app_client, scope="invoices:finalize invoices:send payments:write"))
    assert offered_scopes(page.text) == ["invoices:finalize", "invoices:send", "payments:write"]
    assert ticked_scopes(page.text) == []


def test_registered_client_is_shown_unverified_with_its_name(browser, app_client):
    page = browser.get(query(app_client)).text
    assert "Helpful Assistant" in page
    assert "Unverified app" in page


def test_local_redirect_is_named_with_a_warning(browser, app_client):
    page = browser.get(query(app_client)).text
    assert '<strong id="redirect-host">127.0.0.1</strong>' in page
    assert 'id="redirect-warning"' in page


def test_https_redirect_host_is_shown_without_local_warning(client, browser):
    app = register(client, redirect_uris=["https://app.example.com/oauth/cb"], token_endpoint_auth_method="none")
    url = authorize_query(app["client_id"], pkce_pair()[1], redirect_uri="https://app.example.com/oauth/cb")
    page = browser.get(url).text
    assert '<strong id="redirect-host">app.example.com</strong>' in page
    assert 'id="redirect-warning"' not in page


def test_page_has_csrf_token_and_both_buttons(browser, app_client):
    page = browser.get(query(app_client)).text
    assert csrf_token(page)
    assert 'name="decision" value="allow"' in page
    assert 'name="decision" value="deny"' in page


# --- decisions -------------------------------------------------------------------------------------


def test_allow_redirects_with_code_state_and_iss(browser, app_client):
    params = redirect_params(submit_consent(browser, query(app_client)))
    assert params["code"][0]
    assert params["state"] == ["xyz"]
    assert params["iss"] == [ISSUER]


def test_deny_redirects_with_access_denied(browser, app_client):
    response = submit_consent(browser, query(app_client), decision="deny")
    assert_error_redirect(response, "access_denied")


def test_post_without_csrf_token_is_refused(browser, app_client):
    url = query(app_client)
    response = browser.post(url, data={"decision": "allow", "scope": "clients:read"}, follow_redirects=False)
    assert response.status_code == 403
    assert "location" not in response.headers


def test_nothing_ticked_shows_the_page_again(browser, app_client):
    response = submit_consent(browser, query(app_client), scopes=[])
    assert response.status_code == 400
    assert "Tick at least one" in response.text


def test_unknown_decision_is_refused(browser, app_client):
    page = browser.get(query(app_client)).text
    response = browser.post(form_action(page), data={"csrf_token": csrf_token(page), "decision": "maybe"},
                            follow_redirects=False)
    assert response.status_code == 400


def test_post_for_signed_out_user_goes_to_login(client, app_client):
    response = client.post(query(app_client), data={"decision": "allow"}, follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"].startswith("/login?next=")


def test_repeated_parameters_are_refused(browser, app_client):
    url = query(app_client) + "&state=second"
    response = browser.get(url, follow_redirects=False)
    assert response.status_code in (302, 400)
    if response.status_code == 302:
        assert redirect_params(response)["error"] == ["invalid_request"]


def test_hostile_redirect_uri_is_an_error_page_not_a_crash(browser, app_client):
    response = browser.get(query(app_client, redirect_uri='https://x.example/"\u00e9'), follow_redirects=False)
    assert response.status_code == 400
    assert "invalid_request" in response.text


def test_hostile_response_type_is_redirected(browser, app_client):
    response = browser.get(query(app_client, response_type='co"d\u00e9'), follow_redirects=False)
    assert_error_redirect(response, "unsupported_response_type")


def test_hostile_scope_is_redirected_as_invalid_scope(browser, app_client):
    assert_error_redirect(browser.get(query(app_client, scope='a"\u00e9'), follow_redirects=False), "invalid_scope")


def test_consent_page_says_what_a_scope_implies(browser, app_client):
    page = browser.get(query(app_client, scope="invoices:write")).text
    assert "(includes business:read, clients:read, invoices:read)" in page


def test_crediting_is_offered_to_an_mcp_client_but_never_pre_ticked(browser, app_client):
    page = browser.get(query(app_client))
    assert "credit_notes:write" in offered_scopes(page.text)
    assert "credit_notes:write" not in ticked_scopes(page.text)
