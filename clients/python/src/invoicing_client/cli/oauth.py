"""Signing in from the command line: OAuth 2.1 authorization code with PKCE on a loopback redirect.

`login` finds the authorization server from the API's protected resource metadata (RFC 9728, then
RFC 8414), registers this tool once per server (RFC 7591, a public client whose redirect URI is
`http://127.0.0.1/callback`, which the server matches on any port, RFC 8252), opens the consent page
and waits on a port of the loopback interface for the answer. The token is bound to the REST API
(`resource`, RFC 8707) and kept by `credentials`; it is refreshed before it expires (each refresh
token works once) and revoked by `logout`. Nothing is fetched from anywhere but the server itself,
so it works on a deployment without internet access. No code or token is sent over http:// to
another host without `insecure` (`cleartext`).
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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

from invoicing_client.cli import cleartext, credentials
from invoicing_client.cli.credentials import LoginFailed
from invoicing_client.errors import APIConnectionError, AuthenticationError

CLIENT_NAME = "Invoicing CLI"
REDIRECT_PATH = "/callback"
EARLY_REFRESH = 60  # seconds before expiry a token is renewed
ENDED = ("invalid_grant", "invalid_client", "unauthorized_client")  # a refresh answer that ends the sign-in

__all__ = ["LoginFailed", "login", "logout", "access_token"]


@dataclass(frozen=True)
class Server:
    """The authorization server that protects one API."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str | None
    revocation_endpoint: str | None


class _Http:
    """httpx for the sign-in, its failures as this tool's errors (never a traceback). http:// to this
    computer goes straight there, never through a proxy (`cleartext.http_client`); the rest as the
    environment says."""

    def __init__(self) -> None:
        self.clients: dict[bool, httpx.Client] = {}  # by whether the URL is http:// to this computer

    def __enter__(self) -> _Http:
        return self

    def __exit__(self, *exc_info: object) -> None:
        for client in self.clients.values():
            client.close()

    def send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        local = cleartext.local(url)
        if local not in self.clients:
            self.clients[local] = cleartext.http_client(url, timeout=30.0)
        try:
            return self.clients[local].request(method, url, **kwargs)
        except httpx.HTTPError as exc:
            raise APIConnectionError(f"{url} could not be reached ({type(exc).__name__}: {exc}).") from None


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def discover(http: _Http, api: str) -> Server:
    parts = urlsplit(api)
    resource = _json(http.send("GET", f"{origin_of(api)}/.well-known/oauth-protected-resource{parts.path}"),
                     "the API's protected resource metadata")
    if resource.get("resource") != api:  # RFC 9728 §3.3: the document must be about this very API
        raise LoginFailed(f"The server's metadata describes {resource.get('resource')!r}, not {api!r}: "
                          "check the base URL.")
    servers = resource.get("authorization_servers")
    issuer = servers[0] if isinstance(servers, list) and servers and isinstance(servers[0], str) else origin_of(api)
    issuer_parts = urlsplit(issuer)
    metadata = _json(http.send("GET", f"{origin_of(issuer)}/.well-known/oauth-authorization-server"
                                      f"{issuer_parts.path.rstrip('/')}"), "the authorization server's metadata")
    if metadata.get("issuer") != issuer:
        raise LoginFailed(f"The authorization server's metadata names {metadata.get('issuer')!r}, not {issuer!r}.")
    if "S256" not in (metadata.get("code_challenge_methods_supported") or []):
        raise LoginFailed("The authorization server does not offer PKCE with S256; this tool signs in only with it.")
    try:
        return Server(issuer=issuer, authorization_endpoint=str(metadata["authorization_endpoint"]),
                      token_endpoint=str(metadata["token_endpoint"]),
                      registration_endpoint=metadata.get("registration_endpoint"),
                      revocation_endpoint=metadata.get("revocation_endpoint"))
    except KeyError as missing:
        raise LoginFailed(f"The authorization server's metadata has no {missing.args[0]}.") from None


def _json(response: httpx.Response, what: str) -> dict[str, Any]:
    if response.status_code != 200:
        raise LoginFailed(f"Could not read {what} at {response.request.url} (HTTP {response.status_code}). "
                          "Is the base URL the Invoicing API's?")
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise LoginFailed(f"{what[0].upper()}{what[1:]} at {response.request.url} is not a JSON object.")
    return body


def register(http: _Http, server: Server) -> str:
    if not server.registration_endpoint:
        raise LoginFailed("This server does not let tools register themselves; use an API key (set INVOICING_API_KEY).")
    response = http.send("POST", server.registration_endpoint, json={
        "client_name": CLIENT_NAME, "redirect_uris": [f"http://127.0.0.1{REDIRECT_PATH}"],
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
        "token_endpoint_auth_method": "none", "software_id": "invoicing-client-python"})
    if response.status_code not in (200, 201):
        raise LoginFailed(f"The server refused to register this tool: {_oauth_error(response)}")
    return _field(response, "client_id", "registration")


