"""Signing in from the command line: OAuth 2.1 authorization code with PKCE on a loopback redirect.

`login` finds the authorization server from the API's protected resource metadata (RFC 9728, then
RFC 8414), registers this tool once per server (RFC 7591, a public client whose redirect URI is
`http://127.0.0.1/callback`, which the server matches on any port, RFC 8252), opens the consent page
and waits on a port of the loopback interface for the answer. The token is bound to the REST API
(`resource`, RFC 8707) and kept by `credentials`; it is refreshed before it expires (each refresh
token works once) and revoked by `logout`. Nothing is fetched from anywhere but the server itself,
so it works on a deployment without internet access.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import threading
import time
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

from invoicing_client.cli import credentials
from invoicing_client.errors import AuthenticationError, InvoicingError

CLIENT_NAME = "Invoicing CLI"
REDIRECT_PATH = "/callback"
EARLY_REFRESH = 60  # seconds before expiry a token is renewed


class LoginFailed(InvoicingError):
    """The sign-in did not complete; the message says why and what to do."""


@dataclass(frozen=True)
class Server:
    """The authorization server that protects one API."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str | None
    revocation_endpoint: str | None
    requires_iss: bool


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def discover(http: httpx.Client, api: str) -> Server:
    parts = urlsplit(api)
    resource_metadata = f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"
    resource = _json(http.get(resource_metadata), "the API's protected resource metadata")
    issuer = (resource.get("authorization_servers") or [origin_of(api)])[0]
    issuer_parts = urlsplit(issuer)
    metadata = _json(http.get(f"{issuer_parts.scheme}://{issuer_parts.netloc}/.well-known/oauth-authorization-server"
                              f"{issuer_parts.path.rstrip('/')}"), "the authorization server's metadata")
    if metadata.get("issuer") != issuer:
        raise LoginFailed(f"The authorization server's metadata names {metadata.get('issuer')!r}, not {issuer!r}.")
    return Server(issuer=issuer, authorization_endpoint=metadata["authorization_endpoint"],
                  token_endpoint=metadata["token_endpoint"], registration_endpoint=metadata.get("registration_endpoint"),
                  revocation_endpoint=metadata.get("revocation_endpoint"),
                  requires_iss=bool(metadata.get("authorization_response_iss_parameter_supported")))


def _json(response: httpx.Response, what: str) -> dict[str, Any]:
    if response.status_code != 200:
        raise LoginFailed(f"Could not read {what} at {response.request.url} (HTTP {response.status_code}). "
                          "Is the base URL the Invoicing API's?")
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise LoginFailed(f"{what.capitalize()} at {response.request.url} is not JSON.")
    return body


def register(http: httpx.Client, server: Server) -> str:
    if not server.registration_endpoint:
        raise LoginFailed("This server does not let tools register themselves; use an API key (--api-key).")
    response = http.post(server.registration_endpoint, json={
        "client_name": CLIENT_NAME, "redirect_uris": [f"http://127.0.0.1{REDIRECT_PATH}"],
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
        "token_endpoint_auth_method": "none", "software_id": "invoicing-client-python"})
    if response.status_code not in (200, 201):
        raise LoginFailed(f"The server refused to register this tool: {_oauth_error(response)}")
    return response.json()["client_id"]


def _oauth_error(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status_code}"
    if not isinstance(body, dict):
        return f"HTTP {response.status_code}"
    return body.get("error_description") or body.get("error") or body.get("detail") or f"HTTP {response.status_code}"


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(64)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


class _Callback:
    """A one-shot HTTP server on 127.0.0.1 (a port the system picks) for the authorization response."""

    def __init__(self) -> None:
        self.params: dict[str, str] | None = None
        self.arrived = threading.Event()
        callback = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                parts = urlsplit(self.path)
                if parts.path != REDIRECT_PATH:
                    self.send_error(404)
                    return
                params = {name: values[0] for name, values in parse_qs(parts.query).items()}
                ok = "code" in params
                page = ("<h1>Signed in</h1><p>You can close this tab and return to the terminal.</p>" if ok else
                        "<h1>Not signed in</h1><p>The terminal says why.</p>")
                body = f"<!doctype html><meta charset=utf-8><title>Invoicing CLI</title>{page}".encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                if callback.params is None:
                    callback.params = params
                    callback.arrived.set()

            def log_message(self, *args: object) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.redirect_uri = f"http://127.0.0.1:{self.server.server_port}{REDIRECT_PATH}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait(self, timeout: float) -> dict[str, str] | None:
        self.arrived.wait(timeout)
        return self.params

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def login(api: str, *, scope: str | None, open_browser: bool, timeout: float,
          say: Callable[[str], None]) -> dict[str, Any]:
    """Sign in to `api` and keep the tokens; the token response."""
    with httpx.Client(timeout=30.0) as http:
        server = discover(http, api)
        kept = credentials.server(api)
        client_id = kept.get("client_id") if kept.get("issuer") == server.issuer else None
        if client_id and not _client_known(http, server, client_id):
            client_id = None  # the server forgot it (a new database): register again
        if not client_id:
            client_id = register(http, server)
            credentials.update_server(api, issuer=server.issuer, client_id=client_id)
        callback = _Callback()
        try:
            verifier, challenge = _pkce()
            state = secrets.token_urlsafe(24)
            query = {"response_type": "code", "client_id": client_id, "redirect_uri": callback.redirect_uri,
                     "code_challenge": challenge, "code_challenge_method": "S256", "state": state, "resource": api}
            if scope:
                query["scope"] = scope
            url = f"{server.authorization_endpoint}?{urlencode(query)}"
            if open_browser and webbrowser.open(url):
                say(f"Opened the consent page in your browser. If it did not appear, open:\n\n  {url}\n")
            else:
                say(f"Open this address in a browser signed in to your account, and allow access:\n\n  {url}\n")
            say("Waiting for the answer…")
            params = callback.wait(timeout)
        finally:
            callback.close()
        if params is None:
            raise LoginFailed(f"No answer from the browser within {int(timeout)} s. Run `invoicing-cli login` again.")
        _check_answer(params, state, server)
        response = http.post(server.token_endpoint, data={
            "grant_type": "authorization_code", "code": params["code"], "redirect_uri": callback.redirect_uri,
            "client_id": client_id, "code_verifier": verifier, "resource": api})
        if response.status_code != 200:
            raise LoginFailed(f"The server did not issue a token: {_oauth_error(response)}")
        token = response.json()
        _keep(api, server, client_id, token)
        return token


