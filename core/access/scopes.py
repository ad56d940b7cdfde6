"""The scopes, what each implies, and the key presets."""

from __future__ import annotations

from collections.abc import Iterable

ALL_SCOPES: tuple[str, ...] = (
    "business:read",
    "clients:read",
    "clients:write",
    "products:read",
    "products:write",
    "invoices:read",
    "invoices:write",
    "invoices:finalize",
    "invoices:send",
    "payments:write",
    "credit_notes:write",
    "webhooks:manage",
    "members:manage",
)

SCOPE_DESCRIPTIONS: dict[str, str] = {
    "business:read": "Read the business profile",
    "clients:read": "List and read customers",
    "clients:write": "Create, update and archive customers",
    "products:read": "List and read products and prices",
    "products:write": "Create, update and archive products and prices",
    "invoices:read": "List and read invoices, PDFs, history and lines",
    "invoices:write": "Create, edit and delete draft invoices and their lines",
    "invoices:finalize": "Finalize (number) and void invoices",
    "invoices:send": "E-mail invoices to customers (finalizes drafts first)",
    "payments:write": "Record and reverse payments of invoices (mark them paid)",
    "credit_notes:write": "Issue and void credit notes correcting invoices",
    "webhooks:manage": "List, create and delete webhook endpoints",
    "members:manage": "Invite members, change their roles and remove them",
}

# Scopes never offered to an MCP client.
NOT_FOR_MCP = frozenset({"products:write", "webhooks:manage", "members:manage"})
MCP_SCOPES: tuple[str, ...] = tuple(s for s in ALL_SCOPES if s not in NOT_FOR_MCP)

IMPLIED: dict[str, frozenset[str]] = {
    "clients:write": frozenset({"clients:read"}),
    "products:write": frozenset({"products:read"}),
    "invoices:write": frozenset({"business:read", "clients:read", "invoices:read"}),
    "invoices:finalize": frozenset({"invoices:read"}),
    "invoices:send": frozenset({"invoices:read"}),
    "payments:write": frozenset({"invoices:read"}),
    "credit_notes:write": frozenset({"invoices:read"}),
}

LOOKUPS = ("business:read", "clients:read", "products:read", "invoices:read")
DRAFT_WRITING = ("clients:write", "invoices:write")

PRESETS: dict[str, tuple[str, ...]] = {
    "read_only": ("business:read", "clients:read", "invoices:read"),
    "raise_and_send": (
        "business:read", "clients:read", "invoices:read", "clients:write", "invoices:write",
        "invoices:finalize", "invoices:send", "payments:write",
    ),
    "ai_assistant": LOOKUPS + DRAFT_WRITING,
    "full_access": ALL_SCOPES,
}


def unknown_scopes(scopes: Iterable[str]) -> list[str]:
    return [s for s in scopes if s not in ALL_SCOPES]


def effective(granted: Iterable[str]) -> frozenset[str]:
    """Granted scopes plus everything they imply."""
    result = set()
    for scope in granted:
        result.add(scope)
        result |= IMPLIED.get(scope, frozenset())
    return frozenset(result)


def ordered(scopes: Iterable[str]) -> list[str]:
    wanted = set(scopes)
    return [s for s in ALL_SCOPES if s in wanted]
