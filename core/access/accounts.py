"""Users and their businesses (accounts); password hashing."""

from __future__ import annotations

import unicodedata
import uuid

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerifyMismatchError
from sqlmodel import Session, select

from core.access import memberships
from core.base.clock import now
from core.base.errors import Conflict, NotFound, ValidationFailed
from core.base.validation import NAME_MAX, acceptable_text, normalize_email
from core.models import Account, Membership, User

_hasher = PasswordHasher()
MIN_PASSWORD_LENGTH = 8


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def check_password(user: User, password: str) -> bool:
    try:
        return _hasher.verify(user.password_hash, password)
    except (VerifyMismatchError, InvalidHashError):
        return False


def hash_new_password(password: str) -> str:
    """Check a new password and hash it. Hashing takes a while (argon2): do it before any
    transaction, so no write lock waits for it."""
    if len(password) < MIN_PASSWORD_LENGTH:
        raise ValidationFailed.at("password", f"must be at least {MIN_PASSWORD_LENGTH} characters")
    return hash_password(password)


def create_user(session: Session, *, email: str, password: str | None = None, password_hash: str | None = None,
                name: str | None = None) -> User:
    """A person, from a password or a hash made by `hash_new_password`, in no business yet (one who
    signs up to accept an invitation joins that one)."""
    email = normalize_email(email, path="email")
    if name is not None:
        name = acceptable_text(name, "name", max_length=NAME_MAX)
    password_hash = password_hash or hash_new_password(password or "")
    if session.exec(select(User).where(User.email == email)).first():
        raise Conflict("A user with this e-mail already exists.")
    user = User(email=email, name=name, password_hash=password_hash)
    session.add(user)
    session.flush()
    return user


def create_account(session: Session, *, email: str, password: str | None = None, password_hash: str | None = None,
                   name: str | None = None) -> tuple[User, Account]:
    """A person and the business they start, its first owner."""
    user = create_user(session, email=email, password=password, password_hash=password_hash, name=name)
    return user, memberships.create_business(session, user)


def plain_name(name: str | None, max_length: int = 40) -> str | None:
    """A name fit to greet someone in an e-mail we send for a caller: short, and nothing but
    letters, spaces and `' - .` (no link, address or message can ride along); else None."""
    name = (name or "").strip()
    plain = all(unicodedata.category(c)[0] in "LM" or c in " '-." for c in name)
    return name if name and plain and len(name) <= max_length else None


def user_by_email(session: Session, email: str) -> User:
    user = session.exec(select(User).where(User.email == email.strip().lower())).first()
    if user is None:
        raise NotFound(f"No user with e-mail {email}.")
    return user


def account_of(session: Session, user: User) -> Account:
    """The person's first business (the one they signed up with, unless they left it)."""
    account = session.exec(select(Account).join(Membership, Membership.account_id == Account.id)
                           .where(Membership.user_id == user.id).order_by(Membership.created_at, Membership.id)).first()
    if account is None:
        raise NotFound("This user is a member of no business.")
    return account


def account_by_email(session: Session, email: str) -> Account:
    return account_of(session, user_by_email(session, email))


def owner_of(session: Session, account_id: uuid.UUID) -> User:
    """The business's first owner: who it acts as when no person does (reminders, late fees)."""
    found = memberships.owners(session, account_id)
    if not found:
        raise NotFound("No such account.")
    return found[0]


def mark_email_verified(session: Session, user: User) -> None:
    if user.email_verified_at is None:
        user.email_verified_at = now()
        session.add(user)


def account_email_verified(session: Session, account_id: uuid.UUID) -> bool:
    """Whether an owner of the business has confirmed their address (before it may e-mail customers)."""
    return any(owner.email_verified_at is not None for owner in memberships.owners(session, account_id))
