"""What the sync and async clients share: requests as data, retries, and answers turned into
objects or errors. No I/O here."""

from __future__ import annotations

import os
import random
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from invoicing_client import errors
from invoicing_client._version import __version__

DEFAULT_BASE_URL = "http://127.0.0.1:8000/api/v1"
DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=10.0)
RETRIABLE_STATUSES = frozenset({429, 502, 503})
MAX_BACKOFF = 8.0
LONGEST_RETRY_AFTER = 60.0  # a longer Retry-After is not waited for: the error is raised
USER_AGENT = f"invoicing-client-python/{__version__}"


@dataclass(frozen=True)
class Call:
    """One API request, before it is sent."""

    method: str
    path: str
    params: dict[str, Any] = field(default_factory=dict)
    body: dict[str, Any] | None = None
    idempotency_key: str | None = None
    binary: bool = False  # the answer is a file (bytes), not JSON

    @classmethod
    def post(cls, path: str, body: dict[str, Any] | None = None, idempotency_key: str | None = None) -> Call:
        """A POST, with an idempotency key generated unless one is given: the same key goes with every
        retry, so a lost answer never makes a second object."""
        return cls("POST", path, body=body or {}, idempotency_key=idempotency_key or new_key())

    @classmethod
    def get(cls, path: str, params: dict[str, Any] | None = None, binary: bool = False) -> Call:
        return cls("GET", path, params=_drop_unset(params or {}), binary=binary)

    @classmethod
    def patch(cls, path: str, body: dict[str, Any]) -> Call:
        return cls("PATCH", path, body=body)

    @classmethod
    def put(cls, path: str, body: dict[str, Any]) -> Call:
        """A PUT: the whole resource, replaced (repeating it changes nothing more)."""
        return cls("PUT", path, body=body)

    @classmethod
    def delete(cls, path: str, params: dict[str, Any] | None = None, idempotency_key: str | None = None) -> Call:
        return cls("DELETE", path, params=_drop_unset(params or {}), idempotency_key=idempotency_key or new_key())


def new_key() -> str:
    return str(uuid.uuid4())


def _drop_unset(values: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not None}


def path(template: str, *ids: str) -> str:
    """`/invoices/{}/send` with the id escaped (an id never changes which path is called)."""
    return template.format(*(quote(str(value), safe="") for value in ids))


def settings(api_key: str | None, base_url: str | None) -> tuple[str, str]:
    """The key and the API's base URL, from the arguments or INVOICING_API_KEY / INVOICING_BASE_URL."""
    key = (api_key or os.environ.get("INVOICING_API_KEY") or "").strip()
    if not key:
        raise errors.AuthenticationError(
            "No API key: pass api_key=… or set INVOICING_API_KEY (create one in the dashboard: Settings → "
            "API keys), or run `invoicing-cli login`.")
    if not key.isascii() or not key.isprintable() or " " in key:
        raise errors.AuthenticationError("The API key holds characters no key has (spaces, line breaks or letters "
                                         "outside ASCII): copy it again from the dashboard.")
    return key, api_base(base_url or os.environ.get("INVOICING_BASE_URL") or DEFAULT_BASE_URL)


def api_base(url: str) -> str:
    """The REST API's root: a bare origin (`https://invoices.example`) means its `/api/v1`."""
    url = url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise errors.InvoicingError(f"The base URL must be an http(s) URL such as {DEFAULT_BASE_URL}, not {url!r}.")
    return url if parts.path not in ("", "/") else url + "/api/v1"


def headers(api_key: str, call: Call) -> dict[str, str]:
    sent = {"Authorization": f"Bearer {api_key}", "User-Agent": USER_AGENT, "Accept": "application/json"}
    if call.idempotency_key:
        sent["Idempotency-Key"] = call.idempotency_key
    if call.binary:
        sent["Accept"] = "application/pdf, application/xml"
    return sent


