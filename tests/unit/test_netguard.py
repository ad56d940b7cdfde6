"""core.netguard: which outbound URLs are refused, and requests pinned to the checked address."""

from __future__ import annotations

import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from config.settings import Settings
from core.outbound.netguard import (
    CheckedTarget,
    ResponseTooLarge,
    UnsafeAddress,
    _PinnedBackend,
    check_url,
    refusal_reason,
    safe_get,
    safe_post,
)

NAMES = {
    "public.example": ["93.184.216.34"],
    "public6.example": ["2606:4700::1111"],
    "dual.example": ["93.184.216.34", "2606:4700::1111"],
    "xn--bcher-kva.example": ["93.184.216.34"],
    "mixed.example": ["93.184.216.34", "10.0.0.5"],
    "mixed6.example": ["2606:4700::1111", "fd00::5"],
    "loopback.example": ["127.0.0.1"],
    "mapped.example": ["::ffff:10.0.0.1"],
    "metadata.example": ["169.254.169.254"],
    "garbage.example": ["not-an-ip"],
    "empty.example": [],
    "hook.test": ["127.0.0.1"],
}


def fake_resolver(host: str, port: int) -> list[str]:
    if host not in NAMES:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    return NAMES[host]


REFUSED = [
    # scheme, userinfo, host, port
    ("http://public.example/", "https://"),
    ("ftp://public.example/", "https://"),
    ("public.example/hook", "https://"),
    ("", "https://"),
    ("https://user:pw@public.example/", "username or password"),
    ("https://user@public.example/", "username or password"),
    ("https://:pw@public.example/", "username or password"),
    ("https:///path", "no host"),
    ("https://", "no host"),
    ("https://public.example:0/", "port 0"),
    ("https://public.example:70000/", "port 70000"),
    ("https://exa mple.com/", "characters not allowed"),
    ("https://nowhere.example/", "could not be resolved"),
    ("https://empty.example/", "did not resolve"),
    ("https://garbage.example/", "not an IP address"),
    # IPv4 ranges
    ("https://10.1.2.3/", "private"),
    ("https://172.16.0.1/", "private"),
    ("https://172.31.255.254/", "private"),
    ("https://192.168.1.1/", "private"),
    ("https://127.0.0.1/", "loopback"),
    ("https://127.255.255.254/", "loopback"),
    ("https://169.254.169.254/", "link-local"),
    ("https://100.64.0.1/", "carrier-grade NAT"),
    ("https://100.127.255.254/", "carrier-grade NAT"),
    ("https://224.0.0.1/", "multicast"),
    ("https://239.255.255.250/", "multicast"),
    ("https://0.0.0.0/", "unspecified"),
    ("https://0.1.2.3/", "unspecified"),
    ("https://255.255.255.255/", "broadcast"),
    ("https://240.0.0.1/", "reserved"),
    ("https://192.0.2.1/", "documentation"),
    ("https://198.51.100.7/", "documentation"),
    ("https://203.0.113.9/", "documentation"),
    ("https://198.18.0.1/", "benchmarking"),
    ("https://198.19.255.254/", "benchmarking"),
    ("https://192.0.0.8/", "IETF protocol assignments"),
    ("https://192.88.99.1/", "6to4 relay"),
    # IPv6 ranges
    ("https://[::1]/", "loopback"),
    ("https://[::]/", "unspecified"),
    ("https://[fc00::1]/", "unique local"),
    ("https://[fd12:3456::1]/", "unique local"),
    ("https://[fe80::1]/", "link-local"),
    ("https://[fe80::1%25eth0]/", "link-local"),
    ("https://[fec0::1]/", "site-local"),
    ("https://[ff02::1]/", "multicast"),
    ("https://[2001:db8::1]/", "documentation"),
    ("https://[3fff::1]/", "documentation"),
    ("https://[2001:2::1]/", "benchmarking"),
    ("https://[2001:1::1]/", "IETF protocol assignments"),
    ("https://[100::1]/", "discard-only"),
    ("https://[5f00::1]/", "2000::/3"),
    # IPv6 forms embedding an IPv4 address: refused whatever they embed
    ("https://[::ffff:127.0.0.1]/", "IPv4-mapped IPv6, embedding IPv4 127.0.0.1"),
    ("https://[::ffff:7f00:1]/", "IPv4-mapped IPv6, embedding IPv4 127.0.0.1"),
    ("https://[::ffff:93.184.216.34]/", "IPv4-mapped IPv6, embedding IPv4 93.184.216.34"),
    ("https://[::127.0.0.1]/", "IPv4-compatible IPv6, embedding IPv4 127.0.0.1"),
    ("https://[::93.184.216.34]/", "IPv4-compatible IPv6"),
    ("https://[64:ff9b::7f00:1]/", "NAT64, embedding IPv4 127.0.0.1"),
    ("https://[64:ff9b::5db8:d822]/", "NAT64, embedding IPv4 93.184.216.34"),
    ("https://[64:ff9b:1::a00:1]/", "NAT64 (local use)"),
    ("https://[2002:7f00:1::]/", "6to4, embedding IPv4 127.0.0.1"),
    ("https://[2002:5db8:d822::1]/", "6to4, embedding IPv4 93.184.216.34"),
    ("https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "Teredo, embedding IPv4 192.0.2.45"),
    # odd IPv4 spellings
    ("https://2130706433/", "canonical dotted quad"),
    ("https://0x7f000001/", "canonical dotted quad"),
    ("https://017700000001/", "canonical dotted quad"),
    ("https://0x7f.0.0.1/", "canonical dotted quad"),
    ("https://0x7F.0x0.0x0.0x1/", "canonical dotted quad"),
    ("https://127.1/", "canonical dotted quad"),
    ("https://127.0.1/", "canonical dotted quad"),
    ("https://127.0.0.1./", "canonical dotted quad"),
    ("https://1.2.3.4.5/", "canonical dotted quad"),
    ("https://93.184.216.034/", "not valid"),
    ("https://0177.0.0.1/", "not valid"),
    # host names DNS cannot carry (the system resolver's IDNA codec would raise)
    ("https://a..b.example/", "empty label"),
    ("https://.public.example/", "empty label"),
    ("https://" + "a" * 64 + ".example/", "longer than 63"),
    ("https://" + "a." * 127 + "example/", "longer than 253"),
    ("https://public.example./", "must not end with a dot"),
    ("https://public.example../", "must not end with a dot"),
    # host names resolving to refused addresses, including one bad address among good ones
    ("https://loopback.example/", "resolves to 127.0.0.1"),
    ("https://metadata.example/", "link-local"),
    ("https://mapped.example/", "IPv4-mapped IPv6, embedding IPv4 10.0.0.1"),
    ("https://mixed.example/", "resolves to 10.0.0.5"),
    ("https://mixed6.example/", "resolves to fd00::5"),
]


@pytest.mark.parametrize(("url", "message"), REFUSED)
def test_refused_urls(url: str, message: str) -> None:
    with pytest.raises(UnsafeAddress, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_url(url, resolver=fake_resolver)


def test_labels_of_63_characters_in_a_name_of_253_are_accepted() -> None:
    host = ".".join(["a" * 63] * 3 + ["b" * 61])
    assert len(host) == 253
    assert check_url(f"https://{host}/", resolver=lambda _host, _port: ["93.184.216.34"]).host == host


def test_a_name_the_resolver_cannot_encode_is_refused_not_raised() -> None:
    def idna_resolver(host: str, port: int) -> list[str]:
        host.encode("idna")  # as socket.getaddrinfo does
        return ["93.184.216.34"]
    with pytest.raises(UnsafeAddress, match="not a valid host name"):
        check_url("https://xn--a-ecp.example/", resolver=lambda host, port: idna_resolver("a" * 64, port))


def test_unsafe_address_is_a_value_error() -> None:
    assert issubclass(UnsafeAddress, ValueError)


ACCEPTED = [
    # url, host, port, path_and_query, address
    ("https://93.184.216.34/", "93.184.216.34", 443, "/", "93.184.216.34"),
    ("https://1.1.1.1/hook", "1.1.1.1", 443, "/hook", "1.1.1.1"),
    ("https://[2606:4700::1111]/", "2606:4700::1111", 443, "/", "2606:4700::1111"),
    ("https://[2001:4860:4860::8888]:8443/x", "2001:4860:4860::8888", 8443, "/x", "2001:4860:4860::8888"),
    ("https://public.example/hook?a=1&b=2#frag", "public.example", 443, "/hook?a=1&b=2", "93.184.216.34"),
    ("https://PUBLIC.Example:8443", "public.example", 8443, "/", "93.184.216.34"),
    ("https://public6.example/", "public6.example", 443, "/", "2606:4700::1111"),
    ("https://dual.example/", "dual.example", 443, "/", "93.184.216.34"),
    ("https://bücher.example/", "xn--bcher-kva.example", 443, "/", "93.184.216.34"),
]


@pytest.mark.parametrize(("url", "host", "port", "path_and_query", "address"), ACCEPTED)
def test_accepted_urls(url: str, host: str, port: int, path_and_query: str, address: str) -> None:
    target = check_url(url, resolver=fake_resolver)
    assert (target.scheme, target.host, target.port) == ("https", host, port)
    assert (target.path_and_query, target.address) == (path_and_query, address)
    assert "#" not in target.url


def test_checked_target_is_frozen() -> None:
    target = check_url("https://public.example/", resolver=fake_resolver)
    with pytest.raises(AttributeError):
        target.address = "127.0.0.1"  # type: ignore[misc]


@pytest.mark.parametrize(
    "address", ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "2a00:1450:4001:80b::200e"]
)
def test_public_addresses_have_no_refusal_reason(address: str) -> None:
    assert refusal_reason(ipaddress.ip_address(address)) is None


ALLOW_LISTED = [
    # url, allow_hosts, scheme, address
    ("http://127.0.0.1:8080/x", {"127.0.0.1"}, "http", "127.0.0.1"),
    ("https://127.0.0.1/", {"127.0.0.1"}, "https", "127.0.0.1"),
    ("http://hook.test/", {"hook.test"}, "http", "127.0.0.1"),
    ("http://HOOK.test/", {"Hook.Test "}, "http", "127.0.0.1"),
    ("http://[::1]:9000/", {"[::1]"}, "http", "::1"),
    ("http://[::1]:9000/", {"::1"}, "http", "::1"),
    ("http://10.0.0.7/", {"10.0.0.7"}, "http", "10.0.0.7"),
]


@pytest.mark.parametrize(("url", "allow_hosts", "scheme", "address"), ALLOW_LISTED)
def test_allow_hosts_exempts_from_https_and_public_rules(
    url: str, allow_hosts: set[str], scheme: str, address: str
) -> None:
    target = check_url(url, allow_hosts=frozenset(allow_hosts), resolver=fake_resolver)
    assert (target.scheme, target.address) == (scheme, address)


STILL_REFUSED_WHEN_ALLOW_LISTED = [
    ("http://u:p@127.0.0.1/", {"127.0.0.1"}, "username or password"),
    ("ftp://127.0.0.1/", {"127.0.0.1"}, "https://"),
    ("http://127.0.0.2/", {"127.0.0.1"}, "https://"),
    ("https://127.0.0.2/", {"127.0.0.1"}, "loopback"),
    ("https://loopback.example/", {"127.0.0.1"}, "loopback"),
    ("http://127.1/", {"127.1"}, "canonical dotted quad"),
]


@pytest.mark.parametrize(("url", "allow_hosts", "message"), STILL_REFUSED_WHEN_ALLOW_LISTED)
def test_allow_hosts_exempts_nothing_else(url: str, allow_hosts: set[str], message: str) -> None:
    with pytest.raises(UnsafeAddress, match=message):
        check_url(url, allow_hosts=frozenset(allow_hosts), resolver=fake_resolver)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", frozenset()),
        (" , ,", frozenset()),
        ("127.0.0.1", frozenset({"127.0.0.1"})),
        (" 127.0.0.1 , Hook.Test,,localhost ", frozenset({"127.0.0.1", "hook.test", "localhost"})),
    ],
)
def test_allow_hosts_setting_is_parsed(value: str, expected: frozenset[str]) -> None:
    assert Settings(unsafe_webhook_allow_hosts=value).allow_hosts == expected


