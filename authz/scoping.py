"""Resource indicators (RFC 8707) and the scopes an authorization request may ask for.

Two resources: `{origin}/mcp` (the default when `resource` is absent) and `{base_url}`.
For the MCP resource, products:write and webhooks:manage are dropped from a request (never offered
to an MCP client); nothing left is `invalid_scope`. No `scope` parameter asks for every scope the
resource offers. `offline_access` is accepted and ignored: refresh tokens are always issued.
"""

from __future__ import annotations

from authlib.oauth2.rfc6749 import InvalidScopeError

from authz.errors import InvalidTargetError, safe_description
from core.access import resources
from core.access.authorization_details import SCOPE_OF
from core.access.scopes import ALL_SCOPES, DRAFT_WRITING, LOOKUPS, ordered

IGNORED_SCOPES = frozenset({"offline_access"})


def resolve_resource(values: list[str]) -> str:
    """The resource of an authorization request: its one `resource` value, or MCP."""
    if not values:
        return resources.mcp()
    if len(values) > 1:
        raise InvalidTargetError("Request one resource at a time.")
    value = values[0].rstrip("/")
    if value in (resources.mcp(), resources.rest_api()):
        return value
    raise InvalidTargetError(f"Unknown resource: use {resources.mcp()} or {resources.rest_api()}.")


def check_same_resource(values: list[str], granted: str) -> None:
    """A token request may repeat the granted resource, never name another."""
    if not values:
        return
    if len(values) > 1 or values[0].rstrip("/") != granted:
        raise InvalidTargetError(f"This grant is for the resource {granted}.")


def requested_scopes(resource: str, scope: str | None, *, with_details: tuple | None = None) -> list[str]:
    """The scopes to show on the consent page for this request, in the canonical order: those asked
    for, and those the requested authorization details need (they narrow those scopes)."""
    offered = resources.offered_scopes(resource)
    if scope is None or not scope.strip():
        return list(offered)
    needed = {SCOPE_OF[action] for detail in with_details or () for action in detail.actions}
    items = [s for s in scope.split() if s not in IGNORED_SCOPES] + sorted(needed - set(scope.split()))
    unknown = [s for s in items if s not in ALL_SCOPES]
    if unknown:
        raise InvalidScopeError(safe_description(f"Unknown scope: {unknown[0][:100]}."))
    kept = ordered(s for s in items if s in offered)
    if not kept:
        raise InvalidScopeError("None of the requested scopes can be granted for this resource.")
    return kept


def pre_ticked(scope: str) -> bool:
    """Look-ups and draft-writing are ticked by default; anything with effects is not."""
    return scope in LOOKUPS or scope in DRAFT_WRITING


SCOPE_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Look things up", LOOKUPS),
    ("Prepare drafts", DRAFT_WRITING),
    ("Act for you: finalize, send, record payments and credit",
     ("invoices:finalize", "invoices:send", "payments:write", "credit_notes:write")),
    ("Manage the catalog and webhooks", ("products:write", "webhooks:manage")),
)


def grouped(scopes: list[str]) -> list[tuple[str, list[str]]]:
    """The requested scopes in the consent page's groups, empty groups left out."""
    wanted = set(scopes)
    groups = [(title, [s for s in members if s in wanted]) for title, members in SCOPE_GROUPS]
    return [(title, members) for title, members in groups if members]
