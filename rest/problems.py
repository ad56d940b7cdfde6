"""RFC 9457 problem responses for every domain error."""

from __future__ import annotations

from starlette.responses import Response

from config.settings import get_settings
from core.base.errors import DomainError, Forbidden, GrantLimitExceeded, RateLimited, RoleForbids, Unauthorized
from core.base.jsonout import dumps
from operations.challenge import bearer_challenge
from operations.rendering import refusal_details


def problem_body(error: DomainError, request_id: str) -> dict:
    body = {
        "type": f"{get_settings().origin.rstrip('/')}/problems/{error.slug}",
        "title": error.title,
        "status": error.status,
        "detail": error.detail,
        "instance": request_id,
        "code": error.code,
    }
    if error.status == 422:
        body["errors"] = [{"path": e.path, "message": e.message} for e in error.errors]
    return body | refusal_details(error)  # extension members (RFC 9457 section 3.2)


def www_authenticate(error: DomainError, resource_metadata: str) -> str | None:
    """The Bearer challenge (RFC 6750, RFC 9728) for 401 and 403 answers."""
    if isinstance(error, Unauthorized):
        return bearer_challenge("invalid_token", description=error.detail, resource_metadata=resource_metadata)
    if isinstance(error, RoleForbids):
        return None  # no credential of the person's gets more: nothing to step up to
    if isinstance(error, Forbidden):
        return bearer_challenge("insufficient_scope", scope=error.missing_scope, resource_metadata=resource_metadata)
    if isinstance(error, GrantLimitExceeded):  # the IETF draft on RAR remediation's challenge
        return bearer_challenge("insufficient_authorization", description=error.detail,
                                resource_metadata=resource_metadata)
    return None


def problem_response(error: DomainError, request_id: str, *, headers: dict[str, str] | None = None,
                     resource_metadata: str | None = None) -> Response:
    all_headers = {"X-Request-Id": request_id, **(headers or {})}
    if isinstance(error, RateLimited):
        all_headers["Retry-After"] = str(error.retry_after)
    if resource_metadata and (challenge := www_authenticate(error, resource_metadata)):
        all_headers["WWW-Authenticate"] = challenge
    return Response(dumps(problem_body(error, request_id)), status_code=error.status,
                    headers=all_headers, media_type="application/problem+json")