def test_dns_rebinding_is_caught_by_the_second_check() -> None:
    answers = iter([["93.184.216.34"], ["127.0.0.1"]])

    def rebinding_resolver(host: str, port: int) -> list[str]:
        return next(answers)

    assert check_url("https://rebind.example/", resolver=rebinding_resolver).address == "93.184.216.34"
    with pytest.raises(UnsafeAddress, match="loopback"):
        check_url("https://rebind.example/", resolver=rebinding_resolver)


def test_resolver_gets_the_idna_host_and_the_port() -> None:
    calls: list[tuple[str, int]] = []

    def recording_resolver(host: str, port: int) -> list[str]:
        calls.append((host, port))
        return ["93.184.216.34"]

    check_url("https://Bücher.example:8443/", resolver=recording_resolver)
    check_url("https://93.184.216.34/", resolver=recording_resolver)  # a literal is not resolved
    assert calls == [("xn--bcher-kva.example", 8443)]


def test_pinned_backend_refuses_a_name_other_than_the_checked_one() -> None:
    target = CheckedTarget("https", "hook.test", 443, "/", "127.0.0.1", "https://hook.test/")
    backend = _PinnedBackend(target, deadline=time.monotonic() + 5)
    with pytest.raises(UnsafeAddress, match="unchecked destination"):
        backend.connect_tcp("evil.example", 443)
    with pytest.raises(UnsafeAddress, match="unix sockets"):
        backend.connect_unix_socket("/tmp/x.sock")


