"""Checking that a webhook delivery came from your Invoicing server (Standard Webhooks).

    event = webhooks.verify(request.body, request.headers, secret="whsec_…")

Each delivery carries `webhook-id`, `webhook-timestamp` (Unix seconds) and `webhook-signature`
(`v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, several separated by spaces while a secret
is being rotated). Written here rather than taken from the `standardwebhooks` package so the
tolerance is yours to set and the client needs nothing more; the server's tests check both agree.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

from invoicing_client.errors import WebhookVerificationError

SECRET_PREFIX = "whsec_"
DEFAULT_TOLERANCE = 300  # seconds either side of now


def verify(payload: bytes | str, headers: Mapping[str, str], secret: str, tolerance: int = DEFAULT_TOLERANCE) -> dict[str, Any]:
    """The event of a delivery (`{"id", "type", "created_at", "data": {"object": …}}`) once its
    signature is checked; `WebhookVerificationError` for a missing header, a wrong signature or a
    timestamp more than `tolerance` seconds from now (a replay)."""
    body = payload.encode() if isinstance(payload, str) else bytes(payload)
    msg_id, timestamp, signatures = _header(headers, "webhook-id"), _header(headers, "webhook-timestamp"), \
        _header(headers, "webhook-signature")
    try:
        sent_at = int(timestamp)
    except ValueError:
        raise WebhookVerificationError("The webhook-timestamp header is not a Unix time.") from None
    if abs(time.time() - sent_at) > tolerance:
        raise WebhookVerificationError(
            f"The delivery is from {sent_at}, more than {tolerance} s from now: a replay, or a clock far off.")
    expected = hmac.new(_key(secret), f"{msg_id}.{sent_at}.".encode() + body, hashlib.sha256).digest()
    if not any(_matches(candidate, expected) for candidate in signatures.split()):
        raise WebhookVerificationError("No signature of this delivery matches the secret.")
    try:
        event = json.loads(body)
    except ValueError:
        raise WebhookVerificationError("The delivery is signed but is not JSON.") from None
    if not isinstance(event, dict):
        raise WebhookVerificationError("The delivery is signed but is not an event object.")
    return event


def _header(headers: Mapping[str, str], name: str) -> str:
    value = headers.get(name) or headers.get(name.title()) or _find(headers, name)
    if not value:
        raise WebhookVerificationError(f"The {name} header is missing: this is not a webhook delivery.")
    return value


def _find(headers: Mapping[str, str], name: str) -> str | None:
    return next((value for key, value in headers.items() if key.lower() == name), None)


def _key(secret: str) -> bytes:
    encoded = secret[len(SECRET_PREFIX):] if secret.startswith(SECRET_PREFIX) else secret
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise WebhookVerificationError("The secret is not a whsec_… signing secret.") from None


def _matches(candidate: str, expected: bytes) -> bool:
    version, _, signature = candidate.partition(",")
    if version != "v1":
        return False
    try:
        given = base64.b64decode(signature, validate=True)
    except (binascii.Error, ValueError):
        return False
    return hmac.compare_digest(given, expected)
