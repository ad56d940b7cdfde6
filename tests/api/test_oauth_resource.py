"""The resource-server side: OAuth access tokens on the REST API (audience, scopes, implied
scopes, expiry, revocation, disconnect) and the connected-apps data of the settings page."""

from datetime import timedelta

import pytest
from sqlmodel import select

from authz import connected_apps
from authz.models import OAuthGrant, OAuthToken
from core.base import db
from core.base.clock import now
from core.base.errors import Unauthorized
from tests.oauth_flow import obtain, register, user_id_of
from tests.units import principal_of

API = "http://testserver/api/v1"
MCP = "http://testserver/mcp"


@pytest.fixture
def app_client(client):
    return register(client, token_endpoint_auth_method="none", client_name="Books Sync")


def get(client, token, path="/customers"):
    return client.get("/api/v1" + path, headers={"Authorization": f"Bearer {token}"})


# --- REST API --------------------------------------------------------------------------------------


def test_rest_api_accepts_a_token_for_base_url(client, browser, app_client, tenant):
    token = obtain(client, app_client, resource=API)["access_token"]
    response = get(client, token)
    assert response.status_code == 200
    assert response.headers["ratelimit-limit"]


def test_token_acts_on_the_users_account(client, browser, app_client, tenant):
    tenant.post("/customers", json={"name": "Ada"})
    token = obtain(client, app_client, resource=API)["access_token"]
    assert [c["name"] for c in get(client, token).json()["data"]] == ["Ada"]


def test_mcp_token_is_refused_by_the_rest_api(client, browser, app_client):
    token = obtain(client, app_client)["access_token"]
    response = get(client, token)
    assert response.status_code == 401
    assert "another resource" in response.json()["detail"]
    assert 'error="invalid_token"' in response.headers["www-authenticate"]


def test_rest_token_is_refused_for_mcp(client, browser, app_client):
    token = obtain(client, app_client, resource=API)["access_token"]
    with pytest.raises(Unauthorized, match="another resource"):
        principal_of(f"Bearer {token}", MCP)


def test_mcp_token_is_accepted_for_mcp(client, browser, app_client, tenant):
    token = obtain(client, app_client)["access_token"]
    principal = principal_of(f"Bearer {token}", MCP)
    assert principal.actor == "oauth_app"
    assert principal.account_id == tenant.account_id
    assert principal.client_id == app_client["client_id"]
    assert principal.user_id == user_id_of(tenant)
    assert principal.credential_id.startswith("grant:")


def test_missing_scope_is_403_naming_it(client, browser, app_client):
    token = obtain(client, app_client, resource=API, scopes=["business:read"])["access_token"]
    response = get(client, token)
    assert response.status_code == 403
    assert "clients:read" in response.json()["detail"]


def test_implied_scopes_apply_as_for_api_keys(client, browser, app_client):
    token = obtain(client, app_client, resource=API, scopes=["invoices:write"])["access_token"]
    assert get(client, token).status_code == 200  # invoices:write implies clients:read
    assert get(client, token, "/invoices").status_code == 200  # and invoices:read
    assert get(client, token, "/products").status_code == 403


def test_scopes_never_offered_to_mcp_are_granted_for_the_rest_api(client, browser, app_client):
    body = obtain(client, app_client, resource=API, scopes=["webhooks:manage", "products:write"])
    assert body["scope"] == "products:write webhooks:manage"
    assert get(client, body["access_token"], "/webhook-endpoints").status_code == 200


def test_expired_access_token_is_401(client, browser, app_client):
    token = obtain(client, app_client, resource=API)["access_token"]
    with db.transaction() as session:
        row = session.exec(select(OAuthToken).where(OAuthToken.kind == "access")).one()
        row.expires_at = now() - timedelta(seconds=1)
        session.add(row)
    response = get(client, token)
    assert response.status_code == 401
    assert "expired" in response.json()["detail"]


def test_unknown_access_token_is_401(client):
    response = get(client, "inv_oat_unknown")
    assert response.status_code == 401
    assert "unknown" in response.json()["detail"]


def test_use_is_recorded_on_the_grant(client, browser, app_client):
    token = obtain(client, app_client, resource=API)["access_token"]
    get(client, token)
    with db.transaction() as session:
        assert session.exec(select(OAuthGrant)).one().last_used_at is not None


def test_events_record_actor_oauth_app(client, browser, app_client, tenant):
    customer = tenant.post("/customers", json={"name": "Ada"}).json()["data"]
    token = obtain(client, app_client, resource=API, scopes=["invoices:write"])["access_token"]
    headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": "k1"}
    created = client.post("/api/v1/invoices", json={"customer": customer["id"]}, headers=headers)
    assert created.status_code == 201, created.text
    events = get(client, token, f"/invoices/{created.json()['data']['id']}/events").json()["data"]
    meta = events[0]["meta"]
    assert meta["actor"] == "oauth_app"
    assert meta["client_id"] == app_client["client_id"]
    assert meta["user_id"] == str(user_id_of(tenant))


