"""Sign-up, sign-in, sign-out and e-mail verification pages."""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError
from starlette.responses import Response
from starlette.routing import Route

from config.settings import get_settings
from core.access import accounts, invitations, sign_in, verification
from core.base.addresses import client_network
from core.base.db import transaction
from core.base.errors import Conflict, NotFound, ValidationFailed
from core.base.validation import EMAIL_MAX, NAME_MAX, normalize_email
from core.mechanisms import ratelimit
from core.models import User
from pages.mail import send_after
from pages.routing import Visit, error_page, errors_by_field, page, redirect
from pages.sessions import (
    CHALLENGE_COOKIE,
    clear_challenge_cookie,
    end_session,
    known_browser,
    remember_browser,
    safe_next,
    set_challenge_cookie,
    set_session_cookie,
    start_session,
)
from web.rendering import render

PASSWORD_MAX = 1000  # argon2 takes any length; this only bounds the work per request


def _signed_in(visit: Visit, user: User, next_path: str) -> Response:
    with transaction() as session:
        token = start_session(session, user)
    response = redirect(next_path)
    set_session_cookie(response, token)
    remember_browser(visit.request, response, user)
    return response


# --- sign-up --------------------------------------------------------------------------------

INVITATION_PATH = "/invitations/"  # signing up to accept an invitation: no business of one's own


def _invited(next_path: str, email: str) -> bool:
    """Whether the sign-up comes from a pending invitation of this address (it then starts no business
    of its own, and accepting verifies the address)."""
    if not next_path.startswith(INVITATION_PATH):
        return False
    with transaction() as session:
        try:
            row = invitations.by_token(session, next_path.removeprefix(INVITATION_PATH))
        except NotFound:
            return False
        return row.email == email and invitations.status(row) == "pending"


def signup_form(visit: Visit) -> Response:
    next_path = safe_next(visit.request.query_params.get("next"), "")
    if visit.user is not None:
        return redirect(next_path or "/")
    return render(visit.request, "signup.html", values={}, errors={}, next_path=next_path)


def _signup_again(visit: Visit, values: dict, errors: dict[str, str], next_path: str) -> Response:
    return render(visit.request, "signup.html", status_code=422, values=values, errors=errors, next_path=next_path)


def signups_per_network() -> ratelimit.Limit:
    """Sign-ups from one client network (an IPv4 address, an IPv6 /64), whether they create an
    account or find the address taken."""
    return ratelimit.Limit("sign_up", get_settings().rate_limit_sign_ups, 3600)


def _too_many_sign_ups(visit: Visit, usage: ratelimit.Usage) -> Response:
    usage.refused()
    response = render(visit.request, "error.html", status_code=429, title="Too many new accounts",
                      message="There were several sign-ups from your network in the last hour.",
                      retry_after=usage.retry_after, back_url="/signup", back_label="Back to sign-up")
    response.headers["Retry-After"] = str(usage.retry_after)
    return response


def signup(visit: Visit) -> Response:
    values = {"email": visit.text("email", EMAIL_MAX + 1), "name": visit.text("name", NAME_MAX + 1)}
    password = visit.text("password", PASSWORD_MAX, strip=False)
    next_path = safe_next(visit.text("next", 2000), "")
    try:
        invited = _invited(next_path, normalize_email(values["email"], path="email"))
        password_hash = accounts.hash_new_password(password)  # slow: before the transaction
        # Counted in a transaction of its own: a sign-up for a taken address (which says so) rolls
        # back the account's, and must still count, or the answers would list who has an account.
        with transaction() as session:
            usage = ratelimit.hit(session, signups_per_network(), client_network(visit.client_ip()))
        if usage.exceeded:
            return _too_many_sign_ups(visit, usage)
        with transaction() as session:
            create = accounts.create_user if invited else accounts.create_account
            created = create(session, email=values["email"], password_hash=password_hash, name=values["name"] or None)
            user = created if invited else created[0]
            # Accepting the invitation verifies the address: its link reached it.
            mail = None if invited else verification.verification_mail(session, user)[0]
    except ValidationFailed as exc:
        return _signup_again(visit, values, errors_by_field(exc.errors), next_path)
    except (Conflict, IntegrityError):  # IntegrityError: the same address signed up at the same moment
        return _signup_again(visit, values, {
            "email": "an account with this e-mail already exists. Sign in instead, or use another address."}, next_path)
    return send_after(_signed_in(visit, user, next_path if invited else "/onboarding"), mail, "verification")


# --- sign-in and sign-out -------------------------------------------------------------------

def login_form(visit: Visit) -> Response:
    next_path = safe_next(visit.request.query_params.get("next"))
    if visit.user is not None:
        return redirect(next_path)
    return render(visit.request, "login.html", values={"email": ""}, next_path=next_path, error=None)


def _too_many(visit: Visit, retry_after: int) -> Response:
    response = render(visit.request, "error.html", status_code=429, title="Too many sign-in attempts",
                      message="Sign-in from your network is paused after too many failed attempts.",
                      retry_after=retry_after, back_url="/login", back_label="Back to sign-in")
    response.headers["Retry-After"] = str(retry_after)
    return response


