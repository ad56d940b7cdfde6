"""Discovery documents: RFC 8414 authorization server metadata and RFC 9728 resource metadata."""

from authlib.oauth2 import rfc8414, rfc9207

from core.access.scopes import ALL_SCOPES, MCP_SCOPES

ORIGIN = "http://testserver"


def test_authorization_server_metadata(client):
    response = client.get("/.well-known/oauth-authorization-server")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["issuer"] == ORIGIN
    assert body["authorization_endpoint"] == f"{ORIGIN}/oauth/authorize"
    assert body["token_endpoint"] == f"{ORIGIN}/oauth/token"
    assert body["registration_endpoint"] == f"{ORIGIN}/oauth/register"
    assert body["revocation_endpoint"] == f"{ORIGIN}/oauth/revoke"
    assert body["response_types_supported"] == ["code"]
    assert body["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert body["code_challenge_methods_supported"] == ["S256"]
    assert body["scopes_supported"] == list(ALL_SCOPES)
    assert set(body["token_endpoint_auth_methods_supported"]) == {"none", "client_secret_basic", "client_secret_post"}
    assert body["authorization_response_iss_parameter_supported"] is True
    assert body["client_id_metadata_document_supported"] is True


def test_authorization_server_metadata_is_valid_rfc8414(client, monkeypatch):
    monkeypatch.setenv("AUTHLIB_INSECURE_TRANSPORT", "1")  # the test origin is http://testserver
    metadata = rfc8414.AuthorizationServerMetadata(client.get("/.well-known/oauth-authorization-server").json())
    metadata.validate(metadata_classes=[rfc9207.AuthorizationServerMetadata])


def test_protected_resource_metadata_for_mcp(client):
    body = client.get("/.well-known/oauth-protected-resource/mcp").json()
    assert body["resource"] == f"{ORIGIN}/mcp"
    assert body["authorization_servers"] == [ORIGIN]
    assert body["scopes_supported"] == list(MCP_SCOPES)
    assert len(body["scopes_supported"]) == 10
    assert body["bearer_methods_supported"] == ["header"]


def test_protected_resource_metadata_for_rest_api(client):
    body = client.get("/.well-known/oauth-protected-resource/api/v1").json()
    assert body["resource"] == f"{ORIGIN}/api/v1"
    assert body["authorization_servers"] == [ORIGIN]
    assert body["scopes_supported"] == list(ALL_SCOPES)
    assert body["bearer_methods_supported"] == ["header"]


def test_documents_allow_cross_origin_reads(client):
    for path in ("/.well-known/oauth-authorization-server", "/.well-known/oauth-protected-resource/mcp"):
        response = client.get(path, headers={"Origin": "https://inspector.example"})
        assert response.headers["access-control-allow-origin"] == "*"
