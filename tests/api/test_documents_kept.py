"""A finalized invoice's PDF is rendered once and kept (a strong ETag, 304 on If-None-Match), on a
render pool of its own; drafts render on demand; the public link is limited per network."""

from __future__ import annotations

import threading
import time

import pytest

from config.settings import get_settings
from core.base import db
from core.billing import documents
from tests.api.invoicing import adhoc, draft, open_invoice, pay
from tests.api.test_send import mailbox, send  # noqa: F401  (the SMTP server fixture)


@pytest.fixture
def renders(monkeypatch) -> list[dict]:
    """Every render of a PDF: the thread it ran on and the connections the process held meanwhile."""
    made: list[dict] = []
    real = documents.render_invoice

    def counting(view):
        made.append({"thread": threading.current_thread().name, "connections": db.get_engine().pool.checkedout()})
        return real(view)
    monkeypatch.setattr(documents, "render_invoice", counting)
    return made


@pytest.fixture
def invoice(tenant) -> dict:
    return open_invoice(tenant, items=[adhoc("Design", 80000, tax_rate=20)])


def public_pdf(client, invoice, **headers):
    return client.get(f"/i/{invoice['public_url_token']}/pdf", headers=headers)


def test_a_finalized_invoice_renders_once_for_every_reader(tenant, client, invoice, renders):
    first = tenant.get(f"/invoices/{invoice['id']}/pdf")
    public = [public_pdf(client, invoice) for _ in range(3)]
    assert first.status_code == 200 and all(r.status_code == 200 for r in public)
    assert len(renders) == 1
    assert {r.content for r in public} == {first.content}


def test_the_pdf_carries_a_strong_etag_and_is_revalidated(tenant, client, invoice):
    response = tenant.get(f"/invoices/{invoice['id']}/pdf")
    etag = response.headers["etag"]
    assert etag.startswith('"') and not etag.startswith("W/")
    assert response.headers["cache-control"] == "private, no-cache"
    assert public_pdf(client, invoice).headers["etag"] == etag


def test_if_none_match_is_answered_304_on_the_api(tenant, invoice):
    etag = tenant.get(f"/invoices/{invoice['id']}/pdf").headers["etag"]
    response = tenant.get(f"/invoices/{invoice['id']}/pdf", headers={"If-None-Match": etag})
    assert response.status_code == 304
    assert response.content == b""
    assert response.headers["etag"] == etag
    assert "ratelimit-remaining" in response.headers


def test_if_none_match_is_answered_304_on_the_public_link(client, invoice):
    etag = public_pdf(client, invoice).headers["etag"]
    response = public_pdf(client, invoice, **{"If-None-Match": f'"other", {etag}'})
    assert response.status_code == 304 and response.content == b""


def test_an_old_etag_gets_the_document(tenant, client, invoice):
    response = public_pdf(client, invoice, **{"If-None-Match": '"not-this-one"'})
    assert response.status_code == 200 and response.content.startswith(b"%PDF")


def test_a_new_status_is_a_new_document(tenant, client, invoice, renders):
    before = public_pdf(client, invoice).headers["etag"]
    pay(tenant, invoice["id"])
    after = public_pdf(client, invoice)
    assert after.headers["etag"] != before
    assert len(renders) == 2


def test_drafts_render_every_time_and_are_never_stored(tenant, renders):
    invoice = draft(tenant)
    responses = [tenant.get(f"/invoices/{invoice['id']}/pdf") for _ in range(2)]
    assert len(renders) == 2
    assert all("etag" not in r.headers and r.headers["cache-control"] == "private, no-store" for r in responses)


def test_renders_run_on_their_own_pool_with_no_transaction_open(tenant, client, invoice, renders):
    tenant.get(f"/invoices/{draft(tenant)['id']}/pdf")
    public_pdf(client, invoice)
    assert [r["thread"].startswith("pdf-render") for r in renders] == [True, True]
    assert [r["connections"] for r in renders] == [0, 0]


def test_concurrent_readers_wait_for_one_render(invoice, tenant, monkeypatch):
    view = tenant.get(f"/invoices/{invoice['id']}").json()["data"]
    made = []

    def slow(view):
        made.append(1)
        time.sleep(0.3)
        return b"%PDF-slow"
    monkeypatch.setattr(documents, "render_invoice", slow)
    results: list[bytes] = []
    threads = [threading.Thread(target=lambda: results.append(documents.invoice_pdf(view).content)) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert made == [1] and results == [b"%PDF-slow"] * 12


def test_the_public_link_is_limited_per_network(client, invoice, monkeypatch):
    monkeypatch.setattr(get_settings(), "rate_limit_public_link", 3)
    statuses = [client.get(f"/i/{invoice['public_url_token']}").status_code for _ in range(2)]
    statuses += [public_pdf(client, invoice).status_code for _ in range(2)]
    assert statuses == [200, 200, 200, 429]
    refused = public_pdf(client, invoice)
    assert 0 < int(refused.headers["retry-after"]) <= 60
    assert refused.headers["x-robots-tag"] == "noindex, nofollow"


def test_sending_renders_after_its_commit_and_keeps_the_pdf(tenant, client, mailbox, renders):  # noqa: F811
    invoice = draft(tenant)
    assert send(tenant, invoice["id"]).status_code == 200
    assert [r["connections"] for r in renders] == [0]
    token = tenant.get(f"/invoices/{invoice['id']}").json()["data"]["public_url_token"]
    assert client.get(f"/i/{token}/pdf").status_code == 200
    assert len(renders) == 1  # the e-mailed PDF is the one the link serves


def test_a_tenants_reads_stay_fast_while_the_public_pdf_is_in_demand(client, tenant, invoice, monkeypatch):
    real = documents.render_invoice

    def slow(view):
        time.sleep(2)
        return real(view)
    monkeypatch.setattr(documents, "render_invoice", slow)
    monkeypatch.setattr(get_settings(), "rate_limit_public_link", 1000)
    readers = [threading.Thread(target=public_pdf, args=(client, invoice)) for _ in range(12)]
    for reader in readers:
        reader.start()
    time.sleep(0.3)
    started = time.monotonic()
    assert tenant.get("/invoices").status_code == 200
    elapsed = time.monotonic() - started
    for reader in readers:
        reader.join()
    assert elapsed < 1.0
