"""CSRF protection for every form: a signed token bound to a per-browser cookie (double submit).

The token is a JWS (joserfc, HS256) over a hash of the `invoicing_csrf` cookie; a form post is
accepted only when its `csrf_token` verifies and matches that browser's cookie. Signed-out forms
(sign-in, sign-up) are covered too, because the cookie exists before any session does.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from datetime import UTC, datetime

from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import OctKey
from starlette.requests import Request
from starlette.responses import Response

from config.settings import get_settings
from core.base import crypto
from core.mechanisms import single_use as single_use_tokens

CSRF_COOKIE = "invoicing_csrf"
FIELD = "csrf_token"
LIFETIME_SECONDS = 12 * 3600


class CsrfFailed(Exception):
    pass


def _key() -> OctKey:
    return OctKey.import_key(hashlib.sha256(b"csrf:" + get_settings().signing_key).digest())


def _seed(request: Request) -> str:
    seed = request.cookies.get(CSRF_COOKIE)
    if not seed or len(seed) > 100:
        seed = getattr(request.state, "new_csrf_seed", None) or secrets.token_urlsafe(24)
        request.state.new_csrf_seed = seed
    return seed


def csrf_token(request: Request) -> str:
    payload = {"b": crypto.sha256_hex(_seed(request)), "exp": int(time.time()) + LIFETIME_SECONDS,
               "n": secrets.token_urlsafe(12)}  # each rendered form its own token, so one can be spent
    return jws.serialize_compact({"alg": "HS256"}, json.dumps(payload).encode(), _key())


def require_csrf(request: Request, form, *, single_use: bool = False) -> None:
    """Raise CsrfFailed unless the form carries a valid token for this browser; a `single_use`
    token is spent by its first submission (signed-out forms: sign-up, sign-in)."""
    token = form.get(FIELD)
    seed = request.cookies.get(CSRF_COOKIE)
    if not token or not seed or len(token) > 1000:
        raise CsrfFailed("missing CSRF token")
    try:
        payload = json.loads(jws.deserialize_compact(token, _key(), algorithms=["HS256"]).payload)
    except (JoseError, ValueError):
        raise CsrfFailed("invalid CSRF token") from None
    if payload.get("exp", 0) < time.time() or not crypto.same(str(payload.get("b")), crypto.sha256_hex(seed)):
        raise CsrfFailed("CSRF token does not match this browser")
    if single_use and not single_use_tokens.spend(token, datetime.fromtimestamp(payload["exp"], UTC)):
        raise CsrfFailed("this form was already submitted")


def attach_cookie(request: Request, response: Response) -> None:
    """Set the CSRF cookie when this request had to create one."""
    seed = getattr(request.state, "new_csrf_seed", None)
    if seed:
        response.set_cookie(CSRF_COOKIE, seed, httponly=True, samesite="lax",
                            secure=get_settings().origin.startswith("https://"), path="/")
