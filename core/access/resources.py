"""The two protected resources (RFC 8707 identifiers), which scopes each offers, and where each
one's RFC 9728 metadata document lives. Tokens are bound to one of them."""

from __future__ import annotations

from config.settings import get_settings
from core.access.scopes import ALL_SCOPES, MCP_SCOPES


def mcp() -> str:
    """`{origin}/mcp`: the MCP endpoint, for AI assistants."""
    return get_settings().mcp_resource


def rest_api() -> str:
    """`{base_url}`: the REST API."""
    return get_settings().base_url


def offered_scopes(resource: str) -> tuple[str, ...]:
    """Every scope may be granted for the REST API; MCP clients never get products:write or
    webhooks:manage."""
    return MCP_SCOPES if resource == mcp() else ALL_SCOPES


def label(resource: str) -> str:
    return "MCP" if resource == mcp() else "REST API"


def metadata_url(resource: str) -> str:
    """Where the resource's metadata document is (RFC 9728 §3.1: the resource's path after the
    well-known prefix)."""
    origin = get_settings().origin.rstrip("/")
    return f"{origin}/.well-known/oauth-protected-resource{resource.removeprefix(origin)}"