# --- connected apps and disconnect -----------------------------------------------------------------


def test_connected_apps_lists_the_app_with_its_scopes(client, browser, app_client, tenant):
    obtain(client, app_client, resource=API, scopes=["clients:read", "invoices:read"])
    with db.transaction() as session:
        apps = connected_apps.connected_apps(session, user_id_of(tenant), tenant.account_id)
    assert len(apps) == 1
    app = apps[0]
    assert app.client_id == app_client["client_id"]
    assert app.name == "Books Sync"
    assert app.verified is False
    assert app.scopes == ["clients:read", "invoices:read"]
    assert app.resources == ["REST API"]
    assert app.last_used_at is None


def test_connected_apps_groups_sign_ins_of_one_app(client, browser, app_client, tenant):
    obtain(client, app_client, resource=API, scopes=["clients:read"])
    obtain(client, app_client, scopes=["invoices:read"])
    with db.transaction() as session:
        (app,) = connected_apps.connected_apps(session, user_id_of(tenant), tenant.account_id)
    assert app.scopes == ["clients:read", "invoices:read"]
    assert app.resources == ["MCP", "REST API"]


def test_connected_apps_of_another_user_are_not_listed(client, browser, app_client, other_tenant):
    obtain(client, app_client, resource=API)
    with db.transaction() as session:
        assert connected_apps.connected_apps(session, user_id_of(other_tenant), other_tenant.account_id) == []


def test_disconnect_stops_tokens_on_the_next_request(client, browser, app_client, tenant):
    body = obtain(client, app_client, resource=API)
    assert get(client, body["access_token"]).status_code == 200
    with db.transaction() as session:
        assert connected_apps.disconnect(session, user_id_of(tenant), tenant.account_id, app_client["client_id"]) == 1
    response = get(client, body["access_token"])
    assert response.status_code == 401
    assert "revoked" in response.json()["detail"]
    refreshed = client.post("/oauth/token", data={"grant_type": "refresh_token", "refresh_token": body["refresh_token"],
                                                  "client_id": app_client["client_id"]})
    assert refreshed.json()["error"] == "invalid_grant"
    with db.transaction() as session:
        assert connected_apps.connected_apps(session, user_id_of(tenant), tenant.account_id) == []


def test_disconnect_leaves_other_users_connected(client, browser, app_client, tenant, other_tenant):
    mine = obtain(client, app_client, resource=API)["access_token"]
    with db.transaction() as session:
        assert connected_apps.disconnect(session, user_id_of(other_tenant), other_tenant.account_id, app_client["client_id"]) == 0
    assert get(client, mine).status_code == 200


def test_disconnect_of_unknown_app_is_zero(tenant):
    with db.transaction() as session:
        assert connected_apps.disconnect(session, user_id_of(tenant), tenant.account_id, "cl_nothing") == 0


# --- the token checked and the request counted in one statement (PostgreSQL; both databases agree) ---


def _grant_remaining(token_principal) -> int:
    from core.mechanisms import ratelimit
    with db.transaction() as session:
        return ratelimit.peek(session, ratelimit.api_requests(), token_principal.rate_limit_subject).remaining


def test_each_request_with_a_token_is_counted_once(client, browser, app_client, tenant):
    token = obtain(client, app_client, resource=API)["access_token"]
    first, second = get(client, token), get(client, token)
    assert int(first.headers["ratelimit-remaining"]) - int(second.headers["ratelimit-remaining"]) == 1


@pytest.mark.parametrize("refusal", ["revoked", "expired", "another resource"])
def test_a_refused_token_says_why_and_is_not_counted(client, browser, app_client, tenant, refusal):
    token = obtain(client, app_client, resource=MCP if refusal == "another resource" else API)["access_token"]
    principal = principal_of(f"Bearer {token}", MCP if refusal == "another resource" else API)
    if refusal != "another resource":
        with db.transaction() as session:
            row = session.exec(select(OAuthToken).where(OAuthToken.kind == "access")).one()
            if refusal == "revoked":
                row.revoked_at = now()
            else:
                row.expires_at = now() - timedelta(seconds=1)
    before = _grant_remaining(principal)
    response = get(client, token)
    assert response.status_code == 401 and refusal in response.json()["detail"]
    assert _grant_remaining(principal) == before


def test_a_tokens_use_is_noted_on_its_grant(client, browser, app_client, tenant):
    token = obtain(client, app_client, resource=API)["access_token"]
    with db.transaction() as session:
        session.exec(select(OAuthGrant)).one().last_used_at = None
    assert get(client, token).status_code == 200
    with db.transaction() as session:
        assert session.exec(select(OAuthGrant)).one().last_used_at is not None
