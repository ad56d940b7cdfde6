"""Outbound-request guard: which URLs the service may call, and calling them safely.

Used for webhook deliveries and for fetching OAuth client metadata documents.

Policy (``check_url``):

* The scheme is ``https``. A host listed in ``allow_hosts`` (the test/development setting
  ``INVOICING_UNSAFE_WEBHOOK_ALLOW_HOSTS``) may also use ``http`` and is exempt from the
  public-address rule below. Nothing else is exempt.
* No username or password in the URL. A host is required; the port is 1-65535 (default 443 or 80).
* A host name is resolved and EVERY address it resolves to must be public; an IP literal is
  checked as it is. Refused: private, loopback, link-local, carrier-grade NAT, multicast,
  unspecified, broadcast, reserved, documentation, benchmarking, IETF protocol assignments,
  IPv6 outside the global unicast block 2000::/3, and every IPv6 form that embeds an IPv4
  address: IPv4-mapped (::ffff:0:0/96), IPv4-compatible (::/96), NAT64 (64:ff9b::/96,
  64:ff9b:1::/48), 6to4 (2002::/16) and Teredo (2001::/32). Those embedding forms are refused
  entirely, whatever IPv4 they carry (the message names it), as the specification says.
  The explicit table in ``_REFUSED_NETWORKS`` decides; ``ipaddress``'s ``is_global`` is only
  a final backstop, so behaviour does not drift between Python versions.
* Odd IPv4 spellings are refused, not normalised: a host whose last label is a number
  (``2130706433``, ``0x7f.0.0.1``, ``127.1``, ``127.0.0.1.``) must be a canonical dotted quad.
  (``0177.0.0.1`` is already rejected by the URL parser.) Other host names may contain only
  letters, digits, ``-``, ``_`` and ``.`` after IDNA encoding.

Requests (``safe_post``, ``safe_get``) re-run ``check_url`` on every call and then connect to
the address that was checked, never resolving the name again (no DNS rebinding between the
check and the connection). The URL, the Host header, TLS SNI and certificate verification all
keep the original host name. Redirects are never followed. ``timeout`` bounds each network
operation and also the whole exchange (connect, TLS, request, response body), so a server
that trickles bytes cannot hold a worker. Response bodies are read up to a byte limit.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import ssl
import time
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import httpcore
import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]

DEFAULT_PORTS = {"https": 443, "http": 80}
DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024


class UnsafeAddress(ValueError):
    """The URL may not be called; the message says why."""


class ResponseTooLarge(ValueError):
    """The response body is longer than the caller's limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"response body is larger than {limit} bytes")
        self.limit = limit


@dataclass(frozen=True)
class CheckedTarget:
    scheme: str
    host: str  # IDNA-encoded, lowercase; an IPv6 literal without brackets
    port: int
    path_and_query: str
    address: str  # the checked IP address the connection goes to
    url: str


# --- Address rules ---------------------------------------------------------------------------

def _nets(*pairs: tuple[str, str]) -> tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str], ...]:
    return tuple((ipaddress.ip_network(cidr), reason) for cidr, reason in pairs)


# Order matters: the first match gives the message, so specific ranges come before wider ones.
_REFUSED_NETWORKS = _nets(
    ("0.0.0.0/8", "unspecified ('this network')"),
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "carrier-grade NAT"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "IETF protocol assignments"),
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "6to4 relay anycast"),
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("255.255.255.255/32", "broadcast"),
    ("240.0.0.0/4", "reserved"),
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("::ffff:0:0/96", "IPv4-mapped IPv6"),
    ("::/96", "IPv4-compatible IPv6"),
    ("64:ff9b::/96", "NAT64"),
    ("64:ff9b:1::/48", "NAT64 (local use)"),
    ("100::/64", "discard-only"),
    ("2001::/32", "Teredo"),
    ("2001:2::/48", "benchmarking"),
    ("2001::/23", "IETF protocol assignments"),
    ("2001:db8::/32", "documentation"),
    ("2002::/16", "6to4"),
    ("3fff::/20", "documentation"),
    ("fc00::/7", "private (unique local)"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"),
    ("ff00::/8", "multicast"),
)
_GLOBAL_UNICAST_V6 = ipaddress.IPv6Network("2000::/3")


def refusal_reason(address: IPAddress) -> str | None:
    """Why ``address`` is not a public destination, or None when it is."""
    for network, reason in _REFUSED_NETWORKS:
        if address.version == network.version and address in network:
            return _with_embedded_ipv4(address, reason)
    if address.version == 6 and address not in _GLOBAL_UNICAST_V6:
        return "outside the IPv6 global unicast block 2000::/3"
    if not address.is_global:
        return "not globally routable"
    return None


def _with_embedded_ipv4(address: IPAddress, reason: str) -> str:
    embedded = _embedded_ipv4(address)
    return f"{reason}, embedding IPv4 {embedded}" if embedded else reason


