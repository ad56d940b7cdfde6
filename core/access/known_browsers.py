"""Browsers that have signed in to an account before: a signed cookie, set at each successful sign-in.

A known browser skips the e-mailed code that a sign-in from a new browser needs while an account
is under a guessing attack, so the owner on their usual browser is never slowed down. The cookie
is a JWS (HS256) under a key derived only for this purpose: it names a random device id and the
users who signed in with it (the latest few), and lives a year. It proves only that this browser
once signed in as those users; the password is still checked every time.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import OctKey

from config.settings import get_settings
from core.base import crypto

LIFETIME_SECONDS = 365 * 24 * 3600
USERS_KEPT = 10  # a browser shared by several people remembers the latest ones
TOKEN_MAX = 4000


@dataclass(frozen=True)
class KnownBrowser:
    device: str
    users: tuple[str, ...]  # user ids, latest first

    def knows(self, user_id: object) -> bool:
        return str(user_id) in self.users


def _key() -> OctKey:
    return OctKey.import_key(hashlib.sha256(b"known-browser:" + get_settings().signing_key).digest())


def read(token: str | None, *, now: float | None = None) -> KnownBrowser | None:
    """The browser named by a valid cookie value, else None (absent, tampered with or expired)."""
    if not token or len(token) > TOKEN_MAX:
        return None
    try:
        claims = jwt.decode(token, _key(), algorithms=["HS256"]).claims
        jwt.JWTClaimsRegistry(now=int(time.time() if now is None else now), leeway=0,
                              exp={"essential": True}).validate(claims)
        users = claims["users"]
        if not isinstance(claims["device"], str) or not isinstance(users, list):
            return None
        return KnownBrowser(device=claims["device"], users=tuple(str(user) for user in users[:USERS_KEPT]))
    except (JoseError, ValueError, TypeError, KeyError):
        return None


def remember(browser: KnownBrowser | None, user_id: object, *, now: float | None = None) -> str:
    """The cookie value of `browser` (or of a new one) knowing `user_id` too."""
    device = browser.device if browser else crypto.token(16)
    users = [str(user_id), *(user for user in (browser.users if browser else ()) if user != str(user_id))]
    issued = int(time.time() if now is None else now)
    claims = {"device": device, "users": users[:USERS_KEPT], "iat": issued, "exp": issued + LIFETIME_SECONDS}
    return jwt.encode({"alg": "HS256"}, claims, _key())
