"""Client ID metadata documents: an https client_id is fetched (address rules, 5 KB, client_id
must equal the URL), cached per its HTTP cache headers (at most 24 h), and shown as verified."""

from datetime import timedelta

import httpx
import pytest
from sqlmodel import select

from authz import metadata_documents
from authz.models import OAuthClient
from core.base import db
from core.base.clock import now
from tests.oauth_flow import (
    REDIRECT_URI,
    DocumentServer,
    authorize_query,
    pkce_pair,
    redirect_params,
    submit_consent,
)


@pytest.fixture(scope="module")
def documents():
    server = DocumentServer()
    yield server
    server.close()


@pytest.fixture(autouse=True)
def trust_test_authority(documents):
    metadata_documents.use_tls_verify(documents.client_ssl_context())
    documents.documents.clear()
    documents.fetches.clear()
    yield
    metadata_documents.use_tls_verify(None)


def page_for(browser, client_id, **extra):
    return browser.get(authorize_query(client_id, pkce_pair()[1], **extra), follow_redirects=False)


def test_document_client_is_shown_verified_with_its_host(browser, documents):
    client_id = documents.publish("/oauth/client.json")
    page = page_for(browser, client_id)
    assert page.status_code == 200, page.text
    assert "Verified app" in page.text
    assert "Verified Assistant" in page.text
    assert "<strong>127.0.0.1</strong>" in page.text
    assert "Unverified" not in page.text


def test_full_flow_with_a_document_client(client, browser, documents):
    client_id = documents.publish("/oauth/client.json")
    verifier, challenge = pkce_pair()
    code = redirect_params(submit_consent(browser, authorize_query(client_id, challenge)))["code"][0]
    response = client.post("/oauth/token", data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI,
        "code_verifier": verifier, "client_id": client_id})
    assert response.status_code == 200, response.text
    assert response.json()["access_token"].startswith("inv_oat_")


def test_loopback_redirect_without_port_matches_any_port(browser, documents):
    client_id = documents.publish("/c.json", redirect_uris=["http://localhost/callback"])
    page = page_for(browser, client_id, redirect_uri="http://localhost:61234/callback")
    assert page.status_code == 200, page.text


def test_document_whose_client_id_differs_is_refused(browser, documents):
    client_id = documents.publish("/c.json")
    body, headers = documents.documents["/c.json"]
    documents.documents["/c.json"] = ({**body, "client_id": "https://elsewhere.example/c.json"}, headers)
    page = page_for(browser, client_id)
    assert page.status_code == 400
    assert "does not equal the URL" in page.text


def test_document_over_5_kb_is_refused(browser, documents):
    client_id = documents.publish("/big.json", padding="x" * 6000)
    page = page_for(browser, client_id)
    assert page.status_code == 400
    assert "larger than 5120 bytes" in page.text


def test_missing_document_is_refused(browser, documents):
    page = page_for(browser, documents.origin + "/missing.json")
    assert page.status_code == 400
    assert "HTTP 404" in page.text


def test_redirect_uri_not_in_document_is_an_error_page(browser, documents):
    client_id = documents.publish("/c.json")
    page = page_for(browser, client_id, redirect_uri="http://127.0.0.1:8765/other")
    assert page.status_code == 400
    assert "location" not in page.headers


@pytest.mark.parametrize("fields,reason", [
    ({"token_endpoint_auth_method": "client_secret_basic"}, "must be none"),
    ({"redirect_uris": ["http://app.example.com/cb"]}, "http is allowed only"),
    ({"grant_types": ["client_credentials"]}, "grant_types"),
    ({"client_secret": "s"}, "client_secret"),
    ({"grant_types": [["authorization_code"]]}, "grant_types must be a list of strings"),
    ({"grant_types": 5}, "grant_types must be a list of strings"),
    ({"response_types": [{}]}, "response_types must be a list of strings"),
    ({"client_name": "App\u001b[31m"}, "client_name must not contain control characters"),
    ({"client_name": "A\x00"}, "client_name must not contain control characters"),
    ({"client_uri": 5}, "client_uri must be a string"),
])
def test_invalid_documents_are_refused(browser, documents, fields, reason):
    client_id = documents.publish("/c.json", **fields)
    page = page_for(browser, client_id)
    assert page.status_code == 400
    assert reason in page.text


def test_private_address_is_refused_by_the_address_rules(browser, test_settings):
    page = page_for(browser, "https://10.0.0.1/client.json")
    assert page.status_code == 400
    assert "could not be fetched from a public address" in page.text


BAD_HOST_NAMES = ["https://a..example.com/client.json", "https://" + "a" * 64 + ".example.com/client.json",
                  "https://example.com./client.json", "https://example.com../client.json"]


