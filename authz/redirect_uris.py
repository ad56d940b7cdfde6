"""Which redirect URIs a client may register, and when a requested one matches.

Allowed (specification, "OAuth 2.1" rule 7): any https URL; http only on the loopback hosts
127.0.0.1, [::1] and localhost; or a private-use scheme of a native app (RFC 8252 §7.1, for
example `com.example.app:/callback` or `cursor://…`). No fragment, no user name or password.
Matching is exact, except that a loopback URI matches on any port (RFC 8252 §7.3): apps listen on
ephemeral ports, so `http://localhost/callback` and `http://localhost:3000/callback` both accept
`http://localhost:53682/callback`.
"""

from __future__ import annotations

import re
from urllib.parse import SplitResult, urlsplit

MAX_LENGTH = 2048
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*$")
# Schemes that are not an app of the user's: they would run code, read files or leave the flow.
_REFUSED_SCHEMES = frozenset({
    "javascript", "data", "file", "vbscript", "about", "blob", "filesystem", "ftp", "ws", "wss",
    "mailto", "tel", "sms", "view-source", "chrome", "resource", "jar",
})


def problem(uri: object) -> str | None:
    """Why `uri` cannot be registered as a redirect URI, or None when it can."""
    if not isinstance(uri, str) or not uri:
        return "must be a non-empty string"
    if len(uri) > MAX_LENGTH:
        return f"must be at most {MAX_LENGTH} characters"
    if any(ch.isspace() or ord(ch) < 0x20 for ch in uri):
        return "must not contain spaces or control characters"
    parts = _split(uri)
    if parts is None or not _SCHEME.match(parts.scheme):
        return "is not an absolute URI"
    if parts.fragment or "#" in uri:
        return "must not contain a fragment"
    if parts.scheme == "https":
        return _web_problem(parts)
    if parts.scheme == "http":
        if parts.hostname not in LOOPBACK_HOSTS:
            return "http is allowed only on 127.0.0.1, [::1] or localhost; use https"
        return _web_problem(parts)
    if parts.scheme in _REFUSED_SCHEMES:
        return f"the scheme {parts.scheme}: is not allowed"
    if parts.netloc and "@" in parts.netloc:
        return "must not contain a user name or password"
    if not (parts.netloc or parts.path):
        return "a private-use scheme URI needs a path"
    return None


def _split(uri: str) -> SplitResult | None:
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018  (raises ValueError for an invalid port)
    except ValueError:
        return None
    return parts


def _web_problem(parts: SplitResult) -> str | None:
    if not parts.hostname:
        return "has no host"
    if "@" in parts.netloc:
        return "must not contain a user name or password"
    return None


def is_loopback(uri: str) -> bool:
    parts = _split(uri)
    return parts is not None and parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS


def matches(registered: list[str], requested: str) -> bool:
    """Whether `requested` is one of the client's `registered` redirect URIs."""
    if requested in registered:
        return True
    if not is_loopback(requested):
        return False
    wanted = _without_port(requested)
    return any(is_loopback(uri) and _without_port(uri) == wanted for uri in registered)


def _without_port(uri: str) -> tuple[str, str, str, str]:
    parts = urlsplit(uri)
    return parts.scheme, parts.hostname or "", parts.path, parts.query


def display_host(uri: str) -> str:
    """What the consent page shows as the place the user is sent back to."""
    parts = urlsplit(uri)
    if parts.scheme in ("http", "https"):
        return parts.hostname or uri
    return f"the app that opens {parts.scheme}: links"
