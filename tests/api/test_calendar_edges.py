"""Every valid ISO 8601 date is accepted on every date field and filter, 0001-01-01 to 9999-12-31;
what a computation would push past the calendar is a 422 at the field that asked for it (a default
stops at the calendar's end); never a 500 (decisions: "Calendar range")."""

import pytest

from tests.api.invoicing import adhoc, create, open_invoice, pay
from tests.mcp.jsonrpc import call, error_of, structured

FIRST, LAST = "0001-01-01", "9999-12-31"


def paths(response) -> list[str]:
    assert response.status_code == 422, response.text
    return [error["path"] for error in response.json()["errors"]]


def created(response) -> dict:
    assert response.status_code == 201, response.text
    return response.json()["data"]


@pytest.mark.parametrize("day", [FIRST, "1899-12-31", "9999-01-01", LAST])
def test_any_issue_date_of_the_calendar_is_accepted(tenant, day):
    assert created(create(tenant, issue_date=day, items=[adhoc()]))["issue_date"] == day


def test_year_zero_is_not_a_calendar_date(tenant):
    assert paths(create(tenant, issue_date="0000-01-01")) == ["issue_date"]


@pytest.mark.parametrize("day", ["2026-02-30", "10000-01-01", "2026-1-1", "26-01-01"])
def test_what_is_no_date_is_422(tenant, day):
    assert paths(create(tenant, issue_date=day)) == ["issue_date"]


def test_the_default_due_date_stops_at_the_calendars_end(tenant):
    assert created(create(tenant, issue_date="9999-12-15", items=[adhoc()]))["due_date"] == LAST


def test_days_until_due_past_the_calendars_end_is_422_at_days_until_due(tenant):
    assert paths(create(tenant, issue_date="9999-12-15", days_until_due=30)) == ["days_until_due"]


def test_days_until_due_set_later_past_the_end_is_422(tenant):
    invoice = created(create(tenant, issue_date="9999-12-31", items=[adhoc()]))
    assert paths(tenant.patch(f"/invoices/{invoice['id']}", json={"days_until_due": 1})) == ["days_until_due"]


def test_days_until_due_up_to_the_last_day_fits(tenant):
    invoice = created(create(tenant, issue_date="9998-12-31", days_until_due=365, items=[adhoc()]))
    assert invoice["due_date"] == LAST


def test_the_first_and_last_dates_as_issue_and_due_date(tenant):
    invoice = created(create(tenant, issue_date=FIRST, due_date=LAST, items=[adhoc()]))
    assert (invoice["issue_date"], invoice["due_date"]) == (FIRST, LAST)


def test_a_due_date_on_the_first_day_makes_an_overdue_invoice(tenant):
    invoice = open_invoice(tenant, issue_date=FIRST, due_date=FIRST)
    assert invoice["status"] == "overdue"


def test_documents_of_the_calendars_ends_render(tenant, client):
    invoice = open_invoice(tenant, issue_date=FIRST, due_date=LAST)
    assert tenant.get(f"/invoices/{invoice['id']}/pdf").status_code == 200
    assert client.get(f"/i/{invoice['public_url_token']}").status_code == 200
    assert client.get(f"/i/{invoice['public_url_token']}/pdf").status_code == 200


@pytest.mark.parametrize("moment", [LAST, FIRST, "9999-12-31T23:59:59.999Z", "0001-01-01T00:00:00Z",
                                    "9999-12-31T18:00:00-05:00", "0001-01-01T05:30:00+05:00"])
def test_a_payment_moment_anywhere_in_the_calendar_is_accepted(tenant, moment):
    invoice = open_invoice(tenant)
    response = pay(tenant, invoice["id"], {"paid_on": moment})
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("moment", ["9999-12-31T23:00:00-05:00", "0001-01-01T00:30:00+05:00"])
def test_a_payment_moment_whose_utc_falls_outside_the_calendar_is_422_at_paid_on(tenant, moment):
    invoice = open_invoice(tenant)
    response = pay(tenant, invoice["id"], {"paid_on": moment})
    assert paths(response) == ["paid_on"]
    assert "calendar" in response.json()["errors"][0]["message"]


def test_a_moment_in_the_first_years_is_written_with_four_digits(tenant):
    invoice = open_invoice(tenant)
    response = pay(tenant, invoice["id"], {"paid_on": "0001-01-01T00:00:00Z"})
    assert response.json()["data"]["paid_at"] == "0001-01-01T00:00:00.000Z"  # RFC 3339: a four-digit year


def test_a_payment_moment_is_stored_in_utc(tenant):
    invoice = open_invoice(tenant)
    response = pay(tenant, invoice["id"], {"paid_on": "9998-12-31T23:00:00-05:00"})
    assert response.json()["data"]["paid_at"].startswith("9999-01-01T04:00:00")


@pytest.mark.parametrize("params", [{"from": FIRST}, {"to": LAST}, {"from": FIRST, "to": LAST}])
def test_open_ended_list_bounds_list_everything(tenant, params):
    invoice = created(create(tenant, items=[adhoc()]))
    response = tenant.get("/invoices", params=params)
    assert response.status_code == 200, response.text
    assert [item["id"] for item in response.json()["data"]] == [invoice["id"]]


def test_crossed_list_bounds_list_nothing(tenant):
    created(create(tenant, items=[adhoc()]))
    response = tenant.get("/invoices", params={"from": LAST, "to": FIRST})
    assert response.status_code == 200
    assert response.json() == {"data": [], "next_cursor": None}


def test_list_bounds_at_the_ends_page_with_cursors(tenant):
    for _ in range(3):
        created(create(tenant, items=[adhoc()]))
    params = {"from": FIRST, "to": LAST, "limit": 2}
    first = tenant.get("/invoices", params=params).json()
    second = tenant.get("/invoices", params={**params, "cursor": first["next_cursor"]}).json()
    assert len(first["data"]) == 2 and len(second["data"]) == 1


@pytest.mark.parametrize("bound", ["from", "to"])
def test_a_bound_that_is_no_date_is_422(tenant, bound):
    assert paths(tenant.get("/invoices", params={bound: "9999-12-32"})) == [bound]


def test_the_calendars_ends_over_mcp(client, tenant):
    customer = tenant.post("/customers", json={"name": "A"}).json()["data"]
    invoice = structured(client, tenant.key, "create_invoice", customer=customer["id"], issue_date=LAST)
    assert invoice["due_date"] == LAST
    listed = structured(client, tenant.key, "list_invoices", **{"from": FIRST, "to": LAST})
    assert [item["id"] for item in listed["data"]] == [invoice["id"]]


def test_a_date_past_the_calendar_is_a_tool_error_over_mcp(client, tenant):
    customer = tenant.post("/customers", json={"name": "A"}).json()["data"]
    error = error_of(call(client, tenant.key, "create_invoice", customer=customer["id"], issue_date=LAST,
                          days_until_due=1))
    assert error["code"] == "validation" and error["errors"][0]["path"] == "days_until_due"


def test_a_null_payment_moment_means_now(tenant):
    invoice = open_invoice(tenant)
    response = pay(tenant, invoice["id"], {"paid_on": None})
    assert response.status_code == 200, response.text
