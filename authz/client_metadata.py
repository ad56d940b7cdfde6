"""The shape of client metadata (RFC 7591 §2), checked before anything reads it: the same rules for
a registration request and for a client ID metadata document, so no value of the wrong JSON type,
no control character and no non-finite number reaches Authlib, the database or a response."""

from __future__ import annotations

import json
import math
from typing import Any

from core.base.validation import text_errors

STRINGS = ("client_id", "client_name", "client_uri", "logo_uri", "tos_uri", "policy_uri", "jwks_uri", "scope",
           "software_id", "software_version", "token_endpoint_auth_method", "client_secret")
# redirect_uris is left to the redirect URI rules, which answer `invalid_redirect_uri` (RFC 7591 §3.2.2).
LISTS_OF_STRINGS = ("grant_types", "response_types", "contacts")
OBJECTS = ("jwks",)
MAX_DEPTH = 8


class MetadataError(ValueError):
    """Why the metadata cannot be used; the message is safe to show."""


def loads(raw: bytes | str) -> Any:
    """JSON as client metadata may be: no NaN or Infinity, not nested absurdly deep."""
    def refuse(constant: str) -> float:
        raise MetadataError(f"it holds {constant}, which JSON does not allow")
    try:
        value = json.loads(raw, parse_constant=refuse)
    except MetadataError:
        raise
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise MetadataError("it is not JSON") from None
    if _depth(value) > MAX_DEPTH:
        raise MetadataError(f"it is nested more than {MAX_DEPTH} levels deep")
    return value


def check_shape(metadata: dict) -> None:
    """MetadataError naming the first field of the wrong type or holding unacceptable text."""
    if errors := text_errors(metadata, "metadata"):
        raise MetadataError(f"{errors[0].path.removeprefix('metadata.')} {errors[0].message}")
    for name in STRINGS:
        if name in metadata and not isinstance(metadata[name], str):
            raise MetadataError(f"{name} must be a string")
    for name in LISTS_OF_STRINGS:
        value = metadata.get(name)
        if name in metadata and not (isinstance(value, list) and all(isinstance(item, str) for item in value)):
            raise MetadataError(f"{name} must be a list of strings")
    for name in OBJECTS:
        if name in metadata and not isinstance(metadata[name], dict):
            raise MetadataError(f"{name} must be an object")
    if any(isinstance(value, float) and not math.isfinite(value) for value in metadata.values()):
        raise MetadataError("numbers must be finite")


def _depth(value: Any, level: int = 1) -> int:
    if level > MAX_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(item, level + 1) for item in value.values()), default=level)
    if isinstance(value, list):
        return max((_depth(item, level + 1) for item in value), default=level)
    return level