@pytest.mark.parametrize("client_id", BAD_HOST_NAMES)
def test_a_document_url_whose_host_dns_cannot_carry_is_an_error_page(browser, client_id):
    page = page_for(browser, client_id)
    assert page.status_code == 400
    assert "location" not in page.headers


@pytest.mark.parametrize("client_id", BAD_HOST_NAMES)
def test_a_document_url_whose_host_dns_cannot_carry_is_invalid_client_at_the_token_endpoint(client, client_id):
    response = client.post("/oauth/token", data={
        "grant_type": "authorization_code", "code": "c", "redirect_uri": REDIRECT_URI,
        "code_verifier": "v" * 43, "client_id": client_id})
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "invalid_client"


@pytest.mark.parametrize("body", [b"[" * 3000, b'{"client_name": "a\\ud800"}', b'{"x": NaN}'])
def test_a_document_no_client_could_use_is_an_error_page(browser, documents, body):
    documents.documents["/raw.json"] = (body, {"Content-Type": "application/json"})
    page = page_for(browser, documents.origin + "/raw.json")
    assert page.status_code == 400
    assert "location" not in page.headers


def test_client_id_url_needs_a_path(browser, documents):
    page = page_for(browser, documents.origin + "/")
    assert page.status_code == 400
    assert "must have a path" in page.text


def test_document_is_cached_as_its_headers_allow(browser, documents):
    client_id = documents.publish("/c.json", headers={"Cache-Control": "max-age=600"})
    page_for(browser, client_id)
    page_for(browser, client_id)
    assert documents.fetches == ["/c.json"]
    with db.transaction() as session:
        row = session.exec(select(OAuthClient).where(OAuthClient.client_id == client_id)).one()
    assert row.metadata_document
    assert timedelta(seconds=590) < row.document_expires_at - now() <= timedelta(seconds=600)


def test_no_store_document_is_fetched_every_time(browser, documents):
    client_id = documents.publish("/c.json", headers={"Cache-Control": "no-store"})
    page_for(browser, client_id)
    page_for(browser, client_id)
    assert documents.fetches == ["/c.json", "/c.json"]


def test_expired_cache_is_refreshed(browser, documents):
    client_id = documents.publish("/c.json", headers={"Cache-Control": "max-age=600"})
    page_for(browser, client_id)
    documents.publish("/c.json", client_name="Renamed Assistant")
    with db.transaction() as session:
        row = session.exec(select(OAuthClient).where(OAuthClient.client_id == client_id)).one()
        row.document_expires_at = now() - timedelta(seconds=1)
        session.add(row)
    assert "Renamed Assistant" in page_for(browser, client_id).text


@pytest.mark.parametrize("headers,expected", [
    ({"cache-control": "max-age=120"}, timedelta(seconds=120)),
    ({"cache-control": "public, s-maxage=60, max-age=120"}, timedelta(seconds=60)),
    ({"cache-control": "max-age=999999"}, timedelta(hours=24)),
    ({"cache-control": "no-cache"}, timedelta(0)),
    ({"cache-control": "no-store, max-age=600"}, timedelta(0)),
    ({"date": "Sun, 22 Nov 2026 10:00:00 GMT", "expires": "Sun, 22 Nov 2026 10:30:00 GMT"}, timedelta(minutes=30)),
    ({"date": "Sun, 22 Nov 2026 10:00:00 GMT", "expires": "garbage"}, timedelta(0)),
    ({}, metadata_documents.DEFAULT_CACHE),
])
def test_cache_lifetime(headers, expected):
    assert metadata_documents.cache_lifetime(httpx.Headers(headers)) == expected


# --- plain http documents, for development hosts only ---------------------------------------------


@pytest.fixture
def plain_documents():
    """An http server on 127.0.0.1 (a host of the test's INVOICING_UNSAFE_WEBHOOK_ALLOW_HOSTS)."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    served: dict[str, dict] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = json.dumps(served[self.path]).encode() if self.path in served else None
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{server.server_address[1]}"

    def publish(path: str) -> str:
        served[path] = {"client_id": origin + path, "client_name": "Local Assistant",
                        "redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none"}
        return origin + path

    yield publish
    server.shutdown()


def test_an_http_document_on_an_allowed_development_host_is_used(browser, plain_documents):
    page = page_for(browser, plain_documents("/client.json"))
    assert page.status_code == 200, page.text
    assert "Local Assistant" in page.text


@pytest.mark.parametrize(("client_id", "document"), [
    ("https://app.example/client.json", True),
    ("http://127.0.0.1:9/client.json", True),
    ("http://app.example/client.json", False),
    ("cl_abc", False),
])
def test_only_https_or_allowed_development_hosts_name_documents(client_id, document):
    assert metadata_documents.is_document_client_id(client_id) is document
