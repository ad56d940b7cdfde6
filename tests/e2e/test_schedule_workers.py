"""Schedules run by real `invoicing worker` processes: three workers racing on PostgreSQL make exactly
one invoice per period; a worker killed with SIGKILL mid-run and restarted leaves no gap and no double.

The schedules are made through the API, then set back in the database as if the workers had been down
for weeks, so each has several missed periods to catch up, oldest first."""

from __future__ import annotations

import time
from collections import defaultdict
from datetime import timedelta

import pytest
from sqlalchemy import update
from sqlmodel import select

from core.base import db, ids
from core.base.clock import now
from core.models import Invoice, InvoiceSchedule, ScheduleRun
from tests.api.invoicing import adhoc
from tests.conftest import make_tenant
from tests.e2e.conftest import wait_for
from tests.e2e.test_multiprocess import api, on_postgresql, postgresql_only  # noqa: F401 (the mark reads it)

PERIODS = 5  # missed periods per schedule


def missed_schedules(origin: str, key: str, count: int) -> list[str]:
    """`count` weekly schedules, each `PERIODS` weeks behind."""
    made = []
    with api(origin, key) as client:
        customer = client.post("/customers", json={"name": "Globex", "email": "ap@globex.example"}).json()["data"]
        for number in range(count):
            body = {"customer": customer["id"], "invoice": {"items": [adhoc("Retainer", 10000 + number)],
                                                            "currency": "EUR"},
                    "recurrence": {"interval": "week", "start_date": now().date().isoformat(), "count": PERIODS},
                    "time_zone": "UTC"}
            response = client.post("/invoice-schedules", json=body, headers={"Idempotency-Key": f"s{number}"})
            assert response.status_code == 201, response.text
            made.append(response.json()["data"]["id"])
    start = (now() - timedelta(weeks=PERIODS)).date()
    with db.transaction() as session:
        for schedule_id in made:
            schedule = session.get(InvoiceSchedule, ids.parse("invoice_schedule", schedule_id))
            schedule.recurrence = {**schedule.recurrence, "start_date": start.isoformat(), "run_at": "00:00"}
            schedule.next_run_at = now() - timedelta(weeks=PERIODS)
            session.add(schedule)
    return made


def periods_made(account_id) -> int:
    with db.transaction() as session:
        return len(session.exec(select(ScheduleRun.id).where(ScheduleRun.account_id == account_id)).all())


def assert_each_period_once(account_id, schedule_ids: list[str]) -> None:
    with db.transaction() as session:
        runs = session.exec(select(ScheduleRun).where(ScheduleRun.account_id == account_id)).all()
        invoices = session.exec(select(Invoice).where(Invoice.account_id == account_id)).all()
    by_schedule = defaultdict(list)
    for run in runs:
        by_schedule[ids.public_id("invoice_schedule", run.schedule_id)].append(run)
    for schedule_id in schedule_ids:
        assert sorted(run.period_index for run in by_schedule[schedule_id]) == list(range(PERIODS)), schedule_id
    assert len(invoices) == len(runs) == PERIODS * len(schedule_ids)
    assert {invoice.id for invoice in invoices} == {run.invoice_id for run in runs}
    periods = [(invoice.schedule_id, invoice.period_start) for invoice in invoices]
    assert len(set(periods)) == len(periods)  # no period billed twice


@postgresql_only
def test_three_workers_racing_make_exactly_one_invoice_per_period(live_server_factory):
    [origin] = live_server_factory.start_many(1)  # a server alone (uvicorn): no worker of its own
    tenant = make_tenant(None)
    schedule_ids = missed_schedules(origin, tenant.key, 12)
    for _ in range(3):
        live_server_factory.start_worker()
    wait_for(lambda: periods_made(tenant.account_id) >= PERIODS * len(schedule_ids), timeout=120)
    time.sleep(6)  # a pass more of every worker: anything made twice would be there by now
    assert_each_period_once(tenant.account_id, schedule_ids)
    with db.transaction() as session:
        statuses = set(session.exec(select(InvoiceSchedule.status).where(InvoiceSchedule.account_id == tenant.account_id)))
    assert statuses == {"completed"}


def test_a_worker_killed_mid_run_and_restarted_leaves_no_gap_and_no_double(live_server_factory):
    [origin] = live_server_factory.start_many(1)  # a server alone (uvicorn): no worker of its own
    tenant = make_tenant(None)
    schedule_ids = missed_schedules(origin, tenant.key, 30)
    total = PERIODS * len(schedule_ids)
    live_server_factory.start_worker()
    worker, _log = live_server_factory.processes[-1]
    wait_for(lambda: periods_made(tenant.account_id) >= 10, timeout=120)
    worker.kill()  # SIGKILL: no graceful stop, whatever it was doing
    worker.wait(timeout=10)
    assert periods_made(tenant.account_id) < total, "the worker finished before the kill: make the load larger"
    live_server_factory.start_worker()
    wait_for(lambda: periods_made(tenant.account_id) >= total, timeout=180)
    time.sleep(6)
    assert_each_period_once(tenant.account_id, schedule_ids)


@pytest.fixture(autouse=True)
def _no_schedules_left():
    yield
    with db.transaction() as session:  # the module's servers keep running: leave no due schedule behind
        session.exec(update(InvoiceSchedule).values(status="cancelled", next_run_at=None))