def _embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    if address.version != 6 or address in ipaddress.IPv6Network("::/127"):
        return None
    if address.ipv4_mapped:
        return address.ipv4_mapped
    if address.teredo:
        return address.teredo[1]
    if address.sixtofour:
        return address.sixtofour
    for prefix in ("::/96", "64:ff9b::/96"):
        if address in ipaddress.IPv6Network(prefix):
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


# --- URL rules -------------------------------------------------------------------------------

_NUMERIC_LABEL = re.compile(r"^(?:[0-9]+|0[xX][0-9a-fA-F]*)$")
_HOST_NAME = re.compile(r"^[a-z0-9_.-]+$")
MAX_HOST_NAME = 253
MAX_LABEL = 63


def check_url(
    url: str,
    *,
    allow_hosts: Iterable[str] = frozenset(),
    resolver: Resolver | None = None,
) -> CheckedTarget:
    """Apply the module's policy to ``url``; raise UnsafeAddress or return where to connect."""
    parsed = _parse(url)
    host = parsed.raw_host.decode("ascii")
    allowed = host in _normalise_hosts(allow_hosts)
    _check_scheme(parsed.scheme, allowed)
    if parsed.userinfo:
        raise UnsafeAddress("the URL must not contain a username or password")
    if not host:
        raise UnsafeAddress("the URL has no host")
    port = _port(parsed)
    addresses = _addresses(host, port, resolver or default_resolver)
    if not allowed:
        _require_public(host, addresses)
    return CheckedTarget(
        scheme=parsed.scheme,
        host=host,
        port=port,
        path_and_query=parsed.raw_path.decode("ascii"),
        address=str(addresses[0]),
        url=str(parsed.copy_with(fragment=None)),
    )


def _parse(url: str) -> httpx.URL:
    # httpx's parser is the one that later builds the request, so what is checked is what is sent.
    try:
        return httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise UnsafeAddress(f"the URL is not valid: {exc}") from None


def _normalise_hosts(hosts: Iterable[str]) -> frozenset[str]:
    return frozenset(host.strip().lower().removeprefix("[").removesuffix("]") for host in hosts)


def _check_scheme(scheme: str, allowed: bool) -> None:
    permitted = ("https", "http") if allowed else ("https",)
    if scheme not in permitted:
        raise UnsafeAddress(f"the URL must use https:// (got {scheme or 'no scheme'!r})")


def _port(parsed: httpx.URL) -> int:
    port = parsed.port if parsed.port is not None else DEFAULT_PORTS[parsed.scheme]
    if not 1 <= port <= 65535:
        raise UnsafeAddress(f"port {port} is out of range")
    return port


def _addresses(host: str, port: int, resolver: Resolver) -> list[IPAddress]:
    literal = _ip_literal(host)
    if literal is not None:
        return [literal]
    _check_host_name(host)
    try:
        resolved = resolver(host, port)
    except UnicodeError:  # the resolver's IDNA codec refuses a name the checks above let through
        raise UnsafeAddress(f"host {host[:300]!r} is not a valid host name") from None
    except OSError as exc:
        raise UnsafeAddress(f"host {host!r} could not be resolved: {exc}") from None
    if not resolved:
        raise UnsafeAddress(f"host {host!r} did not resolve to any address")
    return [_parse_resolved(host, text) for text in resolved]


def _ip_literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _check_host_name(host: str) -> None:
    """A DNS name as RFC 1035 allows it: labels of 1 to 63 characters, 253 in all. No final dot:
    `example.com.` names the same host as `example.com` but would slip past host allow-lists and
    certificate names written without it."""
    if _NUMERIC_LABEL.match(host.removesuffix(".").rsplit(".", 1)[-1]):
        raise UnsafeAddress(
            f"host {host!r} looks like an IPv4 address but is not a canonical dotted quad"
        )
    if not _HOST_NAME.match(host):
        raise UnsafeAddress(f"host {host!r} contains characters not allowed in a host name")
    if host.endswith("."):
        raise UnsafeAddress(f"host {host!r} must not end with a dot")
    if len(host) > MAX_HOST_NAME:
        raise UnsafeAddress(f"host {host[:64]!r}... is longer than {MAX_HOST_NAME} characters")
    if any(not 1 <= len(label) <= MAX_LABEL for label in host.split(".")):
        raise UnsafeAddress(f"host {host!r} has an empty label or one longer than {MAX_LABEL} characters")


def _parse_resolved(host: str, text: str) -> IPAddress:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        raise UnsafeAddress(f"host {host!r} resolved to {text!r}, not an IP address") from None


def _require_public(host: str, addresses: list[IPAddress]) -> None:
    for address in addresses:
        reason = refusal_reason(address)
        if reason:
            subject = f"address {host}" if _ip_literal(host) else f"host {host!r} resolves to {address}"
            raise UnsafeAddress(f"{subject}, which is not a public address ({reason})")


