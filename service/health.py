"""Probes for load balancers and orchestrators: `/healthz` (the process answers) and `/readyz` (it
can serve: the database answers, its schema is this code's or newer, the in-process worker has run
recently, and that schedules' runs are not over 10 minutes behind with no worker running at all).
Unauthenticated, cheap, never cached, outside every rate limit."""

from __future__ import annotations

import logging
import os
from datetime import timedelta
from functools import cache

from alembic.script import ScriptDirectory
from sqlalchemy import func, select, text
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from core.base.clock import now
from core.base.db import get_engine
from core.models import InvoiceSchedule, WorkerHeartbeat
from service.migrate import alembic_config

log = logging.getLogger("invoicing.health")
# Set by `invoicing serve` for its processes when it runs the background work in-process.
IN_PROCESS_WORKER = "INVOICING_IN_PROCESS_WORKER"
# The worker beats every 10 s while its jobs succeed; this allows a slow job or two.
WORKER_STALE_AFTER = timedelta(seconds=120)
# Schedules' runs are made within seconds of their time by any worker; this far behind, none is keeping up.
SCHEDULES_BEHIND_AFTER = timedelta(minutes=10)
NO_STORE = {"Cache-Control": "no-store"}


@cache
def _known_revisions() -> tuple[str, frozenset[str]]:
    """This code's newest migration and every migration it knows."""
    scripts = ScriptDirectory.from_config(alembic_config())
    return scripts.get_current_head(), frozenset(script.revision for script in scripts.walk_revisions())


def check_schema(revision: str | None) -> str | None:
    """None when the database's schema is this code's, or newer (migrations run before new code
    during an upgrade, and stay compatible with the code before); else what is wrong."""
    head, known = _known_revisions()
    if revision == head or (revision is not None and revision not in known):
        return None
    return f"database schema at {revision or 'nothing'}, this code needs {head}: run `invoicing db upgrade`"


def _checks() -> dict[str, str]:
    checks: dict[str, str] = {}
    worker_id = os.environ.get(IN_PROCESS_WORKER)
    try:
        with Session(get_engine()) as session:
            revision = session.execute(text("SELECT version_num FROM alembic_version")).scalar()
            beat = session.get(WorkerHeartbeat, worker_id) if worker_id else None
            behind, oldest = session.execute(select(func.count(), func.min(InvoiceSchedule.next_run_at)).where(
                InvoiceSchedule.status == "active",
                InvoiceSchedule.next_run_at < now() - SCHEDULES_BEHIND_AFTER)).one()
            # A backlog a worker is working through (a schedule resumed after a year) is no fault.
            working = behind and session.execute(select(func.max(WorkerHeartbeat.last_success_at))).scalar()
    except Exception as exc:  # any database failure is "not ready", never a 500
        log.warning("readiness: database unavailable: %s", exc.__class__.__name__)
        return {"database": f"unavailable ({exc.__class__.__name__})"}
    checks["database"] = "ok"
    checks["migrations"] = check_schema(revision) or "ok"
    alive = behind and working is not None and now() - working <= WORKER_STALE_AFTER
    checks["schedules"] = "ok" if not behind or alive else (
        f"{behind} schedule run(s) behind, the oldest due since {oldest.isoformat()}, and no worker has run "
        "lately: start `invoicing worker`")
    if worker_id:
        last = beat.last_success_at if beat else None
        fresh = last is not None and now() - last <= WORKER_STALE_AFTER
        checks["worker"] = "ok" if fresh else (
            f"no successful run since {last.isoformat()}" if last else "no successful run yet")
    return checks


async def healthz(_request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"}, headers=NO_STORE)


async def readyz(_request: Request) -> JSONResponse:
    checks = await run_in_threadpool(_checks)
    ready = all(result == "ok" for result in checks.values())
    return JSONResponse({"status": "ready" if ready else "not ready", "checks": checks},
                        status_code=200 if ready else 503, headers=NO_STORE)


def routes() -> list[Route]:
    return [Route("/healthz", healthz, methods=["GET", "HEAD"]), Route("/readyz", readyz, methods=["GET", "HEAD"])]
