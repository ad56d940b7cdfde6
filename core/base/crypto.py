"""Random tokens, hashes of secrets at rest, and constant-time comparison."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import string

ALPHANUMERIC = string.ascii_letters + string.digits


def random_string(length: int, alphabet: str = ALPHANUMERIC) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(length))


def token(nbytes: int = 32) -> str:
    return secrets.token_urlsafe(nbytes)


def sha256_hex(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())
