"""Input validation shared by every surface: pydantic errors as `{path, message}` and text rules."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Annotated, Any, TypeVar

from email_validator import EmailNotValidError, validate_email
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)

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

# --- calendar, decided once ------------------------------------------------------------------
# Every date Python's calendar holds (0001-01-01 to 9999-12-31), as both databases store them.
# What would fall outside it once computed (a due date a year on, a timestamp moved to UTC) is a
# 422 at the field that asked for it, or, for a default, stops at the calendar's end.
DATE_MIN, DATE_MAX = date.min, date.max
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def calendar_date(value: object) -> object:
    """`YYYY-MM-DD` as a date, or ValueError (a pydantic validator)."""
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not _DATE.fullmatch(value):
        raise ValueError("must be a date in the form YYYY-MM-DD")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValueError("is not a valid calendar date") from None


def utc_moment(value: object) -> object:
    """A date (midnight UTC) or an ISO 8601 timestamp (UTC when no offset is given), in UTC to
    the millisecond; None stays None; or ValueError (a pydantic validator)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError("must be an ISO 8601 date or timestamp")
    if _DATE.fullmatch(value):
        return datetime.combine(calendar_date(value), time(), UTC)
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    except ValueError:
        raise ValueError("must be an ISO 8601 date or timestamp") from None
    try:
        moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"falls outside the calendar ({DATE_MIN} to {DATE_MAX}) in UTC") from None
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def days_after(day: date, days: int, path: str) -> date:
    """`day` plus `days`, or a 422 at `path` when that is past the calendar's end."""
    try:
        return day + timedelta(days=days)
    except OverflowError:
        raise ValidationFailed.at(path, f"puts the date after {DATE_MAX}, the calendar's end") from None


CalendarDate = Annotated[date, BeforeValidator(calendar_date),
                         WithJsonSchema({"type": "string", "format": "date", "description": "YYYY-MM-DD"})]

# --- what text is acceptable, decided once for every surface -------------------------------------
# Valid Unicode scalar values only (a lone surrogate cannot be encoded, so no database stores it),
# and no C0 control character (PostgreSQL refuses NUL; the others corrupt headers, logs and PDFs),
# except tab, line feed and carriage return in text that may span lines.
_SURROGATE = "\ud800-\udfff"
_CONTROL_IN_ONE_LINE = re.compile(f"[\x00-\x1f{_SURROGATE}]")
_CONTROL_IN_LINES = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f{_SURROGATE}]")


class _MultiLine:
    """Marks a text field that may span lines: `description: Annotated[str | None, MULTI_LINE]`."""

    def __repr__(self) -> str:
        return "MULTI_LINE"


MULTI_LINE = _MultiLine()


def text_problem(value: str, *, multi_line: bool = False) -> str | None:
    """Why `value` is not acceptable text, or None when it is."""
    found = (_CONTROL_IN_LINES if multi_line else _CONTROL_IN_ONE_LINE).search(value)
    if found is None:
        return None
    char = found.group()
    if "\ud800" <= char <= "\udfff":
        return "must be valid Unicode (it holds an unpaired surrogate)"
    if char in "\t\n\r":
        return "must be a single line (no line break or tab)"
    return f"must not contain control characters (found U+{ord(char):04X})"


def acceptable_text(value: str, path: str, *, max_length: int, multi_line: bool = False) -> str:
    """`value` when it is acceptable text of 1 to `max_length` characters, or ValidationFailed at `path`
    (for text that reaches `core` without a model)."""
    if not value or len(value) > max_length:
        raise ValidationFailed.at(path, f"must be 1 to {max_length} characters")
    if problem := text_problem(value, multi_line=multi_line):
        raise ValidationFailed.at(path, problem)
    return value


def text_errors(data: Any, path: str, *, multi_line: bool = False) -> list[FieldError]:
    """Every unacceptable string in `data` (keys included), at its path."""
    if isinstance(data, str):
        problem = text_problem(data, multi_line=multi_line)
        return [FieldError(path, problem)] if problem else []
    errors: list[FieldError] = []
    if isinstance(data, dict):
        for key, value in data.items():
            if isinstance(key, str) and (problem := text_problem(key)):
                errors.append(FieldError(path, f"has a key that {problem}"))
            errors += text_errors(value, f"{path}.{key}", multi_line=multi_line)
    elif isinstance(data, list):
        for index, value in enumerate(data):
            errors += text_errors(value, f"{path}.{index}", multi_line=multi_line)
    return errors


def unacceptable_parameters(items: list[tuple[str, Any]], *, multi_line: bool = False) -> list[FieldError]:
    """`text_errors` of form or query parameters (a name may repeat)."""
    return [error for name, value in items for error in text_errors(value, name, multi_line=multi_line)]


class _TextChecked(BaseModel):
    """Every text field of a subclass is checked by `text_problem`; MULTI_LINE ones may span lines."""

    @field_validator("*", mode="after")
    @classmethod
    def _acceptable_text(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, str | list | dict):
            field = cls.model_fields[info.field_name]
            multi_line = any(marker is MULTI_LINE for marker in field.metadata)
            if errors := text_errors(value, info.field_name, multi_line=multi_line):
                raise ValueError(errors[0].message)
        return value


class Input(_TextChecked):
    """Base of request bodies: unknown fields are refused, so typos never pass silently."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)

    def sent(self) -> set[str]:
        """The fields the caller actually sent (PATCH semantics)."""
        return set(self.model_fields_set)


class FieldValueError(ValueError):
    """A model validator's refusal of one of its fields (which pydantic would report at the model):
    reported at `field` under the model's path."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


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
        cause = (error.get("ctx") or {}).get("error")
        if isinstance(cause, FieldValueError):
            loc = (*loc, *cause.field.split("."))
        path = _path(loc)
        errors.append(FieldError(f"{prefix}{path}" if prefix else path, _message(error)))
    return errors


def failed(errors: list[FieldError]) -> ValidationFailed:
    detail = "; ".join(f"{e.path}: {e.message}" for e in errors[:5])
    return ValidationFailed(f"Invalid request: {detail}", errors=errors)


def parse(model: type[M], data: Any, *, prefix: str = "", strict: bool = False) -> M:
    """Validate `data` into `model`, raising ValidationFailed with every field error. `strict` for
    values that arrive typed (JSON), where no string should stand for a number or `true` for 1."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValidationFailed.at(prefix.rstrip(".") or "body", "must be a JSON object")
    try:
        return model.model_validate(data, strict=strict or None)
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


class QueryInput(_TextChecked):
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
