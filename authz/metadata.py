"""The discovery documents: RFC 8414 authorization server metadata and RFC 9728 protected
resource metadata for `/mcp` and `/api/v1`."""

from __future__ import annotations

from authz.clients import SUPPORTED_AUTH_METHODS, SUPPORTED_GRANT_TYPES, SUPPORTED_RESPONSE_TYPES
from core.scopes import ALL_SCOPES, MCP_SCOPES
from service.settings import get_settings


def issuer() -> str:
    return get_settings().origin.rstrip("/")


def authorization_server_metadata() -> dict:
    base = issuer()
    return {
        "issuer": base,
        "authorization_endpoint": f"{base}/oauth/authorize",
        "token_endpoint": f"{base}/oauth/token",
        "registration_endpoint": f"{base}/oauth/register",
        "revocation_endpoint": f"{base}/oauth/revoke",
        "scopes_supported": list(ALL_SCOPES),
        "response_types_supported": list(SUPPORTED_RESPONSE_TYPES),
        "response_modes_supported": ["query"],
        "grant_types_supported": list(SUPPORTED_GRANT_TYPES),
        "token_endpoint_auth_methods_supported": list(SUPPORTED_AUTH_METHODS),
        "revocation_endpoint_auth_methods_supported": list(SUPPORTED_AUTH_METHODS),
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": True,
        "client_id_metadata_document_supported": True,
    }


def protected_resource_metadata(resource: str) -> dict:
    settings = get_settings()
    scopes = MCP_SCOPES if resource == settings.mcp_resource else ALL_SCOPES
    return {
        "resource": resource,
        "authorization_servers": [issuer()],
        "scopes_supported": list(scopes),
        "bearer_methods_supported": ["header"],
        "resource_name": "Invoicing MCP server" if resource == settings.mcp_resource else "Invoicing REST API",
    }
