"""RFC 8414 authorization server metadata (served by `well_known`, used by registration)."""

from __future__ import annotations

from authz.clients import SUPPORTED_AUTH_METHODS, SUPPORTED_GRANT_TYPES, SUPPORTED_RESPONSE_TYPES
from config.settings import get_settings
from core.access import authorization_details
from core.access.scopes import ALL_SCOPES


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
        "introspection_endpoint": f"{base}/oauth/introspect",
        "scopes_supported": list(ALL_SCOPES),
        "response_types_supported": list(SUPPORTED_RESPONSE_TYPES),
        "response_modes_supported": ["query"],
        "grant_types_supported": list(SUPPORTED_GRANT_TYPES),
        "token_endpoint_auth_methods_supported": list(SUPPORTED_AUTH_METHODS),
        "revocation_endpoint_auth_methods_supported": list(SUPPORTED_AUTH_METHODS),
        "introspection_endpoint_auth_methods_supported": list(SUPPORTED_AUTH_METHODS),
        "authorization_details_types_supported": [authorization_details.TYPE],
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": True,
        "client_id_metadata_document_supported": True,
    }

