"""Browser sessions: a random cookie whose hash is the key of a row in `web_sessions`."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import quote

from sqlalchemy import delete
from sqlmodel import Session, select
from starlette.requests import Request
from starlette.responses import Response

from config.settings import get_settings
from core.access import known_browsers, memberships
from core.access.known_browsers import KnownBrowser
from core.access.memberships import Business
from core.access.sign_in import CODE_LIFETIME
from core.base import crypto
from core.base.clock import now
from core.base.db import transaction
from core.models import User, WebSession

SESSION_COOKIE = "invoicing_session"
SESSION_LIFETIME = timedelta(days=14)
KNOWN_BROWSER_COOKIE = "invoicing_known_browser"
CHALLENGE_COOKIE = "invoicing_sign_in"  # the handle of a sign-in waiting for its e-mailed code
ACTING_FOR_FIELD = "acting_for"  # the business a signed-in person's form was shown for


def start_session(session: Session, user: User) -> str:
    """Create a session row; returns the cookie value (kept only hashed)."""
    token = crypto.token(32)
    session.add(WebSession(token_hash=crypto.sha256_hex(token), user_id=user.id,
                           expires_at=now() + SESSION_LIFETIME))
    return token


def _set_cookie(response: Response, name: str, value: str, max_age: int, path: str = "/") -> None:
    response.set_cookie(name, value, max_age=max_age, httponly=True, samesite="lax",
                        secure=get_settings().origin.startswith("https://"), path=path)


def set_session_cookie(response: Response, token: str) -> None:
    _set_cookie(response, SESSION_COOKIE, token, int(SESSION_LIFETIME.total_seconds()))


def known_browser(request: Request) -> KnownBrowser | None:
    return known_browsers.read(request.cookies.get(KNOWN_BROWSER_COOKIE))


def remember_browser(request: Request, response: Response, user: User) -> None:
    """Mark this browser as one that has signed in as `user` (it skips the e-mailed code later)."""
    value = known_browsers.remember(known_browser(request), user.id)
    _set_cookie(response, KNOWN_BROWSER_COOKIE, value, known_browsers.LIFETIME_SECONDS)


def set_challenge_cookie(response: Response, token: str) -> None:
    _set_cookie(response, CHALLENGE_COOKIE, token, int(CODE_LIFETIME.total_seconds()), path="/login")


def clear_challenge_cookie(response: Response) -> None:
    response.delete_cookie(CHALLENGE_COOKIE, path="/login")


def _row(session: Session, request: Request) -> WebSession | None:
    token = request.cookies.get(SESSION_COOKIE)
    if not token or len(token) > 200:
        return None
    row = session.exec(select(WebSession).where(WebSession.token_hash == crypto.sha256_hex(token))).first()
    if row is None or row.expires_at <= now():
        return None
    return row


def current_user(request: Request) -> User | None:
    """The signed-in user, or None. Cached on the request."""
    if not hasattr(request.state, "user"):
        with transaction() as session:
            row = _row(session, request)
            request.state.user = session.get(User, row.user_id) if row else None
    return request.state.user


def current_business(request: Request) -> Business | None:
    """The business the signed-in person acts for in this browser (the one they last switched to, or
    their first), with their role there now; None when signed out or a member of none. Cached on the request."""
    if not hasattr(request.state, "business"):
        request.state.business, request.state.businesses = None, []
        with transaction() as session:
            row = _row(session, request)
            if row is not None:
                request.state.businesses = memberships.businesses_of(session, row.user_id)
                request.state.business = memberships.chosen(request.state.businesses, row.account_id)
    return request.state.business


def businesses(request: Request) -> list[Business]:
    """Every business of the signed-in person (for the switcher)."""
    current_business(request)
    return request.state.businesses


def switch_business(request: Request, account_id) -> None:
    """Act for `account_id` (one of the person's businesses, checked by the caller) in this browser."""
    with transaction() as session:
        row = _row(session, request)
        if row is not None:
            row.account_id = account_id
            session.add(row)
    for cached in ("business", "businesses"):
        if hasattr(request.state, cached):
            delattr(request.state, cached)


def end_session(request: Request, response: Response) -> None:
    token = request.cookies.get(SESSION_COOKIE)
    if token:
        with transaction() as session:
            session.execute(delete(WebSession).where(WebSession.token_hash == crypto.sha256_hex(token)))
    response.delete_cookie(SESSION_COOKIE, path="/")


def login_url(next_path: str) -> str:
    return "/login?next=" + quote(next_path, safe="")


def safe_next(next_path: str | None, default: str = "/") -> str:
    """Only same-origin relative paths may be used after sign-in (no open redirects)."""
    if not next_path or not next_path.startswith("/") or next_path.startswith("//") or "\\" in next_path:
        return default
    return next_path
