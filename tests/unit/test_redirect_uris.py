"""Redirect URI rules: what a client may register and how requested URIs are matched."""

import pytest

from authz import redirect_uris


@pytest.mark.parametrize("uri", [
    "https://app.example.com/callback",
    "https://app.example.com:8443/cb?x=1",
    "http://127.0.0.1/callback",
    "http://127.0.0.1:3000/callback",
    "http://[::1]:8080/cb",
    "http://localhost/callback",
    "http://localhost:53682/callback",
    "com.example.app:/oauth2redirect",
    "cursor://anysphere.cursor-retrieval/oauth/callback",
    "vscode://vscode.github-authentication/did-authenticate",
])
def test_allowed_redirect_uris(uri):
    assert redirect_uris.problem(uri) is None


@pytest.mark.parametrize("uri,reason", [
    ("http://app.example.com/callback", "http is allowed only"),
    ("http://10.0.0.1/callback", "http is allowed only"),
    ("http://127.0.0.2/callback", "http is allowed only"),
    ("https://app.example.com/cb#frag", "fragment"),
    ("https://user:pw@app.example.com/cb", "user name"),
    ("http://user@localhost/cb", "user name"),
    ("https:///nohost", "no host"),
    ("javascript:alert(1)", "not allowed"),
    ("data:text/html,hi", "not allowed"),
    ("file:///etc/passwd", "not allowed"),
    ("/relative/path", "absolute"),
    ("", "non-empty"),
    ("https://app.example.com/" + "a" * 2048, "at most"),
    ("https://app.example.com/a b", "spaces"),
    ("https://app.example.com:99999/cb", "absolute"),
])
def test_refused_redirect_uris(uri, reason):
    assert reason in redirect_uris.problem(uri)


def test_non_string_is_refused():
    assert redirect_uris.problem(None) is not None
    assert redirect_uris.problem(["https://a.example/cb"]) is not None


def test_exact_match():
    assert redirect_uris.matches(["https://app.example.com/cb"], "https://app.example.com/cb")


@pytest.mark.parametrize("requested", [
    "https://app.example.com/cb/",
    "https://app.example.com/cb?x=1",
    "https://app.example.com:444/cb",
    "https://APP.example.com/cb",
    "https://evil.example.com/cb",
])
def test_https_needs_exact_match(requested):
    assert not redirect_uris.matches(["https://app.example.com/cb"], requested)


@pytest.mark.parametrize("registered", ["http://localhost/callback", "http://localhost:3000/callback"])
def test_loopback_matches_on_any_port(registered):
    assert redirect_uris.matches([registered], "http://localhost:53682/callback")
    assert redirect_uris.matches([registered], "http://localhost/callback")


@pytest.mark.parametrize("requested", [
    "http://127.0.0.1:5000/callback",     # another loopback host
    "http://localhost:5000/other",         # another path
    "http://localhost:5000/callback?x=1",  # another query
    "https://localhost:5000/callback",     # another scheme
])
def test_loopback_matching_keeps_host_path_query_and_scheme(requested):
    assert not redirect_uris.matches(["http://localhost/callback"], requested)


def test_ipv6_loopback_matches_on_any_port():
    assert redirect_uris.matches(["http://[::1]/cb"], "http://[::1]:9999/cb")


def test_private_use_scheme_needs_exact_match():
    assert redirect_uris.matches(["com.example.app:/cb"], "com.example.app:/cb")
    assert not redirect_uris.matches(["com.example.app:/cb"], "com.example.app:/other")


def test_display_host():
    assert redirect_uris.display_host("https://app.example.com/cb") == "app.example.com"
    assert redirect_uris.display_host("http://[::1]:3000/cb") == "::1"
    assert "com.example.app" in redirect_uris.display_host("com.example.app:/cb")
