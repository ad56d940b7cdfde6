"""Driving the OAuth flow in tests: sign a user in, register a client, pass the consent page.

Works with any httpx.Client: Starlette's TestClient (in-process) or a client of a live server.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
from html import unescape
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from sqlmodel import select

from core.access import accounts
from core.base import db
from core.base.crypto import sha256_hex
from core.models import WebSession
from pages.sessions import SESSION_COOKIE, start_session

REDIRECT_URI = "http://127.0.0.1:8765/callback"


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    return verifier, create_s256_code_challenge(verifier)


def sign_in(browser: httpx.Client, email: str, account_id=None) -> None:
    """Give the browser a session cookie of the user with this e-mail, acting for `account_id` (one of
    their businesses; by default their first)."""
    with db.transaction() as session:
        cookie = start_session(session, accounts.user_by_email(session, email))
        if account_id is not None:
            session.flush()
            row = session.exec(select(WebSession).where(WebSession.token_hash == sha256_hex(cookie))).one()
            row.account_id = account_id
    browser.cookies.set(SESSION_COOKIE, cookie)


def register(http: httpx.Client, **metadata) -> dict:
    body = {"client_name": "Test app", "redirect_uris": [REDIRECT_URI], **metadata}
    response = http.post("/oauth/register", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def authorize_query(client_id: str, challenge: str, **extra) -> str:
    params = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT_URI,
              "state": "st-" + secrets.token_hex(4), "code_challenge": challenge,
              "code_challenge_method": "S256", **extra}
    return "/oauth/authorize?" + urlencode({k: v for k, v in params.items() if v is not None})


def csrf_token(html: str) -> str:
    return re.search(r'name="csrf_token" value="([^"]+)"', html.split('<form id="consent"')[-1]).group(1)


def offered_scopes(html: str) -> list[str]:
    return re.findall(r'name="scope" value="([^"]+)"', html)


def ticked_scopes(html: str) -> list[str]:
    return re.findall(r'name="scope" value="([^"]+)" checked', html)


def form_action(html: str) -> str:
    return unescape(re.search(r'<form id="consent" method="post" action="([^"]+)"', html).group(1))


def submit_consent(browser: httpx.Client, authorize_url: str, *, decision: str = "allow",
                   scopes: list[str] | None = None, fields: dict | None = None) -> httpx.Response:
    """Open the consent page and answer it; `scopes` None keeps the pre-ticked boxes; `fields`
    adds form fields (limits: `invoices-finalize.amount`, `detail0.per_day`, …)."""
    page = browser.get(authorize_url, follow_redirects=False)
    assert page.status_code == 200, page.text
    chosen = ticked_scopes(page.text) if scopes is None else scopes
    data = {"csrf_token": csrf_token(page.text), "decision": decision, "scope": chosen, **(fields or {})}
    return browser.post(form_action(page.text), data=data, follow_redirects=False)


def redirect_params(response: httpx.Response) -> dict[str, list[str]]:
    assert response.status_code in (302, 303), response.text
    return parse_qs(urlsplit(response.headers["location"]).query)


def basic(client_id: str, secret: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()}


class DocumentServer:
    """An https server on 127.0.0.1 (certificate from a `trustme` authority) serving client
    metadata documents: `documents[path] = (json_body_or_bytes, headers)`. Counts fetches."""

    def __init__(self) -> None:
        import ssl
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        import trustme

        self.authority = trustme.CA()
        certificate = self.authority.issue_cert("127.0.0.1", "localhost")
        self.documents: dict[str, tuple[object, dict[str, str]]] = {}
        self.fetches: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                owner.fetches.append(self.path)
                body, headers = owner.documents.get(self.path, (None, {}))
                if body is None:
                    self.send_response(404)
                    self.end_headers()
                    return
                payload = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        certificate.configure_cert(context)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.origin = f"https://127.0.0.1:{self.httpd.server_address[1]}"

    def client_ssl_context(self):
        import ssl
        context = ssl.create_default_context()
        self.authority.configure_trust(context)
        return context

    def write_ca_file(self, path) -> str:
        self.authority.cert_pem.write_to_path(str(path))
        return str(path)

    def publish(self, path: str, *, redirect_uris=(REDIRECT_URI,), headers=None, **fields) -> str:
        """Serve a valid document at `path`; returns its URL, the client_id."""
        client_id = self.origin + path
        self.documents[path] = ({"client_id": client_id, "client_name": "Verified Assistant",
                                 "redirect_uris": list(redirect_uris), "token_endpoint_auth_method": "none",
                                 **fields}, headers or {})
        return client_id

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def get_code(browser: httpx.Client, client_id: str, *, scopes: list[str] | None = None, fields: dict | None = None,
             **extra) -> tuple[str, str]:
    """Consent (as the signed-in `browser`) to an authorization request with a fresh PKCE pair;
    returns the code and its verifier. `extra` adds or (None) removes request parameters."""
    verifier, challenge = pkce_pair()
    response = submit_consent(browser, authorize_query(client_id, challenge, **extra), scopes=scopes, fields=fields)
    return redirect_params(response)["code"][0], verifier


def exchange(http: httpx.Client, client_id: str, code: str, verifier: str | None, *, headers=None,
             secret: str | None = None, **extra) -> httpx.Response:
    """The token request for a code. `client_id` goes in the form unless `headers` authenticate
    the client; `secret` adds client_secret_post; `extra` adds or (None) removes form fields."""
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI,
            "code_verifier": verifier, "client_id": None if headers else client_id, "client_secret": secret, **extra}
    return http.post("/oauth/token", data={k: v for k, v in data.items() if v is not None}, headers=headers or {})


def refresh(http: httpx.Client, client_id: str | None, refresh_token: str, *, headers=None, **extra) -> httpx.Response:
    data = {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id, **extra}
    return http.post("/oauth/token", data={k: v for k, v in data.items() if v is not None}, headers=headers or {})


def obtain(client, app_client, *, resource=None, scopes=None, scope=None, fields=None, authorization_details=None):
    """A whole authorization by a signed-in `client`: consent (`scopes` None keeps the pre-ticked
    boxes; `fields` sets limits), then the code exchanged for the token response."""
    details = json.dumps(authorization_details) if authorization_details is not None else None
    code, verifier_ = get_code(client, app_client["client_id"], scopes=scopes, resource=resource, scope=scope,
                               fields=fields, authorization_details=details)
    token = exchange(client, app_client["client_id"], code, verifier_, resource=resource)
    assert token.status_code == 200, token.text
    return token.json()


def user_id_of(tenant):
    """The id of the user who owns the tenant's account."""
    with db.transaction() as session:
        return accounts.user_by_email(session, tenant.user_email).id
