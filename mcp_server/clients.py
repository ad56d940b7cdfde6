"""What a client can do (ask its person a question, show an app view), in either protocol generation.

- 2026-07-28 clients send their capabilities with every request (the SDK reads them per request).
- Handshake-era clients (2025-11-25 and older) declare them once, in `initialize`, and this server is
  stateless: any request may reach any process. So a client that declares elicitation or apps gets a
  session id that carries them: a JWS (HS256, key derived from the secret key for this purpose)
  bound to the credential that initialized, valid a day. Every process can read it; nothing is stored.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from dataclasses import dataclass

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import OctKey

from config.settings import get_settings
from core.access.principal import Principal

APPS_EXTENSION = "io.modelcontextprotocol/ui"
APP_MIME_TYPE = "text/html;profile=mcp-app"
SESSION_HEADER = "mcp-session-id"
SESSION_LIFETIME_SECONDS = 24 * 3600
SESSION_MAX = 2000


@dataclass(frozen=True)
class Traits:
    elicitation: bool = False  # can ask its person a form question (elicitation, form mode)
    apps: bool = False  # renders MCP Apps views (text/html;profile=mcp-app)

    @property
    def any(self) -> bool:
        return self.elicitation or self.apps


def traits_of(capabilities: object) -> Traits:
    """The traits a `ClientCapabilities` object (as JSON) declares."""
    if not isinstance(capabilities, dict):
        return Traits()
    elicitation = capabilities.get("elicitation")
    form = isinstance(elicitation, dict) and (not elicitation or "form" in elicitation)  # {} means form (2025-06-18)
    extensions = capabilities.get("extensions")
    ui = extensions.get(APPS_EXTENSION) if isinstance(extensions, dict) else None
    mime_types = ui.get("mimeTypes") if isinstance(ui, dict) else None
    return Traits(elicitation=form, apps=isinstance(mime_types, list) and APP_MIME_TYPE in mime_types)


def binding(principal: Principal) -> str:
    """A keyed hash naming the credential (and account) that a session or a question belongs to."""
    key = hashlib.sha256(b"mcp-binding:" + get_settings().signing_key).digest()
    return hmac.new(key, f"{principal.account_id}\x00{principal.credential_label}".encode(), hashlib.sha256).hexdigest()


def _key() -> OctKey:
    return OctKey.import_key(hashlib.sha256(b"mcp-session:" + get_settings().signing_key).digest())


def session_id(principal: Principal, traits: Traits, *, now: float | None = None) -> str:
    issued = int(time.time() if now is None else now)
    claims = {"sub": binding(principal), "e": traits.elicitation, "a": traits.apps,
              "iat": issued, "exp": issued + SESSION_LIFETIME_SECONDS}
    return jwt.encode({"alg": "HS256"}, claims, _key())


class UnknownSession(ValueError):
    """Not a session this server gave this credential (tampered, expired, or another's)."""


def session_traits(value: str, principal: Principal, *, now: float | None = None) -> Traits:
    if not value or len(value) > SESSION_MAX:
        raise UnknownSession("malformed")
    try:
        claims = jwt.decode(value, _key(), algorithms=["HS256"]).claims
        jwt.JWTClaimsRegistry(now=int(time.time() if now is None else now), leeway=0,
                              exp={"essential": True}).validate(claims)
    except (JoseError, ValueError, TypeError):
        raise UnknownSession("invalid") from None
    if not hmac.compare_digest(str(claims.get("sub")), binding(principal)):
        raise UnknownSession("another credential's")
    return Traits(elicitation=claims.get("e") is True, apps=claims.get("a") is True)
