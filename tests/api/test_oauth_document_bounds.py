"""Client metadata documents are fetched off the request threads, bounded in flight overall and per
host, not fetched again soon after a failure, limited per client network; refusals name the problem,
never how the network looks."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from authz import metadata_documents
from authz.metadata_documents import DocumentError
from config.settings import get_settings
from core.outbound import netguard
from tests.oauth_flow import authorize_query, pkce_pair


@pytest.fixture
def fetches(monkeypatch) -> list[dict]:
    """Every fetch (its URL and thread); each fails, as slow or unreachable documents do."""
    made: list[dict] = []

    def failing(client_id):
        made.append({"url": client_id, "thread": threading.current_thread().name})
        raise DocumentError("it could not be fetched (no answer in time, or the connection failed)")
    monkeypatch.setattr(metadata_documents, "fetch", failing)
    return made


def authorize(client, client_id: str) -> httpx.Response:
    return client.get(authorize_query(client_id, pkce_pair()[1]), follow_redirects=False)


def test_documents_are_fetched_on_a_pool_of_their_own(client, fetches):
    authorize(client, "https://app.example/one.json")
    assert fetches[0]["thread"].startswith("metadata-fetch")


def test_a_failed_document_is_not_fetched_again_for_a_while(client, fetches):
    first = authorize(client, "https://app.example/client.json")
    second = authorize(client, "https://app.example/client.json")
    assert len(fetches) == 1
    assert first.status_code == second.status_code == 400
    assert "failed a few minutes ago" in second.text


def test_a_host_that_keeps_failing_is_not_asked_again_for_a_while(client, fetches):
    for n in range(metadata_documents.failures_per_host().requests):
        authorize(client, f"https://flaky.example/{n}.json")
    refused = authorize(client, "https://flaky.example/another.json")
    assert len(fetches) == metadata_documents.failures_per_host().requests
    assert "failed repeatedly" in refused.text
    authorize(client, "https://other.example/client.json")
    assert len(fetches) == metadata_documents.failures_per_host().requests + 1


def test_documents_fetched_per_client_network_are_limited(client, fetches, monkeypatch):
    monkeypatch.setattr(get_settings(), "rate_limit_metadata_fetches", 2)
    for n in range(3):
        last = authorize(client, f"https://host{n}.example/client.json")
    assert len(fetches) == 2
    assert "client documents this hour" in last.text


def test_fetches_in_flight_per_host_are_bounded(client, fetches):
    for _ in range(metadata_documents.FETCHES_PER_HOST):
        assert metadata_documents._take_slot("busy.example")
    try:
        refused = authorize(client, "https://busy.example/client.json")
    finally:
        for _ in range(metadata_documents.FETCHES_PER_HOST):
            metadata_documents._give_slot("busy.example")
    assert fetches == []
    assert "too many client documents are being fetched" in refused.text


def test_fetches_in_flight_are_bounded_overall(client, fetches):
    hosts = [f"h{n}.example" for n in range(metadata_documents.FETCHES_IN_FLIGHT)]
    assert all(metadata_documents._take_slot(host) for host in hosts)
    try:
        authorize(client, "https://fresh.example/client.json")
    finally:
        for host in hosts:
            metadata_documents._give_slot(host)
    assert fetches == []


def test_a_refusal_never_tells_where_a_name_resolves(client, monkeypatch):
    monkeypatch.setattr(netguard, "default_resolver", lambda host, port: ["127.0.0.1"])
    page = authorize(client, "https://looks-public.example/client.json")
    assert page.status_code == 400
    assert "could not be fetched from a public address" in page.text
    for internal in ("127.0.0.1", "loopback", "resolves"):
        assert internal not in page.text


def test_a_resolver_error_is_not_shown(client, monkeypatch):
    def broken(host, port):
        raise OSError(-2, "Name or service not known")
    monkeypatch.setattr(netguard, "default_resolver", broken)
    page = authorize(client, "https://nowhere.example/client.json")
    assert "Name or service" not in page.text and "-2" not in page.text


@pytest.mark.parametrize("header", ["max-age=99999999999999999999999", "s-maxage=1e400", "max-age=86401"])
def test_a_huge_max_age_is_clamped_to_a_day(header):
    lifetime = metadata_documents.cache_lifetime(httpx.Headers({"cache-control": header}))
    assert lifetime.total_seconds() <= 86400


def test_a_tenants_reads_stay_fast_while_documents_hang(client, tenant, monkeypatch):
    def hanging(client_id):
        time.sleep(2)
        raise DocumentError("it could not be fetched")
    monkeypatch.setattr(metadata_documents, "fetch", hanging)
    callers = [threading.Thread(target=authorize, args=(client, f"https://slow{n}.example/c.json"))
               for n in range(16)]
    for caller in callers:
        caller.start()
    time.sleep(0.3)
    started = time.monotonic()
    assert tenant.get("/invoices").status_code == 200
    elapsed = time.monotonic() - started
    for caller in callers:
        caller.join()
    assert elapsed < 1.0


# --- host names on the consent page -----------------------------------------------------------

def test_a_look_alike_host_is_shown_in_ascii_with_a_warning(client, browser):
    from tests.oauth_flow import register
    app = register(client, redirect_uris=["https://аpple.com/callback"], token_endpoint_auth_method="none")
    page = client.get(authorize_query(app["client_id"], pkce_pair()[1], redirect_uri="https://аpple.com/callback"))
    assert page.status_code == 200, page.text
    assert '<strong id="redirect-host">xn--pple-43d.com</strong>' in page.text
    assert 'id="redirect-host-warning"' in page.text and "mixes alphabets" in page.text


def test_an_ascii_host_carries_no_note(client, browser):
    from tests.oauth_flow import register
    app = register(client, redirect_uris=["https://app.example.com/callback"], token_endpoint_auth_method="none")
    page = client.get(authorize_query(app["client_id"], pkce_pair()[1], redirect_uri="https://app.example.com/callback"))
    assert '<strong id="redirect-host">app.example.com</strong>' in page.text
    assert "redirect-host-warning" not in page.text


def test_shown_hosts():
    from authz.host_names import shown
    assert shown("аpple.com").ascii == "xn--pple-43d.com" and shown("аpple.com").mixed_scripts
    whole = shown("пример.рф")
    assert whole.ascii == "xn--e1afmkfd.xn--p1ai" and not whole.mixed_scripts and whole.unicode == "пример.рф"
    assert shown("example.com").unicode is None
