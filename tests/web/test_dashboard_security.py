"""Every dashboard form refuses a missing CSRF token, and every dashboard address answers 404 for
another account's ids (the same answer as for ids that do not exist)."""

from __future__ import annotations

import pytest

from tests.api.invoicing import customer, draft, open_invoice, price
from tests.conftest import make_tenant
from tests.web.conftest import OWNER_PASSWORD, Browser
from web import (
    catalog_pages,
    credit_note_pages,
    invoice_actions,
    invoice_lines,
    invoice_pages,
    reminder_pages,
    schedule_pages,
)

DASHBOARD_ROUTES = [*invoice_pages.routes(), *invoice_lines.routes(), *invoice_actions.routes(),
                    *credit_note_pages.routes(), *catalog_pages.routes(), *schedule_pages.routes(),
                    *reminder_pages.routes()]
POST_PATHS = sorted({route.path for route in DASHBOARD_ROUTES if "POST" in route.methods} | {"/settings/business"})
GET_PATHS_WITH_IDS = sorted(route.path for route in DASHBOARD_ROUTES if "GET" in route.methods and "{" in route.path)


@pytest.fixture
def ids_of_another_account(client) -> dict[str, str]:
    stranger = make_tenant(client)
    invoice = draft(stranger)
    widget = price(stranger)
    credited = stranger.post("/credit-notes", json={"invoice": open_invoice(stranger)["id"]}, idem=True)
    assert credited.status_code == 201, credited.text
    scheduled = stranger.post("/invoice-schedules", idem=True, json={
        "customer": customer(stranger)["id"], "invoice": {"items": [{"description": "Retainer", "unit_amount": 1000}]},
        "recurrence": {"interval": "month", "start_date": "2099-01-01"}})
    assert scheduled.status_code == 201, scheduled.text
    return {"invoice_id": invoice["id"], "item_id": invoice["lines"]["data"][0]["id"],
            "customer_id": customer(stranger)["id"], "product_id": widget["product"], "price_id": widget["id"],
            "credit_note_id": credited.json()["data"]["id"], "schedule_id": scheduled.json()["data"]["id"]}


def test_the_lists_cover_every_dashboard_form():
    assert len(POST_PATHS) >= 20 and len(GET_PATHS_WITH_IDS) >= 8


@pytest.mark.parametrize("path", POST_PATHS)
def test_a_form_without_its_csrf_token_is_refused(person, ids_of_another_account, path):
    response = person.client.post(path.format(**ids_of_another_account), data={"name": "x"},
                                  follow_redirects=False)
    assert response.status_code == 403
    assert "This form has expired" in response.text


@pytest.mark.parametrize("path", POST_PATHS)
def test_a_form_with_a_csrf_token_of_another_browser_is_refused(person, client, ids_of_another_account, path):
    from starlette.testclient import TestClient

    from tests.web.conftest import csrf_of
    with TestClient(client.app, base_url=str(client.base_url)) as elsewhere:
        token = csrf_of(elsewhere.get("/login").text)
    response = person.client.post(path.format(**ids_of_another_account), data={"csrf_token": token},
                                  follow_redirects=False)
    assert response.status_code == 403


@pytest.mark.parametrize("path", [p for p in POST_PATHS if "{" in p])
def test_posting_to_another_accounts_ids_is_404(person, ids_of_another_account, path):
    response = person.submit(path.format(**ids_of_another_account), {"name": "Mine now", "quantity": "1"},
                             page="/invoices")
    assert response.status_code == 404
    assert "belongs to another account" in response.text


@pytest.mark.parametrize("path", GET_PATHS_WITH_IDS)
def test_opening_another_accounts_ids_is_404(person, ids_of_another_account, path):
    response = person.get(path.format(**ids_of_another_account))
    assert response.status_code == 404


def test_another_accounts_line_on_my_own_draft_is_404(client, ids_of_another_account):
    owner = make_tenant(client)
    browser = Browser(client)
    browser.sign_in(owner.user_email, OWNER_PASSWORD)
    mine = draft(owner)["id"]
    for action in ("", "/remove"):
        response = browser.submit(f"/invoices/{mine}/lines/{ids_of_another_account['item_id']}{action}",
                                  {"description": "x", "quantity": "1"}, page="/invoices")
        assert response.status_code == 404
    assert len(draft_lines(owner, mine)) == 1


def draft_lines(tenant, invoice_id: str) -> list[dict]:
    return tenant.get(f"/invoices/{invoice_id}").json()["data"]["lines"]["data"]


@pytest.mark.parametrize("bad_id", ["nope", "in_" + "0" * 32, "%00", "in_" + "x" * 5000])
def test_malformed_ids_are_404(person, bad_id):
    assert person.get(f"/invoices/{bad_id}").status_code == 404
    assert person.get(f"/customers/{bad_id}").status_code == 404
    assert person.get(f"/products/{bad_id}").status_code == 404
    assert person.get(f"/credit-notes/{bad_id}").status_code == 404
    assert person.get(f"/schedules/{bad_id}").status_code == 404


def test_a_signed_in_person_may_send_a_form_larger_than_an_anonymous_one(person):
    response = person.client.post("/customers/new", content=b"name=" + b"x" * 200 * 1024,
                                  headers={"Content-Type": "application/x-www-form-urlencoded"}, follow_redirects=False)
    assert response.status_code == 403  # read, then refused for its missing CSRF token


def test_a_webhook_address_is_resolved_with_no_transaction_open(person, tenant, monkeypatch):
    """A slow DNS answer must hold no write lock, whichever surface creates the endpoint."""
    from core.base import db
    from core.outbound import netguard
    held = []

    def resolve(host, _port):
        held.append(db.get_engine().pool.checkedout())
        return ["93.184.216.34"]
    monkeypatch.setattr(netguard, "default_resolver", resolve)
    assert tenant.post("/webhook-endpoints", json={"url": "https://hooks.example.com/a"}).status_code == 201
    response = person.submit("/settings/webhooks", {"url": "https://hooks.example.com/b", "which": "all"})
    assert response.status_code == 201
    assert held == [0, 0]
