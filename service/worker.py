"""Background work: periodic jobs run by `invoicing worker` and by `invoicing serve` in-process.

A job is a plain function that opens its own transactions. To add one, call `register(...)` at
import time in your module and list the module in JOB_MODULES, which `default_jobs()` imports.
Several processes may run the jobs at once (a worker per server, or a separate `invoicing worker`),
so a job must be safe to run concurrently with itself.
"""

from __future__ import annotations

import importlib
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from core import idempotency, ratelimit
from core.db import transaction

log = logging.getLogger("invoicing.worker")

# Modules that register jobs when imported. One that does not exist (yet) is skipped.
JOB_MODULES: tuple[str, ...] = ("service.delivery", "authz.cleanup")

CLEANUP_INTERVAL_SECONDS = 300.0
# Upper bound of one sleep, so a job registered with a long interval never delays shutdown checks.
MAX_SLEEP_SECONDS = 60.0


@dataclass(frozen=True)
class Job:
    name: str
    interval_seconds: float
    function: Callable[[], object]


_jobs: dict[str, Job] = {}


def register(name: str, interval_seconds: float, function: Callable[[], object]) -> Job:
    """Add (or replace, by name) a job run every `interval_seconds` after its previous run ends."""
    if interval_seconds <= 0:
        raise ValueError("interval_seconds must be positive")
    job = Job(name, float(interval_seconds), function)
    _jobs[name] = job
    return job


def cleanup() -> None:
    """Forget idempotency records past their 24 hours and rate-limit windows long closed."""
    with transaction() as session:
        idempotency.purge_expired(session)
        ratelimit.purge_old(session)


register("cleanup", CLEANUP_INTERVAL_SECONDS, cleanup)


def default_jobs() -> list[Job]:
    for module in JOB_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:  # the module exists but is broken: say so
                raise
    return list(_jobs.values())


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


def run_forever(stop_event: threading.Event, jobs: Iterable[Job] | None = None) -> None:
    """Run each job at its interval (first runs at once) until `stop_event` is set."""
    jobs = default_jobs() if jobs is None else list(jobs)
    log.info("Background worker started: %s", ", ".join(job.name for job in jobs) or "no jobs")
    next_run = {job.name: time.monotonic() for job in jobs}
    while not stop_event.is_set():
        for job in jobs:
            if stop_event.is_set():
                break
            if time.monotonic() >= next_run[job.name]:
                run_job(job)
                next_run[job.name] = time.monotonic() + job.interval_seconds
        soonest = min(next_run.values(), default=time.monotonic() + MAX_SLEEP_SECONDS)
        stop_event.wait(min(MAX_SLEEP_SECONDS, max(0.0, soonest - time.monotonic())))
    log.info("Background worker stopped.")


def start_in_thread(stop_event: threading.Event) -> threading.Thread:
    """The in-process worker of `invoicing serve`: a daemon thread running the default jobs."""
    thread = threading.Thread(target=run_forever, args=(stop_event,), name="invoicing-worker", daemon=True)
    thread.start()
    return thread


def stop_on_signals(stop_event: threading.Event) -> None:
    """SIGTERM and SIGINT set `stop_event` (the loop finishes its current job, then returns)."""
    def handle(signum, _frame):
        log.info("Received %s: stopping.", signal.Signals(signum).name)
        stop_event.set()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
