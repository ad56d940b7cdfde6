"""Limits (1-100, default 25, larger capped) and opaque cursors bound to account and filters."""

import base64
import uuid

import pytest

from core.base import db
from core.base.clock import now
from core.mechanisms import pagination
from core.models import Customer


def seed(tenant, count, name="C"):
    """Insert customers directly (fast); returns their public ids, oldest first."""
    created = now()
    with db.transaction() as session:
        rows = [Customer(account_id=tenant.account_id, name=f"{name}{i}", created=created) for i in range(count)]
        session.add_all(rows)
        session.flush()
        ids = [f"cus_{row.id.hex}" for row in rows]
    return ids


def listed(response):
    assert response.status_code == 200, response.text
    return [c["id"] for c in response.json()["data"]]


def assert_422_at(response, path):
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "validation"
    assert path in [e["path"] for e in body["errors"]]


def test_default_limit_is_25(tenant):
    seed(tenant, 30)
    body = tenant.get("/customers").json()
    assert len(body["data"]) == 25
    assert body["next_cursor"] is not None


def test_limit_over_100_is_capped(tenant):
    seed(tenant, 105)
    body = tenant.get("/customers", params={"limit": 500}).json()
    assert len(body["data"]) == 100
    assert body["next_cursor"] is not None


@pytest.mark.parametrize("limit", ["0", "-1", "abc", "1.5"])
def test_invalid_limit_is_422_at_limit(tenant, limit):
    assert_422_at(tenant.get("/customers", params={"limit": limit}), "limit")


def test_limit_1_returns_one(tenant):
    seed(tenant, 2)
    assert len(listed(tenant.get("/customers", params={"limit": 1}))) == 1


def test_next_cursor_is_null_on_the_last_page(tenant):
    seed(tenant, 3)
    assert tenant.get("/customers", params={"limit": 3}).json()["next_cursor"] is None


def test_pages_cover_everything_once_newest_first_with_equal_timestamps(tenant):
    ids = seed(tenant, 7)
    seen, cursor = [], None
    while True:
        params = {"limit": 3, **({"cursor": cursor} if cursor else {})}
        body = tenant.get("/customers", params=params).json()
        seen += [c["id"] for c in body["data"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(ids)
    assert len(seen) == len(set(seen)) == 7


def first_cursor(tenant, **params):
    seed(tenant, 3)
    cursor = tenant.get("/customers", params={"limit": 1, **params}).json()["next_cursor"]
    assert cursor
    return cursor


@pytest.mark.parametrize("garbage", ["garbage", "a.b.c", "x" * 2000, "é", "..", "eyJhbGciOiJIUzI1NiJ9.e30.AAAA"])
def test_garbage_cursor_is_422_at_cursor(tenant, garbage):
    assert_422_at(tenant.get("/customers", params={"cursor": garbage}), "cursor")


def test_another_accounts_cursor_is_422(tenant, other_tenant):
    cursor = first_cursor(other_tenant)
    assert_422_at(tenant.get("/customers", params={"cursor": cursor}), "cursor")


def test_cursor_with_changed_filters_is_422(tenant):
    cursor = first_cursor(tenant, query="C")
    assert_422_at(tenant.get("/customers", params={"cursor": cursor, "query": "D"}), "cursor")
    assert_422_at(tenant.get("/customers", params={"cursor": cursor}), "cursor")


def test_cursor_with_same_filters_and_other_limit_works(tenant):
    cursor = first_cursor(tenant, query="C")
    assert len(listed(tenant.get("/customers", params={"cursor": cursor, "query": "C", "limit": 5}))) == 2


def test_tampered_cursor_is_422(tenant):
    cursor = first_cursor(tenant)
    header, payload, signature = cursor.split(".")
    decoded = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    forged = decoded.replace(b'"i":"', b'"i":"0')
    forged_payload = base64.urlsafe_b64encode(forged).rstrip(b"=").decode()
    assert_422_at(tenant.get("/customers", params={"cursor": f"{header}.{forged_payload}.{signature}"}), "cursor")
    flipped = signature[:-2] + ("AA" if not signature.endswith("AA") else "BB")
    assert_422_at(tenant.get("/customers", params={"cursor": f"{header}.{payload}.{flipped}"}), "cursor")


def test_cursor_of_another_list_kind_is_422(tenant):
    position = pagination.Position(now(), uuid.uuid4())
    cursor = pagination.encode_cursor("products", tenant.account_id, {}, position)
    with pytest.raises(pagination.ValidationFailed):
        pagination.decode_cursor(cursor, "customers", tenant.account_id, {})


def test_unsigned_cursor_is_refused(tenant):
    payload = base64.urlsafe_b64encode(b'{"k":"customers"}').rstrip(b"=").decode()
    header = base64.urlsafe_b64encode(b'{"alg":"none"}').rstrip(b"=").decode()
    assert_422_at(tenant.get("/customers", params={"cursor": f"{header}.{payload}."}), "cursor")


def test_clamp_limit():
    assert pagination.clamp_limit(None) == 25
    assert pagination.clamp_limit(1) == 1
    assert pagination.clamp_limit(100) == 100
    assert pagination.clamp_limit(101) == 100
    with pytest.raises(pagination.ValidationFailed):
        pagination.clamp_limit(0)
