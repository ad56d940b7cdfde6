"""Bodies are bounded before they are read, on every route, in each surface's own error format."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy.exc import OperationalError

from mcp_server.gate import MAX_BODY_BYTES as MCP_LIMIT
from pages.sessions import SESSION_COOKIE
from rest.framework import MAX_BODY_BYTES as API_LIMIT
from service import app as app_module
from service.body_limits import KB
from tests.web.conftest import Browser

JSON = {"Content-Type": "application/json"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def chunks(total: int, size: int = 64 * KB):
    """A body without Content-Length (chunked), `total` bytes in pieces."""
    sent = 0
    while sent < total:
        piece = min(size, total - sent)
        sent += piece
        yield b"x" * piece


def test_an_api_body_over_8_mib_is_a_413_problem_before_authentication(client):
    response = client.post("/api/v1/customers", content=b"x" * (API_LIMIT + 1), headers=JSON)
    assert response.status_code == 413
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "payload_too_large"
    assert response.json()["instance"] == response.headers["x-request-id"]


def test_a_chunked_api_body_over_the_limit_is_refused(client):
    response = client.post("/api/v1/customers", content=chunks(API_LIMIT + KB), headers=JSON)
    assert response.status_code == 413 and response.json()["code"] == "payload_too_large"


def test_an_api_body_at_the_limit_is_read(tenant):
    padding = API_LIMIT - len(b'{"name": "A", "tax_id": ""}')
    body = b'{"name": "A", "tax_id": "' + b"x" * padding + b'"}'
    assert len(body) <= API_LIMIT
    assert tenant.post("/customers", content=body, headers=JSON).status_code == 422  # read, then validated


def test_an_mcp_body_over_its_limit_is_a_json_rpc_413(client):
    response = client.post("/mcp", content=b"x" * (MCP_LIMIT + 1), headers=JSON)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == -32600


@pytest.mark.parametrize("chunked", [False, True])
def test_a_registration_over_16_kb_is_an_oauth_error(client, chunked):
    size = 16 * KB + 1
    response = client.post("/oauth/register", content=chunks(size) if chunked else b"x" * size, headers=JSON)
    assert response.status_code == 413
    assert response.json()["error"] == "invalid_request"
    assert "16 KB" in response.json()["error_description"]


def test_a_token_request_over_8_kb_is_an_oauth_error(client):
    response = client.post("/oauth/token", content=b"grant_type=" + b"x" * 8 * KB, headers=FORM)
    assert response.status_code == 413 and response.json()["error"] == "invalid_request"


def test_a_consent_form_over_8_kb_is_a_page(client):
    response = client.post("/oauth/authorize", content=b"a=" + b"x" * 8 * KB, headers=FORM)
    assert response.status_code == 413
    assert response.headers["content-type"].startswith("text/html")


@pytest.mark.parametrize("path", ["/signup", "/login", "/login/code"])
def test_a_sign_in_form_over_16_kb_is_a_page(client, path):
    response = client.post(path, content=b"email=" + b"x" * 16 * KB, headers=FORM)
    assert response.status_code == 413
    assert "too large" in response.text


def test_a_declared_length_over_the_limit_is_refused_without_reading(app):
    """The middleware answers from Content-Length alone: `receive` is never called."""
    sent: list[dict] = []

    async def receive():
        raise AssertionError("the body was read")

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/oauth/register", "raw_path": b"/oauth/register",
             "query_string": b"", "root_path": "", "scheme": "http", "server": ("testserver", 80),
             "client": ("198.51.100.7", 1234), "http_version": "1.1",
             "headers": [(b"content-length", str(96 * 1024 * 1024).encode()), (b"host", b"testserver"),
                         (b"content-type", b"application/json")]}
    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 413


# --- the larger allowance of a signed-in person (issue 33) -----------------------------------

PAGE_FORM = b"name=" + b"x" * 32 * KB  # over the 16 KB of a signed-out page, far under the 8 MiB of a signed-in one


def signed_up(client):
    assert Browser(client).sign_up().status_code == 303  # the client now holds a session cookie
    return client


@pytest.mark.parametrize("chunked", [False, True])
def test_a_cookie_named_like_the_session_cookie_gets_no_larger_allowance(client, chunked):
    client.cookies.set(SESSION_COOKIE, "not-a-session")
    response = client.post("/customers/new", content=chunks(len(PAGE_FORM)) if chunked else PAGE_FORM, headers=FORM)
    assert response.status_code == 413
    assert "16 KB" in response.text


@pytest.mark.parametrize("chunked", [False, True])
def test_a_signed_in_person_gets_the_larger_allowance(client, chunked):
    signed_up(client)
    response = client.post("/customers/new", content=chunks(len(PAGE_FORM)) if chunked else PAGE_FORM, headers=FORM)
    assert response.status_code == 403  # read whole, then refused for its missing form token


def test_a_session_that_cannot_be_checked_gets_the_smaller_allowance(client, monkeypatch):
    signed_up(client)

    def unreachable(_request):
        raise OperationalError("SELECT", {}, Exception("the database is down"))
    monkeypatch.setattr(app_module, "current_user", unreachable)
    response = client.post("/customers/new", content=PAGE_FORM, headers=FORM)
    assert response.status_code == 413
