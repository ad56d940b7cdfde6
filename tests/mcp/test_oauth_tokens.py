"""OAuth access tokens at /mcp: bound to {origin}/mcp, stopped by expiry, revocation and disconnect,
limited to what the user ticked."""

from datetime import timedelta

import pytest
from sqlmodel import select

from authz import connected_apps
from authz.models import OAuthToken
from core.base import db
from core.base.clock import now
from tests.mcp.jsonrpc import post
from tests.oauth_flow import obtain, register, user_id_of

REST_API = "http://testserver/api/v1"


@pytest.fixture
def app_client(client):
    return register(client, token_endpoint_auth_method="none", client_name="Assistant")


def test_an_mcp_token_works(client, browser, app_client):
    token = obtain(client, app_client)["access_token"]
    assert post(client, "tools/list", key=token).status_code == 200


def test_a_rest_token_is_401(client, browser, app_client):
    token = obtain(client, app_client, resource=REST_API)["access_token"]
    response = post(client, "tools/list", key=token)
    assert response.status_code == 401
    assert "another resource" in response.json()["error_description"]


def test_an_expired_token_is_401(client, browser, app_client):
    token = obtain(client, app_client)["access_token"]
    with db.transaction() as session:
        for row in session.exec(select(OAuthToken)):
            row.expires_at = now() - timedelta(seconds=1)
            session.add(row)
    assert post(client, "tools/list", key=token).status_code == 401


def test_a_revoked_token_is_401(client, browser, app_client):
    token = obtain(client, app_client)["access_token"]
    assert client.post("/oauth/revoke", data={"token": token, "client_id": app_client["client_id"]}).status_code == 200
    assert post(client, "tools/list", key=token).status_code == 401


def test_a_disconnected_app_is_401(client, browser, app_client, tenant):
    token = obtain(client, app_client)["access_token"]
    with db.transaction() as session:
        connected_apps.disconnect(session, user_id_of(tenant), tenant.account_id, app_client["client_id"])
    assert post(client, "tools/list", key=token).status_code == 401


def test_only_the_ticked_scopes_are_granted(client, browser, app_client):
    token = obtain(client, app_client, scopes=["business:read", "invoices:read"])["access_token"]
    response = post(client, "tools/call", {"name": "create_customer", "arguments": {"name": "A"}}, key=token)
    assert response.status_code == 403
    assert 'scope="clients:write"' in response.headers["www-authenticate"]
