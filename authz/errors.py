"""OAuth errors Authlib lacks, and error descriptions safe for the OAuth error format."""

from __future__ import annotations

from authlib.oauth2.rfc6749 import OAuth2Error


class InvalidTargetError(OAuth2Error):
    """RFC 8707 §2: the requested resource is invalid, unknown or not the one granted."""

    error = "invalid_target"


class InvalidAuthorizationDetailsError(OAuth2Error):
    """RFC 9396 §5: the authorization details are malformed, of an unknown type, or wider than allowed."""

    error = "invalid_authorization_details"


def safe_description(text: str, limit: int = 300) -> str:
    """RFC 6749 allows only printable ASCII without '"' and '\\' in error_description;
    anything else (from client input) is replaced so Authlib never refuses the message."""
    cleaned = "".join(ch if 0x20 <= ord(ch) <= 0x7E and ch not in '"\\' else "?" for ch in text)
    return cleaned[:limit]