def default_resolver(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to, in the system's preferred order, without repeats."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


# --- Requests pinned to the checked address --------------------------------------------------

def safe_post(
    url: str,
    *,
    content: bytes,
    headers: dict[str, str],
    timeout: float,
    allow_hosts: Iterable[str] = frozenset(),
    resolver: Resolver | None = None,
    verify: ssl.SSLContext | bool = True,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
) -> httpx.Response:
    """POST to a checked URL. The returned response holds at most ``max_response_bytes`` of
    (decoded) body; anything beyond is dropped, not an error. Its Content-Encoding and
    Content-Length headers describe that kept body."""
    target = check_url(url, allow_hosts=allow_hosts, resolver=resolver)
    with _pinned_client(target, timeout, verify) as client:
        request = client.build_request("POST", target.url, content=content, headers=headers)
        response = client.send(request, stream=True)
        try:
            body, _ = _read_up_to(response, max_response_bytes)
        finally:
            response.close()
    return _with_body(response, body)


def safe_get(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    timeout: float,
    max_bytes: int,
    allow_hosts: Iterable[str] = frozenset(),
    resolver: Resolver | None = None,
    verify: ssl.SSLContext | bool = True,
) -> tuple[httpx.Response, bytes]:
    """GET a checked URL; return the (closed) response and its body. A body longer than
    ``max_bytes`` raises ResponseTooLarge."""
    target = check_url(url, allow_hosts=allow_hosts, resolver=resolver)
    with _pinned_client(target, timeout, verify) as client:
        request = client.build_request("GET", target.url, headers=headers)
        response = client.send(request, stream=True)
        try:
            _refuse_declared_length(response, max_bytes)
            body, truncated = _read_up_to(response, max_bytes)
        finally:
            response.close()
    if truncated:
        raise ResponseTooLarge(max_bytes)
    return response, body


def _pinned_client(target: CheckedTarget, timeout: float, verify: ssl.SSLContext | bool) -> httpx.Client:
    deadline = time.monotonic() + timeout
    return httpx.Client(
        transport=_PinnedTransport(target, deadline, verify),
        timeout=timeout,
        follow_redirects=False,
        trust_env=False,  # no proxies, netrc or certificate paths from the environment
        headers={"Accept-Encoding": "identity"},
    )


def _refuse_declared_length(response: httpx.Response, limit: int) -> None:
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        raise ResponseTooLarge(limit)


def _read_up_to(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """At most ``limit`` bytes of decoded body, and whether there was more."""
    body = bytearray()
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) > limit:
            return bytes(body[:limit]), True
    return bytes(body), False


def _with_body(response: httpx.Response, body: bytes) -> httpx.Response:
    kept_headers = [
        (name, value)
        for name, value in response.headers.multi_items()
        if name.lower() not in ("content-encoding", "content-length", "transfer-encoding")
    ]
    return httpx.Response(
        response.status_code,
        headers=kept_headers,
        content=body,
        request=response.request,
        extensions={"http_version": response.extensions.get("http_version", b"HTTP/1.1")},
    )


class _PinnedTransport(httpx.HTTPTransport):
    """httpx's own transport, with a connection pool whose network backend dials the checked
    address. httpx 0.28 has no public option for the backend, so the pool is replaced."""

    def __init__(self, target: CheckedTarget, deadline: float, verify: ssl.SSLContext | bool) -> None:
        ssl_context = httpx.create_ssl_context(verify=verify, trust_env=False)
        super().__init__(verify=ssl_context, trust_env=False)
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context,
            network_backend=_PinnedBackend(target, deadline),
            max_connections=1,
        )


class _PinnedBackend(httpcore.NetworkBackend):
    """Connects to the pre-checked IP whatever name httpcore asks for, after making sure the
    name is the checked one. TLS still gets the original name (httpcore passes it as SNI)."""

    def __init__(self, target: CheckedTarget, deadline: float) -> None:
        self._target = target
        self._deadline = deadline
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[typing.Any] | None = None,
    ) -> httpcore.NetworkStream:
        if (host, port) != (self._target.host, self._target.port):
            raise UnsafeAddress(f"connection to unchecked destination {host}:{port} refused")
        stream = self._inner.connect_tcp(
            self._target.address,
            port,
            timeout=_bounded(timeout, self._deadline, httpcore.ConnectTimeout),
            local_address=local_address,
            socket_options=socket_options,
        )
        return _DeadlineStream(stream, self._deadline)

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options=None):
        raise UnsafeAddress("unix sockets are not allowed")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _DeadlineStream(httpcore.NetworkStream):
    """A stream whose every operation must finish before one overall deadline."""

    def __init__(self, inner: httpcore.NetworkStream, deadline: float) -> None:
        self._inner = inner
        self._deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _bounded(timeout, self._deadline, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _bounded(timeout, self._deadline, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> httpcore.NetworkStream:
        bounded = _bounded(timeout, self._deadline, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, bounded), self._deadline)

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


def _bounded(timeout: float | None, deadline: float, timeout_error: type[Exception]) -> float:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise timeout_error("the overall time limit of the request was exceeded")
    return remaining if timeout is None else min(timeout, remaining)
