"""Limits that hold in every span: 120 requests per 60 seconds per key (a sliding-window counter),
sends and e-mails per hour (sliding logs), counted in the database, with true RateLimit-* headers."""

import multiprocessing
import time
import uuid

import pytest
from sqlmodel import select

from config.settings import get_settings
from core.base import db
from core.mechanisms import ratelimit
from core.models import RateLimitLog, RateLimitWindow
from tests.limits import spend

MINUTE = 1_800_000_000 - 1_800_000_000 % 60  # a fixed start of a clock minute
HOUR = 1_800_000_000 - 1_800_000_000 % 3600


@pytest.fixture
def clock(monkeypatch):
    """The clock the limiter reads, driven by the test: `clock.at(t)`; starts 30 s into a minute."""

    class Clock:
        now = MINUTE + 30.0

        def at(self, moment: float) -> None:
            self.now = moment

    driven = Clock()
    monkeypatch.setattr(ratelimit, "clock", lambda: driven.now)
    return driven


def key_subject(tenant) -> str:
    return f"key:{tenant.key_id}"


def statuses(tenant, count: int) -> list[int]:
    return [tenant.get("/customers").status_code for _ in range(count)]


# --- headers ----------------------------------------------------------------------------------

def test_headers_on_every_authenticated_response(tenant, clock):
    response = tenant.get("/customers")
    assert response.headers["ratelimit-limit"] == "120"
    assert response.headers["ratelimit-remaining"] == "119"
    # Were the other 119 spent now too, the 121st would pass once they are 60 seconds old.
    assert int(response.headers["ratelimit-reset"]) == MINUTE + 90


def test_reset_is_unix_seconds_within_two_minutes(tenant):
    reset = int(tenant.get("/customers").headers["ratelimit-reset"])
    assert time.time() < reset <= time.time() + 121


def test_remaining_counts_down(tenant, clock):
    assert [int(tenant.get("/customers").headers["ratelimit-remaining"]) for _ in range(3)] == [119, 118, 117]


def test_headers_on_errors_after_authentication(tenant, clock):
    response = tenant.get("/customers/cus_nope")
    assert response.status_code == 404
    assert response.headers["ratelimit-remaining"] == "119"
    response = tenant.post("/customers", json={})
    assert response.status_code == 422
    assert response.headers["ratelimit-remaining"] == "118"


def test_the_121st_request_is_429_with_the_moment_it_may_retry(tenant, clock):
    spend(ratelimit.api_requests(), key_subject(tenant), 119)
    last_allowed = tenant.get("/customers")
    assert last_allowed.status_code == 200
    assert last_allowed.headers["ratelimit-remaining"] == "0"
    response = tenant.get("/customers")
    assert response.status_code == 429
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == "rate_limited"
    assert body["type"] == "http://testserver/problems/rate-limited"
    assert response.headers["retry-after"] == "60"
    assert response.headers["ratelimit-limit"] == "120"
    assert response.headers["ratelimit-remaining"] == "0"
    assert response.headers["ratelimit-reset"] == str(MINUTE + 90)
    assert response.headers["x-request-id"] == body["instance"]


def test_retry_after_is_true(tenant, clock):
    """Waiting exactly Retry-After is enough, and a second less is not."""
    spend(ratelimit.api_requests(), key_subject(tenant), 120)
    refused = tenant.get("/customers")
    wait = int(refused.headers["retry-after"])
    clock.at(clock.now + wait - 1)
    assert tenant.get("/customers").status_code == 429
    clock.at(float(refused.headers["ratelimit-reset"]))
    assert tenant.get("/customers").status_code == 200


def test_120_real_requests_then_429(tenant, clock):
    assert statuses(tenant, 121) == [200] * 120 + [429]


def test_refused_requests_are_not_counted(tenant, clock):
    spend(ratelimit.api_requests(), key_subject(tenant), 120)
    first = tenant.get("/customers").headers["ratelimit-reset"]
    assert statuses(tenant, 20) == [429] * 20
    assert tenant.get("/customers").headers["ratelimit-reset"] == first


