"""A schedule an OAuth app creates acts as that app at every run: its limits apply (a run beyond them
pauses the schedule), and disconnecting the app pauses its schedules."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from authz import connected_apps
from core.access import resources
from core.base import db
from tests.api.invoicing import adhoc, customer
from tests.oauth_flow import obtain, register, user_id_of

ACTING = ["invoices:read", "invoices:write", "invoices:finalize"]
FINALIZE_UP_TO_100 = [{"type": "invoice_actions", "actions": ["finalize"],
                       "max_amount": {"currency": "USD", "amount": 10000}, "max_per_day": 5}]


@pytest.fixture
def app_client(client):
    return register(client, token_endpoint_auth_method="none", client_name="Bookkeeper")


def schedule_as_app(client, tenant, token: str, amount: int) -> dict:
    body = {"customer": customer(tenant)["id"], "mode": "finalize", "time_zone": "UTC",
            "invoice": {"currency": "USD", "items": [adhoc("Retainer", amount)]},
            "recurrence": {"interval": "month", "start_date": "2027-01-01"}}
    response = client.post("/api/v1/invoice-schedules", json=body,
                           headers={"Authorization": f"Bearer {token}", "Idempotency-Key": f"s{amount}"})
    assert response.status_code == 201, response.text
    return response.json()["data"]


def run(moment: str):
    from core.schedules import runs
    return runs.run_due(clock=lambda: datetime.fromisoformat(moment).replace(tzinfo=UTC))


def test_the_apps_limits_apply_at_every_run(client, tenant, browser, app_client):
    token = obtain(browser, app_client, resource=resources.rest_api(), scopes=ACTING,
                   authorization_details=FINALIZE_UP_TO_100)["access_token"]
    within = schedule_as_app(client, tenant, token, 9000)
    beyond = schedule_as_app(client, tenant, token, 20000)
    assert within["created_by"] == {"actor": "oauth_app", "client_id": app_client["client_id"],
                                    "user_id": str(user_id_of(tenant))}
    done = run("2027-01-01T09:00:00")
    assert len(done.made) == 1 and done.failed == 1
    paused = tenant.get(f"/invoice-schedules/{beyond['id']}").json()["data"]
    assert paused["status"] == "paused" and "limit" in paused["pause_reason"]
    invoice_id = tenant.get(f"/invoice-schedules/{within['id']}/runs").json()["data"][0]["invoice"]
    events = tenant.get(f"/invoices/{invoice_id}/events").json()["data"]
    finalized = next(event for event in events if event["type"] == "invoice.finalized")
    assert finalized["meta"]["actor"] == "oauth_app" and finalized["meta"]["schedule"] == within["id"]


def test_disconnecting_the_app_pauses_its_schedules(client, tenant, browser, app_client):
    token = obtain(browser, app_client, resource=resources.rest_api(), scopes=ACTING)["access_token"]
    schedule = schedule_as_app(client, tenant, token, 5000)
    with db.transaction() as session:
        assert connected_apps.disconnect(session, user_id_of(tenant), tenant.account_id, app_client["client_id"]) == 1
    assert run("2027-01-01T09:00:00").failed == 1
    paused = tenant.get(f"/invoice-schedules/{schedule['id']}").json()["data"]
    assert paused["status"] == "paused" and "disconnected" in paused["pause_reason"]