def _field(response: httpx.Response, name: str, what: str) -> str:
    try:
        value = response.json()[name]
    except (ValueError, KeyError, TypeError):
        value = None
    if not isinstance(value, str) or not value:
        raise LoginFailed(f"The server's {what} answer has no {name}.")
    return value


def _oauth_error(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        return f"HTTP {response.status_code}"
    return str(body.get("error_description") or body.get("error") or body.get("detail") or f"HTTP {response.status_code}")


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(64)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


class _Callback:
    """An HTTP server on 127.0.0.1 (a port the system picks) waiting for the authorization response
    that carries this sign-in's `state`; anything else arriving there is answered and ignored."""

    def __init__(self, state: str) -> None:
        self.params: dict[str, str] | None = None
        self.arrived = threading.Event()
        callback = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 10  # an idle connection (a preconnect, a scanner) cannot hold the server

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                parts = urlsplit(self.path)
                params = {name: values[0] for name, values in parse_qs(parts.query).items()}
                ours = parts.path == REDIRECT_PATH and secrets.compare_digest(
                    params.get("state", "").encode(), state.encode())
                text = ("The answer reached invoicing-cli: return to the terminal, which says how it went."
                        if ours else "This is not the answer invoicing-cli is waiting for.")
                body = f"<!doctype html><meta charset=utf-8><title>Invoicing CLI</title><p>{text}</p>".encode()
                self.send_response(200 if ours else 400)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                if ours and not callback.arrived.is_set():
                    callback.params = params
                    callback.arrived.set()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
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
          say: Callable[[str], None], insecure: bool = False, business: str | None = None) -> dict[str, Any]:
    """Sign in to `api` and keep the tokens; the token response. `business` (`acct_…`) is the business the
    consent page pre-selects; the person may choose another, and the token acts for the one chosen."""
    cleartext.check(api, "the code and tokens of a sign-in", insecure=insecure)
    with _Http() as http:
        server = discover(http, api)
        cleartext.check(server.token_endpoint, "the sign-in's code and tokens", insecure=insecure)
        kept = credentials.server(api)
        client_id = kept.get("client_id") if kept.get("issuer") == server.issuer else None
        if client_id and not _client_known(http, server, client_id):
            client_id = None  # the server forgot it (a new database): register again
        if not client_id:
            client_id = register(http, server)
            credentials.update_server(api, make_default=False, issuer=server.issuer, client_id=client_id)
        verifier, challenge = _pkce()
        state = secrets.token_urlsafe(24)
        callback = _Callback(state)
        try:
            query = {"response_type": "code", "client_id": client_id, "redirect_uri": callback.redirect_uri,
                     "code_challenge": challenge, "code_challenge_method": "S256", "state": state, "resource": api}
            if scope:
                query["scope"] = scope
            if business:
                query["business"] = business
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
        _check_answer(params, server)
        response = http.send("POST", server.token_endpoint, data={
            "grant_type": "authorization_code", "code": params["code"], "redirect_uri": callback.redirect_uri,
            "client_id": client_id, "code_verifier": verifier, "resource": api})
        if response.status_code != 200:
            raise LoginFailed(f"The server did not issue a token: {_oauth_error(response)}")
        token = _token(response)
        _forget_earlier(http, kept, insecure)
        _keep(api, server, client_id, token)
        return token


def _client_known(http: _Http, server: Server, client_id: str) -> bool:
    """Whether the server still knows this client: an unknown one gets an error page, never a redirect."""
    _, challenge = _pkce()
    probe = http.send("GET", server.authorization_endpoint, params={
        "response_type": "code", "client_id": client_id, "redirect_uri": f"http://127.0.0.1{REDIRECT_PATH}",
        "code_challenge": challenge, "code_challenge_method": "S256"}, follow_redirects=False)
    return probe.is_redirect


def _check_answer(params: dict[str, str], server: Server) -> None:
    if "iss" in params and params["iss"] != server.issuer:  # RFC 9207: an answer from another server
        raise LoginFailed(f"The answer came from {params['iss']!r}, not {server.issuer!r}; nothing was kept.")
    if "error" in params:
        if params["error"] == "access_denied":
            raise LoginFailed("Access was denied on the consent page; nothing was kept.")
        raise LoginFailed(f"The server refused the sign-in: {params.get('error_description') or params['error']}")
    if not params.get("code"):
        raise LoginFailed("The answer carried no authorization code.")


def _token(response: httpx.Response) -> dict[str, Any]:
    try:
        token = response.json()
    except ValueError:
        token = None
    if not isinstance(token, dict) or not isinstance(token.get("access_token"), str):
        raise LoginFailed("The server's token answer has no access_token.")
    return token


