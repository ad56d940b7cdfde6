"""E-mail address verification: signed, expiring, single-purpose tokens sent by e-mail.

A token is a JWT (joserfc, HS256) under a key derived only for this purpose, so no other signed
value of the service (cursors, CSRF tokens) can pass as one. It names the user and the address it
was sent to: a token for an address the user no longer has verifies nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import time
import uuid
from dataclasses import dataclass
from email.message import EmailMessage
from urllib.parse import quote

from joserfc import jwt
from joserfc.errors import ExpiredTokenError, JoseError
from joserfc.jwk import OctKey
from sqlmodel import Session

from config.settings import get_settings
from core.access.accounts import mark_email_verified, plain_name
from core.base.errors import ValidationFailed
from core.mechanisms import ratelimit
from core.models import User

PURPOSE = "verify_email"
LIFETIME_SECONDS = 48 * 3600
TOKEN_MAX = 2000


class InvalidVerificationToken(ValidationFailed):
    """The link is malformed, tampered with, expired, or for another address."""

    def __init__(self, detail: str):
        super().__init__(detail)


@dataclass(frozen=True)
class VerificationClaims:
    user_id: uuid.UUID
    email: str


def _key() -> OctKey:
    return OctKey.import_key(hashlib.sha256(b"email-verification:" + get_settings().signing_key).digest())


def make_token(user: User, *, now: float | None = None) -> str:
    issued = int(time.time() if now is None else now)
    claims = {"sub": str(user.id), "email": user.email, "purpose": PURPOSE,
              "iat": issued, "exp": issued + LIFETIME_SECONDS}
    return jwt.encode({"alg": "HS256"}, claims, _key())


def read_token(token: str, *, now: float | None = None) -> VerificationClaims:
    """The claims of a valid token, or InvalidVerificationToken."""
    if not token or len(token) > TOKEN_MAX:
        raise InvalidVerificationToken("The verification link is incomplete.")
    try:
        claims = jwt.decode(token, _key(), algorithms=["HS256"]).claims
        registry = jwt.JWTClaimsRegistry(
            now=int(time.time() if now is None else now), leeway=0,
            exp={"essential": True}, sub={"essential": True}, email={"essential": True},
            purpose={"essential": True, "value": PURPOSE})
        registry.validate(claims)
        return VerificationClaims(user_id=uuid.UUID(claims["sub"]), email=str(claims["email"]))
    except ExpiredTokenError:
        raise InvalidVerificationToken("The verification link has expired.") from None
    except (JoseError, ValueError, TypeError, KeyError):
        raise InvalidVerificationToken("The verification link is not valid.") from None


def verify_email(session: Session, token: str) -> User:
    """Mark the address of the token's user verified (repeating is harmless)."""
    claims = read_token(token)
    user = session.get(User, claims.user_id)
    if user is None or user.email != claims.email:
        raise InvalidVerificationToken("The verification link is for an address this account no longer has.")
    mark_email_verified(session, user)
    return user


def verification_link(user: User) -> str:
    return f"{get_settings().origin.rstrip('/')}/verify-email?token={quote(make_token(user))}"


def mails_per_recipient() -> ratelimit.Limit:
    """Whoever types an address into the sign-up form, its owner gets one e-mail, then none for a day."""
    return ratelimit.Limit("verification_mail", 1, 24 * 3600)


def recipient_subject(email: str) -> str:
    key = hashlib.sha256(b"verification-recipient:" + get_settings().signing_key).digest()
    return hmac.new(key, email.strip().lower().encode(), hashlib.sha256).hexdigest()


def verification_mail(session: Session, user: User, *, now: float | None = None) -> tuple[EmailMessage | None, ratelimit.Usage]:
    """The verification e-mail for `user`, counted against its address's limit, or None when the
    address had its e-mail of the day (the usage says when another may go)."""
    usage = ratelimit.hit(session, mails_per_recipient(), recipient_subject(user.email), now=now)
    return (None if usage.exceeded else verification_message(user)), usage


def verification_message(user: User) -> EmailMessage:
    settings = get_settings()
    link = verification_link(user)
    message = EmailMessage()
    message["Subject"] = "Confirm your e-mail address"
    message["From"] = settings.sender_address
    message["To"] = user.email
    name = plain_name(user.name)
    greeting = f"Hello {name}," if name else "Hello,"
    message.set_content(
        f"{greeting}\n\n"
        f"Please confirm your e-mail address for your invoicing account by opening this link:\n\n"
        f"{link}\n\n"
        f"The link works for {LIFETIME_SECONDS // 3600} hours. "
        f"If you did not sign up, ignore this message.\n")
    return message


