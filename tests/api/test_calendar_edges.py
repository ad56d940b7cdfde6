"""Dates and timestamps near the ends of the calendar are a 422 at their path, never an overflow:
every date input lies between 1900-01-01 and 9998-12-31 (decisions: "Calendar range")."""

import pytest

from tests.api.invoicing import adhoc, create, open_invoice, pay
from tests.mcp.jsonrpc import call, error_of


def paths(response) -> list[str]:
    assert response.status_code == 422, response.text
    return [error["path"] for error in response.json()["errors"]]


@pytest.mark.parametrize("day", ["9999-01-01", "9999-12-31", "0001-01-01", "1899-12-31"])
def test_an_issue_date_outside_the_calendar_range_is_422(tenant, day):
    assert paths(create(tenant, issue_date=day, items=[adhoc()])) == ["issue_date"]


def test_year_zero_is_not_a_calendar_date(tenant):
    assert paths(create(tenant, issue_date="0000-01-01")) == ["issue_date"]


def test_the_last_date_plus_a_year_until_due_still_fits(tenant):
    response = create(tenant, issue_date="9998-12-31", days_until_due=365, items=[adhoc()])
    assert response.status_code == 201, response.text
    assert response.json()["data"]["due_date"] == "9999-12-31"


def test_the_first_date_is_accepted(tenant):
    response = create(tenant, issue_date="1900-01-01", due_date="1900-01-01", items=[adhoc()])
    assert response.status_code == 201, response.text


def test_a_due_date_outside_the_range_is_422(tenant):
    assert paths(create(tenant, due_date="9999-12-31")) == ["due_date"]


def test_days_until_due_set_later_on_the_last_date_fits(tenant):
    invoice = create(tenant, issue_date="9998-12-31", items=[adhoc()]).json()["data"]
    response = tenant.patch(f"/invoices/{invoice['id']}", json={"days_until_due": 365})
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("moment", ["9999-12-31T23:00:00-05:00", "0001-01-01T00:30:00+05:00",
                                    "9999-12-31T23:59:59Z", "1899-12-31T23:59:59+00:00", "9999-12-31"])
def test_a_payment_moment_outside_the_range_is_422_at_paid_on(tenant, moment):
    invoice = open_invoice(tenant)
    assert paths(pay(tenant, invoice["id"], {"paid_on": moment})) == ["paid_on"]


def test_a_payment_moment_whose_offset_crosses_into_the_last_year_is_stored_in_utc(tenant):
    invoice = open_invoice(tenant)
    response = pay(tenant, invoice["id"], {"paid_on": "9998-12-31T23:00:00-05:00"})
    assert response.status_code == 200, response.text
    assert response.json()["data"]["paid_at"].startswith("9999-01-01T04:00:00")


@pytest.mark.parametrize("bound", ["from", "to"])
def test_a_list_bound_outside_the_range_is_422(tenant, bound):
    assert paths(tenant.get("/invoices", params={bound: "9999-12-31"})) == [bound]


def test_a_date_outside_the_range_is_a_tool_error_over_mcp(client, tenant):
    customer = tenant.post("/customers", json={"name": "A"}).json()["data"]
    error = error_of(call(client, tenant.key, "create_invoice", customer=customer["id"], issue_date="9999-12-31"))
    assert error["code"] == "validation" and error["errors"][0]["path"] == "issue_date"


def test_a_null_payment_moment_means_now(tenant):
    invoice = open_invoice(tenant)
    response = pay(tenant, invoice["id"], {"paid_on": None})
    assert response.status_code == 200, response.text