def _forget_earlier(http: _Http, kept: dict[str, Any], insecure: bool) -> None:
    """Revoke the sign-in a new one replaces (best effort: it expires anyway)."""
    if kept.get("refresh_token") and kept.get("revocation_endpoint") and kept.get("client_id") and (
            insecure or not cleartext.exposed(kept["revocation_endpoint"])):
        try:
            http.send("POST", kept["revocation_endpoint"], data={
                "token": kept["refresh_token"], "token_type_hint": "refresh_token", "client_id": kept["client_id"]})
        except APIConnectionError:
            pass


def _keep(api: str, server: Server, client_id: str, token: dict[str, Any]) -> None:
    credentials.update_server(
        api, issuer=server.issuer, client_id=client_id, token_endpoint=server.token_endpoint,
        revocation_endpoint=server.revocation_endpoint, access_token=token["access_token"],
        refresh_token=token.get("refresh_token"), scope=token.get("scope", ""),
        expires_at=int(time.time()) + _lifetime(token))


def _lifetime(token: dict[str, Any]) -> int:
    try:
        return int(token.get("expires_in", 3600))
    except (TypeError, ValueError):
        return 3600


def access_token(api: str, *, insecure: bool = False) -> str | None:
    """A valid access token for `api` from the last login, refreshed when it is about to expire;
    None when nobody signed in. `ClearTextRefused` when it or the refresh token would go over http://
    to another host."""
    kept = credentials.server(api)
    if not kept.get("access_token"):
        return None
    cleartext.check(api, "your sign-in's access token", insecure=insecure)
    if kept.get("expires_at", 0) - EARLY_REFRESH > time.time():
        return kept["access_token"]
    with credentials.locked():
        kept = credentials.server(api)  # another command may have refreshed meanwhile
        if kept.get("access_token") and kept.get("expires_at", 0) - EARLY_REFRESH > time.time():
            return kept["access_token"]
        return _refresh(api, kept, insecure)


def _refresh(api: str, kept: dict[str, Any], insecure: bool) -> str:
    if not kept.get("refresh_token") or not kept.get("token_endpoint"):
        raise AuthenticationError("Your sign-in has expired. Run `invoicing-cli login`.")
    cleartext.check(kept["token_endpoint"], "your refresh token", insecure=insecure)
    with _Http() as http:
        response = http.send("POST", kept["token_endpoint"], data={
            "grant_type": "refresh_token", "refresh_token": kept["refresh_token"], "client_id": kept.get("client_id"),
            "resource": api})
    if response.status_code != 200:
        if _error_code(response) in ENDED:  # the sign-in is over: disconnected, expired or revoked
            credentials.update_server(api, make_default=False, access_token=None, refresh_token=None,
                                      expires_at=None, scope=None)
            raise AuthenticationError(f"Your sign-in has ended ({_oauth_error(response)}): the app may have been "
                                      "disconnected in the dashboard. Run `invoicing-cli login`.")
        raise APIConnectionError(f"The server could not renew your sign-in just now (HTTP {response.status_code}: "
                                 f"{_oauth_error(response)}); it is kept: try again in a moment.")
    token = _token(response)
    credentials.update_server(api, make_default=False, access_token=token["access_token"],
                              refresh_token=token.get("refresh_token", kept["refresh_token"]),
                              scope=token.get("scope", kept.get("scope", "")),
                              expires_at=int(time.time()) + _lifetime(token))
    return token["access_token"]


def _error_code(response: httpx.Response) -> str | None:
    try:
        body = response.json()
    except ValueError:
        return None
    return body.get("error") if isinstance(body, dict) else None


def logout(api: str, *, insecure: bool = False) -> bool:
    """Revoke the sign-in to `api` (its refresh token ends the whole grant) and forget the tokens.
    False when nobody was signed in."""
    with credentials.locked():
        kept = credentials.server(api)
        if not kept.get("refresh_token") and not kept.get("access_token"):
            return False
        if not kept.get("revocation_endpoint"):
            raise LoginFailed("This server offers no way to revoke a sign-in; disconnect the app in its dashboard "
                              "(Settings → Connected apps). The tokens are kept until then.")
        token, hint = ((kept["refresh_token"], "refresh_token") if kept.get("refresh_token")
                       else (kept["access_token"], "access_token"))
        cleartext.check(kept["revocation_endpoint"], f"your {hint.replace('_', ' ')}", insecure=insecure)
        with _Http() as http:
            response = http.send("POST", kept["revocation_endpoint"], data={
                "token": token, "token_type_hint": hint, "client_id": kept.get("client_id")})
        if response.status_code != 200:  # RFC 7009: 200 whenever the token is no longer valid
            raise LoginFailed(f"The server did not revoke the sign-in (HTTP {response.status_code}: "
                              f"{_oauth_error(response)}); the tokens are kept. Try again, or disconnect the app in "
                              "the dashboard.")
        credentials.update_server(api, make_default=False, access_token=None, refresh_token=None, expires_at=None,
                                  scope=None)
    return True
