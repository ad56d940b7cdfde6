"""Client ID metadata documents: a `client_id` that is an https URL names a JSON document,
served by the client itself, describing it (draft-ietf-oauth-client-id-metadata-document).

The document is fetched with the outbound address rules of `core.netguard` (public addresses only,
no redirects, pinned to the checked address), at most 5 KB, and must carry `client_id` equal to the
URL. It is cached in `oauth_clients` as its HTTP cache headers allow, at most 24 hours. Such
clients are public (`token_endpoint_auth_method` "none") and shown as verified: the user sees the
host that vouches for them.

Anyone can name any URL, so fetching is bounded (`ensure_fresh`): fetches run on a small pool of
their own while the request waits on the event loop, holding no request thread; at most
`FETCHES_IN_FLIGHT` at once per process and `FETCHES_PER_HOST` per host, more are refused at once;
a URL whose fetch failed is not fetched again for 5 minutes, nor a host that failed 3 times; and a
client network may make `rate_limit_metadata_fetches` fetches an hour. Refusals say what is wrong,
never how the network looks (where a name resolves, the resolver's error): that goes to the log.
"""

from __future__ import annotations

import email.utils
import logging
import os
import re
import ssl
import threading
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from urllib.parse import urlsplit

import httpx
from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from authz import client_metadata, redirect_uris
from authz.clients import SUPPORTED_GRANT_TYPES, SUPPORTED_RESPONSE_TYPES
from authz.models import OAuthClient
from config.settings import get_settings
from core.base.addresses import client_network
from core.base.clock import now
from core.base.db import transaction
from core.base.work_pools import WorkPool
from core.mechanisms import ratelimit
from core.outbound import netguard

log = logging.getLogger("invoicing.oauth")

MAX_BYTES = 5 * 1024
FETCH_TIMEOUT_SECONDS = 5.0
MAX_CACHE = timedelta(hours=24)
# Freshness when the response says nothing (RFC 9111 heuristic freshness, kept short).
DEFAULT_CACHE = timedelta(minutes=5)

# Test only: a CA file (such as a `trustme` authority) trusted instead of the system's when
# fetching documents, so a test can serve one over https from loopback. Never set in production.
TEST_CA_FILE_VARIABLE = "INVOICING_UNSAFE_TEST_CA_FILE"
_tls_verify: ssl.SSLContext | bool | None = None


def use_tls_verify(verify: ssl.SSLContext | bool | None) -> None:
    """Test hook (in-process): trust a test certificate authority; None restores the default."""
    global _tls_verify
    _tls_verify = verify


def _verify() -> ssl.SSLContext | bool:
    if _tls_verify is not None:
        return _tls_verify
    if ca_file := os.environ.get(TEST_CA_FILE_VARIABLE):
        return ssl.create_default_context(cafile=ca_file)
    return True


class DocumentError(ValueError):
    """The document cannot identify a client; the message says why."""


def is_document_client_id(client_id: str | None) -> bool:
    """An https URL; or, for a host of INVOICING_UNSAFE_WEBHOOK_ALLOW_HOSTS (development only), an
    http URL too, so a developer can try their own client against a local document."""
    if not client_id:
        return False
    if client_id.startswith("https://"):
        return True
    return client_id.startswith("http://") and _allowed_plain_host(client_id)


def _allowed_plain_host(url: str) -> bool:
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return False
    return bool(host) and host.lower() in get_settings().allow_hosts


FETCH_POOL = WorkPool("metadata-fetch", 8)
FETCHES_IN_FLIGHT = 8  # per process: the pool's threads; more are refused, not queued
FETCHES_PER_HOST = 2
_in_flight: dict[str, int] = {}
_in_flight_lock = threading.Lock()


def failures_per_url() -> ratelimit.Limit:
    return ratelimit.Limit("client-document-url-failure", 1, 300)


def failures_per_host() -> ratelimit.Limit:
    return ratelimit.Limit("client-document-host-failure", 3, 300)


def fetches_per_network() -> ratelimit.Limit:
    return ratelimit.Limit("client-document-fetch", get_settings().rate_limit_metadata_fetches, 3600)


Blocking = Callable[..., Awaitable]  # runs a short blocking function off the event loop


