"""The five roles of a member of a business, and the scopes each allows: an upper bound on every key,
token and app of that person in that business, applied on every request (`Principal.scopes`)."""

from __future__ import annotations

from typing import Literal

from core.access.scopes import ALL_SCOPES, LOOKUPS

Role = Literal["owner", "admin", "accountant", "sales", "viewer"]
ROLES: tuple[str, ...] = Role.__args__

ROLE_SCOPES: dict[str, frozenset[str]] = {
    "owner": frozenset(ALL_SCOPES),
    "admin": frozenset(ALL_SCOPES),
    "accountant": frozenset(LOOKUPS) | {"payments:write", "credit_notes:write"},
    "sales": frozenset(LOOKUPS) | {"clients:write", "invoices:write"},
    "viewer": frozenset(LOOKUPS),
}

ROLE_DESCRIPTIONS: dict[str, str] = {
    "owner": "Everything, including members and ownership",
    "admin": "Everything, including members other than owners",
    "accountant": "Reads everything; records payments and issues credit notes",
    "sales": "Reads everything; keeps customers and drafts invoices (no finalizing, sending or payments)",
    "viewer": "Reads everything, changes nothing",
}

# Who manages the business itself: its members, API keys, webhooks and profile.
MANAGERS = frozenset({"owner", "admin"})


def allows(role: str | None, scope: str) -> bool:
    return scope in ROLE_SCOPES.get(role or "", frozenset())


def manages(role: str | None) -> bool:
    return role in MANAGERS
