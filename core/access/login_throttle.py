"""Password sign-in with throttling of failed attempts, counted in the database.

Failures are counted in fixed windows shared by every server process, under three keys:

- per account and client address together (guessing one account's password from one place): the
  limit that stops an ordinary attacker, and only from where they are;
- per client address across accounts (trying many accounts from one place);
- per account across every address, a much higher ceiling reached only by a distributed attack.
  Reaching it locks nobody out: it lowers, for that account, what each address may still fail, so
  the real user signing in from their own address still gets in.

An attempt that a limit refuses is answered before the account is looked up and is not counted,
so the answer is the same whether or not the account exists. Client addresses count by network:
an IPv4 address alone, an IPv6 address by its /64 (one subscriber's allocation). Bucket keys are
keyed hashes (HMAC with a key derived from the secret key), so no e-mail or address is stored in
clear, nor as a hash anyone could reverse by hashing guesses.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from dataclasses import dataclass

from sqlmodel import Session, select

from config.settings import get_settings
from core.access.accounts import check_password, hash_password
from core.base import metrics
from core.mechanisms import ratelimit
from core.models import User

PAIR_WINDOW = 15 * 60
# While an account is over its ceiling, each address may fail this many times on it per pair
# window (the same counter, read against a lower limit): a person who mistypes still gets a few
# tries, a distributed attack gets a few guesses per address, not ten.
UNDER_ATTACK_ALLOWANCE = 3


def failures_per_account_and_client() -> ratelimit.Limit:
    """The limit that stops an ordinary attacker (INVOICING_RATE_LIMIT_SIGN_IN, default 10)."""
    return ratelimit.Limit("login_failures_pair", get_settings().rate_limit_sign_in, PAIR_WINDOW)


def failures_per_client() -> ratelimit.Limit:
    """Higher: many people may sign in from behind one address (an office, a carrier NAT)."""
    return ratelimit.Limit("login_failures_ip", 5 * get_settings().rate_limit_sign_in, PAIR_WINDOW)


def failures_per_account() -> ratelimit.Limit:
    """Well above what one address can reach on its own (4 pair windows an hour), so only an attack
    from several networks gets there. Windows must stay within ratelimit.purge_old's 2 hours."""
    return ratelimit.Limit("login_failures_account", 10 * get_settings().rate_limit_sign_in, 60 * 60)


def failures_per_account_and_client_under_attack() -> ratelimit.Limit:
    return ratelimit.Limit("login_failures_pair", UNDER_ATTACK_ALLOWANCE, PAIR_WINDOW)

_dummy_hash: str | None = None


@dataclass(frozen=True)
class LoginOutcome:
    user: User | None  # None: wrong e-mail or password, or throttled
    retry_after: int | None = None  # seconds, when throttled

    @property
    def throttled(self) -> bool:
        return self.retry_after is not None


@dataclass(frozen=True)
class _Subjects:
    pair: str
    client: str
    account: str


def _normalized_email(email: str) -> str:
    """As the sign-in looks the user up, so every spelling that reaches one account counts for it."""
    return email.strip().lower()


def client_network(client_ip: str) -> str:
    """The unit an address is counted by: an IPv4 address, or the /64 network of an IPv6 address."""
    try:
        address = ipaddress.ip_address((client_ip or "").strip())
    except ValueError:
        return (client_ip or "").strip() or "unknown"  # not an IP (a Unix socket, a test client)
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def _hash(*parts: str) -> str:
    key = hashlib.sha256(b"login-throttle:" + get_settings().signing_key).digest()
    return hmac.new(key, "\x00".join(parts).encode(), hashlib.sha256).hexdigest()


def _subjects(email: str, client_ip: str) -> _Subjects:
    account, network = _normalized_email(email), client_network(client_ip)
    return _Subjects(pair=_hash("pair", account, network), client=_hash("client", network),
                     account=_hash("account", account))


