"""Invoice schedules in the dashboard: the list (customer, amount per run, recurrence, mode, status, next run
in the schedule's time zone), a page at a time; the form that creates one (lines by price or free, the
recurrence, the time zone, the mode) with errors beside their fields; a schedule's page with its next runs
and its runs; pause, resume, cancel (confirmed first) and run now; another account's schedule is 404; an
invoice a schedule made names it and its period, and a draft says it waits for review. Run as the
signed-in person through the same operations as REST (tests/api/test_schedules.py covers the rules)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from core.schedules import recurrence, runs
from tests.api.invoicing import adhoc, customer, price
from tests.conftest import make_tenant
from tests.web.test_dashboard_invoices import KEY_FIELD

ITEMS = [adhoc("Retainer", 250000)]
LONDON = ZoneInfo("Europe/London")  # the tenant's business is in GB


def london_today():
    return datetime.now(UTC).astimezone(LONDON).date()


def berlin_tomorrow():
    """The new schedule form's start: tomorrow in its time zone (Berlin), never past in Berlin even when the
    test runs between 23:00 and midnight in London, nor when midnight passes during the request."""
    return datetime.now(UTC).astimezone(ZoneInfo("Europe/Berlin")).date() + timedelta(days=1)


def schedule_of(tenant, *, start=None, recurrence_fields: dict | None = None, customer_id: str | None = None,
                **fields) -> dict:
    """A schedule made through REST (monthly in EUR from `start`, default a week from now)."""
    start = start or london_today() + timedelta(days=7)
    body = {"customer": customer_id or customer(tenant)["id"], "invoice": {"items": ITEMS, "currency": "EUR"},
            "recurrence": {"interval": "month", "start_date": start.isoformat(), **(recurrence_fields or {})},
            **fields}
    response = tenant.post("/invoice-schedules", json=body, idem=True)
    assert response.status_code == 201, response.text
    return response.json()["data"]


def now_of(tenant, schedule: dict) -> dict:
    return tenant.get(f"/invoice-schedules/{schedule['id']}").json()["data"]


def runs_of(tenant, schedule: dict) -> list[dict]:
    return tenant.get(f"/invoice-schedules/{schedule['id']}/runs?limit=100").json()["data"]


def submit_keyed(person, path: str, fields: dict, page: str):
    """Send a form of `page` with the idempotency key it was shown with."""
    key = KEY_FIELD.search(person.get(page).text).group(1)
    return person.submit(path, {**fields, "idempotency_key": key}, page=page)


def new_form(customer_id: str, **fields) -> dict:
    """The new schedule form as a person fills it: one free line, every two months from tomorrow in Berlin."""
    return {"customer": customer_id, "line_count": "3", "items.0.description": "Retainer", "items.0.quantity": "1",
            "items.0.unit": "NOS", "items.0.unit_amount": "2,500.00", "items.0.tax_rate": "",
            "items.1.description": "", "items.1.unit_amount": "", "items.1.quantity": "1",
            "invoice.currency": "EUR", "invoice.days_until_due": "14", "frequency": "month",
            "recurrence.interval_count": "2", "recurrence.day_of_month": "", "recurrence.start_date":
            berlin_tomorrow().isoformat(), "ends": "never", "recurrence.end_date": "", "recurrence.count": "",
            "recurrence.run_at": "09:30", "time_zone": "Europe/Berlin", "mode": "draft", "catch_up": "all", **fields}


def create(person, fields: dict):
    return submit_keyed(person, "/schedules/new", fields, "/schedules/new")


# --- the list ------------------------------------------------------------------------------------


def test_the_list_needs_sign_in_and_is_in_the_navigation(person, other_browser):
    response = other_browser.get("/schedules")
    assert response.status_code == 303 and response.headers["location"].startswith("/login?next=")
    page = person.get("/schedules").text
    assert '<a href="/schedules" aria-current="page">Schedules</a>' in page
    assert '<a href="/schedules">Schedules</a>' in person.get("/invoices").text
    assert "No schedules yet." in page and 'href="/schedules/new"' in page


def test_the_list_shows_each_schedule_in_words(person, tenant):
    acme = customer(tenant, name="Globex Corporation")
    schedule = schedule_of(tenant, customer_id=acme["id"], time_zone="America/New_York",
                           recurrence_fields={"day_of_month": "last", "count": 12}, mode="finalize")
    page = person.get("/schedules").text
    row = page.split(f'href="/schedules/{schedule["id"]}"')[1].split("</tr>")[0]
    assert ">Globex Corporation</a>" in row
    assert "2,500.00 EUR" in row
    assert "On the last day of every month, from " in row and "12 times" in row
    assert "Finalize" in row and 'status-active">active<' in row
    local = datetime.fromisoformat(schedule["next_run"]).astimezone(ZoneInfo("America/New_York"))
    assert f"{local:%Y-%m-%d} 08:00 {local.tzname()}" in row and "(America/New_York)" in row


def test_the_list_goes_a_page_at_a_time_and_by_status(person, tenant):
    someone = customer(tenant)["id"]
    made = [schedule_of(tenant, customer_id=someone) for _ in range(26)]
    first = person.get("/schedules").text
    assert first.count('<td data-label="Customer">') == 25
    next_url = re.search(r'<a class="button secondary" href="(/schedules\?cursor=[^"]+)">Next page', first).group(1)
    second = person.get(next_url.replace("&amp;", "&")).text
    assert second.count('<td data-label="Customer">') == 1 and made[0]["id"] in second
    assert 'href="/schedules">First page' in second
    tenant.post(f"/invoice-schedules/{made[3]['id']}/pause", json={})
    paused = person.get("/schedules?status=paused").text
    assert paused.count('<td data-label="Customer">') == 1 and made[3]["id"] in paused


# --- a new schedule ------------------------------------------------------------------------------


def test_the_form_offers_active_customers_and_prices_and_the_business_time_zone(person, tenant):
    kept, gone = customer(tenant, name="Kept Ltd"), customer(tenant, name="Gone Ltd")
    tenant.delete(f"/customers/{gone['id']}")
    widget = price(tenant, 4200, product_name="Support plan")
    page = person.get("/schedules/new").text
    assert f'<option value="{kept["id"]}"' in page and gone["id"] not in page
    assert f'<option value="{widget["id"]}">Support plan · 42.00 USD' in page
    assert 'id="f-time_zone" name="time_zone" type="text" value="Europe/London"' in page
    assert "Your business&#39;s is Europe/London." in page
    assert f'name="recurrence.start_date" type="date" value="{london_today().isoformat()}"' in page
    assert 'name="recurrence.run_at" type="time" value="08:00"' in page
    assert 'value="draft" checked' in page


def test_creating_a_schedule_with_a_free_line_and_a_price(person, tenant):
    someone = customer(tenant)["id"]
    widget = price(tenant, 9900, currency="EUR", product_name="Hosting")
    response = create(person, new_form(someone, **{"items.1.price": widget["id"], "items.1.quantity": "2"}))
    assert response.status_code == 303, response.text
    schedule_id = re.fullmatch(r"/schedules/(sched_[0-9a-f]+)\?notice=created", response.headers["location"]).group(1)
    schedule = tenant.get(f"/invoice-schedules/{schedule_id}").json()["data"]
    assert schedule["invoice"]["items"] == [
        {"description": "Retainer", "quantity": 1, "unit": "NOS", "unit_amount": 250000,
         "discount_percent": 0},
        {"price": widget["id"], "quantity": 2, "unit": "NOS", "discount_percent": 0}]
    assert (schedule["invoice"]["currency"], schedule["invoice"]["days_until_due"]) == ("EUR", 14)
    assert schedule["recurrence"]["run_at"] == "09:30" and schedule["recurrence"]["interval"] == "month"
    assert (schedule["time_zone"], schedule["mode"], schedule["catch_up"]) == ("Europe/Berlin", "draft", "all")
    page = person.get(response.headers["location"]).text
    assert "The schedule is created." in page
    assert "2,698.00 EUR" in page  # 2,500.00 + 2 × 99.00


def test_every_n_weeks_the_last_day_and_a_count(person, tenant):
    someone = customer(tenant)["id"]
    response = create(person, new_form(someone, frequency="weeks", **{"recurrence.interval_count": "2",
                                                                        "recurrence.day_of_month": "last"}))
    assert response.status_code == 303, response.text
    weekly = tenant.get("/invoice-schedules").json()["data"][0]
    assert (weekly["recurrence"]["interval"], weekly["recurrence"]["interval_count"]) == ("week", 2)
    assert weekly["recurrence"].get("day_of_month") is None  # a weekly schedule takes no day of the month
    response = create(person, new_form(someone, frequency="quarter", ends="count",
                                       **{"recurrence.day_of_month": "last", "recurrence.count": "4",
                                          "recurrence.end_date": "2099-01-01"}))
    assert response.status_code == 303, response.text
    quarterly = tenant.get("/invoice-schedules").json()["data"][0]
    assert quarterly["recurrence"]["day_of_month"] == "last" and quarterly["recurrence"]["count"] == 4
    assert quarterly["recurrence"]["end_date"] is None  # only what "Ends" chose is sent


def test_field_errors_are_shown_beside_their_fields(person, tenant):
    someone = customer(tenant)["id"]
    yesterday = (london_today() - timedelta(days=2)).isoformat()
    response = create(person, new_form(someone, **{"recurrence.start_date": yesterday}))
    assert response.status_code == 422
    assert '<p class="error" id="f-recurrence-start_date-error">Start date: is in the past' in response.text
    assert 'href="#f-recurrence-start_date">Start date</a>' in response.text
    assert f'value="{yesterday}"' in response.text and 'value="2,500.00"' in response.text  # kept as sent

    response = create(person, new_form(someone, **{"items.0.price": "price_" + "0" * 32, "items.0.description": ""}))
    assert response.status_code in (404, 422)
    assert 'id="f-items-0-price-error">Line 1: price:' in response.text

    response = create(person, new_form(someone, **{"items.0.unit_amount": "12.345"}))
    assert response.status_code == 422
    assert 'id="f-items-0-unit_amount-error">Line 1: unit price: must be an amount in EUR' in response.text

    response = create(person, new_form(someone, **{"items.0.description": "", "items.0.unit_amount": ""}))
    assert response.status_code == 422
    assert 'id="f-invoice-items-error">Lines: add at least one line' in response.text

    response = create(person, new_form(someone, time_zone="Mars/Olympus", ends="count",
                                       **{"recurrence.count": "", "invoice.days_until_due": "999"}))
    assert response.status_code == 422
    assert 'id="f-recurrence-count-error">Number of invoices: give how many' in response.text
    response = create(person, new_form(someone, time_zone="Mars/Olympus", **{"invoice.days_until_due": "999"}))
    assert response.status_code == 422
    assert 'id="f-time_zone-error">Time zone: must be an IANA time zone name' in response.text
    assert 'id="f-invoice-days_until_due-error">Days until due:' in response.text

    response = create(person, new_form(""))
    assert response.status_code in (404, 422) and 'id="f-customer-error">Customer:' in response.text
    assert tenant.get("/invoice-schedules").json()["data"] == []


def test_an_error_on_a_later_line_is_shown_beside_that_row(person, tenant):
    someone = customer(tenant)["id"]
    response = create(person, new_form(someone, **{
        "items.1.description": "", "items.1.unit_amount": "",  # an empty row is left out
        "line_count": "3", "items.2.description": "Extra", "items.2.unit_amount": "5", "items.2.quantity": "-1"}))
    assert response.status_code == 422
    assert 'id="f-items-2-quantity-error">Line 3: quantity:' in response.text


def test_add_a_line_shows_one_more_row_and_creates_nothing(person, tenant):
    someone = customer(tenant)["id"]
    response = create(person, new_form(someone, step="add_line"))
    assert response.status_code == 200
    assert 'name="items.3.description"' in response.text and 'value="Retainer"' in response.text
    assert tenant.get("/invoice-schedules").json()["data"] == []


# --- one schedule --------------------------------------------------------------------------------


def test_the_page_lists_the_next_six_runs_in_the_time_zone(person, tenant):
    schedule = schedule_of(tenant, time_zone="Europe/Berlin", recurrence_fields={"day_of_month": 31})
    page = person.get(f"/schedules/{schedule['id']}").text
    assert "On the 31st of every month, from" in page and "Europe/Berlin" in page and "2,500.00 EUR" in page
    table = page.split('class="cards-on-phone next-runs"')[1].split("</table>")[0]
    rule = recurrence.from_stored(schedule["recurrence"])
    expected = []
    for index in range(6):
        start, end = recurrence.period(rule, index)
        local = recurrence.run_moment(rule, "Europe/Berlin", start).astimezone(ZoneInfo("Europe/Berlin"))
        expected.append((f"{start} – {end}", f"{local:%Y-%m-%d} 08:00 {local.tzname()}"))
    shown = re.findall(r'<td data-label="Period">([^<]+)</td><td data-label="Invoice made">([^<]+)</td>', table)
    assert shown == expected
    assert "No invoice made yet." in page


def test_a_count_shows_only_the_runs_left(person, tenant):
    schedule = schedule_of(tenant, recurrence_fields={"count": 2})
    table = person.get(f"/schedules/{schedule['id']}").text.split("next-runs")[1].split("</table>")[0]
    assert table.count('<td data-label="Period">') == 2


def test_run_now_makes_the_invoice_and_the_invoice_names_its_schedule(person, tenant):
    schedule = schedule_of(tenant, start=london_today(), recurrence_fields={"count": 3})
    page = f"/schedules/{schedule['id']}"
    response = submit_keyed(person, f"{page}/run", {}, page)
    assert response.status_code == 303 and response.headers["location"] == f"{page}?notice=run"
    (run,) = runs_of(tenant, schedule)
    shown = person.get(response.headers["location"]).text
    assert "The next period&#39;s invoice is made" in shown
    runs_table = shown.split('class="cards-on-phone runs"')[1].split("</table>")[0]
    assert f'href="/invoices/{run["invoice"]}"' in runs_table
    assert f'{run["period"]["start"]} – {run["period"]["end"]}' in runs_table
    assert now_of(tenant, schedule)["invoices_made"] == 1

    invoice_page = person.get(f"/invoices/{run['invoice']}").text
    assert (f'Made by schedule <a href="/schedules/{schedule["id"]}">on the ' in invoice_page
            and f'for the period {run["period"]["start"]} – {run["period"]["end"]}.' in invoice_page)
    assert "Drafted by a schedule: review and finalize it." in invoice_page
    assert '<span class="badge">Drafted by a schedule</span>' in person.get("/invoices").text
    assert "Drafted by a schedule" in person.get("/").text  # waiting for review on the start page


def test_an_invoice_made_by_the_job_names_its_period_and_once_finalized_is_no_draft_to_review(person, tenant):
    schedule = schedule_of(tenant, start=london_today(), mode="finalize", recurrence_fields={"count": 1})
    runs.run_due(clock=lambda: datetime.now(UTC) + timedelta(days=1))
    (run,) = runs_of(tenant, schedule)
    page = person.get(f"/invoices/{run['invoice']}").text
    assert f'Made by schedule <a href="/schedules/{schedule["id"]}">' in page
    assert "review and finalize it" not in page
    assert now_of(tenant, schedule)["status"] == "completed"
    assert "None: this schedule is completed." in person.get(f"/schedules/{schedule['id']}").text


def test_pause_with_a_reason_then_resume_skipping_missed_periods(person, tenant):
    schedule = schedule_of(tenant)
    page = f"/schedules/{schedule['id']}"
    response = submit_keyed(person, f"{page}/pause", {"reason": "Customer on holiday"}, page)
    assert response.status_code == 303 and response.headers["location"] == f"{page}?notice=paused"
    after = now_of(tenant, schedule)
    assert (after["status"], after["pause_reason"]) == ("paused", "Customer on holiday")
    shown = person.get(response.headers["location"]).text
    assert "Customer on holiday" in shown and 'action="' + page + '/resume"' in shown
    assert 'action="' + page + '/run"' not in shown and "Skip missed periods" in shown

    response = submit_keyed(person, f"{page}/resume", {"skip_missed": "true"}, page)
    assert response.status_code == 303 and response.headers["location"] == f"{page}?notice=resumed"
    assert now_of(tenant, schedule)["status"] == "active"


def test_an_action_refused_is_said_on_the_page(person, tenant):
    schedule = schedule_of(tenant)
    page = f"/schedules/{schedule['id']}"
    form = person.get(page).text  # shown while active, sent after it was paused elsewhere
    tenant.post(f"/invoice-schedules/{schedule['id']}/pause", json={})
    key = KEY_FIELD.search(form).group(1)
    response = person.submit(f"{page}/run", {"idempotency_key": key}, page=page)
    assert response.status_code == 409
    assert "only an active schedule runs" in response.text


def test_cancel_is_confirmed_first(person, tenant):
    schedule = schedule_of(tenant)
    page = f"/schedules/{schedule['id']}"
    confirm = person.get(f"{page}/cancel")
    assert confirm.status_code == 200 and "cannot be resumed" in confirm.text
    assert now_of(tenant, schedule)["status"] == "active"
    response = submit_keyed(person, f"{page}/cancel", {}, f"{page}/cancel")
    assert response.status_code == 303 and response.headers["location"] == f"{page}?notice=cancelled"
    assert now_of(tenant, schedule)["status"] == "cancelled"
    shown = person.get(response.headers["location"]).text
    assert "The schedule is cancelled" in shown and f'action="{page}/pause"' not in shown
    assert person.get(f"{page}/cancel").headers["location"] == page  # nothing left to cancel


def test_a_failure_is_shown_with_its_reason(person, tenant):
    gone = customer(tenant)
    schedule = schedule_of(tenant, start=london_today(), customer_id=gone["id"])
    tenant.delete(f"/customers/{gone['id']}")
    runs.run_due(clock=lambda: datetime.now(UTC) + timedelta(days=1))
    page = person.get(f"/schedules/{schedule['id']}").text
    assert 'id="last-failure"' in page and "attempt 1 of 3" in page and "archived" in page


# --- security ------------------------------------------------------------------------------------


@pytest.fixture
def strangers_schedule(client) -> dict:
    return schedule_of(make_tenant(client))


@pytest.mark.parametrize("suffix", ["", "/cancel"])
def test_another_accounts_schedule_is_404(person, strangers_schedule, suffix):
    response = person.get(f"/schedules/{strangers_schedule['id']}{suffix}")
    assert response.status_code == 404 and "belongs to another account" in response.text


@pytest.mark.parametrize("action", ["pause", "resume", "run", "cancel"])
def test_acting_on_another_accounts_schedule_is_404(person, client, strangers_schedule, action):
    response = person.submit(f"/schedules/{strangers_schedule['id']}/{action}", {}, page="/schedules")
    assert response.status_code == 404


@pytest.mark.parametrize("bad_id", ["nope", "sched_" + "0" * 32, "sched_" + "x" * 5000])
def test_malformed_ids_are_404(person, bad_id):
    assert person.get(f"/schedules/{bad_id}").status_code == 404


@pytest.mark.parametrize("path", ["/schedules/new", "/schedules/{id}/pause", "/schedules/{id}/resume",
                                  "/schedules/{id}/run", "/schedules/{id}/cancel"])
def test_a_post_without_its_csrf_token_is_refused(person, tenant, path):
    schedule = schedule_of(tenant)
    response = person.client.post(path.format(id=schedule["id"]), data={"reason": "x"}, follow_redirects=False)
    assert response.status_code == 403 and "This form has expired" in response.text
    assert now_of(tenant, schedule)["status"] == "active"
