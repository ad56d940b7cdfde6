"""Sign-up, sign-in, sign-out, e-mail verification, CSRF and login throttling."""

from __future__ import annotations

import re
import time
from urllib.parse import urlsplit

from core.access.accounts import user_by_email
from core.access.verification import make_token
from core.base import db
from pages.sessions import SESSION_COOKIE
from tests.web.conftest import PASSWORD, csrf_of, outbox_messages


def user(email: str):
    with db.transaction() as session:
        return user_by_email(session, email)


# --- pages render -----------------------------------------------------------------------------

def test_signup_page_labels_every_input(browser):
    html = browser.get("/signup").text
    for field in ("email", "password", "name"):
        assert f'<label for="f-{field}">' in html
        assert f'id="f-{field}" name="{field}"' in html
    assert 'name="csrf_token"' in html


def test_login_page_has_email_and_password_fields(browser):
    response = browser.get("/login")
    assert response.status_code == 200
    assert 'name="email"' in response.text and 'name="password"' in response.text
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["x-frame-options"] == "DENY"


def test_signed_out_start_page_redirects_to_login(browser):
    response = browser.get("/")
    assert response.status_code in (302, 303, 307)
    assert response.headers["location"] == "/login"


# --- sign-up ----------------------------------------------------------------------------------

def test_signup_signs_in_and_redirects_to_onboarding(browser):
    response = browser.sign_up()
    assert response.status_code == 303
    assert response.headers["location"] == "/onboarding"
    assert browser.email in browser.get("/").text


def test_session_cookie_is_httponly_and_samesite_lax(browser):
    response = browser.sign_up()
    cookie = next(v for v in response.headers.get_list("set-cookie") if v.startswith(SESSION_COOKIE + "="))
    flags = [part.strip().lower() for part in cookie.split(";")]
    assert "httponly" in flags
    assert "samesite=lax" in flags
    assert "secure" not in flags  # the test origin is http; https origins add Secure


def test_signup_stores_the_user_with_an_unverified_email(browser):
    browser.sign_up(name="Ada Lovelace")
    stored = user(browser.email)
    assert stored.name == "Ada Lovelace"
    assert stored.email_verified_at is None
    assert stored.password_hash.startswith("$argon2")


def test_signup_with_existing_email_shows_error_at_email(browser, other_browser):
    browser.sign_up(email="taken@example.com")
    response = other_browser.sign_up(email="Taken@Example.com")
    assert response.status_code == 422
    assert 'id="f-email-error"' in response.text
    assert "already exists" in response.text
    assert 'aria-invalid="true"' in response.text


def test_signup_with_short_password_shows_error_at_password(browser):
    response = browser.sign_up(password="short")
    assert response.status_code == 422
    assert 'id="f-password-error"' in response.text
    assert "at least 8 characters" in response.text


def test_signup_with_bad_email_shows_error_at_email_and_keeps_input(browser):
    response = browser.sign_up(email="not-an-email")
    assert response.status_code == 422
    assert 'id="f-email-error"' in response.text
    assert 'value="not-an-email"' in response.text


# --- e-mail verification ----------------------------------------------------------------------

def verification_link(outbox, email: str) -> str:
    messages = outbox_messages(outbox, email)
    assert len(messages) == 1
    body = messages[0].get_body(preferencelist=("plain",)).get_content()
    return re.search(r"http://testserver/verify-email\?token=\S+", body).group(0)


def test_signup_emails_a_verification_link_that_verifies(browser, outbox):
    browser.sign_up()
    link = verification_link(outbox, browser.email)
    parts = urlsplit(link)
    response = browser.get(f"{parts.path}?{parts.query}")
    assert response.status_code == 200
    assert "verified" in response.text
    assert user(browser.email).email_verified_at is not None


def test_verification_link_works_in_a_signed_out_browser(browser, other_browser, outbox):
    browser.sign_up()
    parts = urlsplit(verification_link(outbox, browser.email))
    assert other_browser.get(f"{parts.path}?{parts.query}").status_code == 200
    assert user(browser.email).email_verified_at is not None


def test_tampered_verification_token_is_a_clear_400_page(signed_in):
    token = make_token(user(signed_in.email))
    response = signed_in.get("/verify-email", params={"token": token[:-2] + "xx"})
    assert response.status_code == 400
    assert "not valid" in response.text
    assert user(signed_in.email).email_verified_at is None


