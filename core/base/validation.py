"""Input validation shared by every surface: pydantic errors as `{path, message}` and text rules."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Annotated, Any, TypeVar

from email_validator import EmailNotValidError, validate_email
from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError

from core.base.errors import FieldError, ValidationFailed

# Text limits (decisions.md §2).
NAME_MAX = 256
EMAIL_MAX = 254
PHONE_MAX = 50
TAX_ID_MAX = 64
TEXT_MAX = 5000
LINES_MAX = 250
WEBHOOK_ENDPOINTS_MAX = 16
MAX_SAFE_INTEGER = 9007199254740991

MinorUnits = Annotated[int, Strict(), Field(ge=0, le=MAX_SAFE_INTEGER)]
Percent = Annotated[Decimal, Field(ge=0, le=100, max_digits=12, decimal_places=6)]

M = TypeVar("M", bound=BaseModel)


class Input(BaseModel):
    """Base of request bodies: unknown fields are refused, so typos never pass silently."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)

    def sent(self) -> set[str]:
        """The fields the caller actually sent (PATCH semantics)."""
        return set(self.model_fields_set)


def _path(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc) or "body"


def _message(error: dict) -> str:
    if error["type"] == "extra_forbidden":
        return "unknown field"
    if error["type"] == "missing":
        return "is required"
    message = error["msg"]
    if message.startswith("Value error, "):
        message = message[len("Value error, "):]
    return message


def field_errors(exc: ValidationError, prefix: str = "") -> list[FieldError]:
    errors = []
    for error in exc.errors(include_url=False):
        loc = tuple(part for part in error["loc"] if not str(part).startswith("function-"))
        path = _path(loc)
        errors.append(FieldError(f"{prefix}{path}" if prefix else path, _message(error)))
    return errors


def failed(errors: list[FieldError]) -> ValidationFailed:
    detail = "; ".join(f"{e.path}: {e.message}" for e in errors[:5])
    return ValidationFailed(f"Invalid request: {detail}", errors=errors)


def parse(model: type[M], data: Any, *, prefix: str = "") -> M:
    """Validate `data` into `model`, raising ValidationFailed with every field error."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValidationFailed.at(prefix.rstrip(".") or "body", "must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise failed(field_errors(exc, prefix)) from None


def load_json(raw: bytes) -> Any:
    """Parse a JSON body keeping decimals exact (never floats)."""
    if not raw.strip():
        return None
    try:
        return json.loads(raw, parse_float=Decimal)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise ValidationFailed.at("body", "is not valid JSON") from None


def email_or_error(value: str) -> str:
    """The normalized address, or ValueError (for pydantic validators).

    A format check only: no DNS look-up, and special-use domains such as `.test` are accepted.
    """
    if len(value) > EMAIL_MAX:
        raise ValueError(f"must be at most {EMAIL_MAX} characters")
    try:
        return validate_email(value, check_deliverability=False, test_environment=True).normalized
    except EmailNotValidError as exc:
        raise ValueError(f"is not a valid e-mail address ({exc})") from None


def normalize_email(value: str, *, path: str) -> str:
    """A login or account address: normalized and lowercased, or ValidationFailed at `path`."""
    try:
        return email_or_error(value).lower()
    except ValueError as exc:
        raise ValidationFailed.at(path, str(exc)) from None


class QueryInput(BaseModel):
    """Base of query strings: unknown parameters are ignored, as most HTTP APIs do."""

    model_config = ConfigDict(extra="ignore")


class PageQuery(QueryInput):
    cursor: str | None = Field(default=None, description="The next_cursor of the previous page; omit for the first")
    limit: int | None = Field(default=None, description="Page size, 1 to 100 (default 25)")


def literal_true(value: object) -> bool:
    """Query flags that only the literal `true` enables."""
    return value == "true" or value is True


# Reusable pydantic field validators: `field_validator("name")(not_null)`.


def not_null(value: object) -> object:
    """PATCH fields that may be omitted but never sent as null."""
    if value is None:
        raise ValueError("cannot be null")
    return value


def empty_is_null(value: str | None) -> str | None:
    """Optional text where the empty string clears the value."""
    return value or None


def known_currency(value: str | None) -> str | None:
    """An ISO 4217 code, uppercased; None stays None."""
    from core.base import money
    if value is None:
        return None
    try:
        return money.normalize_currency(value)
    except ValueError:
        raise ValueError("must be a known ISO 4217 currency code") from None
