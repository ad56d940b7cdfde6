"""Sign-in under guessing: no lock-out, no more than the account's budget of guesses from anywhere.

Failures count per account (from anywhere), per client address and per known browser. Once an
account's budget is spent, a browser new to it needs a code e-mailed to the account, and the answer
no longer tells whether the password was right. Addresses come from `browser_at`; the other
browsers sign in from "testclient", Starlette's default.
"""

from __future__ import annotations

import re
import threading
import time
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import event, func
from sqlmodel import SQLModel, select
from starlette.testclient import TestClient

from core.access import known_browsers, sign_in
from core.base import db
from core.base.addresses import client_network
from core.base.crypto import sha256_hex
from core.mechanisms import ratelimit
from core.models import RateLimitLog, SignInChallenge
from pages.sessions import CHALLENGE_COOKIE, KNOWN_BROWSER_COOKIE
from tests.conftest import TEST_ORIGIN
from tests.web.conftest import PASSWORD, Browser, csrf_of, outbox_messages

BUDGET = sign_in.failures_per_account()
ATTACKER = "198.51.100.7"
HOUR = 1_800_000_000 - 1_800_000_000 % 3600  # a fixed start of a clock hour, for windows in tests
WRONG = "wrong password"


@pytest.fixture
def browser_at(app):
    """Browsers (each new to every account) whose requests come from a given client address."""
    with ExitStack() as stack:
        yield lambda address: Browser(stack.enter_context(
            TestClient(app, base_url=TEST_ORIGIN, client=(address, 50000))))


@pytest.fixture
def owner(browser) -> Browser:
    """An account whose owner signed up in `browser` (so that browser knows the account)."""
    assert browser.sign_up().status_code == 303
    return browser


def attempt(email: str, password: str = WRONG, address: str = ATTACKER, now: float | None = None,
            known: known_browsers.KnownBrowser | None = None) -> sign_in.LoginOutcome:
    with db.transaction() as session:
        return sign_in.attempt_login(session, email, password, address, known_browser=known, now=now)


def spend_budget(email: str, now: float | None = None) -> None:
    """A distributed attack: one failure on `email` from each of as many addresses as the budget."""
    for n in range(BUDGET.requests):
        assert attempt(email, address=f"10.0.{n // 256}.{n % 256}", now=now).user is None


def code_in(outbox, email: str) -> str:
    body = outbox_messages(outbox, email)[-1].get_body(preferencelist=("plain",)).get_content()
    return re.search(r"^\s+(\d{8})$", body, re.MULTILINE).group(1)


def enter(browser: Browser, code: str):
    return browser.submit("/login/code", {"code": code}, page="/login")  # the code page may be gone


def resend(browser: Browser):
    return browser.submit("/login/code/resend", page="/login/code")


def row_counts() -> dict[str, int]:
    with db.transaction() as session:
        return {table.name: session.execute(select(func.count()).select_from(table)).scalar_one()
                for table in SQLModel.metadata.sorted_tables}


def database_work(path: str, browser: Browser, form: dict | None = None, *, page: str) -> tuple:
    """What POSTing `form` to `path` did: the answer (status, location), the statements it ran as
    they went to the database (parameter values are not in them: placeholders stand for them) and
    how many rows each table gained. The form's page is fetched first, out of the count."""
    fields = {**(form or {}), "csrf_token": csrf_of(browser.get(page).text)}
    statements: list[str] = []

    def note(_connection, _cursor, statement, *_):
        statements.append(" ".join(statement.split()))
    before = row_counts()
    event.listen(db.get_engine(), "before_cursor_execute", note)
    try:
        response = browser.client.post(path, data=fields, follow_redirects=False)
    finally:
        event.remove(db.get_engine(), "before_cursor_execute", note)
    after = row_counts()
    gained = {table: after[table] - before[table] for table in after if after[table] != before[table]}
    return (response.status_code, response.headers.get("location")), statements, gained


