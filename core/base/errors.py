"""Domain errors. Every surface (REST, MCP, web) maps these to the same code and status."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FieldError:
    path: str
    message: str


class DomainError(Exception):
    code: str = "internal_error"
    status: int = 500
    slug: str = "internal-error"
    title: str = "Internal error"

    def __init__(self, detail: str, *, errors: list[FieldError] | None = None, usage: Any = None):
        super().__init__(detail)
        self.detail = detail
        self.errors = errors or []
        # Where the caller stands against the rate limit this error concerns (a
        # `core.mechanisms.ratelimit.Usage`), when it is not the general request limit.
        self.usage = usage
        # A row to store once the work's transaction has rolled back (a record of the refusal).
        self.kept_after_rollback: Any = None


class ValidationFailed(DomainError):
    code, status, slug, title = "validation", 422, "validation", "Validation failed"

    @classmethod
    def at(cls, path: str, message: str) -> ValidationFailed:
        return cls(f"{path}: {message}", errors=[FieldError(path, message)])


class IdempotencyMismatch(DomainError):
    code, status, slug, title = (
        "idempotency_mismatch", 422, "idempotency-mismatch", "Idempotency key reused with another request")


class Unauthorized(DomainError):
    code, status, slug, title = "unauthorized", 401, "unauthorized", "Unauthorized"


class Forbidden(DomainError):
    code, status, slug, title = "forbidden", 403, "forbidden", "Forbidden"

    def __init__(self, detail: str, *, missing_scope: str):
        super().__init__(detail)
        self.missing_scope = missing_scope


class RoleForbids(Forbidden):
    """A scope the credential holds that the person's role in the business does not allow: asking the
    person for more (a step-up) cannot help, so no challenge invites it. `role` is the person's role
    now (None: no longer a member)."""

    def __init__(self, detail: str, *, missing_scope: str, role: str | None):
        super().__init__(detail, missing_scope=missing_scope)
        self.role = role


class NotAllowed(DomainError):
    """Refused by the person's role beyond any scope (an admin changing an owner, the last owner
    leaving): no other credential of theirs would do."""

    code, status, slug, title = "forbidden", 403, "forbidden", "Forbidden"


class GrantLimitExceeded(DomainError):
    """Beyond the limits the person set for an app (RFC 9396 authorization details): the person can
    raise them, or finish the action themselves, at `remediation_url`."""

    code, status, slug, title = "grant_limit_exceeded", 403, "grant-limit-exceeded", "Beyond what the person allowed"

    def __init__(self, detail: str, *, remediation_url: str, record: Any = None):
        super().__init__(detail)
        self.remediation_url = remediation_url
        self.kept_after_rollback = record


class NotFound(DomainError):
    code, status, slug, title = "not_found", 404, "not-found", "Not found"


class InvalidState(DomainError):
    code, status, slug, title = "invalid_state", 409, "invalid-state", "Invalid state"


class Conflict(DomainError):
    code, status, slug, title = "conflict", 409, "conflict", "Conflict"


class ConfirmationStale(Conflict):
    """What a person confirmed is no longer what would happen (the invoice, its customer or the
    call changed since the question), or a question is due that was never asked: nothing was done.
    Only surfaces that ask a person (MCP) pass a confirmation, so only they meet it; they ask again."""

    code, slug, title = "confirmation_stale", "confirmation-stale", "Changed since the person was asked"


class PayloadTooLarge(DomainError):
    code, status, slug, title = "payload_too_large", 413, "payload-too-large", "Request body too large"


class IdempotencyKeyRequired(DomainError):
    code, status, slug, title = (
        "idempotency_key_required", 428, "idempotency-key-required", "Idempotency key required")


class RateLimited(DomainError):
    code, status, slug, title = "rate_limited", 429, "rate-limited", "Too many requests"

    def __init__(self, detail: str, *, retry_after: int, usage: Any = None):
        super().__init__(detail, usage=usage)
        self.retry_after = retry_after


class InternalError(DomainError):
    pass


class UpstreamFailed(DomainError):
    code, status, slug, title = "upstream_failed", 502, "upstream-failed", "Upstream dependency failed"


ALL_ERRORS: tuple[type[DomainError], ...] = (
    ValidationFailed, IdempotencyMismatch, Unauthorized, Forbidden, GrantLimitExceeded, NotFound, InvalidState,
    Conflict, PayloadTooLarge, IdempotencyKeyRequired, RateLimited, InternalError, UpstreamFailed,
)