async def ensure_fresh(client_id: str, client_ip: str, *, run_blocking: Blocking) -> str | None:
    """Fetch and cache the document unless a fresh copy is cached. Returns why the client cannot be
    used, or None. Called from the event loop before any transaction: the fetch may take seconds."""
    if await run_blocking(_fresh_copy_cached, client_id):
        return None
    host = _host_of(client_id)
    if refusal := await run_blocking(_refusal, client_id, host, client_network(client_ip)):
        return _unusable(client_id, refusal)
    if not _take_slot(host):
        return _unusable(client_id, "too many client documents are being fetched right now; try again in a minute")
    try:
        metadata, lifetime = await FETCH_POOL.run_async(fetch, client_id)
    except DocumentError as exc:
        await run_blocking(_remember_failure, client_id, host)
        return _unusable(client_id, str(exc))
    finally:
        _give_slot(host)
    await run_blocking(_store, client_id, metadata, now() + lifetime)
    return None


def _unusable(client_id: str, why: str) -> str:
    return f"The client metadata document at {client_id[:200]} is not usable: {why}"


def _host_of(client_id: str) -> str:
    try:
        return (urlsplit(client_id).hostname or "").lower()
    except ValueError:
        return ""


def _fresh_copy_cached(client_id: str) -> bool:
    with transaction() as session:
        row = session.exec(select(OAuthClient).where(OAuthClient.client_id == client_id)).first()
        return row is not None and bool(row.document_expires_at) and row.document_expires_at > now()


def _refusal(client_id: str, host: str, network: str) -> str | None:
    """Why this fetch is not tried now (a recent failure, the caller's share of fetches), or None."""
    with transaction() as session:
        if ratelimit.peek(session, failures_per_url(), client_id).exceeded:
            return "fetching it failed a few minutes ago; try again later"
        if ratelimit.peek(session, failures_per_host(), host).exceeded:
            return "documents from its host have failed repeatedly; try again later"
        usage = ratelimit.hit(session, fetches_per_network(), network)
        if usage.exceeded:
            usage.refused()
            return f"your network has had its {usage.limit} client documents this hour"
    return None


def _remember_failure(client_id: str, host: str) -> None:
    with transaction() as session:
        ratelimit.hit(session, failures_per_url(), client_id)
        ratelimit.hit(session, failures_per_host(), host)


def _take_slot(host: str) -> bool:
    with _in_flight_lock:
        if sum(_in_flight.values()) >= FETCHES_IN_FLIGHT or _in_flight.get(host, 0) >= FETCHES_PER_HOST:
            return False
        _in_flight[host] = _in_flight.get(host, 0) + 1
        return True


def _give_slot(host: str) -> None:
    with _in_flight_lock:
        _in_flight[host] -= 1
        if not _in_flight[host]:
            del _in_flight[host]


def fetch(client_id: str) -> tuple[dict, timedelta]:
    _check_client_id_url(client_id)
    try:
        response, body = netguard.safe_get(
            client_id, headers={"Accept": "application/json"}, timeout=FETCH_TIMEOUT_SECONDS,
            max_bytes=MAX_BYTES, allow_hosts=get_settings().allow_hosts, verify=_verify(),
        )
    except netguard.UnsafeAddress as exc:
        log.info("client document %s refused: %s", client_id[:200], exc)
        raise DocumentError("it could not be fetched from a public address") from None
    except netguard.ResponseTooLarge:
        raise DocumentError(f"it is larger than {MAX_BYTES} bytes") from None
    except (httpx.HTTPError, ssl.SSLError, OSError) as exc:
        log.info("client document %s could not be fetched: %s: %s", client_id[:200], type(exc).__name__, exc)
        raise DocumentError("it could not be fetched (no answer in time, or the connection failed)") from None
    if response.status_code != 200:
        raise DocumentError(f"fetching it returned HTTP {response.status_code}")
    try:
        metadata = client_metadata.loads(body)
    except client_metadata.MetadataError as exc:
        raise DocumentError(str(exc)) from None
    validate(client_id, metadata)
    return metadata, cache_lifetime(response.headers)


def _check_client_id_url(url: str) -> None:
    if len(url) > 2048:
        raise DocumentError("the client_id URL is longer than 2048 characters")
    try:
        parts = urlsplit(url)
    except ValueError:
        raise DocumentError("the client_id is not a valid URL") from None
    if not parts.hostname or not (parts.scheme == "https" or (parts.scheme == "http" and _allowed_plain_host(url))):
        raise DocumentError("the client_id URL must use https")
    if parts.fragment or "#" in url:
        raise DocumentError("the client_id URL must not contain a fragment")
    if parts.username or parts.password:
        raise DocumentError("the client_id URL must not contain a user name or password")
    if not parts.path or parts.path == "/":
        raise DocumentError("the client_id URL must have a path")
    if any(segment in (".", "..") for segment in parts.path.split("/")):
        raise DocumentError("the client_id URL must not contain . or .. segments")


