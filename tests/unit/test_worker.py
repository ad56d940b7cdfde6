"""The periodic-job runner behind `invoicing worker` and the in-process worker of `serve`."""

import logging
import threading
import time
import uuid
from datetime import timedelta

import pytest
from sqlmodel import select

from core.access import accounts
from core.base import db
from core.base.clock import now
from core.models import IdempotencyRecord, RateLimitLog, RateLimitWindow, SignInChallenge, WorkerHeartbeat
from service import worker


def counting_job(name="count", interval=0.01, *, fail_first=0):
    runs = []

    def function():
        runs.append(time.monotonic())
        if len(runs) <= fail_first:
            raise RuntimeError("boom")

    return worker.Job(name, interval, function), runs


def run_until(stop_event, jobs, condition, timeout=5.0):
    thread = threading.Thread(target=worker.run_forever, args=(stop_event, jobs), daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)
    stop_event.set()
    thread.join(timeout)
    assert not thread.is_alive()


def test_run_once_runs_every_job_once():
    first, first_runs = counting_job("first")
    second, second_runs = counting_job("second")
    assert worker.run_once([first, second]) == {"first": True, "second": True}
    assert (len(first_runs), len(second_runs)) == (1, 1)


def test_a_failing_job_is_logged_and_the_others_still_run(caplog):
    failing, _ = counting_job("failing", fail_first=1)
    healthy, healthy_runs = counting_job("healthy")
    with caplog.at_level(logging.ERROR, logger="invoicing.worker"):
        assert worker.run_once([failing, healthy]) == {"failing": False, "healthy": True}
    assert len(healthy_runs) == 1
    assert "'failing' failed" in caplog.text and "RuntimeError: boom" in caplog.text


def test_run_forever_repeats_a_job_at_its_interval():
    job, runs = counting_job(interval=0.01)
    run_until(threading.Event(), [job], lambda: len(runs) >= 3)
    assert len(runs) >= 3
    assert all(later - earlier >= 0.009 for earlier, later in zip(runs, runs[1:], strict=False))


def test_run_forever_goes_on_after_a_job_raises():
    job, runs = counting_job(interval=0.01, fail_first=2)
    run_until(threading.Event(), [job], lambda: len(runs) >= 4)
    assert len(runs) >= 4


def test_run_forever_waits_for_the_interval_of_a_slow_job():
    job, runs = counting_job(interval=3600)
    run_until(threading.Event(), [job], lambda: False, timeout=0.2)
    assert len(runs) == 1


def test_run_forever_returns_at_once_when_already_stopped():
    job, runs = counting_job()
    stop = threading.Event()
    stop.set()
    started = time.monotonic()
    worker.run_forever(stop, [job])
    assert time.monotonic() - started < 1 and runs == []


def test_setting_the_stop_event_ends_a_sleeping_worker_promptly():
    job, runs = counting_job(interval=3600)
    stop = threading.Event()
    thread = threading.Thread(target=worker.run_forever, args=(stop, [job]), daemon=True)
    thread.start()
    while not runs:
        time.sleep(0.005)
    stop.set()
    thread.join(2)
    assert not thread.is_alive()


def test_a_job_refuses_a_non_positive_interval():
    with pytest.raises(ValueError):
        worker.Job("never", 0, lambda: None)


def test_default_jobs_include_cleanup():
    assert "cleanup" in [job.name for job in worker.default_jobs()]


def test_default_jobs_are_named_once_each():
    names = [job.name for job in worker.default_jobs()]
    assert sorted(names) == sorted(set(names)) == ["cleanup", "oauth-cleanup", "reminders", "schedules", "webhook-delivery"]


def make_account_id() -> uuid.UUID:
    with db.transaction() as session:
        _, account = accounts.create_account(session, email=f"w-{uuid.uuid4().hex[:8]}@example.com",
                                             password="correct horse battery")
    return account.id


def idempotency_record(account_id, key, created_at):
    return IdempotencyRecord(account_id=account_id, method="POST", path="/customers", key=key,
                             request_hash="0" * 64, state="done", locked_until=created_at,
                             created_at=created_at)


def test_cleanup_purges_idempotency_records_older_than_24_hours():
    account_id = make_account_id()
    with db.transaction() as session:
        session.add(idempotency_record(account_id, "old", now() - timedelta(hours=25)))
        session.add(idempotency_record(account_id, "fresh", now() - timedelta(hours=23)))
    worker.cleanup()
    with db.transaction() as session:
        assert [r.key for r in session.exec(select(IdempotencyRecord))] == ["fresh"]


def test_cleanup_purges_rate_limit_counts_no_limit_reads():
    current = int(time.time())
    with db.transaction() as session:
        session.add(RateLimitWindow(bucket="api:old", window_start=current - 3 * 3600, count=5))
        session.add(RateLimitWindow(bucket="api:new", window_start=current - 60, count=5))
        session.add(RateLimitLog(bucket="send:old", stamps="", expires_at=(current - 1) * 1000))
        session.add(RateLimitLog(bucket="send:new", stamps="", expires_at=(current + 60) * 1000))
    worker.cleanup()
    with db.transaction() as session:
        assert [w.bucket for w in session.exec(select(RateLimitWindow))] == ["api:new"]
        assert [log.bucket for log in session.exec(select(RateLimitLog))] == ["send:new"]


def test_cleanup_purges_sign_in_challenges_past_their_time():
    with db.transaction() as session:
        for name, expires in (("old", now() - timedelta(seconds=1)), ("live", now() + timedelta(minutes=5))):
            session.add(SignInChallenge(token_hash=name, account_subject="s", code_hash="c",
                                        email_hint="h", expires_at=expires))
    worker.cleanup()
    with db.transaction() as session:
        assert [c.token_hash for c in session.exec(select(SignInChallenge))] == ["live"]


@pytest.mark.parametrize(("env", "requested"), [
    ({}, False), ({"OTEL_TRACES_EXPORTER": "none"}, False), ({"OTEL_TRACES_EXPORTER": "console"}, True),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"}, False),
])
def test_tracing_is_a_no_op_unless_an_exporter_is_named(monkeypatch, env, requested):
    from service import tracing
    for name in ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                 "OTEL_SDK_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert tracing.requested() is requested


def heartbeat_of(worker_id: str) -> WorkerHeartbeat | None:
    with db.transaction() as session:
        return session.get(WorkerHeartbeat, worker_id)


def run_worker_until(worker_id: str, jobs, condition) -> None:
    stop = threading.Event()
    thread = threading.Thread(target=worker.run_forever, args=(stop, jobs), kwargs={"worker_id": worker_id},
                              daemon=True)
    thread.start()
    deadline = time.monotonic() + 5
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    thread.join(5)


def test_a_worker_whose_jobs_succeed_writes_its_heartbeat():
    job, runs = counting_job()
    run_worker_until("host:1", [job], lambda: heartbeat_of("host:1") is not None)
    assert heartbeat_of("host:1").last_success_at > now() - timedelta(seconds=10)


def test_a_worker_whose_last_job_failed_writes_no_heartbeat():
    job, runs = counting_job(fail_first=1000)
    run_worker_until("host:2", [job], lambda: len(runs) >= 3)
    assert heartbeat_of("host:2") is None


def test_cleanup_forgets_workers_gone_for_a_day():
    with db.transaction() as session:
        session.add(WorkerHeartbeat(worker_id="gone:1", last_success_at=now() - timedelta(days=2)))
        session.add(WorkerHeartbeat(worker_id="here:1", last_success_at=now()))
    worker.cleanup()
    assert heartbeat_of("gone:1") is None and heartbeat_of("here:1") is not None