def retry_delay(attempt: int, response: httpx.Response | None) -> float | None:
    """How long to wait before retry number `attempt + 1` of a failed try (None: do not retry).
    `response` is None for a connection error."""
    if response is not None:
        if not _retriable(response):
            return None
        after = _retry_after(response)
        if after is not None:
            return after if after <= LONGEST_RETRY_AFTER else None
    base = min(MAX_BACKOFF, 0.5 * 2 ** attempt)
    return base * (0.5 + random.random() / 2)  # jitter: clients that failed together do not return together


# Failures of the connection itself (the request may or may not have arrived): worth another try.
TRANSIENT = (httpx.ConnectError, httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError, httpx.TimeoutException)


def _retriable(response: httpx.Response) -> bool:
    if response.status_code == 502 and _code(response) is not None:
        # The API's own 502 (`upstream_failed`: its mail server refused a send, say) released the key:
        # a retry would act again. A gateway's 502 (no problem document) never reached it.
        return False
    if response.status_code in RETRIABLE_STATUSES:
        return True
    # The same idempotency key still running (a retry that overtook the lost first try): its answer
    # will be replayed once it finishes.
    return response.status_code == 409 and _code(response) == "conflict"


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _code(response: httpx.Response) -> str | None:
    try:
        body = response.json()
    except ValueError:
        return None
    return body.get("code") if isinstance(body, dict) else None


def request_id(response: httpx.Response) -> str | None:
    return response.headers.get("X-Request-Id")


def data_of(response: httpx.Response) -> Any:
    """The answer of a successful request: the bytes of a file, or the JSON body."""
    try:
        return response.json()
    except ValueError:
        raise errors.UpstreamError(
            f"The server answered {response.status_code} without JSON; is {response.request.url} the Invoicing API?",
            status_code=response.status_code, request_id=request_id(response)) from None


BY_STATUS: dict[int, type[errors.InvoicingError]] = {
    401: errors.AuthenticationError, 403: errors.PermissionDeniedError, 404: errors.NotFoundError,
    409: errors.ConflictError, 422: errors.ValidationError, 429: errors.RateLimitError,
}
HINTS = {
    401: " Check the API key (INVOICING_API_KEY) or sign in again with `invoicing-cli login`.",
    429: " Wait and try again.",
}


def error_from(response: httpx.Response) -> errors.InvoicingError:
    """The exception for an error answer, from its problem document when there is one."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {}
    status = response.status_code
    detail = body.get("detail") or body.get("title") or response.reason_phrase or "Request failed"
    if response.is_redirect:
        detail = (f"The server answered {status}, sending the request to {response.headers.get('location')}: "
                  "use that address as the base URL")
    message = f"{detail}{HINTS.get(status, '')}"
    kind = BY_STATUS.get(status) or (errors.UpstreamError if status >= 500 else errors.InvoicingError)
    fields = body.get("errors") if isinstance(body.get("errors"), list) else []
    common = {"status_code": status, "code": body.get("code"), "errors": fields, "body": body,
              "request_id": body.get("instance") or request_id(response)}
    if kind is errors.RateLimitError:
        return errors.RateLimitError(message, retry_after=_retry_after(response), **common)
    return kind(message, **common)


def connection_error(exc: httpx.HTTPError, url: str) -> errors.InvoicingError:
    if not isinstance(exc, TRANSIENT + (httpx.TransportError,)):  # a decoding error, say: the answer was unreadable
        return errors.InvoicingError(f"The answer from {url} could not be read ({type(exc).__name__}: {exc}).")
    what = "did not answer in time" if isinstance(exc, httpx.TimeoutException) else "could not be reached"
    return errors.APIConnectionError(f"The Invoicing API at {url} {what} ({type(exc).__name__}: {exc}).")


def unexpected(exc: Exception, request: str | None) -> errors.InvoicingError:
    """An answer that is not the object the API documents (a proxy's page, a server of another version)."""
    return errors.InvoicingError(f"The server's answer is not what the Invoicing API sends ({type(exc).__name__}: "
                                 f"{str(exc).splitlines()[0][:200]}).", request_id=request)
