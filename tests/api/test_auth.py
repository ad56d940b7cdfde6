"""Authentication (401 with the exact reason), scopes (403 naming the scope) and implied scopes."""

from datetime import timedelta

import pytest
from sqlalchemy import text

from core.access import accounts, apikeys
from core.base import db
from core.base.clock import now
from core.models import ApiKey


def get(client, path="/api/v1/customers", authorization=None):
    headers = {} if authorization is None else {"Authorization": authorization}
    return client.get(path, headers=headers)


def assert_401(response, detail_words):
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == "unauthorized"
    assert body["type"] == "http://testserver/problems/unauthorized"
    assert detail_words in body["detail"].lower()
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert 'error="invalid_token"' in challenge
    assert 'resource_metadata="http://testserver/.well-known/oauth-protected-resource/api/v1"' in challenge
    return body


def test_missing_credential_is_401(client):
    assert_401(get(client), "no credential")


def test_empty_authorization_header_is_401_missing(client):
    assert_401(get(client, authorization=""), "no credential")


@pytest.mark.parametrize("header", ["Basic dXNlcjpwYXNz", "Bearer", "Bearer   ", "Token inv_live_x"])
def test_malformed_authorization_header_is_401(client, header):
    assert_401(get(client, authorization=header), "malformed")


@pytest.mark.parametrize("key", [
    "inv_live_short_" + "a" * 32,            # lookup id not 8 characters
    "inv_live_abcdefgh_" + "a" * 31,          # secret not 32 characters
    "inv_live_abcdefgh_" + "a" * 31 + "!",    # not alphanumeric
    "sk_live_abcdefgh",                       # not a key of this service at all
])
def test_malformed_key_is_401(client, key):
    assert_401(get(client, authorization=f"Bearer {key}"), "malformed")


def test_unknown_key_is_401(client):
    assert_401(get(client, authorization="Bearer inv_live_abcdefgh_" + "a" * 32), "unknown")


def test_wrong_secret_of_existing_key_is_401_unknown(tenant):
    lookup = tenant.key.split("_")[2]
    response = get(tenant.client, authorization=f"Bearer inv_live_{lookup}_" + "b" * 32)
    assert_401(response, "unknown")


def test_bearer_scheme_is_case_insensitive(tenant):
    assert get(tenant.client, authorization=f"bearer {tenant.key}").status_code == 200


def test_revocation_takes_effect_on_the_next_request(tenant):
    assert tenant.get("/customers").status_code == 200
    with db.transaction() as session:
        apikeys.revoke_key(session, tenant.account_id, str(tenant.key_id))
    assert_401(tenant.get("/customers"), "revoked")


def test_expired_key_is_401(tenant):
    with db.transaction() as session:
        row = session.get(ApiKey, tenant.key_id)
        row.expires_at = now() - timedelta(seconds=1)
        session.add(row)
    assert_401(tenant.get("/customers"), "expired")


def test_key_with_expiry_in_the_future_works(tenant):
    with db.transaction() as session:
        key = apikeys.create_key(session, tenant.account_id, created_by=accounts.owner_of(session, tenant.account_id).id,
                                 name="soon", scopes=["clients:read"],
                                 expires_in_days=1).key
    assert tenant.as_key(key).get("/customers").status_code == 200


def test_401_carries_request_id_and_instance(client):
    response = get(client)
    assert response.headers["x-request-id"].startswith("req_")
    assert response.json()["instance"] == response.headers["x-request-id"]


def test_missing_scope_is_403_naming_it(tenant_factory):
    tenant = tenant_factory(scopes=["invoices:read"])
    response = tenant.get("/customers")
    assert response.status_code == 403
    body = response.json()
    assert body["code"] == "forbidden"
    assert body["type"] == "http://testserver/problems/forbidden"
    assert "clients:read" in body["detail"] and body["required_scope"] == "clients:read" and "role" not in body
    assert 'scope="clients:read"' in response.headers["www-authenticate"]
    assert "ratelimit-limit" in response.headers


def test_read_scope_does_not_allow_write(tenant_factory):
    tenant = tenant_factory(scopes=["clients:read"])
    response = tenant.post("/customers", json={"name": "A"})
    assert response.status_code == 403
    assert "clients:write" in response.json()["detail"]


@pytest.mark.parametrize("granted, path", [
    ("invoices:write", "/business"),
    ("invoices:write", "/customers"),
    ("clients:write", "/customers"),
])
def test_implied_scopes_allow_reads(tenant_factory, granted, path):
    tenant = tenant_factory(scopes=[granted])
    assert tenant.get(path).status_code == 200


def test_business_read_does_not_imply_clients_read(tenant_factory):
    tenant = tenant_factory(scopes=["business:read"])
    assert tenant.get("/customers").status_code == 403


def test_last_used_at_is_recorded(tenant):
    with db.transaction() as session:
        assert session.get(ApiKey, tenant.key_id).last_used_at is None
    before = now()
    assert tenant.get("/customers").status_code == 200
    with db.transaction() as session:
        used = session.get(ApiKey, tenant.key_id).last_used_at
    assert used is not None and used >= before - timedelta(seconds=1)


def test_secret_is_not_stored_in_the_database(tenant):
    secret = tenant.key.split("_")[3]
    with db.transaction() as session:
        row = session.execute(text("SELECT * FROM api_keys WHERE lookup_id = :l"),
                              {"l": tenant.key.split("_")[2]}).one()
    assert all(secret not in str(value) for value in row)
    assert all(tenant.key not in str(value) for value in row)


def test_openapi_document_needs_no_credential(client):
    assert client.get("/api/v1/openapi.json").status_code == 200


def test_oauth_access_tokens_plug_in_through_the_registered_verifier(tenant, monkeypatch):
    from core.access import credentials
    from core.access.principal import Principal, Verified
    seen = {}

    async def noted(_db):
        seen["noted"] = True

    async def verifier(_db, token, *, resource):
        seen.update(token=token, resource=resource)
        if token != "inv_oat_good":
            raise credentials.Unauthorized("The access token is unknown.")
        return Verified(Principal(account_id=tenant.account_id, granted_scopes=frozenset({"clients:read"}),
                                  actor="oauth_app", role="owner", client_id="https://app.example",
                                  credential_id="grant:1"), noted)

    monkeypatch.setattr(credentials, "_oauth_verifier", verifier)
    assert get(tenant.client, authorization="Bearer inv_oat_good").status_code == 200
    assert seen == {"token": "inv_oat_good", "resource": "http://testserver/api/v1", "noted": True}
    assert get(tenant.client, "/api/v1/business", "Bearer inv_oat_good").status_code == 403
    assert_401(get(tenant.client, authorization="Bearer inv_oat_bad"), "unknown")


def test_oauth_token_without_a_verifier_is_401(client, monkeypatch):
    from core.access import credentials
    monkeypatch.setattr(credentials, "_oauth_verifier", None)
    assert_401(get(client, authorization="Bearer inv_oat_anything"), "unknown")
