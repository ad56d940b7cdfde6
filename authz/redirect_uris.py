"""Which redirect URIs a client may register, and when a requested one matches.

Allowed (specification, "OAuth 2.1" rule 7): any https URL; http only on the loopback hosts
127.0.0.1, [::1] and localhost; or a private-use scheme of a native app (RFC 8252 §7.1, for
example `com.example.app:/callback` or `cursor://…`). No fragment (RFC 6749 §3.1.2), no user name
or password, no backslash, whitespace or control character; a port, when written, is 1 to 65535.
An http loopback URI is written in lowercase exactly as `http://127.0.0.1`, `http://[::1]` or
`http://localhost`, then an optional port, then the path and query.

Matching is simple string comparison (RFC 9700 §4.1.3, RFC 3986 §6.2.1), with one exception: a
loopback URI matches on any port (RFC 8252 §7.3), because apps listen on ephemeral ports, so
`http://localhost/callback` and `http://localhost:3000/callback` both accept
`http://localhost:53682/callback`. Only the port may differ: scheme, host, path and query are
compared as strings, nothing is normalized (case, percent-encoding, dot segments, trailing dots,
an empty `?`), and a requested URI is held to the rules above before it is compared, so userinfo,
a fragment, an empty or zero port are refused even where the rest would match.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import SplitResult, urlsplit

from authz.host_names import ShownHost, shown

MAX_LENGTH = 2048
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*$")
_PORT = re.compile(r"[1-9][0-9]{0,4}", re.ASCII)
# `http://` + a loopback host as written + an optional port + the path and query (no fragment).
_LOOPBACK = re.compile(r"http://(127\.0\.0\.1|\[::1\]|localhost)(?::([1-9][0-9]{0,4}))?([/?][^#]*)?", re.ASCII)
# Schemes that are not an app of the user's: they would run code, read files or leave the flow.
_REFUSED_SCHEMES = frozenset({
    "javascript", "data", "file", "vbscript", "about", "blob", "filesystem", "ftp", "ws", "wss",
    "mailto", "tel", "sms", "view-source", "chrome", "resource", "jar",
})


def problem(uri: object) -> str | None:
    """Why `uri` cannot be registered (or requested) as a redirect URI, or None when it can."""
    if not isinstance(uri, str) or not uri:
        return "must be a non-empty string"
    if len(uri) > MAX_LENGTH:
        return f"must be at most {MAX_LENGTH} characters"
    if any(ch.isspace() or unicodedata.category(ch) == "Cc" for ch in uri):
        return "must not contain spaces or control characters"
    if "\\" in uri:
        return "must not contain a backslash"
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
        if reason := _web_problem(parts):
            return reason
        if _loopback_parts(uri) is None:
            return "must be written in lowercase as http://127.0.0.1, http://[::1] or http://localhost, then the path"
        return None
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
    port = _written_port(parts.netloc)
    if port is not None and not (_PORT.fullmatch(port) and int(port) <= 65535):
        return "has an invalid port: write one from 1 to 65535 without leading zeros, or none"
    return None


def _written_port(netloc: str) -> str | None:
    """The port as written in the authority ('' for a bare colon), or None when there is none."""
    host_port = netloc.rpartition("@")[2]
    if host_port.startswith("["):
        after = host_port.partition("]")[2]
        return after[1:] if after.startswith(":") else None
    _, colon, port = host_port.partition(":")
    return port if colon else None


def _loopback_parts(uri: str) -> tuple[str, str] | None:
    """(host, path and query) of an http loopback URI written as the rules ask, else None."""
    match = _LOOPBACK.fullmatch(uri)
    if match is None or (match.group(2) and int(match.group(2)) > 65535):
        return None
    return match.group(1), match.group(3) or ""


def is_loopback(uri: str) -> bool:
    parts = _split(uri)
    return parts is not None and parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS


def matches(registered: list[str], requested: str) -> bool:
    """Whether `requested` is one of the client's `registered` redirect URIs: the same string, or
    for an http loopback URI the same string except the port."""
    if problem(requested) is not None:
        return False
    if requested in registered:
        return True
    wanted = _loopback_parts(requested)
    if wanted is None:
        return False
    return any(isinstance(uri, str) and _loopback_parts(uri) == wanted for uri in registered)


def display_host(uri: str) -> ShownHost:
    """What the consent page shows as the place the user is sent back to."""
    parts = urlsplit(uri)
    if parts.scheme in ("http", "https"):
        return shown(parts.hostname or uri)
    return ShownHost(ascii=f"the app that opens {parts.scheme}: links", unicode=None, mixed_scripts=False)