@pytest.fixture
def twins(browser_at) -> tuple[str, str]:
    """The e-mail addresses of two accounts in the same state: each budget spent by a distributed
    attack, no code asked for yet."""
    emails = []
    for n in (1, 2):
        founder = browser_at(f"192.0.2.{n}")
        assert founder.sign_up().status_code == 303
        spend_budget(founder.email)
        emails.append(founder.email)
    return emails[0], emails[1]


def spend_code_mails(email: str, count: int = sign_in.CODE_MAILS_PER_HOUR) -> None:
    with db.transaction() as session:
        for _ in range(count):
            ratelimit.hit(session, sign_in.code_mails_per_account(), sign_in.account_subject(email))


# --- below the budget -------------------------------------------------------------------------

def test_a_wrong_password_below_the_budget_says_so(owner, browser_at):
    response = browser_at(ATTACKER).sign_in(owner.email, password=WRONG)
    assert response.status_code == 401
    assert "incorrect" in response.text


def test_a_new_browser_signs_in_at_once_while_the_account_is_quiet(owner, browser_at):
    for _ in range(BUDGET.requests - 1):
        attempt(owner.email)
    response = browser_at("203.0.113.1").sign_in(owner.email)
    assert response.status_code == 303
    assert response.headers["location"] == "/"


def test_successful_sign_ins_are_not_counted(owner, other_browser):
    for _ in range(BUDGET.requests + 1):
        assert other_browser.sign_in(owner.email).status_code == 303


def test_a_successful_sign_in_takes_back_only_its_own_attempt(owner, browser_at):
    for _ in range(BUDGET.requests - 1):
        attempt(owner.email)
    assert browser_at("203.0.113.1").sign_in(owner.email).status_code == 303
    assert attempt(owner.email).challenge is None  # the last of the budget
    assert attempt(owner.email).challenge is not None  # the earlier failures still count


# --- once the budget is spent -----------------------------------------------------------------

def test_the_right_password_from_a_new_browser_needs_the_emailed_code(owner, browser_at, outbox):
    spend_budget(owner.email)
    newcomer = browser_at("203.0.113.1")
    response = newcomer.sign_in(owner.email)
    assert response.status_code == 303
    assert response.headers["location"] == "/login/code"
    assert newcomer.get("/").headers["location"].startswith("/login")  # not signed in yet
    response = enter(newcomer, code_in(outbox, owner.email))
    assert response.status_code == 303
    assert response.headers["location"] == "/"
    assert newcomer.get("/").status_code == 200


def test_the_code_page_says_what_happened_and_where_the_code_went(owner, browser_at):
    spend_budget(owner.email)
    newcomer = browser_at("203.0.113.1")
    newcomer.sign_in(owner.email)
    page = newcomer.get("/login/code")
    assert page.status_code == 200
    assert "many failed sign-ins" in page.text
    assert f"{owner.email[0]}•••@example.com" in page.text
    assert owner.email not in page.text
    assert "10 minutes" in page.text


def test_right_and_wrong_passwords_get_the_same_answer_once_the_budget_is_spent(owner, browser_at, outbox):
    spend_budget(owner.email)
    right, wrong = browser_at("203.0.113.1"), browser_at("203.0.113.2")
    answers = [right.sign_in(owner.email), wrong.sign_in(owner.email, password=WRONG)]
    assert [a.status_code for a in answers] == [303, 303]
    assert [a.headers["location"] for a in answers] == ["/login/code", "/login/code"]
    assert all(CHALLENGE_COOKIE in a.headers["set-cookie"] for a in answers)
    pages = [b.get("/login/code").text for b in (right, wrong)]
    assert re.sub(r'value="[^"]+"', "", pages[0]) == re.sub(r'value="[^"]+"', "", pages[1])
    assert len(outbox_messages(outbox, owner.email)) == 2  # the verification e-mail and one code


def test_a_sign_in_once_the_budget_is_spent_does_the_same_work_for_a_right_and_a_wrong_password(twins, browser_at):
    """Not only the answer: the statements run and the rows written tell no more (their time would)."""
    right, wrong = (database_work("/login", browser_at(address), {"email": email, "password": password}, page="/login")
                    for address, email, password in (("203.0.113.1", twins[0], PASSWORD),
                                                     ("203.0.113.2", twins[1], WRONG)))
    assert right[0] == (303, "/login/code")
    assert right == wrong


