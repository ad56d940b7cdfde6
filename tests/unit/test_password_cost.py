"""The service hashes passwords with argon2id at its full cost (the other tests lower it to save time)."""

import pytest
from argon2 import PasswordHasher, Type

from core.access import accounts, sign_in

pytestmark = pytest.mark.service_password_cost


def test_passwords_are_hashed_with_argon2id_at_the_recommended_cost():
    stored = accounts.hash_password("correct horse battery")
    assert stored.startswith("$argon2id$v=19$m=65536,t=3,p=4$")


def test_the_service_hasher_is_argon2s_default():
    hasher = accounts._hasher
    default = PasswordHasher()
    assert (hasher.type, hasher.time_cost, hasher.memory_cost, hasher.parallelism) == \
        (Type.ID, default.time_cost, default.memory_cost, default.parallelism)


def test_an_unknown_address_is_checked_against_a_hash_of_the_same_cost(monkeypatch):
    monkeypatch.setattr(sign_in, "_dummy_hash", None)
    assert sign_in._password_matches(None, "anything") is False
    assert sign_in._dummy_hash.startswith("$argon2id$v=19$m=65536,t=3,p=4$")
