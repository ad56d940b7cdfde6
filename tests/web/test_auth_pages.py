"""Sign-up, sign-in, sign-out, e-mail verification, CSRF and login throttling."""

from __future__ import annotations

import re
import time
from contextlib import ExitStack
from urllib.parse import urlsplit

import pytest
from sqlmodel import select
from starlette.testclient import TestClient

from core.access import login_throttle
from core.access.accounts import user_by_email
from core.access.verification import make_token
from core.base import db
from core.base.crypto import sha256_hex
from core.models import RateLimitWindow
from pages.sessions import SESSION_COOKIE
from tests.conftest import TEST_ORIGIN
from tests.web.conftest import PASSWORD, Browser, csrf_of, outbox_messages


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


def test_resend_verification_sends_another_email(signed_in, outbox):
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


# --- throttling -------------------------------------------------------------------------------
# Failures count per (account, address), per address and per account. Addresses come from
# `browser_at`; the other browsers sign in from "testclient", Starlette's default.

PAIR = login_throttle.failures_per_account_and_client()
ATTACKER = "198.51.100.7"
HOUR = 1_800_000_000 - 1_800_000_000 % 3600  # a fixed start of a clock hour, for windows in tests


@pytest.fixture
def browser_at(app):
    """Browsers whose requests come from a given client address."""
    with ExitStack() as stack:
        yield lambda address: Browser(stack.enter_context(
            TestClient(app, base_url=TEST_ORIGIN, client=(address, 50000))))


def fail_from_many_addresses(email: str, count: int, now: float | None = None) -> None:
    """A distributed attack: one failure on `email` from each of `count` addresses."""
    with db.transaction() as session:
        for n in range(count):
            login_throttle.record_failure(session, email, f"10.0.{n // 256}.{n % 256}", now=now)


def record_failures(email: str, client_ip: str, count: int, now: float | None = None) -> None:
    with db.transaction() as session:
        for _ in range(count):
            login_throttle.record_failure(session, email, client_ip, now=now)


def throttled(email: str, client_ip: str, now: float | None = None) -> bool:
    with db.transaction() as session:
        return login_throttle.retry_after(session, email, client_ip, now=now) is not None


def test_failing_on_purpose_from_one_address_does_not_stop_the_user_at_another(browser, browser_at):
    browser.sign_up()
    attacker = browser_at(ATTACKER)
    for _ in range(PAIR.requests + 5):
        attacker.sign_in(browser.email, password="wrong password")
    assert attacker.sign_in(browser.email).status_code == 429
    assert browser_at("203.0.113.1").sign_in(browser.email).status_code == 303


def test_failures_from_one_address_pause_that_account_from_there(browser, browser_at):
    browser.sign_up()
    attacker = browser_at(ATTACKER)
    for _ in range(PAIR.requests):
        assert attacker.sign_in(browser.email, password="wrong password").status_code == 401
    response = attacker.sign_in(browser.email)  # even the right password now waits
    assert response.status_code == 429
    assert 0 < int(response.headers["retry-after"]) <= PAIR.window_seconds
    assert "Too many sign-in attempts" in response.text


def test_pausing_one_account_from_an_address_leaves_other_accounts_open_from_there():
    record_failures("victim@example.com", ATTACKER, PAIR.requests)
    assert throttled("victim@example.com", ATTACKER)
    assert not throttled("other@example.com", ATTACKER)


def test_successful_logins_are_not_counted(browser, other_browser):
    browser.sign_up()
    for _ in range(PAIR.requests + 1):
        assert other_browser.sign_in(browser.email).status_code == 303


def test_successful_login_forgets_that_accounts_failures_from_that_address(browser, other_browser):
    browser.sign_up()
    record_failures(browser.email, "testclient", PAIR.requests - 1)
    assert other_browser.sign_in(browser.email).status_code == 303
    record_failures(browser.email, "testclient", PAIR.requests - 1)
    assert not throttled(browser.email, "testclient")


def test_successful_login_keeps_the_address_count_across_accounts(browser, other_browser):
    browser.sign_up()
    with db.transaction() as session:
        for n in range(login_throttle.failures_per_client().requests - 1):
            login_throttle.record_failure(session, f"guess{n}@example.com", "testclient")
    assert other_browser.sign_in(browser.email).status_code == 303  # no reset by signing in to one's own
    record_failures("one-more@example.com", "testclient", 1)
    assert other_browser.sign_in("fresh@example.com").status_code == 429


def test_login_is_throttled_per_client_address_across_emails(browser):
    with db.transaction() as session:
        for n in range(login_throttle.failures_per_client().requests):
            login_throttle.record_failure(session, f"guess{n}@example.com", "testclient")
    response = browser.sign_in("fresh@example.com")
    assert response.status_code == 429
    assert "retry-after" in response.headers


def test_account_ceiling_cuts_what_each_address_may_still_fail(browser, browser_at):
    browser.sign_up()
    fail_from_many_addresses(browser.email, login_throttle.failures_per_account().requests)
    attacker = browser_at(ATTACKER)
    for _ in range(login_throttle.failures_per_account_and_client_under_attack().requests):
        assert attacker.sign_in(browser.email, password="wrong password").status_code == 401
    assert attacker.sign_in(browser.email).status_code == 429  # well before the pair limit of 10


def test_account_ceiling_does_not_lock_the_user_out(browser, browser_at):
    browser.sign_up()
    fail_from_many_addresses(browser.email, login_throttle.failures_per_account().requests * 2)
    assert browser_at("203.0.113.1").sign_in(browser.email).status_code == 303