def test_a_wrong_password_never_gets_a_working_code(owner, browser_at, outbox):
    spend_budget(owner.email)
    right, wrong = browser_at("203.0.113.1"), browser_at("203.0.113.2")
    right.sign_in(owner.email)
    wrong.sign_in(owner.email, password=WRONG)
    assert enter(wrong, code_in(outbox, owner.email)).status_code == 401  # even the code mailed to the owner


def test_a_distributed_attack_learns_the_outcome_of_the_budget_of_guesses_only(owner):
    told = 0
    for n in range(3 * BUDGET.requests):
        outcome = attempt(owner.email, address=f"10.1.{n // 256}.{n % 256}")
        told += outcome.challenge is None
    assert told == BUDGET.requests


def test_an_unknown_email_behaves_as_an_account(browser_at):
    spend_budget("nobody@example.com")
    response = browser_at("203.0.113.1").sign_in("nobody@example.com")
    assert response.headers["location"] == "/login/code"


def test_the_owner_is_never_locked_out(owner, browser_at, outbox):
    for round_ in range(3):
        spend_budget(owner.email)
        for n in range(20):
            attempt(owner.email, address=f"10.9.{round_}.{n}")
    newcomer = browser_at("203.0.113.1")
    assert newcomer.sign_in(owner.email).headers["location"] == "/login/code"
    assert enter(newcomer, code_in(outbox, owner.email)).headers["location"] == "/"


def test_the_budget_is_per_account(owner, other_browser):
    spend_budget("victim@example.com")
    assert other_browser.sign_in(owner.email).headers["location"] == "/"


def test_the_budget_comes_back_as_failures_leave_the_window(owner):
    for n in range(BUDGET.requests):
        attempt(owner.email, address=f"10.2.0.{n}", now=HOUR + n * 60)
    assert attempt(owner.email, now=HOUR + 3599).challenge is not None
    assert attempt(owner.email, now=HOUR + 3600).challenge is None  # the first failure has left
    assert attempt(owner.email, now=HOUR + 3601).challenge is not None


def test_failures_straddling_a_clock_hour_are_one_window(owner):
    for n in range(BUDGET.requests):
        attempt(owner.email, address=f"10.3.0.{n}", now=HOUR - 30 + n)
    assert attempt(owner.email, now=HOUR + 30).challenge is not None


