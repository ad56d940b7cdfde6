"""Sign-up, sign-in, sign-out and e-mail verification pages."""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError
from starlette.responses import Response
from starlette.routing import Route

from core.access import accounts, login_throttle, verification
from core.base.db import transaction
from core.base.errors import Conflict, ValidationFailed
from core.base.validation import EMAIL_MAX, NAME_MAX
from core.mechanisms import ratelimit
from core.models import User
from pages.routing import Visit, error_page, errors_by_field, page, redirect
from pages.sessions import end_session, safe_next, set_session_cookie, start_session
from web.rendering import render

PASSWORD_MAX = 1000  # argon2 takes any length; this only bounds the work per request
RESENDS_PER_USER = ratelimit.Limit("verification_resend", 5, 3600)


def _signed_in(user: User, next_path: str) -> Response:
    with transaction() as session:
        token = start_session(session, user)
    response = redirect(next_path)
    set_session_cookie(response, token)
    return response


# --- sign-up --------------------------------------------------------------------------------

def signup_form(visit: Visit) -> Response:
    if visit.user is not None:
        return redirect("/")
    return render(visit.request, "signup.html", values={}, errors={})


def _signup_again(visit: Visit, values: dict, errors: dict[str, str]) -> Response:
    return render(visit.request, "signup.html", status_code=422, values=values, errors=errors)


def signup(visit: Visit) -> Response:
    values = {"email": visit.text("email", EMAIL_MAX + 1), "name": visit.text("name", NAME_MAX + 1)}
    password = visit.text("password", PASSWORD_MAX, strip=False)
    try:
        with transaction() as session:
            user, _account = accounts.create_account(session, email=values["email"], password=password,
                                                     name=values["name"] or None)
    except ValidationFailed as exc:
        return _signup_again(visit, values, errors_by_field(exc.errors))
    except (Conflict, IntegrityError):  # IntegrityError: the same address signed up at the same moment
        return _signup_again(visit, values, {
            "email": "an account with this e-mail already exists. Sign in instead, or use another address."})
    sent = verification.send_verification(user)
    return _signed_in(user, "/onboarding" if sent else "/onboarding?notice=email_not_sent")


# --- sign-in and sign-out -------------------------------------------------------------------

def login_form(visit: Visit) -> Response:
    next_path = safe_next(visit.request.query_params.get("next"))
    if visit.user is not None:
        return redirect(next_path)
    return render(visit.request, "login.html", values={"email": ""}, next_path=next_path, error=None)


def login(visit: Visit) -> Response:
    email = visit.text("email", EMAIL_MAX + 1)
    password = visit.text("password", PASSWORD_MAX, strip=False)
    next_path = safe_next(visit.text("next", 2000))
    with transaction() as session:
        outcome = login_throttle.attempt_login(session, email, password, visit.client_ip())
    if outcome.throttled:
        response = render(visit.request, "error.html", status_code=429, title="Too many sign-in attempts",
                          message="Sign-in from your network is paused after too many failed attempts.",
                          retry_after=outcome.retry_after, back_url="/login", back_label="Back to sign-in")
        response.headers["Retry-After"] = str(outcome.retry_after)
        return response
    if outcome.user is None:
        return render(visit.request, "login.html", status_code=401, values={"email": email},
                      next_path=next_path, error="The e-mail address or the password is incorrect.")
    return _signed_in(outcome.user, next_path)


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
    with transaction() as session:
        usage = ratelimit.hit(session, RESENDS_PER_USER, str(visit.user.id))
    if usage.exceeded:
        usage.refused()
        response = render(visit.request, "error.html", status_code=429, title="Too many e-mails",
                          message="We have sent several verification e-mails in the last hour already.",
                          retry_after=usage.retry_after)
        response.headers["Retry-After"] = str(usage.retry_after)
        return response
    if visit.user.email_verified_at is not None:
        return redirect("/?notice=already_verified")
    sent = verification.send_verification(visit.user)
    return redirect("/?notice=" + ("verification_sent" if sent else "email_not_sent"))


def routes() -> list[Route]:
    return [
        page("/signup", get=signup_form, post=signup, signed_in=False),
        page("/login", get=login_form, post=login, signed_in=False),
        page("/logout", get=logout_form, post=logout, signed_in=False),
        page("/verify-email", get=verify_email, signed_in=False),
        page("/verify-email/resend", post=resend_verification),
    ]