def test_rate_limited_write_does_not_run(tenant, clock):
    spend(ratelimit.api_requests(), key_subject(tenant), 120)
    assert tenant.post("/customers", json={"name": "A"}).status_code == 429
    clock.at(MINUTE + 120)
    assert tenant.get("/customers").json()["data"] == []


def test_limit_is_per_key(tenant, clock):
    spend(ratelimit.api_requests(), key_subject(tenant), 120)
    assert tenant.get("/customers").status_code == 429
    other_key = tenant.as_key(tenant.key_with(["clients:read"]))
    response = other_key.get("/customers")
    assert response.status_code == 200
    assert response.headers["ratelimit-remaining"] == "119"


# --- every span, not clock-aligned windows ---------------------------------------------------

def test_a_burst_straddling_a_minute_boundary_is_refused_beyond_the_limit(tenant, clock):
    clock.at(MINUTE + 59.5)
    before = statuses(tenant, 120)
    clock.at(MINUTE + 60.5)
    after = statuses(tenant, 120)
    assert before == [200] * 120
    assert after == [429] * 120


def test_a_small_limit_across_a_boundary(tenant, clock, monkeypatch):
    """The measurement of the issue: 10 per 60 s, 20 requests across a minute boundary."""
    monkeypatch.setattr(get_settings(), "rate_limit_requests", 10)
    allowed = 0
    for n in range(20):
        clock.at(MINUTE + 55 + n * 0.5)  # from 5 s before the boundary to 5 s after
        allowed += tenant.get("/customers").status_code == 200
    assert allowed == 10


def test_requests_count_until_they_are_a_full_window_old(tenant, clock):
    spend(ratelimit.api_requests(), key_subject(tenant), 60, now=MINUTE + 10)
    spend(ratelimit.api_requests(), key_subject(tenant), 60, now=MINUTE + 59)
    clock.at(MINUTE + 69.999)
    assert statuses(tenant, 1) == [429]
    clock.at(MINUTE + 70)
    assert statuses(tenant, 61) == [200] * 60 + [429]


def test_a_steady_client_at_the_limit_is_never_refused(tenant, clock):
    refused = 0
    for n in range(360):  # three minutes at 120 a minute
        clock.at(MINUTE + n * 0.5)
        refused += tenant.get("/customers").status_code == 429
    assert refused == 0


def test_two_minutes_later_the_count_starts_afresh(tenant, clock):
    spend(ratelimit.api_requests(), key_subject(tenant), 120)
    clock.at(MINUTE + 120)
    response = tenant.get("/customers")
    assert response.status_code == 200
    assert response.headers["ratelimit-remaining"] == "119"


def test_count_lives_in_the_database(tenant, clock):
    tenant.get("/customers")
    tenant.get("/customers")
    with db.transaction() as session:
        row = session.get(RateLimitLog, f"api:key:{tenant.key_id}")
    assert row.stamps.count(str((MINUTE + 30) * 1000)) == 2


def test_unauthenticated_requests_are_not_counted_and_carry_no_limit_headers(client):
    response = client.get("/api/v1/customers")
    assert response.status_code == 401
    assert "ratelimit-limit" not in response.headers


@pytest.mark.parametrize("exact_max", [ratelimit.EXACT_MAX, 10], ids=["log", "counter"])
def test_two_processes_share_one_limit(test_settings, exact_max):
    subject, now = uuid.uuid4().hex, MINUTE + 30.0
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        counts = pool.starmap(_shared_hits, [(test_settings.database_url, subject, now, exact_max)] * 2)
    assert sum(counts) == 30 and all(count > 0 for count in counts)


