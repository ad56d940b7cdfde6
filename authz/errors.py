"""OAuth errors Authlib lacks, and error descriptions safe for the OAuth error format."""

from __future__ import annotations

from authlib.oauth2.rfc6749 import OAuth2Error
from starlette.responses import JSONResponse

from core.base.errors import DomainError, ValidationFailed


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


def database_fault_response(fault: DomainError) -> JSONResponse:
    """An OAuth endpoint's answer to a database fault (`core.base.db.database_fault`): unreachable, try
    again later; a value refused, the request's fault (400, not the API's 422); a clash, its 409."""
    status = 400 if isinstance(fault, ValidationFailed) else fault.status
    error = "temporarily_unavailable" if status >= 500 else "invalid_request"
    return JSONResponse({"error": error, "error_description": fault.detail}, status_code=status,
                        headers={"Cache-Control": "no-store"})
