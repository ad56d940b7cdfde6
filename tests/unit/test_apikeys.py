"""API keys in core: format, hashing at rest, scopes and presets, expiry, revocation, listing."""

import re
from datetime import timedelta

import pytest

from core.access import accounts, apikeys, resources
from core.access.scopes import ALL_SCOPES, PRESETS
from core.base import crypto, db
from core.base.clock import now
from core.base.errors import NotFound, Unauthorized, ValidationFailed
from core.models import ApiKey
from tests.conftest import make_tenant
from tests.units import principal_of

KEY = re.compile(r"inv_live_([A-Za-z0-9]{8})_([A-Za-z0-9]{32})")


@pytest.fixture
def account_id():
    return make_tenant(None).account_id


def create(account_id, **kw):
    options = {"name": "k", "scopes": ["clients:read"], **kw}
    with db.transaction() as session:
        return apikeys.create_key(session, account_id, created_by=accounts.owner_of(session, account_id).id, **options)


def authenticate(key):
    return principal_of(f"Bearer {key}", resources.rest_api())


def test_key_format(account_id):
    created = create(account_id)
    match = KEY.fullmatch(created.key)
    assert match
    assert created.row.lookup_id == match.group(1)


def test_only_the_hash_of_the_secret_is_stored(account_id):
    created = create(account_id)
    secret = KEY.fullmatch(created.key).group(2)
    with db.transaction() as session:
        row = session.get(ApiKey, created.row.id)
    assert row.secret_hash == crypto.sha256_hex(secret)
    assert secret not in str(row.model_dump())


def test_keys_are_distinct(account_id):
    assert create(account_id).key != create(account_id).key


def test_authenticate_gives_account_scopes_and_actor(account_id):
    created = create(account_id, scopes=["invoices:write"])
    principal = authenticate(created.key)
    assert principal.account_id == account_id
    assert principal.actor == "api_key"
    assert principal.api_key_id == created.row.id
    assert principal.granted_scopes == {"invoices:write"}
    assert {"business:read", "clients:read", "invoices:read"} <= principal.scopes
    assert principal.credential_id == f"key:{created.row.id}"


@pytest.mark.parametrize("mutate, words", [
    (lambda k: k[:-1] + ("A" if k[-1] != "A" else "B"), "unknown"),
    (lambda k: k + "x", "malformed"),
    (lambda k: k.replace("inv_live_", "inv_test_"), "malformed"),
])
def test_authenticate_refuses_altered_keys(account_id, mutate, words):
    created = create(account_id)
    with pytest.raises(Unauthorized) as caught:
        authenticate(mutate(created.key))
    assert words in caught.value.detail


def test_expiry_in_days(account_id):
    created = create(account_id, expires_in_days=30)
    assert abs(created.row.expires_at - (now() + timedelta(days=30))) < timedelta(seconds=5)
    assert create(account_id, expires_in_days=0).row.expires_at is None


def test_expired_key_is_refused(account_id):
    created = create(account_id, expires_in_days=1)
    with db.transaction() as session:
        row = session.get(ApiKey, created.row.id)
        row.expires_at = now() - timedelta(milliseconds=1)
        session.add(row)
    with pytest.raises(Unauthorized, match="expired"):
        authenticate(created.key)


@pytest.mark.parametrize("days", [-1, 3651])
def test_expiry_out_of_range_is_refused(account_id, days):
    with pytest.raises(ValidationFailed) as caught:
        create(account_id, expires_in_days=days)
    assert caught.value.errors[0].path == "expires_in_days"


@pytest.mark.parametrize("scopes", [[], ["clients:read", "admin"]])
def test_create_refuses_unknown_or_no_scopes(account_id, scopes):
    with pytest.raises(ValidationFailed) as caught:
        create(account_id, scopes=scopes)
    assert caught.value.errors[0].path == "scopes"


@pytest.mark.parametrize("name", ["", "   ", "x" * 257])
def test_name_is_required_and_limited(account_id, name):
    with pytest.raises(ValidationFailed) as caught:
        create(account_id, name=name)
    assert caught.value.errors[0].path == "name"


def test_revoke_by_id_and_by_lookup_id(account_id):
    first, second = create(account_id), create(account_id)
    with db.transaction() as session:
        apikeys.revoke_key(session, account_id, str(first.row.id))
        apikeys.revoke_key(session, account_id, second.row.lookup_id)
    for created in (first, second):
        with pytest.raises(Unauthorized, match="revoked"):
            authenticate(created.key)


def test_revoke_is_repeatable_and_keeps_the_first_time(account_id):
    created = create(account_id)
    with db.transaction() as session:
        first = apikeys.revoke_key(session, account_id, str(created.row.id)).revoked_at
    with db.transaction() as session:
        assert apikeys.revoke_key(session, account_id, str(created.row.id)).revoked_at == first


def test_cannot_revoke_another_accounts_key(account_id):
    other = make_tenant(None)
    with db.transaction() as session, pytest.raises(NotFound):
        apikeys.revoke_key(session, account_id, str(other.key_id))
    with db.transaction() as session, pytest.raises(NotFound):
        apikeys.revoke_key(session, account_id, "nosuchid")


def test_list_keys_is_per_account(account_id):
    make_tenant(None)
    create(account_id, name="first"), create(account_id, name="second")
    with db.transaction() as session:
        names = [row.name for row in apikeys.list_keys(session, account_id)]
    assert sorted(names) == ["first", "second", "test"]


def test_last_used_at_is_set_on_use_and_throttled(account_id):
    created = create(account_id)
    authenticate(created.key)
    with db.transaction() as session:
        used = session.get(ApiKey, created.row.id).last_used_at
    assert used is not None
    authenticate(created.key)
    with db.transaction() as session:
        assert session.get(ApiKey, created.row.id).last_used_at == used


def test_resolve_scopes_from_presets():
    assert apikeys.resolve_scopes(preset="read_only") == ["business:read", "clients:read", "invoices:read"]
    assert apikeys.resolve_scopes(preset="full_access") == list(ALL_SCOPES)
    assert set(apikeys.resolve_scopes(preset="ai_assistant")) == set(PRESETS["ai_assistant"])
    assert "invoices:finalize" not in apikeys.resolve_scopes(preset="ai_assistant")
    assert set(apikeys.resolve_scopes(preset="raise_and_send")) == {
        "business:read", "clients:read", "invoices:read", "clients:write", "invoices:write",
        "invoices:finalize", "invoices:send", "payments:write"}


def test_resolve_scopes_from_a_list_orders_and_deduplicates():
    assert apikeys.resolve_scopes(scopes=["invoices:read", " clients:read", "invoices:read"]) == [
        "clients:read", "invoices:read"]


@pytest.mark.parametrize("kw, path", [
    ({"preset": "everything"}, "preset"),
    ({"scopes": []}, "scopes"),
    ({"scopes": ["clients:read", "admin"]}, "scopes"),
])
def test_resolve_scopes_refuses_bad_input(kw, path):
    with pytest.raises(ValidationFailed) as caught:
        apikeys.resolve_scopes(**kw)
    assert caught.value.errors[0].path == path