def retry_after(session: Session, email: str, client_ip: str, *, now: float | None = None) -> int | None:
    """Seconds until sign-in to `email` from `client_ip` may be tried again, or None when not throttled."""
    subjects = _subjects(email, client_ip)
    pair = ratelimit.peek(session, failures_per_account_and_client(), subjects.pair, now=now)
    client = ratelimit.peek(session, failures_per_client(), subjects.client, now=now)
    account = ratelimit.peek(session, failures_per_account(), subjects.account, now=now)
    pair_spent = ratelimit.peek(session, failures_per_account_and_client_under_attack(), subjects.pair, now=now).exceeded
    return _wait(pair, client, account, pair_spent)


def _wait(pair: ratelimit.Usage, client: ratelimit.Usage, account: ratelimit.Usage, pair_spent: bool) -> int | None:
    """The longest wait the limits impose: the pair's, the address's, and, while the account is
    over its ceiling and this pair has spent the allowance left under attack, until either window ends."""
    waits = [usage.retry_after for usage in (pair, client) if usage.exceeded]
    if account.exceeded and pair_spent:
        waits.append(min(pair.retry_after, account.retry_after))
    return max(waits) if waits else None


def record_failure(session: Session, email: str, client_ip: str, *, now: float | None = None) -> None:
    _count(session, _subjects(email, client_ip), 1, now)


def _count(session: Session, subjects: _Subjects, cost: int, now: float | None) -> list[ratelimit.Usage]:
    """Count (or, with a negative cost, uncount) one attempt under all three keys."""
    return [ratelimit.hit(session, failures_per_account_and_client(), subjects.pair, cost=cost, now=now),
            ratelimit.hit(session, failures_per_client(), subjects.client, cost=cost, now=now),
            ratelimit.hit(session, failures_per_account(), subjects.account, cost=cost, now=now)]


def _reserve(session: Session, subjects: _Subjects, now: float | None) -> int | None:
    """Count the attempt before its password is checked. The upsert hands each of several
    concurrent attempts its own count (and holds the counter row until the caller commits), so a
    burst cannot slip past a limit between a look and a count. Seconds to wait when this attempt
    is one too many, else None."""
    pair, client, account = _count(session, subjects, 1, now)
    pair_spent = pair.limit - pair.remaining > failures_per_account_and_client_under_attack().requests
    return _wait(pair, client, account, pair_spent)


def _record_success(session: Session, email: str, client_ip: str, now: float | None) -> None:
    """Forget this account's failures from this address (only its owner can): the person typed it
    right in the end. The address's count across accounts and the account's count stay, or signing
    in to one's own account would reset them; only this attempt, counted ahead, is taken back."""
    subjects = _subjects(email, client_ip)
    _count(session, subjects, -1, now)
    ratelimit.forget(session, failures_per_account_and_client(), subjects.pair)


def _verify_against_nothing(password: str) -> None:
    """Spend the time of a real hash check, so unknown addresses cannot be told by timing."""
    global _dummy_hash
    if _dummy_hash is None:
        _dummy_hash = hash_password("not a real password")
    check_password(User(email="", password_hash=_dummy_hash), password)


def attempt_login(session: Session, email: str, password: str, client_ip: str, *,
                  now: float | None = None) -> LoginOutcome:
    """Check the credentials unless throttled. The attempt is counted before the check and taken
    back when it succeeds, all in `session` (commit it)."""
    wait = retry_after(session, email, client_ip, now=now)
    if wait is None:
        wait = _reserve(session, _subjects(email, client_ip), now)
    if wait is not None:
        metrics.rate_limited("sign_in")
        return LoginOutcome(user=None, retry_after=wait)
    user = session.exec(select(User).where(User.email == _normalized_email(email))).first()
    if user is None:
        _verify_against_nothing(password)
    elif check_password(user, password):
        _record_success(session, email, client_ip, now)
        return LoginOutcome(user=user)
    return LoginOutcome(user=None)  # a failure: counted ahead, by _reserve