def _shared_hits(url: str, subject: str, now: float, exact_max: int) -> int:
    from config.settings import Settings, set_settings
    set_settings(Settings(database_url=url, secret_key="test-secret-key"))
    db.reset_engine()
    ratelimit.EXACT_MAX = exact_max  # this process only
    limit = ratelimit.Limit("shared", 30, 60)
    allowed = 0
    for _ in range(25):
        with db.transaction() as session:
            allowed += not ratelimit.hit(session, limit, subject, now=now).exceeded
    return allowed


# --- the counter and the log directly --------------------------------------------------------

COUNTER = ratelimit.Limit("test-counter", 10, 60)  # a counter while `counters` is on
LOG = ratelimit.Limit("test-log", 3, 3600)


@pytest.fixture
def counters(monkeypatch):
    """Small limits counted as large ones are: by the sliding-window counter."""
    monkeypatch.setattr(ratelimit, "EXACT_MAX", 5)


def test_the_counter_refuses_beyond_the_limit_in_any_short_span(counters):
    spend(COUNTER, "s", 10, now=MINUTE + 59.9)
    assert spend(COUNTER, "s", 1, now=MINUTE + 60.1).exceeded
    usage = spend(COUNTER, "s", 1, now=MINUTE + 65.9)  # 10 × 54.1/60 = 9.02 still counted
    assert usage.exceeded and usage.retry_after == 1
    assert not spend(COUNTER, "s", 1, now=MINUTE + 66).exceeded


def test_peek_does_not_count(counters):
    spend(COUNTER, "s", 3, now=MINUTE)
    with db.transaction() as session:
        for _ in range(5):
            usage = ratelimit.peek(session, COUNTER, "s", now=MINUTE)
    assert (usage.remaining, usage.exceeded) == (7, False)


def test_peek_says_exceeded_when_the_next_would_be_refused(counters):
    spend(COUNTER, "s", 10, now=MINUTE)
    with db.transaction() as session:
        assert ratelimit.peek(session, COUNTER, "s", now=MINUTE + 1).exceeded
        assert ratelimit.peek(session, LOG, "empty", now=MINUTE).remaining == 3


def test_the_log_holds_in_every_span_of_its_length():
    spend(LOG, "s", 3, now=HOUR - 10)
    assert spend(LOG, "s", 1, now=HOUR + 10).exceeded  # across the clock hour
    usage = spend(LOG, "s", 1, now=HOUR + 3589)
    assert usage.exceeded and usage.reset == HOUR + 3590 and usage.retry_after == 1
    assert not spend(LOG, "s", 1, now=HOUR + 3590).exceeded


def test_the_log_forgets_events_as_they_leave_the_window():
    for offset in (0, 600, 1200):
        spend(LOG, "s", 1, now=HOUR + offset)
    assert spend(LOG, "s", 1, now=HOUR + 3599).exceeded
    assert not spend(LOG, "s", 1, now=HOUR + 3600).exceeded
    assert spend(LOG, "s", 1, now=HOUR + 3600).exceeded
    assert not spend(LOG, "s", 1, now=HOUR + 4200).exceeded


def test_the_log_is_a_ring_of_the_last_requests():
    spend(LOG, "s", 2, now=HOUR)
    spend(LOG, "s", 2, now=HOUR + 7200)
    with db.transaction() as session:
        row = session.get(RateLimitLog, "test-log:s")
    stamps = [int(row.stamps[at:at + 13]) for at in range(0, 39, 13)]
    assert sorted(stamps) == [HOUR * 1000 + 0, (HOUR + 7200) * 1000, (HOUR + 7200) * 1000]
    assert row.head == 1


def test_a_changed_limit_starts_its_log_afresh():
    spend(LOG, "s", 3, now=HOUR)
    larger = ratelimit.Limit("test-log", 5, 3600)
    assert spend(larger, "s", 5, now=HOUR + 1).remaining == 0
    assert spend(larger, "s", 1, now=HOUR + 2).exceeded


def test_the_request_limit_is_exact_at_its_default():
    assert ratelimit.api_requests().exact