def test_expired_verification_token_says_expired(signed_in):
    token = make_token(user(signed_in.email), now=time.time() - 49 * 3600)
    response = signed_in.get("/verify-email", params={"token": token})
    assert response.status_code == 400
    assert "expired" in response.text


def test_missing_verification_token_is_400(browser):
    assert browser.get("/verify-email").status_code == 400


def test_resend_verification_sends_another_email_a_day_later(signed_in, outbox, monkeypatch):
    from core.mechanisms import ratelimit
    later = time.time() + 24 * 3600
    monkeypatch.setattr(ratelimit, "clock", lambda: later)
    response = signed_in.submit("/verify-email/resend", page="/")
    assert response.status_code == 303
    assert response.headers["location"] == "/?notice=verification_sent"
    assert len(outbox_messages(outbox, signed_in.email)) == 2


# --- sign-in ----------------------------------------------------------------------------------

def test_login_with_correct_password_signs_in(browser, other_browser):
    browser.sign_up()
    response = other_browser.sign_in(browser.email)
    assert response.status_code == 303
    assert response.headers["location"] == "/"
    assert other_browser.get("/").status_code == 200


def test_login_with_wrong_password_is_refused_with_a_message(browser, other_browser):
    browser.sign_up()
    response = other_browser.sign_in(browser.email, password="wrong password")
    assert response.status_code == 401
    assert "incorrect" in response.text
    assert other_browser.get("/").headers["location"] == "/login"


def test_login_with_unknown_email_gives_the_same_message(browser):
    response = browser.sign_in("nobody@example.com")
    assert response.status_code == 401
    assert "The e-mail address or the password is incorrect." in response.text


def test_login_honours_a_same_origin_next(browser, other_browser):
    browser.sign_up()
    response = other_browser.sign_in(browser.email, next_path="/settings/api-keys")
    assert response.headers["location"] == "/settings/api-keys"


def test_login_ignores_a_next_to_another_origin(browser, other_browser):
    browser.sign_up()
    for target in ("https://evil.example/", "//evil.example/x", "/\\evil.example", "javascript:alert(1)"):
        response = other_browser.sign_in(browser.email, next_path=target)
        assert response.headers["location"] == "/", target


def test_login_form_carries_the_next_param(browser):
    assert 'name="next" value="/settings/apps"' in browser.get("/login?next=/settings/apps").text
    assert 'name="next" value="/"' in browser.get("/login?next=https://evil.example").text


def test_signed_in_visit_to_login_goes_to_next(signed_in):
    assert signed_in.get("/login?next=/settings/apps").headers["location"] == "/settings/apps"


# --- sign-out and CSRF ------------------------------------------------------------------------

def test_logout_ends_the_session(signed_in):
    response = signed_in.submit("/logout", page="/")
    assert response.status_code == 303
    assert response.headers["location"] == "/login"
    assert signed_in.get("/").headers["location"] == "/login"


def test_logout_without_csrf_token_is_403_and_keeps_the_session(signed_in):
    response = signed_in.client.post("/logout", follow_redirects=False)
    assert response.status_code == 403
    assert signed_in.get("/").status_code == 200


def test_post_without_csrf_token_is_refused(browser):
    response = browser.client.post("/signup", data={"email": "a@example.com", "password": PASSWORD})
    assert response.status_code == 403
    assert "security token" in response.text


def test_csrf_token_from_another_browser_is_refused(browser, other_browser):
    token = csrf_of(other_browser.get("/signup").text)
    browser.get("/signup")  # this browser has its own CSRF cookie
    response = browser.client.post("/signup", data={"email": "a@example.com", "password": PASSWORD,
                                                    "csrf_token": token})
    assert response.status_code == 403


def test_forged_csrf_token_is_refused(browser):
    browser.get("/login")
    response = browser.client.post("/login", data={"email": "a@example.com", "password": PASSWORD,
                                                   "csrf_token": "x.y.z"})
    assert response.status_code == 403


def test_logout_page_offers_a_sign_out_button(signed_in):
    html = signed_in.get("/logout").text
    assert 'action="/logout"' in html and "Sign out" in html


def test_logout_page_when_signed_out_goes_to_login(browser):
    assert browser.get("/logout").headers["location"] == "/login"


def test_resending_verification_within_a_day_is_refused_with_the_reason(signed_in, outbox):
    response = signed_in.submit("/verify-email/resend", page="/")
    assert response.status_code == 429
    assert 0 < int(response.headers["retry-after"]) <= 24 * 3600
    assert "less than a day ago" in response.text
    assert len(outbox_messages(outbox, signed_in.email)) == 1