def login(visit: Visit) -> Response:
    email = visit.text("email", EMAIL_MAX + 1)
    password = visit.text("password", PASSWORD_MAX, strip=False)
    next_path = safe_next(visit.text("next", 2000))
    with transaction() as session:
        outcome = sign_in.attempt_login(session, email, password, visit.client_ip(),
                                        known_browser=known_browser(visit.request), next_path=next_path)
    if outcome.throttled:
        return _too_many(visit, outcome.retry_after)
    if outcome.challenge is not None:
        response = redirect("/login/code")
        set_challenge_cookie(response, outcome.challenge.token)
        # Sent after the answer: how long it takes must not tell whether there was one (a right password).
        return send_after(response, outcome.challenge.mail, "sign_in_code")
    if outcome.user is None:
        return render(visit.request, "login.html", status_code=401, values={"email": email},
                      next_path=next_path, error="The e-mail address or the password is incorrect.")
    return _signed_in(visit, outcome.user, next_path)


# --- the e-mailed code of a sign-in from a new browser ---------------------------------------

def _challenge_gone(visit: Visit) -> Response:
    response = render(visit.request, "error.html", status_code=410, title="This sign-in has ended",
                      message="The code has expired or was mistyped too often. Sign in again to get a new one.",
                      back_url="/login", back_label="Sign in again")
    clear_challenge_cookie(response)
    return response


def _code_page(visit: Visit, hint: str, *, status_code: int = 200, error: str | None = None,
               notice: str | None = None) -> Response:
    return render(visit.request, "login_code.html", status_code=status_code, email_hint=hint, error=error,
                  notice=notice, minutes=int(sign_in.CODE_LIFETIME.total_seconds() // 60),
                  digits=sign_in.CODE_DIGITS)


def code_form(visit: Visit) -> Response:
    with transaction() as session:
        challenge = sign_in.find_challenge(session, visit.request.cookies.get(CHALLENGE_COOKIE))
    if challenge is None:
        return _challenge_gone(visit)
    notice = "We have sent a new code." if visit.request.query_params.get("notice") == "resent" else None
    return _code_page(visit, challenge.email_hint, notice=notice)


def enter_code(visit: Visit) -> Response:
    token = visit.request.cookies.get(CHALLENGE_COOKIE)
    with transaction() as session:
        challenge = sign_in.find_challenge(session, token)
        hint = challenge.email_hint if challenge else ""
        outcome = sign_in.enter_code(session, token, visit.text("code", 40))
    if outcome.user is not None:
        response = _signed_in(visit, outcome.user, outcome.next_path)
        clear_challenge_cookie(response)
        return response
    if outcome.attempts_left == 0:
        return _challenge_gone(visit)
    return _code_page(visit, hint, status_code=401,
                      error=f"That code is not right. {outcome.attempts_left} more "
                            f"{'try' if outcome.attempts_left == 1 else 'tries'}, then sign in again.")


def _too_many_codes(visit: Visit, retry_after: int) -> Response:
    response = render(visit.request, "error.html", status_code=429, title="Too many new codes",
                      message=f"A sign-in may ask for another code {sign_in.RESENDS_PER_CHALLENGE} times, and a "
                              f"network {sign_in.RESENDS_PER_NETWORK} times an hour. Use the last code sent, "
                              f"or sign in again later.",
                      retry_after=retry_after, back_url="/login/code", back_label="Back to the code")
    response.headers["Retry-After"] = str(retry_after)
    return response


def resend_code(visit: Visit) -> Response:
    token = visit.request.cookies.get(CHALLENGE_COOKIE)
    with transaction() as session:
        outcome = sign_in.resend_code(session, token, visit.client_ip())
    if outcome.gone:
        return _challenge_gone(visit)
    if outcome.throttled:
        return _too_many_codes(visit, outcome.retry_after)
    response = redirect("/login/code?notice=resent")
    set_challenge_cookie(response, token)  # the challenge lives another CODE_LIFETIME: so does its cookie
    # Sent after the answer: how long it takes must not tell whether there was one (a right password).
    return send_after(response, outcome.mail, "sign_in_code")


def logout_form(visit: Visit) -> Response:
    if visit.user is None:
        return redirect("/login")
    return render(visit.request, "logout.html")


def logout(visit: Visit) -> Response:
    response = redirect("/login")
    end_session(visit.request, response)
    return response


# --- e-mail verification --------------------------------------------------------------------

def verify_email(visit: Visit) -> Response:
    token = visit.request.query_params.get("token", "")
    try:
        with transaction() as session:
            user = verification.verify_email(session, token)
    except verification.InvalidVerificationToken as exc:
        return error_page(visit.request, 400, "This link does not work", exc.detail +
                          " Sign in and ask for a new verification e-mail from the start page.")
    return render(visit.request, "email_verified.html", email=user.email)


def resend_verification(visit: Visit) -> Response:
    if visit.user.email_verified_at is not None:
        return redirect("/?notice=already_verified")
    with transaction() as session:
        mail, usage = verification.verification_mail(session, visit.user)
    if mail is None:
        usage.refused()
        response = render(visit.request, "error.html", status_code=429, title="A verification e-mail is on its way",
                          message=f"We sent one to {visit.user.email} less than a day ago: look for it, in the spam "
                                  f"folder too. We send one a day, so that nobody can fill a stranger's mailbox.",
                          retry_after=usage.retry_after)
        response.headers["Retry-After"] = str(usage.retry_after)
        return response
    return send_after(redirect("/?notice=verification_sent"), mail, "verification")


def routes() -> list[Route]:
    return [
        page("/signup", get=signup_form, post=signup, signed_in=False),
        page("/login", get=login_form, post=login, signed_in=False),
        page("/login/code", get=code_form, post=enter_code, signed_in=False),
        page("/login/code/resend", post=resend_code, signed_in=False),
        page("/logout", get=logout_form, post=logout, signed_in=False),
        page("/verify-email", get=verify_email, signed_in=False),
        page("/verify-email/resend", post=resend_verification),
    ]
