"""Invoice schedules through REST and the worker's job with its clock driven: one invoice per period,
in order, whatever runs and however late; the recurrence's edges (the 31st, daylight saving); failures
recorded, retried and pausing; pause, resume, cancel and run now."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import delete, select

from core.base import db
from core.models import Invoice, InvoiceEvent, RateLimitLog, RateLimitWindow
from core.schedules import runs
from tests.api.invoicing import adhoc, customer
from tests.members import join
from tests.smtp import mail_settings, smtp_server

ITEMS = [adhoc("Retainer", 250000)]


@pytest.fixture
def mailbox():
    """A working SMTP server that the service sends through."""
    with smtp_server() as (handler, url), mail_settings(smtp_url=url):
        yield handler


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


# --- catching up, time zones and daylight saving ---------------------------------------------------


def test_a_worker_down_for_months_makes_each_missed_period_once_in_order(tenant):
    schedule = created(tenant)
    back = at("2027-04-15T12:00:00+00:00")
    passes = [len(run_at(back).made) for _ in range(6)]
    assert passes == [1, 1, 1, 1, 0, 0]  # one period per pass: the worker's other jobs keep their turn
    rows = made(tenant, schedule["id"])
    assert [row["period"]["start"] for row in rows] == ["2027-01-01", "2027-02-01", "2027-03-01", "2027-04-01"]
    invoices = [tenant.get(f"/invoices/{row['invoice']}").json()["data"] for row in rows]
    assert {invoice["issue_date"] for invoice in invoices} == {"2027-04-15"}  # issued when made
    assert schedule_now(tenant, schedule["id"])["next_run"] == "2027-05-01T06:00:00.000Z"  # summer time


def test_catch_up_latest_skips_the_older_missed_periods(tenant):
    schedule = created(tenant, catch_up="latest")
    back = at("2027-04-15T12:00:00+00:00")
    assert len(run_at(back).made) == 1
    assert run_at(back).made == []
    rows = made(tenant, schedule["id"])
    assert [(row["period"]["start"], row["status"]) for row in rows] == [
        ("2027-01-01", "skipped"), ("2027-02-01", "skipped"), ("2027-03-01", "skipped"), ("2027-04-01", "invoiced")]
    assert schedule_now(tenant, schedule["id"])["invoices_made"] == 1


def test_a_clock_stepping_back_runs_nothing_again(tenant):
    schedule = created(tenant)
    run_at(at("2027-01-01T07:00:00+00:00"))
    assert run_at(at("2026-12-31T07:00:00+00:00")).made == []
    assert run_at(at("2027-01-01T07:00:00+00:00")).made == []
    assert len(made(tenant, schedule["id"])) == 1


@pytest.mark.parametrize(("run_time", "expected"), [
    # Spring forward on 28 March 2027 in Berlin: 02:30 does not exist that day and runs at 03:30 summer time.
    ("02:30", ["2027-03-21T01:30:00.000Z", "2027-03-28T01:30:00.000Z", "2027-04-04T00:30:00.000Z"]),
    ("08:00", ["2027-03-21T07:00:00.000Z", "2027-03-28T06:00:00.000Z", "2027-04-04T06:00:00.000Z"]),
])
def test_weekly_runs_across_the_spring_daylight_saving_change_run_once_each_at_local_time(tenant, run_time, expected):
    schedule = created(tenant, recurrence={"interval": "week", "start_date": "2027-03-21", "count": 3,
                                           "run_at": run_time})
    moment = at("2027-03-20T00:00:00+00:00")
    while moment < at("2027-04-06T00:00:00+00:00"):
        run_at(moment)
        moment += timedelta(minutes=30)
    assert [row["scheduled_for"] for row in made(tenant, schedule["id"])] == expected


def test_the_autumn_change_repeats_an_hour_but_the_period_is_made_once(tenant):
    schedule = created(tenant, recurrence={"interval": "week", "start_date": "2027-10-24", "count": 2,
                                           "run_at": "02:30"})
    moment = at("2027-10-30T00:00:00+00:00")
    while moment < at("2027-11-01T00:00:00+00:00"):
        run_at(moment)
        moment += timedelta(minutes=15)
    rows = made(tenant, schedule["id"])
    assert [row["scheduled_for"] for row in rows] == ["2027-10-24T00:30:00.000Z", "2027-10-31T00:30:00.000Z"]  # the first 02:30


def test_the_time_zone_defaults_to_the_business_countrys_main_zone(tenant):
    body = {"customer": customer(tenant)["id"], "invoice": {"items": ITEMS},
            "recurrence": {"interval": "month", "start_date": "2027-01-01"}}
    schedule = tenant.post("/invoice-schedules", json=body, idem=True).json()["data"]
    assert schedule["time_zone"] == "Europe/London"  # the business is in the United Kingdom (GB)


# --- failures ----------------------------------------------------------------------------------------


def schedule_events(schedule_id: str, account_id) -> list[tuple[str, dict]]:
    from core.base import ids
    with db.transaction() as session:
        rows = session.exec(select(InvoiceEvent).where(
            InvoiceEvent.account_id == account_id,
            InvoiceEvent.invoice_id == ids.parse("invoice_schedule", schedule_id))
            .order_by(InvoiceEvent.created_at)).all()
    return [(row.type, row.meta or {}) for row in rows]


def test_a_run_for_an_archived_customer_fails_is_retried_then_pauses_the_schedule(tenant):
    cus = customer(tenant)
    schedule = created(tenant, customer_id=cus["id"], max_attempts=2)
    assert tenant.delete(f"/customers/{cus['id']}").status_code == 200
    first = at("2027-01-01T07:00:00+00:00")
    assert run_at(first).failed == 1
    failed = schedule_now(tenant, schedule["id"])
    assert failed["status"] == "active" and failed["last_failure"]["attempts"] == 1
    assert "archived" in failed["last_failure"]["reason"]
    assert failed["next_run"] == "2027-01-01T08:00:00.000Z"  # an hour later
    assert run_at(first + timedelta(minutes=30)).failed == 0  # not before
    assert run_at(first + timedelta(hours=1)).failed == 1
    paused = schedule_now(tenant, schedule["id"])
    assert paused["status"] == "paused" and "2 attempts failed" in paused["pause_reason"]
    assert run_at(first + timedelta(days=40)).failed == 0  # paused: no loop, no spam
    kinds = [kind for kind, _ in schedule_events(schedule["id"], tenant.account_id)]
    assert kinds == ["invoice_schedule.created", "invoice_schedule.run_failed", "invoice_schedule.run_failed",
                     "invoice_schedule.paused"]
    assert made(tenant, schedule["id"]) == []


def test_a_revoked_key_pauses_its_schedules_at_once(tenant, client):
    key = tenant.key_with(["invoices:write", "invoices:read"])
    body = {"customer": customer(tenant)["id"], "invoice": {"items": ITEMS, "currency": "EUR"},
            "recurrence": {"interval": "month", "start_date": "2027-01-01"}, "time_zone": "Europe/Berlin"}
    response = client.post("/api/v1/invoice-schedules", json=body,
                           headers={"Authorization": f"Bearer {key}", "Idempotency-Key": "k1"})
    assert response.status_code == 201, response.text
    schedule = response.json()["data"]
    assert schedule["created_by"]["actor"] == "api_key"
    with db.transaction() as session:
        from core.models import ApiKey
        row = session.get(ApiKey, uuid.UUID(schedule["created_by"]["api_key_id"]))
        row.revoked_at = datetime.now(UTC)
        session.add(row)
    assert run_at(at("2027-01-01T07:00:00+00:00")).failed == 1
    paused = schedule_now(tenant, schedule["id"])
    assert paused["status"] == "paused" and "revoked" in paused["pause_reason"]
    # Resumed by another credential, it acts as that one from then on.
    resumed = tenant.post(f"/invoice-schedules/{schedule['id']}/resume", idem=True).json()["data"]
    assert resumed["status"] == "active" and resumed["created_by"]["api_key_id"] == str(tenant.key_id)
    assert len(run_at(at("2027-01-01T07:00:00+00:00")).made) == 1


def test_a_scope_lost_since_creation_pauses_at_the_run(tenant, client):
    key = tenant.key_with(["invoices:write", "invoices:read", "invoices:finalize"])
    body = {"customer": customer(tenant)["id"], "invoice": {"items": ITEMS, "currency": "EUR"}, "mode": "finalize",
            "recurrence": {"interval": "month", "start_date": "2027-01-01"}, "time_zone": "Europe/Berlin"}
    headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": "k2"}
    schedule = client.post("/api/v1/invoice-schedules", json=body, headers=headers).json()["data"]
    with db.transaction() as session:
        from core.models import ApiKey
        row = session.get(ApiKey, uuid.UUID(schedule["created_by"]["api_key_id"]))
        row.scopes = ["invoices:write", "invoices:read"]
        session.add(row)
    assert run_at(at("2027-01-01T07:00:00+00:00")).failed == 1
    paused = schedule_now(tenant, schedule["id"])
    assert paused["status"] == "paused" and "invoices:finalize" in paused["pause_reason"]


# --- modes and e-mail --------------------------------------------------------------------------------


def test_finalize_mode_numbers_each_invoice(tenant):
    schedule = created(tenant, mode="finalize", recurrence={"count": 2})
    run_at(at("2027-01-01T07:00:00+00:00"))
    run_at(at("2027-02-01T07:00:00+00:00"))
    invoices = [tenant.get(f"/invoices/{row['invoice']}").json()["data"] for row in made(tenant, schedule["id"])]
    assert [invoice["status"] for invoice in invoices] == ["open", "open"]
    assert all(invoice["number"] for invoice in invoices)


def test_finalize_and_send_emails_each_invoice_once(tenant, mailbox):
    schedule = created(tenant, mode="finalize_and_send", recurrence={"count": 1})
    moment = at("2027-01-01T07:00:00+00:00")
    done = run_at(moment)
    assert len(done.made) == 1 and done.emails_sent == 1
    for _ in range(3):
        run_at(moment + timedelta(minutes=20))
    assert len(mailbox.received) == 1
    row = made(tenant, schedule["id"])[0]
    assert row["email"] == {"status": "sent", "error": None}
    invoice = tenant.get(f"/invoices/{row['invoice']}").json()["data"]
    assert invoice["status"] == "open"
    kinds = [event["type"] for event in tenant.get(f"/invoices/{row['invoice']}/events").json()["data"]]
    assert "invoice.emailed" in kinds


def test_an_email_cap_reached_defers_the_email_until_it_resets(tenant, mailbox):
    from core.mechanisms import ratelimit
    from tests.limits import spend
    spend(ratelimit.emails_per_account(), str(tenant.account_id), 50)
    schedule = created(tenant, mode="finalize_and_send", recurrence={"count": 1})
    moment = at("2027-01-01T07:00:00+00:00")
    done = run_at(moment)
    assert len(done.made) == 1 and done.emails_deferred == 1 and done.emails_sent == 0
    row = made(tenant, schedule["id"])[0]
    assert row["email"]["status"] == "pending" and "e-mails per account" in row["email"]["error"]
    assert mailbox.received == []
    with db.transaction() as session:  # the cap's hour passes
        session.exec(delete(RateLimitWindow))
        session.exec(delete(RateLimitLog))
    later = run_at(moment + timedelta(hours=2))
    assert later.emails_sent == 1 and len(mailbox.received) == 1


def test_an_email_cut_short_is_never_sent_again(tenant, mailbox):
    schedule = created(tenant, mode="finalize_and_send", recurrence={"count": 1})
    moment = at("2027-01-01T07:00:00+00:00")
    with db.transaction() as session:  # a process makes the period and stops as it starts to send
        runs.run_period(session, uuid.UUID(schedule["id"][len("sched_"):]), moment)
    row_id = uuid.UUID(made(tenant, schedule["id"])[0]["id"][len("schrun_"):])
    assert runs._claim(row_id, moment)
    run_at(moment + timedelta(minutes=5))
    assert made(tenant, schedule["id"])[0]["email"]["status"] == "sending"
    run_at(moment + timedelta(minutes=11))
    row = made(tenant, schedule["id"])[0]
    assert row["email"]["status"] == "unknown" and mailbox.received == []
    run_at(moment + timedelta(hours=3))
    assert mailbox.received == []
    assert ("invoice_schedule.run_failed", "email_unknown") in [
        (kind, meta.get("code")) for kind, meta in schedule_events(schedule["id"], tenant.account_id)]


# --- life cycle and refusals --------------------------------------------------------------------------


def test_pause_resume_and_cancel_move_between_states_and_refuse_the_others(tenant):
    schedule = created(tenant)
    path = f"/invoice-schedules/{schedule['id']}"
    assert tenant.post(f"{path}/resume", idem=True).status_code == 409
    paused = tenant.post(f"{path}/pause", json={"reason": "Client away"}, idem=True)
    assert paused.status_code == 200 and paused.json()["data"]["pause_reason"] == "Client away"
    assert paused.json()["data"]["next_run"] is None
    assert run_at(at("2027-01-01T07:00:00+00:00")).made == []
    assert tenant.post(f"{path}/pause", idem=True).status_code == 409
    assert tenant.post(f"{path}/run", idem=True).status_code == 409
    assert tenant.post(f"{path}/resume", idem=True).json()["data"]["status"] == "active"
    cancelled = tenant.post(f"{path}/cancel", idem=True)
    assert cancelled.status_code == 200 and cancelled.json()["data"]["status"] == "cancelled"
    for action in ("pause", "resume", "cancel", "run"):
        assert tenant.post(f"{path}/{action}", idem=True).status_code == 409, action
    assert run_at(at("2027-03-01T07:00:00+00:00")).made == []


@pytest.mark.parametrize("action", ["pause", "cancel"])
def test_a_member_who_may_not_send_cannot_stop_a_schedule_that_sends(tenant, action):
    schedule = created(tenant, mode="finalize_and_send")
    response = join(tenant, "sales").post(f"/invoice-schedules/{schedule['id']}/{action}", idem=True)
    assert response.status_code == 403 and response.json()["role"] == "sales"
    assert schedule_now(tenant, schedule["id"])["status"] == "active"


def test_a_member_who_drafts_pauses_and_cancels_a_schedule_of_drafts(tenant):
    path = f"/invoice-schedules/{created(tenant)['id']}"
    sales = join(tenant, "sales")
    assert sales.post(f"{path}/pause", idem=True).json()["data"]["status"] == "paused"
    assert sales.post(f"{path}/cancel", idem=True).json()["data"]["status"] == "cancelled"


def test_resume_with_skip_missed_skips_the_periods_passed_while_paused(tenant):
    schedule = created(tenant)
    path = f"/invoice-schedules/{schedule['id']}"
    tenant.post(f"{path}/pause", idem=True)
    moment = at("2027-03-15T12:00:00+00:00")
    import core.schedules.schedules as schedules_module
    original = schedules_module.now
    schedules_module.now = lambda: moment
    try:
        resumed = tenant.post(f"{path}/resume", json={"skip_missed": True}, idem=True).json()["data"]
    finally:
        schedules_module.now = original
    assert resumed["next_period"]["start"] == "2027-04-01" and resumed["periods_done"] == 3
    assert [row["status"] for row in made(tenant, schedule["id"])] == ["skipped"] * 3


def test_run_now_makes_the_next_period_at_once_and_moves_on(tenant):
    schedule = created(tenant, recurrence={"count": 2})
    response = tenant.post(f"/invoice-schedules/{schedule['id']}/run", idem=True)
    assert response.status_code == 201, response.text
    run = response.json()["data"]
    assert run["object"] == "schedule_run" and run["period"]["start"] == "2027-01-01" and run["invoice"]
    after = schedule_now(tenant, schedule["id"])
    assert after["next_period"]["start"] == "2027-02-01" and after["invoices_made"] == 1
    assert run_at(at("2027-01-01T07:00:00+00:00")).made == []  # that period is done
    tenant.post(f"/invoice-schedules/{schedule['id']}/run", idem=True)
    assert schedule_now(tenant, schedule["id"])["status"] == "completed"


@pytest.mark.parametrize(("change", "path"), [
    ({"time_zone": "Mars/Olympus"}, "time_zone"),
    ({"time_zone": "localtime"}, "time_zone"),  # the host's, which another host may not have
    ({"time_zone": "Factory"}, "time_zone"),
    ({"time_zone": "posix/Europe/Berlin"}, "time_zone"),
    ({"time_zone": "europe/berlin"}, "time_zone"),
    ({"recurrence": {"interval": "month", "start_date": "2020-01-01"}}, "recurrence.start_date"),
    ({"recurrence": {"interval": "fortnight", "start_date": "2027-01-01"}}, "recurrence.interval"),
    ({"recurrence": {"interval": "week", "start_date": "2027-01-01", "day_of_month": 3}}, "recurrence"),
    ({"recurrence": {"interval": "month", "start_date": "2027-01-01", "day_of_month": 32}}, "recurrence.day_of_month"),
    ({"recurrence": {"interval": "month", "start_date": "2027-01-01", "end_date": "2026-12-01"}}, "recurrence"),
    ({"recurrence": {"interval": "month", "start_date": "2027-01-01", "run_at": "25:00"}}, "recurrence.run_at"),
    ({"recurrence": {"interval": "month", "start_date": "2027-01-01", "count": 0}}, "recurrence.count"),
    ({"invoice": {"items": []}}, "invoice.items"),
    ({"invoice": {"items": ITEMS, "due_date": "2027-02-01"}}, "invoice.due_date"),
    ({"mode": "send"}, "mode"),
    ({"max_attempts": 0}, "max_attempts"),
])
def test_bad_input_is_a_422_at_its_field(tenant, change, path):
    response = schedule_of(tenant, **change)
    assert response.status_code == 422, response.text
    paths = [error["path"] for error in response.json().get("errors", [])]
    assert any(found == path or found.startswith(path) for found in paths), paths


def test_an_unknown_price_is_404_as_on_post_invoices(tenant):
    response = schedule_of(tenant, invoice={"items": [{"price": "price_" + "0" * 32}]})
    assert response.status_code == 404 and "No such price" in response.json()["detail"]


def test_an_archived_customer_is_refused_at_creation(tenant):
    cus = customer(tenant)
    assert tenant.delete(f"/customers/{cus['id']}").status_code == 200
    response = schedule_of(tenant, customer_id=cus["id"])
    assert response.status_code == 422 and response.json()["errors"][0]["path"] == "customer"


def test_a_mode_needs_its_scopes_at_creation(tenant, client):
    key = tenant.key_with(["invoices:write", "invoices:read", "invoices:finalize"])
    body = {"customer": customer(tenant)["id"], "invoice": {"items": ITEMS, "currency": "EUR"},
            "mode": "finalize_and_send", "recurrence": {"interval": "month", "start_date": "2027-01-01"}}
    response = client.post("/api/v1/invoice-schedules", json=body,
                           headers={"Authorization": f"Bearer {key}", "Idempotency-Key": "k3"})
    assert response.status_code == 403 and "invoices:send" in response.text


def test_another_accounts_schedule_is_404(tenant, other_tenant):
    schedule = created(tenant)
    for method, suffix in (("GET", ""), ("GET", "/runs"), ("POST", "/pause"), ("POST", "/resume"),
                           ("POST", "/cancel"), ("POST", "/run")):
        response = other_tenant.request(method, f"/invoice-schedules/{schedule['id']}{suffix}", idem=True)
        assert response.status_code == 404, (method, suffix)
    assert other_tenant.get("/invoice-schedules").json()["data"] == []


def test_creation_needs_an_idempotency_key_and_replays_with_it(tenant):
    body = {"customer": customer(tenant)["id"], "invoice": {"items": ITEMS, "currency": "EUR"},
            "recurrence": {"interval": "month", "start_date": "2027-01-01"}}
    assert tenant.post("/invoice-schedules", json=body).status_code == 428
    first = tenant.post("/invoice-schedules", json=body, idem="same")
    again = tenant.post("/invoice-schedules", json=body, idem="same")
    assert first.json()["data"]["id"] == again.json()["data"]["id"]
    assert len(tenant.get("/invoice-schedules").json()["data"]) == 1


def test_lists_filter_by_status_and_customer(tenant):
    first, second = created(tenant), created(tenant)
    tenant.post(f"/invoice-schedules/{second['id']}/pause", idem=True)
    assert [s["id"] for s in tenant.get("/invoice-schedules?status=paused").json()["data"]] == [second["id"]]
    assert [s["id"] for s in tenant.get(f"/invoice-schedules?customer={first['customer']}").json()["data"]] == [
        first["id"]]


def test_workers_racing_make_exactly_one_invoice_per_period(tenant):
    import threading
    schedules = [created(tenant, recurrence={"count": 3}) for _ in range(3)]
    moments = [at("2027-01-01T07:00:00+00:00"), at("2027-02-01T07:00:00+00:00"), at("2027-03-01T07:00:00+00:00")]
    workers = 6 if db.get_engine().dialect.name == "postgresql" else 3
    failures: list[BaseException] = []

    def work(moment):
        try:
            for _ in range(3):
                run_at(moment)
        except BaseException as exc:  # noqa: BLE001 (reported below)
            failures.append(exc)

    for moment in moments:
        threads = [threading.Thread(target=work, args=(moment,)) for _ in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == []
    for schedule in schedules:
        rows = made(tenant, schedule["id"])
        assert [row["period_index"] for row in rows] == [0, 1, 2]
        assert len({row["invoice"] for row in rows}) == 3
    with db.transaction() as session:
        assert len(session.exec(select(Invoice).where(Invoice.account_id == tenant.account_id)).all()) == 9


def test_a_recurring_price_must_bill_at_the_schedules_interval(tenant):
    from tests.api.invoicing import price
    monthly = price(tenant, 250000, "EUR", type="recurring", recurring={"interval": "month"})
    yearly = price(tenant, 2400000, "EUR", type="recurring", recurring={"interval": "year"})
    one_time = price(tenant, 5000, "EUR")
    both = {"items": [{"price": monthly["id"]}, {"price": one_time["id"]}], "currency": "EUR"}
    assert created(tenant, invoice=both)["status"] == "active"
    assert created(tenant, invoice={"items": [{"price": yearly["id"]}], "currency": "EUR"},
                   recurrence={"interval": "month", "interval_count": 12})["status"] == "active"
    refused = schedule_of(tenant, invoice={"items": [{"price": one_time["id"]}, {"price": monthly["id"]}],
                                           "currency": "EUR"},
                          recurrence={"interval": "quarter"})
    assert refused.status_code == 422
    assert refused.json()["errors"][0]["path"] == "invoice.items.1.price"
    assert "billed every month" in refused.json()["errors"][0]["message"]


def test_the_pdf_and_the_public_page_show_the_period(tenant):
    import io

    from pypdf import PdfReader
    schedule = created(tenant, mode="finalize")
    invoice_id = tenant.post(f"/invoice-schedules/{schedule['id']}/run", idem=True).json()["data"]["invoice"]
    invoice = tenant.get(f"/invoices/{invoice_id}").json()["data"]
    pdf = tenant.get(f"/invoices/{invoice_id}/pdf")
    text = "".join(page.extract_text() for page in PdfReader(io.BytesIO(pdf.content)).pages)
    assert "Period: 1 January 2027 – 31 January 2027" in text
    page = tenant.client.get(f"/i/{invoice['public_url_token']}")
    assert "1 January 2027 – 31 January 2027" in page.text


def test_a_schedule_failing_unexpectedly_stops_no_other(tenant, other_tenant):
    from core.base import ids
    from core.models import InvoiceSchedule
    broken, fine = created(tenant), created(other_tenant)
    with db.transaction() as session:  # as if the host had lost a time zone
        row = session.get(InvoiceSchedule, ids.parse("invoice_schedule", broken["id"]))
        row.time_zone = "Nowhere/Gone"
        session.add(row)
    moment = at("2027-01-01T07:00:00+00:00")
    for _ in range(3):
        run_at(moment)
    assert len(made(other_tenant, fine["id"])) == 1
    failed = schedule_now(tenant, broken["id"])
    assert failed["last_failure"]["attempts"] == 1 and "unexpectedly" in failed["last_failure"]["reason"]


def test_a_price_archived_since_creation_fails_the_run_and_it_is_retried(tenant):
    from tests.api.invoicing import price
    monthly = price(tenant, 250000, "EUR", type="recurring", recurring={"interval": "month"})
    schedule = created(tenant, invoice={"items": [{"price": monthly["id"]}], "currency": "EUR"})
    assert tenant.delete(f"/prices/{monthly['id']}").status_code == 200
    assert run_at(at("2027-01-01T07:00:00+00:00")).failed == 1
    failing = schedule_now(tenant, schedule["id"])
    assert failing["status"] == "active" and failing["last_failure"]["attempts"] == 1
    assert failing["next_run"] == "2027-01-01T08:00:00.000Z"
    assert tenant.post(f"/prices/{monthly['id']}/restore", idem=True).status_code == 200
    assert len(run_at(at("2027-01-01T08:00:00+00:00")).made) == 1
    assert schedule_now(tenant, schedule["id"])["last_failure"] is None


def test_the_schedules_of_a_member_who_was_removed_pause_at_their_next_run(tenant):
    from tests.members import join, member_id
    sales = join(tenant, "sales")
    schedule = created(sales)
    assert schedule["created_by"]["user_id"]  # the key's creator, the person it acts as
    assert tenant.delete(f"/members/{member_id(tenant, sales.user_email)}").status_code == 200
    assert run_at(at("2027-01-01T07:00:00+00:00")).failed == 1
    paused = schedule_now(tenant, schedule["id"])
    assert paused["status"] == "paused" and "revoked" in paused["pause_reason"]
    assert made(tenant, schedule["id"]) == []
