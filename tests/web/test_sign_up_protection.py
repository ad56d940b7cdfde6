"""Sign-up cannot be used as a mail cannon or to hold the write lock: accounts per network, one
verification e-mail a day per address, only a short plain name in it, forms good for one submission,
the password hashed before the transaction."""

from __future__ import annotations

import uuid
from contextlib import ExitStack

import pytest
from starlette.testclient import TestClient

from core.access import accounts
from core.base import db
from core.base.errors import NotFound
from tests.conftest import TEST_ORIGIN
from tests.web.conftest import PASSWORD, Browser, csrf_of, outbox_messages
from web.auth_pages import signups_per_network


@pytest.fixture
def browser_at(app):
    with ExitStack() as stack:
        yield lambda address: Browser(stack.enter_context(
            TestClient(app, base_url=TEST_ORIGIN, client=(address, 50000))))


def new_email() -> str:
    return f"new-{uuid.uuid4().hex[:8]}@example.com"


def test_sign_ups_from_one_network_are_limited(browser_at):
    limit = signups_per_network().requests
    statuses = [browser_at("198.51.100.7").sign_up(new_email()).status_code for _ in range(limit + 1)]
    assert statuses == [303] * limit + [429]


def test_the_refusal_says_why_and_when(browser_at):
    for _ in range(signups_per_network().requests):
        browser_at("198.51.100.7").sign_up(new_email())
    response = browser_at("198.51.100.7").sign_up(new_email())
    assert "Too many new accounts" in response.text
    assert 0 < int(response.headers["retry-after"]) <= 3600


def test_a_refused_sign_up_creates_nothing_and_sends_nothing(browser_at, outbox):
    for _ in range(signups_per_network().requests):
        browser_at("198.51.100.7").sign_up(new_email())
    email = new_email()
    browser_at("198.51.100.7").sign_up(email)
    assert outbox_messages(outbox, email) == []
    with db.transaction() as session, pytest.raises(NotFound):
        accounts.user_by_email(session, email)


def test_ipv6_sign_ups_count_by_their_64_network(browser_at):
    for n in range(signups_per_network().requests):
        assert browser_at(f"2001:db8:1:2::{n + 1}").sign_up(new_email()).status_code == 303
    assert browser_at("2001:db8:1:2:ffff::1").sign_up(new_email()).status_code == 429
    assert browser_at("2001:db8:1:3::1").sign_up(new_email()).status_code == 303


def test_sign_ups_for_a_taken_address_count_against_the_network(browser_at):
    """Each says that the address has an account: unbounded, they would list who has one."""
    taken = new_email()
    assert browser_at("203.0.113.50").sign_up(taken).status_code == 303
    limit = signups_per_network().requests
    statuses = [browser_at("198.51.100.7").sign_up(taken).status_code for _ in range(limit + 1)]
    assert statuses == [422] * limit + [429]


def test_a_stranger_whose_address_was_typed_gets_one_email(browser, outbox):
    browser.sign_up("stranger@example.com")
    for _ in range(3):
        browser.submit("/verify-email/resend", page="/")
    assert len(outbox_messages(outbox, "stranger@example.com")) == 1


@pytest.mark.parametrize(("name", "greeting"), [
    ("Ada Lovelace", "Hello Ada Lovelace,"),
    ("Zoë O'Brien-Smith", "Hello Zoë O'Brien-Smith,"),
    ("Win a prize at http://evil.example", "Hello,"),
    ("Call +44 20 7946 0000", "Hello,"),
    ("A" * 41, "Hello,"),
])
def test_the_email_carries_no_text_of_the_callers_but_a_short_plain_name(browser, outbox, name, greeting):
    email = new_email()
    browser.sign_up(email, name=name)
    body = outbox_messages(outbox, email)[0].get_body(preferencelist=("plain",)).get_content()
    assert body.startswith(greeting + "\n")
    assert "evil" not in body and "7946" not in body


def test_a_sign_up_form_is_good_for_one_submission(browser):
    token = csrf_of(browser.get("/signup").text)
    first = browser.client.post("/signup", data={"email": new_email(), "password": PASSWORD, "csrf_token": token},
                                follow_redirects=False)
    browser.client.cookies.delete("invoicing_session")
    again = browser.client.post("/signup", data={"email": new_email(), "password": PASSWORD, "csrf_token": token},
                                follow_redirects=False)
    assert (first.status_code, again.status_code) == (303, 403)


def test_a_sign_in_form_is_good_for_one_submission(browser):
    browser.sign_up()
    browser.submit("/logout", page="/")
    token = csrf_of(browser.get("/login").text)
    form = {"email": browser.email, "password": "wrong password", "csrf_token": token}
    assert browser.client.post("/login", data=form).status_code == 401
    assert browser.client.post("/login", data=form).status_code == 403


def test_signed_in_forms_keep_their_token_for_a_repeat(person):
    """A double click on a dashboard form is answered by its idempotency key, not refused."""
    token = csrf_of(person.get("/customers/new").text)
    form = {"name": "Twice", "csrf_token": token, "idempotency_key": "same-form"}
    first = person.client.post("/customers/new", data=form, follow_redirects=False)
    again = person.client.post("/customers/new", data=form, follow_redirects=False)
    assert first.status_code == again.status_code == 303


def test_the_password_is_hashed_before_the_transaction(browser, monkeypatch):
    held = []
    real = accounts.hash_password
    monkeypatch.setattr(accounts, "hash_password", lambda password: held.append(
        db.get_engine().pool.checkedout()) or real(password))
    assert browser.sign_up().status_code == 303
    assert held == [0]
