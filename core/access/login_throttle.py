"""Password sign-in with throttling of failed attempts, counted in the database.

Failures are counted per e-mail address (guessing one account's password) and per client address
(trying many accounts from one place), in fixed windows shared by every server process. Once
either count reaches its limit, further attempts are refused before the password is checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlmodel import Session, select

from core.access.accounts import check_password, hash_password
from core.base.crypto import sha256_hex
from core.mechanisms import ratelimit
from core.models import User

FAILURES_PER_EMAIL = ratelimit.Limit("login_failures_email", 10, 15 * 60)
# Higher: many people may sign in from behind one address (an office, a carrier NAT).
FAILURES_PER_CLIENT = ratelimit.Limit("login_failures_ip", 50, 15 * 60)

_dummy_hash: str | None = None


@dataclass(frozen=True)
class LoginOutcome:
    user: User | None  # None: wrong e-mail or password, or throttled
    retry_after: int | None = None  # seconds, when throttled

    @property
    def throttled(self) -> bool:
        return self.retry_after is not None


def _subjects(email: str, client_ip: str) -> list[tuple[ratelimit.Limit, str]]:
    # Hashed: the bucket key stays short and keeps no address in clear.
    return [(FAILURES_PER_EMAIL, sha256_hex(email.strip().lower())),
            (FAILURES_PER_CLIENT, sha256_hex(client_ip or "unknown"))]


def retry_after(session: Session, email: str, client_ip: str) -> int | None:
    """Seconds until sign-in may be tried again, or None when not throttled."""
    waits = [usage.retry_after for limit, subject in _subjects(email, client_ip)
             if (usage := ratelimit.peek(session, limit, subject)).exceeded]
    return max(waits) if waits else None


def record_failure(session: Session, email: str, client_ip: str) -> None:
    for limit, subject in _subjects(email, client_ip):
        ratelimit.hit(session, limit, subject)


def _verify_against_nothing(password: str) -> None:
    """Spend the time of a real hash check, so unknown addresses cannot be told by timing."""
    global _dummy_hash
    if _dummy_hash is None:
        _dummy_hash = hash_password("not a real password")
    check_password(User(email="", password_hash=_dummy_hash), password)


def attempt_login(session: Session, email: str, password: str, client_ip: str) -> LoginOutcome:
    """Check the credentials unless throttled; a failure is counted in `session` (commit it)."""
    if (wait := retry_after(session, email, client_ip)) is not None:
        return LoginOutcome(user=None, retry_after=wait)
    user = session.exec(select(User).where(User.email == email.strip().lower())).first()
    if user is None:
        _verify_against_nothing(password)
    elif check_password(user, password):
        return LoginOutcome(user=user)
    record_failure(session, email, client_ip)
    return LoginOutcome(user=None)
