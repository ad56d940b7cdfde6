"""120 requests per 60 seconds per key, counted in the database, with RateLimit-* headers."""

import time

import pytest
from sqlmodel import select

from core.base import db
from core.mechanisms import ratelimit
from core.models import RateLimitWindow


@pytest.fixture
def fixed_window(monkeypatch):
    """Freeze the clock the limiter reads in the middle of a window, so no test straddles two."""
    frozen = (int(time.time()) // 60) * 60 + 30.0
    monkeypatch.setattr(ratelimit.time, "time", lambda: frozen)
    return frozen


def spend(tenant, count):
    """Use up `count` requests of the tenant's key in the current window, straight in the database."""
    with db.transaction() as session:
        ratelimit.hit(session, ratelimit.api_requests(), f"key:{tenant.key_id}", cost=count)


def test_headers_on_every_authenticated_response(tenant, fixed_window):
    response = tenant.get("/customers")
    assert response.headers["ratelimit-limit"] == "120"
    assert response.headers["ratelimit-remaining"] == "119"
    assert int(response.headers["ratelimit-reset"]) == fixed_window + 30


def test_reset_is_unix_seconds_in_the_next_minute(tenant):
    reset = int(tenant.get("/customers").headers["ratelimit-reset"])
    assert time.time() < reset <= time.time() + 61


def test_remaining_counts_down(tenant, fixed_window):
    remaining = [int(tenant.get("/customers").headers["ratelimit-remaining"]) for _ in range(3)]
    assert remaining == [119, 118, 117]


def test_headers_on_errors_after_authentication(tenant, fixed_window):
    response = tenant.get("/customers/cus_nope")
    assert response.status_code == 404
    assert response.headers["ratelimit-remaining"] == "119"
    response = tenant.post("/customers", json={})
    assert response.status_code == 422
    assert response.headers["ratelimit-remaining"] == "118"


def test_the_121st_request_is_429(tenant, fixed_window):
    spend(tenant, 119)
    last_allowed = tenant.get("/customers")
    assert last_allowed.status_code == 200
    assert last_allowed.headers["ratelimit-remaining"] == "0"
    response = tenant.get("/customers")
    assert response.status_code == 429
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == "rate_limited"
    assert body["type"] == "http://testserver/problems/rate-limited"
    assert response.headers["retry-after"] == "30"
    assert response.headers["ratelimit-limit"] == "120"
    assert response.headers["ratelimit-remaining"] == "0"
    assert response.headers["ratelimit-reset"] == str(int(fixed_window) + 30)
    assert response.headers["x-request-id"] == body["instance"]


def test_120_real_requests_then_429(tenant, fixed_window):
    statuses = [tenant.get("/customers").status_code for _ in range(121)]
    assert statuses[:120] == [200] * 120
    assert statuses[120] == 429


def test_rate_limited_write_does_not_run(tenant, fixed_window):
    spend(tenant, 120)
    assert tenant.post("/customers", json={"name": "A"}).status_code == 429
    spend(tenant, -120)
    assert tenant.get("/customers").json()["data"] == []


def test_limit_is_per_key(tenant, fixed_window):
    spend(tenant, 120)
    assert tenant.get("/customers").status_code == 429
    other_key = tenant.as_key(tenant.key_with(["clients:read"]))
    response = other_key.get("/customers")
    assert response.status_code == 200
    assert response.headers["ratelimit-remaining"] == "119"


def test_next_window_starts_afresh(tenant, fixed_window, monkeypatch):
    spend(tenant, 120)
    assert tenant.get("/customers").status_code == 429
    monkeypatch.setattr(ratelimit.time, "time", lambda: fixed_window + 60)
    response = tenant.get("/customers")
    assert response.status_code == 200
    assert response.headers["ratelimit-remaining"] == "119"


def test_count_lives_in_the_database(tenant, fixed_window):
    tenant.get("/customers")
    tenant.get("/customers")
    with db.transaction() as session:
        row = session.get(RateLimitWindow, (f"api:key:{tenant.key_id}", int(fixed_window) - 30))
    assert row is not None and row.count == 2


def test_unauthenticated_requests_are_not_counted_and_carry_no_limit_headers(client):
    response = client.get("/api/v1/customers")
    assert response.status_code == 401
    assert "ratelimit-limit" not in response.headers


def test_hit_and_peek_report_usage():
    with db.transaction() as session:
        for _ in range(3):
            usage = ratelimit.hit(session, ratelimit.sends_per_key(), "subject", now=1000.0)
        peeked = ratelimit.peek(session, ratelimit.sends_per_key(), "subject", now=1000.0)
    assert (usage.remaining, usage.exceeded, usage.reset) == (7, False, 3600)
    assert (peeked.remaining, peeked.exceeded) == (7, False)


def test_usage_raise_if_exceeded_names_the_limit():
    with db.transaction() as session:
        usage = ratelimit.hit(session, ratelimit.sends_per_key(), "s", cost=11, now=10.0)
    with pytest.raises(Exception) as caught:
        usage.raise_if_exceeded("e-mails")
    assert caught.value.code == "rate_limited"
    assert "10 e-mails per hour" in caught.value.detail


def test_purge_removes_old_windows_only():
    current = time.time()
    with db.transaction() as session:
        ratelimit.hit(session, ratelimit.api_requests(), "old", now=current - 3 * 3600)
        ratelimit.hit(session, ratelimit.api_requests(), "new", now=current)
    with db.transaction() as session:
        ratelimit.purge_old(session)
    with db.transaction() as session:
        buckets = list(session.exec(select(RateLimitWindow.bucket)))
    assert buckets == ["api:new"]


def test_the_request_limit_is_an_operator_setting(tenant, fixed_window, monkeypatch):
    from config.settings import get_settings
    monkeypatch.setattr(get_settings(), "rate_limit_requests", 3)
    statuses = [tenant.get("/customers").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]


def test_the_send_limit_is_an_operator_setting(monkeypatch):
    from config.settings import get_settings
    monkeypatch.setattr(get_settings(), "rate_limit_sends", 1000)
    monkeypatch.setattr(get_settings(), "rate_limit_emails", 5000)
    assert (ratelimit.sends_per_key().requests, ratelimit.emails_per_account().requests) == (1000, 5000)


@pytest.mark.parametrize("value", ["0", "-1", "many"])
def test_a_rate_limit_setting_must_be_a_positive_integer(monkeypatch, value):
    from pydantic import ValidationError

    from config.settings import Settings
    monkeypatch.setenv("INVOICING_RATE_LIMIT_REQUESTS", value)
    with pytest.raises(ValidationError):
        Settings()