def test_below_the_account_ceiling_an_address_keeps_its_full_allowance():
    fail_from_many_addresses("victim@example.com", login_throttle.failures_per_account().requests - PAIR.requests, now=HOUR)
    record_failures("victim@example.com", ATTACKER, PAIR.requests - 1, now=HOUR)  # one short of the ceiling
    assert not throttled("victim@example.com", ATTACKER, now=HOUR)


def test_one_address_alone_cannot_reach_the_account_ceiling():
    windows_per_ceiling = login_throttle.failures_per_account().window_seconds // PAIR.window_seconds
    assert PAIR.requests * windows_per_ceiling < login_throttle.failures_per_account().requests


def test_throttled_answer_is_the_same_for_unknown_and_existing_accounts(browser, browser_at):
    browser.sign_up()
    record_failures(browser.email, ATTACKER, PAIR.requests)
    record_failures("nobody@example.com", ATTACKER, PAIR.requests)
    attacker = browser_at(ATTACKER)
    existing, unknown = attacker.sign_in(browser.email), attacker.sign_in("nobody@example.com")
    assert existing.status_code == unknown.status_code == 429
    assert abs(int(existing.headers["retry-after"]) - int(unknown.headers["retry-after"])) <= 1
    assert re.sub(r"\d+", "N", existing.text) == re.sub(r"\d+", "N", unknown.text)


def test_unknown_email_still_costs_a_password_check(browser, monkeypatch):
    checks = []
    real_check = login_throttle.check_password
    monkeypatch.setattr(login_throttle, "check_password", lambda *args: checks.append(1) or real_check(*args))
    assert browser.sign_in("nobody@example.com").status_code == 401
    assert checks == [1]


def test_pair_count_expires_with_its_window():
    record_failures("victim@example.com", ATTACKER, PAIR.requests, now=HOUR)
    assert throttled("victim@example.com", ATTACKER, now=HOUR + PAIR.window_seconds - 1)
    assert not throttled("victim@example.com", ATTACKER, now=HOUR + PAIR.window_seconds)


def test_address_count_expires_with_its_window():
    limit = login_throttle.failures_per_client()
    with db.transaction() as session:
        for n in range(limit.requests):
            login_throttle.record_failure(session, f"guess{n}@example.com", ATTACKER, now=HOUR)
    assert throttled("fresh@example.com", ATTACKER, now=HOUR + limit.window_seconds - 1)
    assert not throttled("fresh@example.com", ATTACKER, now=HOUR + limit.window_seconds)


def test_account_ceiling_lasts_until_the_end_of_its_window():
    ceiling, allowance = login_throttle.failures_per_account(), login_throttle.failures_per_account_and_client_under_attack()
    fail_from_many_addresses("victim@example.com", ceiling.requests, now=HOUR)
    last_window = HOUR + ceiling.window_seconds - PAIR.window_seconds
    record_failures("victim@example.com", ATTACKER, allowance.requests, now=last_window)
    assert throttled("victim@example.com", ATTACKER, now=last_window)
    record_failures("victim@example.com", "203.0.113.1", allowance.requests, now=HOUR + ceiling.window_seconds)
    assert not throttled("victim@example.com", "203.0.113.1", now=HOUR + ceiling.window_seconds)


def test_ipv6_addresses_count_by_their_64_network():
    record_failures("victim@example.com", "2001:db8:1:2::1", PAIR.requests)
    assert throttled("victim@example.com", "2001:db8:1:2:ffff:ffff:ffff:ffff")
    assert not throttled("victim@example.com", "2001:db8:1:3::1")


@pytest.mark.parametrize(("address", "network"), [
    ("198.51.100.7", "198.51.100.7"),
    ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
    ("::ffff:198.51.100.7", "198.51.100.7"),
    ("testclient", "testclient"),
    ("", "unknown"),
])
def test_client_network_is_the_unit_addresses_count_by(address, network):
    assert login_throttle.client_network(address) == network


def test_counter_keys_reveal_neither_email_nor_address():
    record_failures("Victim@Example.com", ATTACKER, 1)
    with db.transaction() as session:
        buckets = " ".join(session.exec(select(RateLimitWindow.bucket)).all())
    for secret in ("victim@example.com", ATTACKER):
        assert secret not in buckets.lower()
        assert sha256_hex(secret) not in buckets  # keyed: hashing a guess does not find it


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


def test_resending_verification_is_limited_per_hour(signed_in):
    from web.auth_pages import RESENDS_PER_USER
    for _ in range(RESENDS_PER_USER.requests):
        assert signed_in.submit("/verify-email/resend", page="/").status_code == 303
    response = signed_in.submit("/verify-email/resend", page="/")
    assert response.status_code == 429
    assert "retry-after" in response.headers


def test_a_burst_of_concurrent_failures_cannot_slip_past_the_limit(signed_in):
    import threading
    email, limit = signed_in.email, login_throttle.failures_per_account_and_client().requests
    checked: list[bool] = []
    barrier = threading.Barrier(3 * limit)

    def attempt() -> None:
        barrier.wait()
        with db.transaction() as session:
            outcome = login_throttle.attempt_login(session, email, "wrong password", "198.51.100.7")
        checked.append(not outcome.throttled)

    threads = [threading.Thread(target=attempt) for _ in range(3 * limit)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(checked) == 3 * limit
    assert checked.count(True) == limit
