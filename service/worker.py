"""Background work: periodic jobs run by `invoicing worker` and by `invoicing serve` in-process.

A job is a plain function that opens its own transactions. To add one, add it to `default_jobs()`
with a real function reference. Several processes may run the jobs at once (a worker per server,
or a separate `invoicing worker`), so a job must be safe to run concurrently with itself.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import delete

from authz import cleanup as oauth_cleanup
from authz import connected_apps
from core.access import sign_in
from core.base.clock import now
from core.base.db import transaction
from core.documents import e_invoice_exports
from core.mechanisms import change_feed, idempotency, ratelimit, single_use
from core.models import McpConfirmation, McpTask, WorkerHeartbeat
from core.schedules import acting, reminders
from core.schedules import runs as schedule_runs
from core.webhooks import delivery

log = logging.getLogger("invoicing.worker")

CLEANUP_INTERVAL_SECONDS = 300.0
HEARTBEAT_SECONDS = 10.0  # how often a healthy worker says so (readiness allows several missed)
FORGET_WORKERS_AFTER = timedelta(days=1)
# Upper bound of one sleep, so a job registered with a long interval never delays shutdown checks.
MAX_SLEEP_SECONDS = 60.0


@dataclass(frozen=True)
class Job:
    name: str
    interval_seconds: float
    function: Callable[[], object]

    def __post_init__(self) -> None:
        if self.interval_seconds <= 0:
            raise ValueError("interval_seconds must be positive")


def cleanup() -> None:
    """Forget idempotency records past their 24 hours, rate-limit counts no limit reads any more,
    sign-in challenges and spent single-use tokens past their time, and the heartbeats of workers gone for a day."""
    with transaction() as session:
        idempotency.purge_expired(session)
        ratelimit.purge_old(session)
        sign_in.purge_expired(session)
        single_use.purge_spent(session)
        change_feed.purge(session)  # changes past 5 minutes, listen streams no process refreshes
        e_invoice_exports.purge_expired(session)
        session.exec(delete(McpConfirmation).where(McpConfirmation.expires_at <= now()))
        session.exec(delete(McpTask).where(McpTask.expires_at <= now()))
        session.exec(delete(WorkerHeartbeat).where(WorkerHeartbeat.last_success_at < now() - FORGET_WORKERS_AFTER))


def this_worker() -> str:
    """This process's worker id in `worker_heartbeats`: host and process id."""
    return f"{socket.gethostname()}:{os.getpid()}"


def beat(worker_id: str) -> None:
    """Note that `worker_id` has just run its due jobs without a failure."""
    with transaction() as session:
        session.merge(WorkerHeartbeat(worker_id=worker_id, last_success_at=now()))


def default_jobs() -> list[Job]:
    """Every background job of the service (the schedules' runs find an OAuth app's grant through the
    authorization server: wired here, as `service.app` wires it for the requests)."""
    acting.register_grant_lookup(connected_apps.acting_principal)
    return [
        Job("cleanup", CLEANUP_INTERVAL_SECONDS, cleanup),
        Job("webhook-delivery", delivery.POLL_SECONDS, delivery.deliver_due),
        Job("oauth-cleanup", oauth_cleanup.INTERVAL_SECONDS, oauth_cleanup.cleanup),
        Job("schedules", schedule_runs.POLL_SECONDS, schedule_runs.run_due),
        Job("reminders", reminders.POLL_SECONDS, reminders.run),
    ]


def run_job(job: Job) -> bool:
    """Run one job; a failure is logged, never raised, so the other jobs go on."""
    try:
        job.function()
    except Exception:
        log.exception("Background job %r failed; it will run again in %g s.", job.name, job.interval_seconds)
        return False
    return True


def run_once(jobs: Iterable[Job] | None = None) -> dict[str, bool]:
    """Run every job once now; returns whether each succeeded."""
    return {job.name: run_job(job) for job in (default_jobs() if jobs is None else jobs)}


def run_forever(stop_event: threading.Event, jobs: Iterable[Job] | None = None, *,
                worker_id: str | None = None) -> None:
    """Run each job at its interval (first runs at once) until `stop_event` is set. While the last
    run of every job succeeded, the worker's heartbeat is written every HEARTBEAT_SECONDS."""
    jobs = default_jobs() if jobs is None else list(jobs)
    worker_id = worker_id or this_worker()
    log.info("Background worker started: %s (worker %s)", ", ".join(job.name for job in jobs) or "no jobs", worker_id)
    next_run = {job.name: time.monotonic() for job in jobs}
    succeeded: dict[str, bool] = {}
    last_beat = -HEARTBEAT_SECONDS
    while not stop_event.is_set():
        for job in jobs:
            if stop_event.is_set():
                break
            if time.monotonic() >= next_run[job.name]:
                succeeded[job.name] = run_job(job)
                next_run[job.name] = time.monotonic() + job.interval_seconds
        if all(succeeded.values()) and time.monotonic() - last_beat >= HEARTBEAT_SECONDS:
            last_beat = time.monotonic()
            try:
                beat(worker_id)
            except Exception:
                log.warning("Could not write the heartbeat of worker %s.", worker_id, exc_info=True)
        soonest = min(next_run.values(), default=time.monotonic() + MAX_SLEEP_SECONDS)
        stop_event.wait(min(MAX_SLEEP_SECONDS, max(0.0, soonest - time.monotonic())))
    log.info("Background worker stopped.")


def start_in_thread(stop_event: threading.Event, worker_id: str) -> threading.Thread:
    """The in-process worker of `invoicing serve`: a daemon thread running the default jobs."""
    thread = threading.Thread(target=run_forever, args=(stop_event,), kwargs={"worker_id": worker_id},
                              name="invoicing-worker", daemon=True)
    thread.start()
    return thread


def stop_on_signals(stop_event: threading.Event) -> None:
    """SIGTERM and SIGINT set `stop_event` (the loop finishes its current job, then returns)."""
    def handle(signum, _frame):
        log.info("Received %s: stopping.", signal.Signals(signum).name)
        stop_event.set()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
