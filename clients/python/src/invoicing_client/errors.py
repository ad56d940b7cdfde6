"""Errors of the Invoicing API as exceptions.

Every error the API answers is an `InvoicingError` carrying the problem it sent (RFC 9457): the HTTP
`status_code`, the stable `code` to branch on, a `message` for people, the `request_id` to quote to
support, and for 422 the invalid fields in `errors` (`[{"path": "items.0.unit_amount", "message": …}]`).
The subclass says what kind of failure it is, so `except NotFoundError:` reads as what it means.
"""

from __future__ import annotations

from typing import Any


class InvoicingError(Exception):
    """An error from the Invoicing API, or about reaching it."""

    def __init__(self, message: str, *, status_code: int | None = None, code: str | None = None,
                 request_id: str | None = None, errors: list[dict[str, str]] | None = None,
                 body: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.code = code
        self.request_id = request_id
        self.errors = errors or []
        self.body = body or {}

    def __str__(self) -> str:
        text = self.message
        unsaid = [error for error in self.errors if str(error.get("message")) not in self.message]
        text += "".join(f"\n  {error.get('path') or '(request)'}: {error.get('message')}" for error in unsaid)
        if self.request_id:
            text += f"\n(request {self.request_id})"
        return text

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(status_code={self.status_code!r}, code={self.code!r}, "
                f"message={self.message!r}, request_id={self.request_id!r})")


class AuthenticationError(InvoicingError):
    """401: the API key or token is missing, unknown, revoked or expired."""


class PermissionDeniedError(InvoicingError):
    """403: the credential lacks the operation's scope (`required_scope`), the person's role in the
    business does not allow it (`by_role`: no other credential of theirs would), or a limit the person
    set for an app stops it (`code` "grant_limit_exceeded", with `remediation_url` where the person can
    raise it)."""

    @property
    def remediation_url(self) -> str | None:
        return self.body.get("remediation_url")

    @property
    def required_scope(self) -> str | None:
        return self.body.get("required_scope")

    @property
    def by_role(self) -> bool:
        """The person's role (`role`; None when no longer a member) refused it, not the credential."""
        return "role" in self.body

    @property
    def role(self) -> str | None:
        return self.body.get("role")


class NotFoundError(InvoicingError):
    """404: no such object in this account (another account's ids are 404 too)."""


class ConflictError(InvoicingError):
    """409: not allowed in the object's state (`code` "invalid_state"), or a concurrent request with
    the same idempotency key (`code` "conflict")."""


class ValidationError(InvoicingError):
    """422: the request is invalid; `errors` lists each field and what is wrong with it."""


class RateLimitError(InvoicingError):
    """429: a rate limit was reached; `retry_after` says in how many seconds to try again."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class UpstreamError(InvoicingError):
    """5xx: the server, its database or its mail server failed; trying again later may work."""


class APIConnectionError(InvoicingError):
    """The API could not be reached, or did not answer in time."""


class WebhookVerificationError(InvoicingError):
    """A webhook delivery whose signature, headers or timestamp do not check out: do not trust it."""
