"""Password sign-in that neither locks anyone out nor lets a distributed attack keep guessing.

Failed sign-ins are counted in sliding logs in the database (shared by every process):

- **per account, from anywhere** (`INVOICING_RATE_LIMIT_SIGN_IN`, 10 an hour): the account's budget
  of guesses. Once it is spent, a sign-in from a browser that has not signed in to this account
  before needs a one-time code e-mailed to the account's address. The password is still checked,
  but the answer is the same whether it was right or not (a code page); only a right password
  makes a code that works, and only then is one e-mailed. So however many addresses an attacker
  holds, they learn the outcome of at most the budget's guesses per window, and the owner is never
  locked out: the e-mailed code always works.
- **per client address, across accounts** (5× the budget per 15 minutes): one address trying many
  accounts is refused (`429`) before any password is checked.
- **per known browser and account** (the budget per 15 minutes): a browser that signed in to the
  account before (a signed cookie, `core.access.known_browsers`) skips the code and the address
  limit, and has this limit of its own.

Each attempt is counted before its password is checked (concurrent attempts cannot slip past a
limit between a look and a count) and taken back when it succeeds. Counter keys are keyed hashes
of the e-mail (trimmed, lowercased) and the client's network, so the answer is the same whether or
not the account exists, and nothing stored reveals either.

Once a code is needed, a right and a wrong password do the same work, not only get the same answer:
the same statements, the same rows written, at the sign-in and at each "send another code" (which
is limited per challenge and per network). Only the e-mail differs, sent after the answer. And
nothing a browser can see later depends on the password either: a challenge's life and its
resends' refusals follow from its own resends and its network's alone, never from the account's
share of code e-mails (which only a right password spends).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta
from email.message import EmailMessage

from sqlalchemy import bindparam, delete, update
from sqlmodel import Session, select

from config.settings import get_settings
from core.access.accounts import check_password, hash_password, plain_name
from core.access.known_browsers import KnownBrowser
from core.base import crypto, metrics
from core.base.addresses import client_network
from core.base.clock import now as clock_now
from core.mechanisms import ratelimit
from core.models import SignInChallenge, User

CODE_DIGITS = 8
CODE_LIFETIME = timedelta(minutes=10)
CODE_ATTEMPTS = 5  # wrong codes before a challenge is spent
CODE_MAILS_PER_HOUR = 5  # per account, so nobody can flood the owner's mailbox
RESENDS_PER_CHALLENGE = 3  # an hour (longer than a challenge can live): an owner needs one, or two
RESENDS_PER_NETWORK = 20  # an hour, across challenges: a few people behind one address, not a loop


def failures_per_account() -> ratelimit.Limit:
    return ratelimit.Limit("sign_in_account", get_settings().rate_limit_sign_in, 3600)


def failures_per_address() -> ratelimit.Limit:
    """Higher: many people may sign in from behind one address (an office, a carrier NAT)."""
    return ratelimit.Limit("sign_in_address", 5 * get_settings().rate_limit_sign_in, 15 * 60)


def failures_per_known_browser() -> ratelimit.Limit:
    return ratelimit.Limit("sign_in_known_browser", get_settings().rate_limit_sign_in, 15 * 60)


def code_mails_per_account() -> ratelimit.Limit:
    return ratelimit.Limit("sign_in_code_mail", CODE_MAILS_PER_HOUR, 3600)


def resends_per_challenge() -> ratelimit.Limit:
    return ratelimit.Limit("sign_in_code_resend", RESENDS_PER_CHALLENGE, 3600)


def resends_per_network() -> ratelimit.Limit:
    return ratelimit.Limit("sign_in_code_resend_network", RESENDS_PER_NETWORK, 3600)


@dataclass(frozen=True)
class Challenge:
    """A code is needed: the browser's handle (a cookie), where the code went, and the code's
    e-mail when there is one to send (after the answer, so its time tells nothing)."""

    token: str
    email_hint: str
    mail: EmailMessage | None


@dataclass(frozen=True)
class LoginOutcome:
    user: User | None = None  # signed in
    retry_after: int | None = None  # seconds, when refused by a limit
    challenge: Challenge | None = None  # a code is needed

    @property
    def throttled(self) -> bool:
        return self.retry_after is not None


def normalized_email(email: str) -> str:
    """As the sign-in looks the user up, so every spelling that reaches one account counts for it."""
    return email.strip().lower()


def _keyed(purpose: str, *parts: str) -> str:
    key = hashlib.sha256(f"sign-in:{purpose}:".encode() + get_settings().signing_key).digest()
    return hmac.new(key, "\x00".join(parts).encode(), hashlib.sha256).hexdigest()


def account_subject(email: str) -> str:
    return _keyed("account", normalized_email(email))


def address_subject(client_ip: str) -> str:
    return _keyed("address", client_network(client_ip))


def _known_browser_subject(user: User, browser: KnownBrowser) -> str:
    return _keyed("known-browser", str(user.id), browser.device)


_dummy_hash: str | None = None


def _password_matches(user: User | None, password: str) -> bool:
    """Check the password; an unknown address costs the same time, so timing does not tell it."""
    global _dummy_hash
    if user is not None:
        return check_password(user, password)
    if _dummy_hash is None:
        _dummy_hash = hash_password("not a real password")
    check_password(User(email="", password_hash=_dummy_hash), password)
    return False


def _refused(usage: ratelimit.Usage) -> LoginOutcome:
    metrics.rate_limited("sign_in")
    return LoginOutcome(retry_after=usage.retry_after)


def attempt_login(session: Session, email: str, password: str, client_ip: str, *,
                  known_browser: KnownBrowser | None = None, next_path: str = "/",
                  now: float | None = None) -> LoginOutcome:
    """Sign in, refuse, or ask for an e-mailed code; everything is written in `session` (commit it)."""
    user = session.exec(select(User).where(User.email == normalized_email(email))).first()
    account = account_subject(email)
    if user is not None and known_browser is not None and known_browser.knows(user.id):
        return _from_known_browser(session, user, password, known_browser, account, now)
    address = address_subject(client_ip)
    address_usage = ratelimit.hit(session, failures_per_address(), address, now=now)
    if address_usage.exceeded:
        return _refused(address_usage)
    budget = ratelimit.hit(session, failures_per_account(), account, now=now)
    matches = _password_matches(user, password)
    if budget.exceeded:  # the account's guesses are spent: the answer must not tell whether it matched
        metrics.rate_limited("sign_in_code")
        return LoginOutcome(challenge=_challenge(session, user if matches else None, email, next_path, now))
    if not matches:
        return LoginOutcome()
    ratelimit.take_back(session, failures_per_address(), address, now=now)
    ratelimit.take_back(session, failures_per_account(), account, now=now)
    return LoginOutcome(user=user)


def _from_known_browser(session: Session, user: User, password: str, browser: KnownBrowser, account: str,
                        now: float | None) -> LoginOutcome:
    subject = _known_browser_subject(user, browser)
    usage = ratelimit.hit(session, failures_per_known_browser(), subject, now=now)
    if usage.exceeded:
        return _refused(usage)
    if check_password(user, password):
        ratelimit.take_back(session, failures_per_known_browser(), subject, now=now)
        return LoginOutcome(user=user)
    ratelimit.hit(session, failures_per_account(), account, now=now)  # a failure from anywhere counts for the account
    return LoginOutcome()


# --- the e-mailed code ------------------------------------------------------------------------

def _code_hash(code: str) -> str:
    return _keyed("code", code)


def _new_code() -> str:
    return "".join(secrets.choice("0123456789") for _ in range(CODE_DIGITS))


def email_hint(email: str) -> str:
    """`a•••@example.com`: enough for the owner to recognise, little for anyone else."""
    local, _, domain = normalized_email(email).rpartition("@")
    return f"{local[:1]}•••@{domain}" if local else "the account's e-mail address"


def _code_hash_for(user: User | None, code: str) -> str:
    """The code's HMAC for a user whose password matched; for anyone else, one no code has (the
    same work either way)."""
    decoy = crypto.token(16)  # not digits: no typed code is ever hashed from it
    return _code_hash(code if user is not None else decoy)


def _challenge(session: Session, user: User | None, email: str, next_path: str, now: float | None) -> Challenge:
    token, code, subject = crypto.token(32), _new_code(), account_subject(email)
    challenge = SignInChallenge(
        token_hash=crypto.sha256_hex(token), user_id=user.id if user else None, account_subject=subject,
        code_hash=_code_hash_for(user, code), email_hint=email_hint(email),
        next_path=next_path, expires_at=clock_now() + CODE_LIFETIME)
    session.add(challenge)
    mail = _code_mail(session, user, subject, code, now)
    return Challenge(token=token, email_hint=challenge.email_hint, mail=mail)


def _code_mail(session: Session, user: User | None, subject: str, code: str,
               now: float | None) -> EmailMessage | None:
    """The code's e-mail when it goes out: to a user whose password matched, while the account
    (`subject`) has code e-mails left in the hour; None otherwise. The same statements either
    way: the account's share is counted for every challenge and, for one without a user, given
    back at once (on the same row), so a wrong password takes nothing from the owner's codes.
    Whether an e-mail goes must change nothing a browser sees (the caller's answer, the
    challenge's life): only a right password spends the share, so that would tell it."""
    usage = ratelimit.hit(session, code_mails_per_account(), subject, now=now)
    ratelimit.take_back(session, code_mails_per_account(), subject, now=now,
                        effective=user is None and not usage.exceeded)
    message = _code_message(user, code)
    if usage.exceeded:
        if user is not None:
            metrics.rate_limited("sign_in_code_mail")
        return None
    return message if user is not None else None


def _code_message(user: User | None, code: str) -> EmailMessage:
    """The code's e-mail; for no user, one to nobody, written all the same and never sent."""
    message = EmailMessage()
    message["Subject"] = f"Your sign-in code: {code}"
    message["From"] = get_settings().sender_address
    message["To"] = user.email if user is not None else "nobody@invalid"
    minutes, name = int(CODE_LIFETIME.total_seconds() // 60), plain_name(user.name if user is not None else None)
    message.set_content(
        f"{f'Hello {name},' if name else 'Hello,'}\n\n"
        f"Someone signed in to your invoicing account with your password from a browser it has not seen "
        f"before. Because of recent failed sign-ins on the account, that needs this code:\n\n"
        f"    {code}\n\n"
        f"It works once, for {minutes} minutes. If it was not you, someone else knows your password: "
        f"do not share the code.\n")
    return message


@dataclass(frozen=True)
class CodeOutcome:
    user: User | None = None  # signed in
    next_path: str = "/"
    attempts_left: int = 0  # after a wrong code; 0 with no user: sign in again


def find_challenge(session: Session, token: str | None, *, lock: bool = False) -> SignInChallenge | None:
    """The live challenge a browser's handle names, or None."""
    if not token or len(token) > 200:
        return None
    query = select(SignInChallenge).where(SignInChallenge.token_hash == crypto.sha256_hex(token))
    challenge = session.exec(query.with_for_update() if lock else query).first()
    if challenge is None or challenge.expires_at <= clock_now() or challenge.attempts >= CODE_ATTEMPTS:
        return None
    return challenge


def enter_code(session: Session, token: str | None, code: str) -> CodeOutcome:
    """Check a code against the browser's challenge; each try counts before it is checked."""
    challenge = find_challenge(session, token, lock=True)
    if challenge is None:
        return CodeOutcome()
    challenge.attempts += 1
    session.add(challenge)
    typed = "".join(character for character in code if character.isdigit() and character.isascii())
    matches = crypto.same(_code_hash(typed), challenge.code_hash)  # checked for every challenge: the same work
    if challenge.user_id is not None and matches:
        session.delete(challenge)
        return CodeOutcome(user=session.get(User, challenge.user_id), next_path=challenge.next_path)
    return CodeOutcome(next_path=challenge.next_path, attempts_left=CODE_ATTEMPTS - challenge.attempts)


@dataclass(frozen=True)
class ResendOutcome:
    gone: bool = False  # no live challenge: sign in again
    retry_after: int | None = None  # seconds, when refused by a limit
    mail: EmailMessage | None = None  # the new code's e-mail, to send after the answer

    @property
    def throttled(self) -> bool:
        return self.retry_after is not None


def resend_code(session: Session, token: str | None, client_ip: str, *,
                now: float | None = None) -> ResendOutcome:
    """Another code for the browser's challenge, limited per challenge and per network.

    Every resend the limits allow gives the challenge another `CODE_LIFETIME`, whatever the
    password and the account's share of code e-mails: what a browser sees (the answer, how long
    the challenge lives, which later resends are refused) depends only on the challenge's own
    resends and its network's, so no sequence of requests tells a right password from a wrong
    one. (The per-challenge limit, over an hour, bounds a challenge's life to
    `CODE_LIFETIME` × (1 + `RESENDS_PER_CHALLENGE`).) A new code replaces the old one only when its
    e-mail goes out (a right password, within the account's share); otherwise the code already
    e-mailed, if any, keeps working. A right and a wrong password run the same statements and
    write the same rows: the user is read (none for a wrong one), the account's share counted,
    the challenge rewritten."""
    challenge = find_challenge(session, token, lock=True)
    if challenge is None:
        return ResendOutcome(gone=True)
    for limit, subject in ((resends_per_network(), address_subject(client_ip)),
                           (resends_per_challenge(), str(challenge.id))):
        usage = ratelimit.hit(session, limit, subject, now=now)
        if usage.exceeded:
            usage.refused()
            return ResendOutcome(retry_after=usage.retry_after)
    user = session.exec(select(User).where(User.id == bindparam("user_id", challenge.user_id))).first()
    code = _new_code()
    mail = _code_mail(session, user, challenge.account_subject, code, now)
    code_hash = _code_hash_for(user, code)
    session.execute(update(SignInChallenge).where(SignInChallenge.id == challenge.id).values(
        code_hash=code_hash if mail is not None else challenge.code_hash,
        expires_at=clock_now() + CODE_LIFETIME))
    return ResendOutcome(mail=mail)


def purge_expired(session: Session) -> None:
    session.execute(delete(SignInChallenge).where(SignInChallenge.expires_at <= clock_now()))
