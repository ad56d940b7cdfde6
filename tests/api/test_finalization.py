"""Every way a draft is finalized runs one function, `core.billing.finalization.finalize`: REST's
finalize (the pipeline, on the event loop) and a send of a draft (inside its session). Its refusals
come in one order."""

from __future__ import annotations

import pytest

from core.billing import finalization
from tests.api.invoicing import draft, finalize, open_invoice
from tests.smtp import mail_settings, smtp_server


@pytest.fixture
def finalizations(monkeypatch) -> list[str]:
    """The invoices `finalization.finalize` was run for, whichever path ran it."""
    noted: list[str] = []
    original = finalization.finalize

    async def noting(db, principal, id_text, **options):
        noted.append(id_text)
        return await original(db, principal, id_text, **options)
    monkeypatch.setattr(finalization, "finalize", noting)
    return noted


def test_rest_finalize_runs_it(tenant, finalizations):
    invoice = draft(tenant)
    assert finalize(tenant, invoice["id"]).status_code == 200
    assert finalizations == [invoice["id"]]


def test_a_send_of_a_draft_runs_it_once(tenant, finalizations):
    invoice = draft(tenant)
    with smtp_server() as (_handler, url), mail_settings(smtp_url=url):
        sent = tenant.post(f"/invoices/{invoice['id']}/send", idem=True)
    assert sent.status_code == 200, sent.text
    assert sent.json()["data"]["number"] == "INV-0001"
    assert finalizations == [invoice["id"]]


def test_an_open_invoice_is_not_finalized_again(tenant):
    invoice = open_invoice(tenant)
    refused = finalize(tenant, invoice["id"])
    assert refused.status_code == 409 and refused.json()["code"] == "invalid_state"
    assert "only a draft can be finalized" in refused.json()["detail"]


def test_a_refused_finalization_takes_no_number(tenant):
    opened = open_invoice(tenant)
    assert finalize(tenant, opened["id"]).status_code == 409
    assert finalize(tenant, draft(tenant)["id"]).json()["data"]["number"] == "INV-0002"