def test_a_burst_of_concurrent_failures_cannot_slip_past_the_budget(owner):
    told: list[bool] = []
    barrier = threading.Barrier(3 * BUDGET.requests)

    def guess(n: int) -> None:
        barrier.wait()
        told.append(attempt(owner.email, address=f"10.4.0.{n}").challenge is None)

    threads = [threading.Thread(target=guess, args=(n,)) for n in range(3 * BUDGET.requests)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert told.count(True) == BUDGET.requests


def test_an_unknown_email_still_costs_a_password_check(monkeypatch):
    checks = []
    real_check = sign_in.check_password
    monkeypatch.setattr(sign_in, "check_password", lambda *args: checks.append(1) or real_check(*args))
    attempt("nobody@example.com")
    spend_budget("nobody@example.com")
    attempt("nobody@example.com")
    assert len(checks) == BUDGET.requests + 2


# --- the code ---------------------------------------------------------------------------------

@pytest.fixture
def challenged(owner, browser_at, outbox) -> tuple[Browser, str]:
    """A new browser that typed the right password during an attack, and the code it was e-mailed."""
    spend_budget(owner.email)
    newcomer = browser_at("203.0.113.1")
    assert newcomer.sign_in(owner.email, next_path="/invoices").headers["location"] == "/login/code"
    return newcomer, code_in(outbox, owner.email)


def test_the_code_leads_where_the_sign_in_was_going(challenged):
    newcomer, code = challenged
    assert enter(newcomer, code).headers["location"] == "/invoices"


def test_a_code_may_be_typed_with_spaces(challenged):
    newcomer, code = challenged
    assert enter(newcomer, f" {code[:4]} {code[4:]} ").status_code == 303


def test_a_code_works_once(challenged):
    newcomer, code = challenged
    assert enter(newcomer, code).status_code == 303
    newcomer.submit("/logout", page="/")
    assert enter(newcomer, code).status_code == 410


def test_a_code_works_only_in_the_browser_that_asked_for_it(challenged, browser_at):
    _, code = challenged
    assert enter(browser_at("203.0.113.1"), code).status_code == 410


def test_a_wrong_code_says_how_many_tries_are_left(challenged):
    newcomer, code = challenged
    response = enter(newcomer, "00000000" if code != "00000000" else "11111111")
    assert response.status_code == 401
    assert f"{sign_in.CODE_ATTEMPTS - 1} more tries" in response.text


def test_wrong_codes_end_the_challenge(challenged):
    newcomer, code = challenged
    wrong = "00000000" if code != "00000000" else "11111111"
    statuses = [enter(newcomer, wrong).status_code for _ in range(sign_in.CODE_ATTEMPTS)]
    assert statuses == [401] * (sign_in.CODE_ATTEMPTS - 1) + [410]
    assert enter(newcomer, code).status_code == 410


def test_a_code_expires(challenged):
    newcomer, code = challenged
    with db.transaction() as session:
        for challenge in session.exec(select(SignInChallenge)):
            challenge.expires_at -= timedelta(minutes=11)
            session.add(challenge)
    response = enter(newcomer, code)
    assert response.status_code == 410
    assert "Sign in again" in response.text


def test_codes_and_handles_are_kept_only_hashed(challenged):
    newcomer, code = challenged
    with db.transaction() as session:
        challenge = session.exec(select(SignInChallenge)).one()
    handle = newcomer.client.cookies.get(CHALLENGE_COOKIE)
    assert code not in challenge.code_hash and sha256_hex(code) != challenge.code_hash
    assert challenge.token_hash == sha256_hex(handle)


def test_another_code_replaces_the_first(challenged, outbox, owner):
    newcomer, first = challenged
    response = newcomer.submit("/login/code/resend", page="/login/code")
    assert response.headers["location"] == "/login/code?notice=resent"
    second = code_in(outbox, owner.email)
    assert len(outbox_messages(outbox, owner.email)) == 3  # verification, first and second code
    assert second != first  # eight random digits: equal once in a hundred million
    assert enter(newcomer, first).status_code == 401
    assert enter(newcomer, second).status_code == 303


@pytest.mark.parametrize("code_mails_spent", [False, True], ids=["code e-mails left", "code e-mails spent"])
def test_resending_a_code_does_the_same_work_for_a_right_and_a_wrong_password(twins, browser_at, code_mails_spent):
    right, wrong = browser_at("203.0.113.1"), browser_at("203.0.113.2")
    for browser, email, password in ((right, twins[0], PASSWORD), (wrong, twins[1], WRONG)):
        if code_mails_spent:
            spend_code_mails(email)
        assert browser.sign_in(email, password=password).headers["location"] == "/login/code"
    work = [database_work("/login/code/resend", browser, page="/login/code") for browser in (right, wrong)]
    assert work[0][0] == (303, "/login/code?notice=resent")
    assert work[0] == work[1]


# --- what a guess shows over many requests ----------------------------------------------------

@pytest.fixture
def clock(monkeypatch):
    """The clocks a sign-in reads, moved together by the test: the challenges' lifetimes
    (`sign_in.clock_now`) and the limits (`ratelimit.clock`). `clock.at(minutes)` from the start."""

    class Clock:
        start = time.time() // 1 + 1  # after whatever the fixtures counted before
        now = start

        def at(self, minutes: float) -> None:
            self.now = self.start + minutes * 60

    driven = Clock()
    monkeypatch.setattr(ratelimit, "clock", lambda: driven.now)
    monkeypatch.setattr(sign_in, "clock_now", lambda: datetime.fromtimestamp(driven.now, UTC))
    return driven


# A guess played out (minutes after its first sign-in): the reviewer's scenario of issue 33, where a
# resend renewed the challenge only while the account's code e-mails lasted (which only a right
# password spends), then every later step of a challenge: entering codes, refusals, the end.
GUESS = (
    (0, "sign in"), (1, "resend"), (2, "resend"), (3, "resend"),  # challenge A and its 3 resends
    (3.5, "resend"),  # refused: A's resends are spent
    (4, "sign in"),  # challenge B (the browser's cookie names it now)
    (9, "resend"),  # B lives until 19; without this resend it would end at 14
    (16, "enter"),
    (17, "resend"), (18, "resend"), (19, "resend"),  # the last one refused; B lives until 28
    (27, "enter"), (29, "enter"),  # B has ended
    (30, "resend"),
)
GUESS_STATUSES = [303, 303, 303, 303, 429, 303, 303, 401, 303, 303, 429, 401, 410, 410]


def seen(response) -> tuple:
    """What a browser, or a script, sees of an answer, random values aside: the status, where it
    leads, Retry-After, the cookies set (their names and attributes) and the page."""
    cookies = sorted("; ".join([part.split("=", 1)[0]] + [a.strip().lower() for a in attributes
                                                            if not a.strip().lower().startswith("expires")])
                     for part, *attributes in (c.split(";") for c in response.headers.get_list("set-cookie")))
    page = re.sub(r'value="[^"]*"', 'value=""', response.text)
    return response.status_code, response.headers.get("location"), response.headers.get("retry-after"), cookies, page


def challenges_of(email: str) -> list[tuple]:
    """How long each of the account's challenges lives, and how many codes were typed into it."""
    with db.transaction() as session:
        query = select(SignInChallenge).where(SignInChallenge.account_subject == sign_in.account_subject(email))
        return [(c.expires_at, c.attempts) for c in session.exec(query.order_by(SignInChallenge.created_at))]


def play(browser: Browser, password: str, action: str, typed: str) -> list:
    """One step of a guess: what its answer showed (and the page it led to), and the challenges."""
    path, form = {"sign in": ("/login", {"email": browser.email, "password": password, "next": "/"}),
                  "resend": ("/login/code/resend", {}),
                  "enter": ("/login/code", {"code": typed})}[action]
    response = browser.submit(path, form, page="/login")  # the code page may be gone
    shown = [seen(response)]
    if response.status_code == 303:
        shown.append(seen(browser.get(response.headers["location"])))
    return [*shown, challenges_of(browser.email)]


@pytest.mark.parametrize("code_mails_used", [0, sign_in.CODE_MAILS_PER_HOUR - 1],
                         ids=["all code e-mails left", "one code e-mail left"])
def test_a_guess_shows_the_same_over_any_sequence_for_a_right_and_a_wrong_password(
        twins, browser_at, clock, outbox, code_mails_used):
    """Every answer, every page, every refusal and each challenge's lifetime, step by step, with
    the clock moving: a right password differs only in a code the attacker never sees."""
    right, wrong = browser_at("203.0.113.1"), browser_at("203.0.113.2")
    right.email, wrong.email = twins
    for email in twins:
        spend_code_mails(email, code_mails_used)
    statuses = []
    for minutes, action in GUESS:
        clock.at(minutes)
        mailed = [m["Subject"][-8:] for m in outbox_messages(outbox, right.email)]
        typed = next(code for code in ("00000000", "11111111") if code not in mailed)  # a code nobody was sent
        shown = [play(browser, password, action, typed) for browser, password in ((right, PASSWORD), (wrong, WRONG))]
        assert shown[0] == shown[1], f"at {minutes} minutes, {action}"
        statuses.append(shown[1][0][0])
    assert statuses == GUESS_STATUSES


def test_a_resend_when_no_code_email_can_go_keeps_the_code_and_the_challenge(owner, browser_at, clock, outbox):
    """The owner's code keeps working for the longer life a resend gives the challenge, even
    when the account's code e-mails are spent and no new code could go out."""
    spend_budget(owner.email)
    spend_code_mails(owner.email, sign_in.CODE_MAILS_PER_HOUR - 1)
    newcomer = browser_at("203.0.113.1")
    assert newcomer.sign_in(owner.email).headers["location"] == "/login/code"  # the last code e-mail
    code = code_in(outbox, owner.email)
    clock.at(5)
    resent = resend(newcomer)
    assert resent.headers["location"] == "/login/code?notice=resent"
    cookie = next(c for c in resent.headers.get_list("set-cookie") if c.startswith(CHALLENGE_COOKIE))
    assert f"max-age={int(sign_in.CODE_LIFETIME.total_seconds())}" in cookie.lower()  # a browser keeps it as long
    assert len(outbox_messages(outbox, owner.email)) == 2  # the verification e-mail and the one code
    clock.at(12)  # past the first 10 minutes, within the 10 after the resend
    assert enter(newcomer, code).headers["location"] == "/"


def test_wrong_passwords_take_nothing_from_the_owners_code_emails(owner, browser_at, outbox):
    spend_budget(owner.email)
    for n in range(sign_in.CODE_MAILS_PER_HOUR + 1):
        guesser = browser_at(f"203.0.113.{10 + n}")
        assert guesser.sign_in(owner.email, password=WRONG).headers["location"] == "/login/code"
        resends = sign_in.RESENDS_PER_CHALLENGE
        assert [resend(guesser).status_code for _ in range(resends)] == [303] * resends
    newcomer = browser_at("203.0.113.1")
    assert newcomer.sign_in(owner.email).headers["location"] == "/login/code"
    assert len(outbox_messages(outbox, owner.email)) == 2  # the verification e-mail and the owner's code
    assert enter(newcomer, code_in(outbox, owner.email)).headers["location"] == "/"


def test_codes_resent_for_one_sign_in_are_limited(challenged):
    newcomer, _ = challenged
    limit = sign_in.resends_per_challenge().requests
    assert [resend(newcomer).status_code for _ in range(limit + 1)] == [303] * limit + [429]


def test_codes_resent_from_one_network_are_limited(owner, browser_at):
    spend_budget(owner.email)
    limit, per_challenge = sign_in.resends_per_network().requests, sign_in.resends_per_challenge().requests
    for n in range(limit):  # as many sign-ins waiting for a code as the resends need
        if n % per_challenge == 0:
            token = attempt(owner.email, address=ATTACKER).challenge.token
        with db.transaction() as session:
            assert not sign_in.resend_code(session, token, ATTACKER).throttled
    attacker, elsewhere = browser_at(ATTACKER), browser_at("203.0.113.1")
    for browser in (attacker, elsewhere):
        assert browser.sign_in(owner.email, password=WRONG).headers["location"] == "/login/code"
    refused = resend(attacker)
    assert refused.status_code == 429
    assert 0 < int(refused.headers["retry-after"]) <= 3600
    assert "Too many new codes" in refused.text
    assert resend(elsewhere).status_code == 303


def test_code_emails_are_limited_per_account(owner, browser_at, outbox):
    spend_budget(owner.email)
    for n in range(sign_in.CODE_MAILS_PER_HOUR + 2):
        browser_at(f"203.0.113.{n}").sign_in(owner.email)
    assert len(outbox_messages(outbox, owner.email)) == 1 + sign_in.CODE_MAILS_PER_HOUR


def test_the_code_email_names_no_more_than_the_code(challenged, outbox, owner):
    message = outbox_messages(outbox, owner.email)[-1]
    assert re.fullmatch(r"Your sign-in code: \d{8}", message["Subject"])


# --- known browsers ---------------------------------------------------------------------------

def test_a_known_browser_signs_in_at_once_during_an_attack(owner):
    owner.submit("/logout", page="/")
    spend_budget(owner.email)
    response = owner.sign_in(owner.email)
    assert response.headers["location"] == "/"


def test_a_sign_in_through_the_code_makes_the_browser_known(challenged, owner):
    newcomer, code = challenged
    enter(newcomer, code)
    newcomer.submit("/logout", page="/")
    assert newcomer.sign_in(owner.email).headers["location"] == "/"


def test_the_known_browser_cookie_is_httponly_and_lasts_a_year(browser):
    response = browser.sign_up()
    cookie = next(c for c in response.headers.get_list("set-cookie") if c.startswith(KNOWN_BROWSER_COOKIE))
    assert "httponly" in cookie.lower() and "samesite=lax" in cookie.lower()
    assert f"max-age={known_browsers.LIFETIME_SECONDS}" in cookie.lower()


def test_a_browser_known_to_another_account_is_new_to_this_one(owner, browser_at):
    other = browser_at("203.0.113.9")
    other.sign_up()
    spend_budget(owner.email)
    assert other.sign_in(owner.email).headers["location"] == "/login/code"


def test_a_tampered_known_browser_cookie_counts_for_nothing(owner):
    owner.submit("/logout", page="/")
    value = owner.client.cookies.get(KNOWN_BROWSER_COOKIE)
    owner.client.cookies.delete(KNOWN_BROWSER_COOKIE)
    owner.client.cookies.set(KNOWN_BROWSER_COOKIE, value[:-3] + ("AAA" if not value.endswith("AAA") else "BBB"))
    spend_budget(owner.email)
    assert owner.sign_in(owner.email).headers["location"] == "/login/code"


def test_a_known_browser_has_a_limit_of_its_own(owner):
    known = known_browsers.read(owner.client.cookies.get(KNOWN_BROWSER_COOKIE))
    limit = sign_in.failures_per_known_browser()
    for _ in range(limit.requests):
        assert attempt(owner.email, known=known).user is None
    refused = attempt(owner.email, known=known)
    assert refused.throttled and 0 < refused.retry_after <= limit.window_seconds


def test_a_known_browsers_failures_count_for_the_account(owner):
    known = known_browsers.read(owner.client.cookies.get(KNOWN_BROWSER_COOKIE))
    for _ in range(BUDGET.requests):
        attempt(owner.email, known=known)
    assert attempt(owner.email).challenge is not None


# --- one address trying many accounts ---------------------------------------------------------

def test_one_address_trying_many_accounts_is_refused_before_any_check(browser, monkeypatch):
    limit = sign_in.failures_per_address()
    for n in range(limit.requests):
        attempt(f"guess{n}@example.com", address="testclient")
    checks = []
    monkeypatch.setattr(sign_in, "check_password", lambda *args: checks.append(1))
    response = browser.sign_in("fresh@example.com")
    assert response.status_code == 429
    assert 0 < int(response.headers["retry-after"]) <= limit.window_seconds
    assert "Too many sign-in attempts" in response.text
    assert checks == []


def test_the_address_limit_leaves_other_addresses_open(owner, browser_at):
    for n in range(sign_in.failures_per_address().requests):
        attempt(f"guess{n}@example.com")
    assert browser_at("203.0.113.1").sign_in(owner.email).headers["location"] == "/"


def test_the_address_count_expires_with_its_window():
    limit = sign_in.failures_per_address()
    for n in range(limit.requests):
        attempt(f"guess{n}@example.com", now=HOUR)
    assert attempt("fresh@example.com", now=HOUR + limit.window_seconds - 1).throttled
    assert not attempt("fresh@example.com", now=HOUR + limit.window_seconds).throttled


def test_ipv6_addresses_count_by_their_64_network():
    for n in range(sign_in.failures_per_address().requests):
        attempt(f"guess{n}@example.com", address="2001:db8:1:2::1")
    assert attempt("fresh@example.com", address="2001:db8:1:2:ffff:ffff:ffff:ffff").throttled
    assert not attempt("fresh@example.com", address="2001:db8:1:3::1").throttled


@pytest.mark.parametrize(("address", "network"), [
    ("198.51.100.7", "198.51.100.7"),
    ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
    ("::ffff:198.51.100.7", "198.51.100.7"),
    ("testclient", "testclient"),
    ("", "unknown"),
])
def test_client_network_is_the_unit_addresses_count_by(address, network):
    assert client_network(address) == network


def test_counter_keys_reveal_neither_email_nor_address():
    attempt("Victim@Example.com")
    with db.transaction() as session:
        buckets = " ".join(session.exec(select(RateLimitLog.bucket)).all())
    for secret in ("victim@example.com", ATTACKER):
        assert secret not in buckets.lower()
        assert sha256_hex(secret) not in buckets  # keyed: hashing a guess does not find it
