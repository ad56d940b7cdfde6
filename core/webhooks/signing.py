"""Standard Webhooks signatures (https://www.standardwebhooks.com/).

The signed content is `{webhook-id}.{webhook-timestamp}.{raw body}`; the key is the endpoint
secret after `whsec_`, standard base64 decoded; the header value is `v1,<base64 HMAC-SHA256>`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

SECRET_PREFIX = "whsec_"


def secret_key(secret: str) -> bytes:
    """The HMAC key behind a `whsec_…` secret."""
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The `webhook-signature` header value for one delivery attempt."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()