def test_reset_names_when_one_more_than_the_remaining_ones_would_pass():
    usage = spend(LOG, "s", 1, now=HOUR + 100)
    assert (usage.remaining, usage.reset) == (2, HOUR + 3700)


def test_take_back_uncounts_the_latest(counters):
    spend(LOG, "s", 3, now=HOUR)
    spend(COUNTER, "s", 10, now=MINUTE)
    with db.transaction() as session:
        ratelimit.take_back(session, LOG, "s", now=HOUR)
        ratelimit.take_back(session, COUNTER, "s", now=MINUTE)
    assert not spend(LOG, "s", 1, now=HOUR).exceeded
    assert not spend(COUNTER, "s", 1, now=MINUTE).exceeded


def test_a_take_back_that_is_not_effective_changes_nothing(counters):
    """The same statement on the same row, for callers whose work must not tell a secret."""
    spend(LOG, "s", 3, now=HOUR)
    spend(COUNTER, "s", 10, now=MINUTE)
    with db.transaction() as session:
        ratelimit.take_back(session, LOG, "s", now=HOUR, effective=False)
        ratelimit.take_back(session, COUNTER, "s", now=MINUTE, effective=False)
    assert spend(LOG, "s", 1, now=HOUR).exceeded
    assert spend(COUNTER, "s", 1, now=MINUTE).exceeded


def test_forget_drops_a_subject_only():
    spend(LOG, "s", 3, now=HOUR)
    spend(LOG, "t", 3, now=HOUR)
    with db.transaction() as session:
        ratelimit.forget(session, LOG, "s")
    assert not spend(LOG, "s", 1, now=HOUR).exceeded
    assert spend(LOG, "t", 1, now=HOUR).exceeded


def test_usage_raise_if_exceeded_names_the_limit():
    usage = spend(ratelimit.sends_per_key(), "s", 11, now=HOUR)
    with pytest.raises(Exception) as caught:
        usage.raise_if_exceeded("e-mails")
    assert caught.value.code == "rate_limited"
    assert "10 e-mails per hour" in caught.value.detail


def test_purge_removes_what_no_limit_reads_any_more(monkeypatch):
    current = time.time()
    spend(LOG, "old", 1, now=current - 3601)
    spend(LOG, "new", 1, now=current - 3599)
    monkeypatch.setattr(ratelimit, "EXACT_MAX", 5)  # COUNTER was counted in the log so far
    spend(COUNTER, "old", 1, now=current - 3 * 3600)
    spend(COUNTER, "new", 1, now=current)
    with db.transaction() as session:
        ratelimit.purge_old(session, now=current)
    with db.transaction() as session:
        assert list(session.exec(select(RateLimitWindow.bucket))) == ["test-counter:new"]
        assert list(session.exec(select(RateLimitLog.bucket))) == ["test-log:new"]


def test_limits_above_the_exact_maximum_use_the_counter():
    assert not ratelimit.Limit("large", ratelimit.EXACT_MAX + 1, 60).exact


def test_huge_limits_do_not_overflow_the_arithmetic():
    huge = ratelimit.Limit("huge", 2_000_000_000, 3600)
    assert spend(huge, "s", 3, now=HOUR + 1800).remaining == 2_000_000_000 - 3


# --- settings ---------------------------------------------------------------------------------

def test_the_request_limit_is_an_operator_setting(tenant, clock, monkeypatch):
    monkeypatch.setattr(get_settings(), "rate_limit_requests", 3)
    assert statuses(tenant, 4) == [200, 200, 200, 429]


def test_the_send_limit_is_an_operator_setting(monkeypatch):
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


def test_retry_after_rounds_up(tenant, clock):
    spend(ratelimit.api_requests(), key_subject(tenant), 120, now=MINUTE + 30.4)
    clock.at(MINUTE + 30.9)
    refused = tenant.get("/customers")
    assert refused.headers["retry-after"] == "60"  # 59.5 seconds
    assert refused.headers["ratelimit-reset"] == str(MINUTE + 91)
