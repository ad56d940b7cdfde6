"""Signed e-mail verification tokens: expiring, single-purpose, bound to the address."""

from __future__ import annotations

import hashlib
import time

import pytest
from joserfc import jwt
from joserfc.jwk import OctKey

from core.access import verification
from core.access.accounts import create_account
from core.base import db
from core.models import User


@pytest.fixture
def user() -> User:
    with db.transaction() as session:
        created, _ = create_account(session, email="verify-me@example.com", password="long enough pw")
    return created


def test_a_fresh_token_names_the_user_and_address(user):
    claims = verification.read_token(verification.make_token(user))
    assert (claims.user_id, claims.email) == (user.id, "verify-me@example.com")


def test_a_token_expires_after_48_hours(user):
    token = verification.make_token(user, now=time.time() - verification.LIFETIME_SECONDS - 1)
    with pytest.raises(verification.InvalidVerificationToken, match="expired"):
        verification.read_token(token)


def test_a_token_signed_with_another_purposes_key_is_refused(user, test_settings):
    other_key = OctKey.import_key(hashlib.sha256(b"csrf:" + test_settings.signing_key).digest())
    token = jwt.encode({"alg": "HS256"}, {"sub": str(user.id), "email": user.email, "purpose": "verify_email",
                                          "exp": int(time.time()) + 60}, other_key)
    with pytest.raises(verification.InvalidVerificationToken, match="not valid"):
        verification.read_token(token)


def test_a_token_without_the_purpose_claim_is_refused(user):
    token = jwt.encode({"alg": "HS256"}, {"sub": str(user.id), "email": user.email,
                                          "exp": int(time.time()) + 60}, verification._key())
    with pytest.raises(verification.InvalidVerificationToken):
        verification.read_token(token)


def test_an_unsigned_token_is_refused(user):
    token = verification.make_token(user)
    header, payload, _ = token.split(".")
    with pytest.raises(verification.InvalidVerificationToken):
        verification.read_token(f"{header}.{payload}.")


def test_verifying_marks_the_address_and_repeating_is_harmless(user):
    token = verification.make_token(user)
    with db.transaction() as session:
        first = verification.verify_email(session, token).email_verified_at
    with db.transaction() as session:
        assert verification.verify_email(session, token).email_verified_at == first


def test_a_token_for_an_address_the_user_no_longer_has_verifies_nothing(user):
    token = verification.make_token(user)
    with db.transaction() as session:
        stored = session.get(User, user.id)
        stored.email = "changed@example.com"
        session.add(stored)
    with db.transaction() as session, pytest.raises(verification.InvalidVerificationToken):
        verification.verify_email(session, token)


def test_the_message_carries_the_link_and_goes_to_the_user(user, test_settings):
    message = verification.verification_message(user)
    assert message["To"] == "verify-me@example.com"
    assert "http://testserver/verify-email?token=" in message.get_content()
