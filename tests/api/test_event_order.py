"""An invoice's events are in the order they happened (both databases), even while the clock stands
still: each event is stamped after
the invoice's latest (`core.billing.events.stamp_after`), so a history and the webhooks never show
`invoice.finalized` before `invoice.created`."""

from __future__ import annotations

import sys

import pytest

from core.base import clock
from tests.api.invoicing import add_webhook_endpoint, adhoc, customer, stored_events

SURFACES = ("core", "operations", "rest", "mcp_server", "web", "authz", "service", "pages")


@pytest.fixture
def clock_held_still(monkeypatch):
    """Every `now()` of the service gives one moment."""
    moment = clock.now()

    def still():
        return moment

    for name, module in list(sys.modules.items()):
        if name.split(".")[0] in SURFACES and getattr(module, "now", None) is clock.now:
            monkeypatch.setattr(module, "now", still)
    monkeypatch.setattr(clock, "now", still)
    return moment


def test_a_history_orders_as_it_happened_while_the_clock_stands_still(tenant, clock_held_still):
    add_webhook_endpoint(tenant.account_id)
    created = tenant.post("/invoices", json={"customer": customer(tenant)["id"], "items": [adhoc()]}, idem=True)
    assert created.status_code == 201, created.text
    invoice_id = created.json()["data"]["id"]
    assert tenant.post("/invoice-items", json={"invoice": invoice_id, **adhoc("Travel")}, idem=True).status_code == 201
    assert tenant.post(f"/invoices/{invoice_id}/finalize", idem=True).status_code == 200

    history = tenant.get(f"/invoices/{invoice_id}/events").json()["data"]
    assert [event["type"] for event in history] == ["invoice.finalized", "invoice.updated", "invoice.created"]
    moments = [event["created_at"] for event in reversed(history)]
    assert moments == sorted(set(moments)), moments  # strictly later, one after the other
    stored = stored_events(tenant.account_id)
    assert [event.payload["created_at"] for event in stored] == moments  # the webhook bodies say the same


def test_an_event_after_a_later_one_is_stamped_after_it(monkeypatch):
    from datetime import timedelta

    from core.billing import events
    latest = clock.now() + timedelta(seconds=5)  # written by a process whose clock runs ahead
    assert events.stamp_after(latest) == latest + timedelta(milliseconds=1)
    assert events.stamp_after(None) <= clock.now()


def test_a_new_drafts_answer_is_what_a_read_gives_byte_for_byte(tenant):
    # The pipeline answers from the rows it wrote, without reading them back (core.billing.invoices.create_invoice).
    response = tenant.post("/invoices", json={"customer": customer(tenant)["id"], "items": [adhoc(), adhoc()]},
                           idem=True)
    assert response.status_code == 201
    created = response.json()["data"]
    assert created["updated"] == created["created"]
    assert tenant.get(f"/invoices/{created['id']}").content == response.content
