"""OAuth 2.1 end to end: a real server process, Authlib's OAuth 2 client (httpx flavour) as the
app, and an httpx client with a signed-in session cookie as the user's browser.

One server runs for the module. It trusts the `trustme` authority of a local https server that
serves client metadata documents (INVOICING_UNSAFE_TEST_CA_FILE); 127.0.0.1 is exempt from the
public-address rule through the test settings' INVOICING_UNSAFE_WEBHOOK_ALLOW_HOSTS.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from authlib.common.security import generate_token
from authlib.integrations.httpx_client import OAuth2Client, OAuthError

from authz import connected_apps
from core.access import accounts
from core.base import db
from core.base.errors import Unauthorized
from core.billing.business import BusinessInput, set_profile
from tests.conftest import BUSINESS
from tests.oauth_flow import REDIRECT_URI, sign_in, submit_consent
from tests.units import principal_of

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def origin(documents_origin) -> str:
    return documents_origin


@pytest.fixture
def user_email() -> str:
    email = f"owner-{generate_token(8).lower()}@example.com"
    with db.transaction() as session:
        _, account = accounts.create_account(session, email=email, password="correct horse battery")
        set_profile(session, account.id, BusinessInput.model_validate(BUSINESS))
    return email


@pytest.fixture
def browser(origin, user_email) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=origin) as client:
        sign_in(client, user_email)
        yield client


def register(origin: str, **metadata) -> dict:
    body = {"client_name": "E2E app", "redirect_uris": [REDIRECT_URI], **metadata}
    response = httpx.post(f"{origin}/oauth/register", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def app_for(origin: str, registration: dict) -> OAuth2Client:
    return OAuth2Client(
        client_id=registration["client_id"], client_secret=registration.get("client_secret"),
        token_endpoint_auth_method=registration["token_endpoint_auth_method"],
        redirect_uri=REDIRECT_URI, code_challenge_method="S256",
    )


def sign_in_app(origin: str, app: OAuth2Client, browser: httpx.Client, *, resource: str | None = None,
                scope: str | None = None, ticked: list[str] | None = None) -> dict:
    """The whole authorization code flow: authorize, consent in the browser, token."""
    verifier_ = generate_token(48)
    extra = {k: v for k, v in {"resource": resource, "scope": scope}.items() if v}
    url, state = app.create_authorization_url(f"{origin}/oauth/authorize", code_verifier=verifier_, **extra)
    response = submit_consent(browser, url, scopes=ticked)
    location = response.headers["location"]
    params = parse_qs(urlsplit(location).query)
    assert params["state"] == [state]
    assert params["iss"] == [origin]
    return app.fetch_token(f"{origin}/oauth/token", authorization_response=location, code_verifier=verifier_,
                           **({"resource": resource} if resource else {}))


def api(origin: str) -> str:
    return f"{origin}/api/v1"


# --- registration and the authorization code flow --------------------------------------------------


def test_registration_and_pkce_flow_with_client_secret_basic(origin, browser):
    registration = register(origin)
    assert registration["token_endpoint_auth_method"] == "client_secret_basic"
    app = app_for(origin, registration)
    token = sign_in_app(origin, app, browser, resource=api(origin))
    assert token["access_token"].startswith("inv_oat_")
    assert token["refresh_token"].startswith("inv_ort_")
    assert token["expires_in"] == 3600
    response = app.get(f"{api(origin)}/customers")
    assert response.status_code == 200, response.text


def test_flow_with_client_secret_post(origin, browser):
    app = app_for(origin, register(origin, token_endpoint_auth_method="client_secret_post"))
    sign_in_app(origin, app, browser, resource=api(origin))
    assert app.get(f"{api(origin)}/business").status_code == 200


def test_flow_with_a_public_client(origin, browser):
    registration = register(origin, token_endpoint_auth_method="none")
    assert "client_secret" not in registration
    app = app_for(origin, registration)
    token = sign_in_app(origin, app, browser, resource=api(origin))
    assert app.get(f"{api(origin)}/invoices").status_code == 200
    assert token["scope"].split() == [
        "business:read", "clients:read", "clients:write", "products:read", "invoices:read", "invoices:write"]


def test_token_endpoint_does_not_let_responses_be_cached(origin, browser):
    registration = register(origin, token_endpoint_auth_method="none")
    app = app_for(origin, registration)
    token = sign_in_app(origin, app, browser, resource=api(origin))
    response = httpx.post(f"{origin}/oauth/token", data={
        "grant_type": "refresh_token", "refresh_token": token["refresh_token"], "client_id": registration["client_id"]})
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["content-type"] == "application/json"


# --- refresh: rotation, reuse detection, narrowing ----------------------------------------------------


def test_refresh_rotates_and_reuse_revokes_the_sign_in(origin, browser):
    app = app_for(origin, register(origin))
    first = dict(sign_in_app(origin, app, browser, resource=api(origin)))
    second = dict(app.refresh_token(f"{origin}/oauth/token", refresh_token=first["refresh_token"]))
    assert second["refresh_token"] != first["refresh_token"]
    assert app.get(f"{api(origin)}/customers").status_code == 200

    with pytest.raises(OAuthError) as reuse:
        app.refresh_token(f"{origin}/oauth/token", refresh_token=first["refresh_token"])
    assert reuse.value.error == "invalid_grant"
    # Every token of that sign-in stopped, including the pair issued by the honest refresh.
    bearer = {"Authorization": f"Bearer {second['access_token']}"}
    assert httpx.get(f"{api(origin)}/customers", headers=bearer).status_code == 401
    with pytest.raises(OAuthError):
        app.refresh_token(f"{origin}/oauth/token", refresh_token=second["refresh_token"])


def test_refresh_may_narrow_but_never_widen(origin, browser):
    app = app_for(origin, register(origin))
    first = dict(sign_in_app(origin, app, browser, resource=api(origin), scope="clients:read invoices:read"))
    narrowed = dict(app.refresh_token(f"{origin}/oauth/token", refresh_token=first["refresh_token"],
                                      scope="clients:read"))
    assert narrowed["scope"] == "clients:read"
    assert app.get(f"{api(origin)}/customers").status_code == 200
    assert app.get(f"{api(origin)}/invoices").status_code == 403
    with pytest.raises(OAuthError) as widened:
        app.refresh_token(f"{origin}/oauth/token", refresh_token=narrowed["refresh_token"],
                          scope="clients:read invoices:read")
    assert widened.value.error == "invalid_scope"


def test_consent_unticking_narrows_the_grant(origin, browser):
    app = app_for(origin, register(origin))
    token = sign_in_app(origin, app, browser, resource=api(origin), ticked=["business:read"])
    assert token["scope"] == "business:read"
    assert app.get(f"{api(origin)}/business").status_code == 200
    assert app.get(f"{api(origin)}/customers").status_code == 403


# --- revocation, audience, disconnect ------------------------------------------------------------------


def test_revocation(origin, browser):
    app = app_for(origin, register(origin))
    token = dict(sign_in_app(origin, app, browser, resource=api(origin)))
    response = app.revoke_token(f"{origin}/oauth/revoke", token=token["refresh_token"],
                                token_type_hint="refresh_token")
    assert response.status_code == 200
    assert app.get(f"{api(origin)}/customers").status_code == 401
    with pytest.raises(OAuthError):
        app.refresh_token(f"{origin}/oauth/token", refresh_token=token["refresh_token"])


def test_mcp_token_is_refused_by_the_rest_api(origin, browser):
    app = app_for(origin, register(origin))
    token = sign_in_app(origin, app, browser)  # no resource: the MCP endpoint
    response = app.get(f"{api(origin)}/customers")
    assert response.status_code == 401
    assert "another resource" in response.json()["detail"]
    principal = principal_of("Bearer " + token["access_token"], f"{origin}/mcp")
    assert principal.actor == "oauth_app"


def test_rest_token_is_refused_for_mcp(origin, browser):
    app = app_for(origin, register(origin))
    token = sign_in_app(origin, app, browser, resource=api(origin))
    with pytest.raises(Unauthorized):
        principal_of("Bearer " + token["access_token"], f"{origin}/mcp")


def test_mcp_client_never_gets_products_write_or_webhooks(origin, browser):
    app = app_for(origin, register(origin))
    token = sign_in_app(origin, app, browser, scope="clients:read products:write webhooks:manage",
                        ticked=["clients:read", "products:write", "webhooks:manage"])
    assert token["scope"] == "clients:read"


def test_disconnect_stops_the_app_on_its_next_request(origin, browser, user_email):
    registration = register(origin)
    app = app_for(origin, registration)
    token = dict(sign_in_app(origin, app, browser, resource=api(origin)))
    assert app.get(f"{api(origin)}/customers").status_code == 200
    with db.transaction() as session:
        user = accounts.user_by_email(session, user_email)
        account_id = accounts.account_of(session, user).id
        assert [a.client_id for a in connected_apps.connected_apps(session, user.id, account_id)] == \
            [registration["client_id"]]
        connected_apps.disconnect(session, user.id, account_id, registration["client_id"])
    assert app.get(f"{api(origin)}/customers").status_code == 401
    with pytest.raises(OAuthError):
        app.refresh_token(f"{origin}/oauth/token", refresh_token=token["refresh_token"])


# --- a client identified by its metadata document -----------------------------------------------------


def test_client_metadata_document_drives_a_full_flow(origin, browser, documents):
    client_id = documents.publish("/assistant/client.json", headers={"Cache-Control": "max-age=300"})
    app = OAuth2Client(client_id=client_id, token_endpoint_auth_method="none", redirect_uri=REDIRECT_URI,
                       code_challenge_method="S256")
    verifier_ = generate_token(48)
    url, state = app.create_authorization_url(f"{origin}/oauth/authorize", code_verifier=verifier_,
                                              resource=api(origin))
    page = browser.get(url)
    assert page.status_code == 200, page.text
    assert "Verified app" in page.text and "Verified Assistant" in page.text
    response = submit_consent(browser, url)
    token = app.fetch_token(f"{origin}/oauth/token", authorization_response=response.headers["location"],
                            code_verifier=verifier_, resource=api(origin))
    assert token["access_token"].startswith("inv_oat_")
    assert app.get(f"{api(origin)}/customers").status_code == 200
    refreshed = app.refresh_token(f"{origin}/oauth/token", refresh_token=token["refresh_token"])
    assert refreshed["refresh_token"] != token["refresh_token"]
    assert documents.fetches.count("/assistant/client.json") == 1  # cached for max-age


# --- a signed-out user signs in on the way -------------------------------------------------------------


def test_signed_out_user_signs_in_then_consents(origin, user_email):
    app = app_for(origin, register(origin, token_endpoint_auth_method="none"))
    verifier_ = generate_token(48)
    url, _ = app.create_authorization_url(f"{origin}/oauth/authorize", code_verifier=verifier_)
    with httpx.Client(base_url=origin) as browser:
        to_login = browser.get(url)
        assert to_login.status_code == 303
        login_page = browser.get(to_login.headers["location"])
        html = login_page.text
        form = {"email": user_email, "password": "correct horse battery",
                "csrf_token": re.search(r'name="csrf_token" value="([^"]+)"', html.split('action="/login"')[-1]).group(1),
                "next": unescape(re.search(r'name="next" value="([^"]*)"', html).group(1))}
        signed_in = browser.post("/login", data=form)
        assert signed_in.status_code == 303, signed_in.text
        assert signed_in.headers["location"] == url.removeprefix(origin)
        response = submit_consent(browser, signed_in.headers["location"])
    token = app.fetch_token(f"{origin}/oauth/token", authorization_response=response.headers["location"],
                            code_verifier=verifier_)
    assert token["access_token"].startswith("inv_oat_")
