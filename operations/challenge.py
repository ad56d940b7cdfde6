"""The Bearer challenge (RFC 6750, RFC 9728) both API surfaces send with a 401 or a 403, so that a
client learns the same thing from REST and from MCP: what is wrong, which scope to ask for, and
where the resource's metadata document is."""

from __future__ import annotations


def quotable(text: str) -> str:
    """Text safe inside a quoted header parameter: printable ASCII without quotes or backslashes."""
    text = text.replace("\u2026", "...").replace('"', "'").replace("\\", "/")
    return "".join(c if " " <= c <= "~" else "?" for c in text)


def bearer_challenge(error: str, *, resource_metadata: str, description: str | None = None,
                     scope: str | None = None) -> str:
    parts = [f'error="{error}"']
    if description is not None:
        parts.append(f'error_description="{quotable(description)}"')
    if scope is not None:
        parts.append(f'scope="{scope}"')
    parts.append(f'resource_metadata="{resource_metadata}"')
    return "Bearer " + ", ".join(parts)
