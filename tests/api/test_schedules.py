"""Invoice schedules through REST and the worker's job with its clock driven: one invoice per period,
in order, whatever runs and however late; the recurrence's edges (the 31st, daylight saving); failures
recorded, retried and pausing; pause, resume, cancel and run now."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlmodel import select

from core.base import db
from core.models import Invoice
from core.schedules import runs
from tests.api.invoicing import adhoc, customer

ITEMS = [adhoc("Retainer", 250000)]


def schedule_of(tenant, *, recurrence: dict | None = None, customer_id: str | None = None, **fields):
    body = {"customer": customer_id or customer(tenant)["id"], "invoice": {"items": ITEMS, "currency": "EUR"},
            "recurrence": {"interval": "month", "start_date": "2027-01-01", **(recurrence or {})},
            "time_zone": "Europe/Berlin", **fields}
    return tenant.post("/invoice-schedules", json=body, idem=True)


def created(tenant, **kw) -> dict:
    response = schedule_of(tenant, **kw)
    assert response.status_code == 201, response.text
    return response.json()["data"]


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def run_at(moment: datetime) -> runs.Pass:
    return runs.run_due(clock=lambda: moment)


def made(tenant, schedule_id: str) -> list[dict]:
    rows = tenant.get(f"/invoice-schedules/{schedule_id}/runs?limit=100").json()["data"]
    return sorted(rows, key=lambda row: row["period_index"])


def schedule_now(tenant, schedule_id: str) -> dict:
    response = tenant.get(f"/invoice-schedules/{schedule_id}")
    assert response.status_code == 200, response.text
    return response.json()["data"]


def test_a_new_schedule_runs_first_at_its_start_date_in_its_time_zone(tenant):
    schedule = created(tenant, recurrence={"count": 12})
    assert schedule["id"].startswith("sched_") and schedule["object"] == "invoice_schedule"
    assert (schedule["status"], schedule["mode"], schedule["time_zone"]) == ("active", "draft", "Europe/Berlin")
    assert schedule["next_run"] == "2027-01-01T07:00:00.000Z"  # 08:00 in Berlin, winter time
    assert schedule["next_period"] == {"start": "2027-01-01", "end": "2027-01-31"}
    assert schedule["summary"] == "on the 1st of every month, from 2027-01-01, 12 times"
    assert (schedule["invoices_made"], schedule["periods_remaining"]) == (0, 12)


def test_a_year_of_monthly_runs_makes_twelve_invoices_one_per_period(tenant):
    schedule = created(tenant, recurrence={"count": 12})
    day = at("2027-01-01T06:00:00+00:00")
    for _ in range(400):  # every day of the year and more, twice a day
        run_at(day)
        run_at(day + timedelta(hours=12))
        day += timedelta(days=1)
    rows = made(tenant, schedule["id"])
    assert [row["period"]["start"][:7] for row in rows] == [f"2027-{month:02}" for month in range(1, 13)]
    assert all(row["status"] == "invoiced" for row in rows)
    after = schedule_now(tenant, schedule["id"])
    assert (after["status"], after["invoices_made"], after["next_run"]) == ("completed", 12, None)
    with db.transaction() as session:
        invoices = session.exec(select(Invoice).where(Invoice.account_id == tenant.account_id)).all()
    assert len(invoices) == 12 and all(invoice.status == "draft" for invoice in invoices)


def test_the_invoice_names_its_schedule_and_period_and_is_issued_on_the_run_day(tenant):
    schedule = created(tenant, recurrence={"count": 2}, invoice={"items": ITEMS, "currency": "EUR",
                                                                  "days_until_due": 14})
    run_at(at("2027-01-01T07:00:00+00:00"))
    invoice_id = made(tenant, schedule["id"])[0]["invoice"]
    invoice = tenant.get(f"/invoices/{invoice_id}").json()["data"]
    assert invoice["schedule"] == schedule["id"]
    assert invoice["period"] == {"start": "2027-01-01", "end": "2027-01-31"}
    assert (invoice["issue_date"], invoice["due_date"], invoice["total"]) == ("2027-01-01", "2027-01-15", 250000)


def test_the_31st_runs_on_the_last_day_of_shorter_months(tenant):
    schedule = created(tenant, recurrence={"start_date": "2027-01-31", "count": 4})
    moment = at("2027-01-31T12:00:00+00:00")
    while moment < at("2027-05-15T00:00:00+00:00"):
        run_at(moment)
        moment += timedelta(days=1)
    assert [row["period"]["start"] for row in made(tenant, schedule["id"])] == [
        "2027-01-31", "2027-02-28", "2027-03-31", "2027-04-30"]


def test_not_yet_due_makes_nothing_and_the_same_moment_twice_makes_one(tenant):
    schedule = created(tenant)
    assert run_at(at("2027-01-01T06:59:59+00:00")).made == []
    assert len(run_at(at("2027-01-01T07:00:00+00:00")).made) == 1
    assert run_at(at("2027-01-01T07:00:00+00:00")).made == []
    assert len(made(tenant, schedule["id"])) == 1