# --- Against a real local server ------------------------------------------------------------

BIG = b"x" * 10_000


class RecordingHandler(BaseHTTPRequestHandler):
    """HTTP/1.0: one request per connection, the body ends when the connection closes."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.received.append({"path": self.path, "headers": dict(self.headers), "body": body})
        self._reply(BIG if self.path == "/big-reply" else b"ok")

    def do_GET(self) -> None:
        self.server.received.append({"path": self.path, "headers": dict(self.headers), "body": b""})
        if self.path == "/big":
            self._reply(BIG)
        elif self.path == "/big-unsized":
            self._reply(BIG, sized=False)
        elif self.path == "/redirect":
            self._reply(b"moved", status=302, extra={"Location": "/small"})
        elif self.path == "/trickle":
            self._trickle()
        else:
            self._reply(b"hello")

    def _reply(self, body: bytes, status: int = 200, sized: bool = True, extra: dict | None = None) -> None:
        self.send_response(status)
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        if sized:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _trickle(self) -> None:
        self.send_response(200)
        self.end_headers()
        try:
            for _ in range(50):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.1)
        except OSError:
            pass


def _serve(server: ThreadingHTTPServer) -> Iterator[ThreadingHTTPServer]:
    server.daemon_threads = True
    server.received = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    yield from _serve(ThreadingHTTPServer(("127.0.0.1", 0), RecordingHandler))


LOCAL = frozenset({"127.0.0.1"})


def _url(server: ThreadingHTTPServer, path: str, host: str = "127.0.0.1", scheme: str = "http") -> str:
    return f"{scheme}://{host}:{server.server_address[1]}{path}"


def test_safe_post_delivers_to_the_local_server(server) -> None:
    response = safe_post(
        _url(server, "/hook"), content=b'{"a":1}', headers={"X-Signature": "s1"},
        timeout=5, allow_hosts=LOCAL,
    )
    assert (response.status_code, response.content) == (200, b"ok")
    [received] = server.received
    assert received["path"] == "/hook"
    assert received["body"] == b'{"a":1}'
    assert received["headers"]["X-Signature"] == "s1"


def test_safe_post_keeps_at_most_max_response_bytes(server) -> None:
    response = safe_post(
        _url(server, "/big-reply"), content=b"{}", headers={}, timeout=5,
        allow_hosts=LOCAL, max_response_bytes=100,
    )
    assert response.status_code == 200
    assert response.content == BIG[:100]


def test_safe_get_returns_the_body(server) -> None:
    response, body = safe_get(_url(server, "/small"), timeout=5, max_bytes=100, allow_hosts=LOCAL)
    assert (response.status_code, body) == (200, b"hello")


@pytest.mark.parametrize(("path", "max_bytes"), [("/big", 100), ("/big-unsized", 100), ("/big", 9_999)])
def test_safe_get_refuses_a_body_over_max_bytes(server, path: str, max_bytes: int) -> None:
    with pytest.raises(ResponseTooLarge, match=str(max_bytes)):
        safe_get(_url(server, path), timeout=5, max_bytes=max_bytes, allow_hosts=LOCAL)


@pytest.mark.parametrize("path", ["/big", "/big-unsized"])
def test_safe_get_accepts_a_body_of_exactly_max_bytes(server, path: str) -> None:
    _, body = safe_get(_url(server, path), timeout=5, max_bytes=len(BIG), allow_hosts=LOCAL)
    assert body == BIG


def test_redirects_are_not_followed(server) -> None:
    response, body = safe_get(_url(server, "/redirect"), timeout=5, max_bytes=100, allow_hosts=LOCAL)
    assert (response.status_code, body) == (302, b"moved")
    assert [r["path"] for r in server.received] == ["/redirect"]


def test_refused_url_is_never_contacted(server) -> None:
    with pytest.raises(UnsafeAddress, match="https://"):
        safe_post(_url(server, "/hook"), content=b"{}", headers={}, timeout=5)
    with pytest.raises(UnsafeAddress, match="loopback"):
        safe_get(_url(server, "/small", scheme="https"), timeout=5, max_bytes=100)
    assert server.received == []


def test_connection_goes_to_the_checked_address_without_a_second_lookup(server) -> None:
    calls: list[str] = []

    def counting_resolver(host: str, port: int) -> list[str]:
        calls.append(host)
        return ["127.0.0.1"]

    url = _url(server, "/hook", host="hook.test")  # hook.test does not exist in real DNS
    response = safe_post(
        url, content=b"{}", headers={}, timeout=5,
        allow_hosts=frozenset({"hook.test"}), resolver=counting_resolver,
    )
    assert response.status_code == 200
    assert calls == ["hook.test"]
    assert server.received[0]["headers"]["Host"] == f"hook.test:{server.server_address[1]}"

    safe_get(url, timeout=5, max_bytes=100, allow_hosts=frozenset({"hook.test"}), resolver=counting_resolver)
    assert calls == ["hook.test", "hook.test"]  # checked again at every request


def test_timeout_bounds_the_whole_exchange(server) -> None:
    started = time.monotonic()
    with pytest.raises(httpx.TimeoutException):
        safe_get(_url(server, "/trickle"), timeout=0.5, max_bytes=1_000, allow_hosts=LOCAL)
    assert time.monotonic() - started < 2


# --- TLS: SNI and certificate verification use the original host name ------------------------

trustme = pytest.importorskip("trustme")


@pytest.fixture
def ca():
    return trustme.CA()


def _tls_server(ca, cert_host: str, sni_seen: list[str]) -> ThreadingHTTPServer:
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(cert_host).configure_cert(server_context)
    server_context.sni_callback = lambda sock, name, ctx: sni_seen.append(name)
    server = ThreadingHTTPServer(("127.0.0.1", 0), RecordingHandler)
    server.socket = server_context.wrap_socket(server.socket, server_side=True)
    return server


def _client_context(ca) -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return context


def test_tls_verifies_the_original_host_name(ca) -> None:
    sni_seen: list[str] = []
    for server in _serve(_tls_server(ca, "hook.test", sni_seen)):
        response, body = safe_get(
            _url(server, "/small", host="hook.test", scheme="https"), timeout=5, max_bytes=100,
            allow_hosts=frozenset({"hook.test"}), resolver=fake_resolver, verify=_client_context(ca),
        )
        assert (response.status_code, body) == (200, b"hello")
        assert sni_seen == ["hook.test"]
        assert server.received[0]["headers"]["Host"] == f"hook.test:{server.server_address[1]}"


def test_tls_refuses_a_certificate_for_another_name(ca) -> None:
    for server in _serve(_tls_server(ca, "other.test", [])):
        with pytest.raises(httpx.ConnectError, match="certificate"):
            safe_post(
                _url(server, "/hook", host="hook.test", scheme="https"), content=b"{}", headers={},
                timeout=5, allow_hosts=frozenset({"hook.test"}), resolver=fake_resolver,
                verify=_client_context(ca),
            )
        assert server.received == []