def validate(client_id: str, metadata: object) -> None:
    if not isinstance(metadata, dict):
        raise DocumentError("it is not a JSON object")
    try:
        client_metadata.check_shape(metadata)
    except client_metadata.MetadataError as exc:
        raise DocumentError(str(exc)) from None
    if metadata.get("client_id") != client_id:
        raise DocumentError("its client_id does not equal the URL it was fetched from")
    uris = metadata.get("redirect_uris")
    if not isinstance(uris, list) or not uris:
        raise DocumentError("it lists no redirect_uris")
    for uri in uris:
        if reason := redirect_uris.problem(uri):
            raise DocumentError(f"redirect URI {str(uri)[:200]!r} {reason}")
    method = metadata.get("token_endpoint_auth_method", "none")
    if method != "none":
        raise DocumentError("token_endpoint_auth_method must be none (a public client)")
    if "client_secret" in metadata:
        raise DocumentError("it must not contain a client_secret")
    if not set(metadata.get("grant_types") or ["authorization_code"]) <= set(SUPPORTED_GRANT_TYPES):
        raise DocumentError(f"grant_types may only list {', '.join(SUPPORTED_GRANT_TYPES)}")
    if not set(metadata.get("response_types") or ["code"]) <= set(SUPPORTED_RESPONSE_TYPES):
        raise DocumentError("response_types may only list code")
    name = metadata.get("client_name")
    if name is not None and (not isinstance(name, str) or len(name) > 256):
        raise DocumentError("client_name must be a string of at most 256 characters")


_MAX_AGE = re.compile(r"(?:^|,)\s*(?:s-maxage|max-age)\s*=\s*\"?(\d+)\"?", re.IGNORECASE)


def cache_lifetime(headers: httpx.Headers) -> timedelta:
    """How long the response may be reused (RFC 9111), capped at 24 hours."""
    cache_control = headers.get("cache-control", "").lower()
    if "no-store" in cache_control or "no-cache" in cache_control:
        return timedelta(0)
    if match := _MAX_AGE.search(cache_control):
        seconds = min(int(match.group(1)[:12]), int(MAX_CACHE.total_seconds()))  # clamped before it becomes a timedelta
        return timedelta(seconds=seconds)
    if "expires" in headers:
        expires = _parse_http_date(headers["expires"])
        if expires is None:
            return timedelta(0)  # an unparsable Expires means "already expired" (RFC 9111 §5.3)
        lifetime = expires - (_parse_http_date(headers.get("date")) or now())
        return max(timedelta(0), min(lifetime, MAX_CACHE))
    return DEFAULT_CACHE


def _parse_http_date(value: str | None) -> datetime | None:
    try:
        parsed = email.utils.parsedate_to_datetime(value or "")
    except (TypeError, ValueError):
        return None
    return parsed if parsed is not None and parsed.tzinfo else None


def _short_text(value: object, limit: int) -> str | None:
    return value if isinstance(value, str) and len(value) <= limit else None


def _store(client_id: str, metadata: dict, expires_at: datetime) -> None:
    fields = dict(
        secret_hash=None, token_endpoint_auth_method="none",
        redirect_uris=list(metadata["redirect_uris"]),
        grant_types=list(metadata.get("grant_types") or SUPPORTED_GRANT_TYPES),
        response_types=list(metadata.get("response_types") or SUPPORTED_RESPONSE_TYPES),
        client_name=metadata.get("client_name"),
        client_uri=_short_text(metadata.get("client_uri"), 2048),
        scope=None, metadata_document=True, document_expires_at=expires_at, updated_at=now(),
    )
    try:
        with transaction() as session:
            row = session.exec(select(OAuthClient).where(OAuthClient.client_id == client_id)).first()
            row = row or OAuthClient(client_id=client_id, **fields)
            for name, value in fields.items():
                setattr(row, name, value)
            session.add(row)
    except IntegrityError:
        pass  # another request stored the same document at the same moment