def _client_known(http: httpx.Client, server: Server, client_id: str) -> bool:
    """Whether the server still knows this client: an unknown one gets an error page, never a redirect."""
    _, challenge = _pkce()
    probe = http.get(server.authorization_endpoint, params={
        "response_type": "code", "client_id": client_id, "redirect_uri": f"http://127.0.0.1{REDIRECT_PATH}",
        "code_challenge": challenge, "code_challenge_method": "S256"}, follow_redirects=False)
    return probe.is_redirect


def _check_answer(params: dict[str, str], state: str, server: Server) -> None:
    if not secrets.compare_digest(params.get("state", ""), state):
        raise LoginFailed("The answer did not belong to this sign-in (its state differs). Run `invoicing-cli login` again.")
    if server.requires_iss and params.get("iss") != server.issuer:  # RFC 9207: not another server's answer
        raise LoginFailed(f"The answer came from {params.get('iss')!r}, not {server.issuer!r}; nothing was kept.")
    if "error" in params:
        if params["error"] == "access_denied":
            raise LoginFailed("Access was denied on the consent page; nothing was kept.")
        raise LoginFailed(f"The server refused the sign-in: {params.get('error_description') or params['error']}")
    if "code" not in params:
        raise LoginFailed("The answer carried no authorization code.")


def _keep(api: str, server: Server, client_id: str, token: dict[str, Any]) -> None:
    credentials.update_server(
        api, issuer=server.issuer, client_id=client_id, token_endpoint=server.token_endpoint,
        revocation_endpoint=server.revocation_endpoint, access_token=token["access_token"],
        refresh_token=token.get("refresh_token"), scope=token.get("scope", ""),
        expires_at=int(time.time()) + int(token.get("expires_in", 3600)))


def access_token(api: str) -> str | None:
    """A valid access token for `api` from the last login, refreshed when it is about to expire;
    None when nobody signed in."""
    kept = credentials.server(api)
    if not kept.get("access_token"):
        return None
    if kept.get("expires_at", 0) - EARLY_REFRESH > time.time():
        return kept["access_token"]
    with credentials.locked():
        kept = credentials.server(api)  # another command may have refreshed meanwhile
        if kept.get("access_token") and kept.get("expires_at", 0) - EARLY_REFRESH > time.time():
            return kept["access_token"]
        return _refresh(api, kept)


def _refresh(api: str, kept: dict[str, Any]) -> str:
    if not kept.get("refresh_token"):
        raise AuthenticationError("Your sign-in has expired. Run `invoicing-cli login`.")
    with httpx.Client(timeout=30.0) as http:
        response = http.post(kept["token_endpoint"], data={
            "grant_type": "refresh_token", "refresh_token": kept["refresh_token"], "client_id": kept["client_id"],
            "resource": api})
    if response.status_code != 200:
        credentials.update_server(api, access_token=None, refresh_token=None, expires_at=None, scope=None)
        raise AuthenticationError(f"Your sign-in has ended ({_oauth_error(response)}): the app may have been "
                                  "disconnected in the dashboard. Run `invoicing-cli login`.")
    token = response.json()
    credentials.update_server(api, access_token=token["access_token"],
                              refresh_token=token.get("refresh_token", kept["refresh_token"]),
                              scope=token.get("scope", kept.get("scope", "")),
                              expires_at=int(time.time()) + int(token.get("expires_in", 3600)))
    return token["access_token"]


def logout(api: str) -> bool:
    """Revoke the sign-in to `api` (its refresh token ends the whole grant) and forget the tokens.
    False when nobody was signed in."""
    kept = credentials.server(api)
    if not kept.get("refresh_token") and not kept.get("access_token"):
        return False
    if kept.get("revocation_endpoint"):
        token, hint = ((kept["refresh_token"], "refresh_token") if kept.get("refresh_token")
                       else (kept["access_token"], "access_token"))
        try:
            with httpx.Client(timeout=30.0) as http:
                http.post(kept["revocation_endpoint"], data={"token": token, "token_type_hint": hint,
                                                             "client_id": kept["client_id"]})
        except httpx.TransportError as exc:
            raise LoginFailed(f"Could not reach the server to revoke the sign-in ({exc}); the tokens are kept. "
                              "Try again, or disconnect the app in the dashboard.") from exc
    credentials.update_server(api, access_token=None, refresh_token=None, expires_at=None, scope=None)
    return True
