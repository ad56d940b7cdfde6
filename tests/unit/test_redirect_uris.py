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
    ("com.example.app:/cb#", "fragment"),
    ("https://app.example.com/c\\b", "backslash"),
    ("com.example.app:/c\\b", "backslash"),
    ("https://app.example.com/cb\x7f", "control"),
    ("https://app.example.com/cb\x85", "control"),
    ("https://app.example.com:0/cb", "port"),
    ("https://app.example.com:/cb", "port"),
    ("http://127.0.0.1:0/cb", "port"),
    ("http://127.0.0.1:/cb", "port"),
    ("http://localhost:03000/cb", "port"),
    ("HTTP://127.0.0.1/cb", "lowercase"),
    ("http://LOCALHOST/cb", "lowercase"),
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


# Loopback: RFC 8252 §7.3 lets only the port vary; everything else is RFC 9700 §4.1.3's simple
# string comparison. Registered: http://127.0.0.1:8765/callback (as the API tests register).
LOOPBACK = ["http://127.0.0.1:8765/callback"]


@pytest.mark.parametrize("requested", [
    "http://127.0.0.1:8765/callback",
    "http://127.0.0.1/callback",
    "http://127.0.0.1:1/callback",
    "http://127.0.0.1:53682/callback",
    "http://127.0.0.1:65535/callback",
])
def test_loopback_port_may_be_any_from_1_to_65535_or_none(requested):
    assert redirect_uris.matches(LOOPBACK, requested)


@pytest.mark.parametrize("requested", [
    "http://user@127.0.0.1:5000/callback",
    "http://user:pw@127.0.0.1:5000/callback",
    "http://evil.example@127.0.0.1:5000/callback",
    "http://@127.0.0.1:5000/callback",
])
def test_loopback_with_userinfo_is_refused(requested):
    assert not redirect_uris.matches(LOOPBACK, requested)


@pytest.mark.parametrize("requested", [
    "http://127.0.0.1:5000/callback#x",
    "http://127.0.0.1:5000/callback#",
    "http://127.0.0.1:8765/callback#",
])
def test_loopback_with_fragment_is_refused(requested):
    assert not redirect_uris.matches(LOOPBACK, requested)


@pytest.mark.parametrize("requested", ["HTTP://127.0.0.1:5000/callback", "Http://127.0.0.1:5000/callback"])
def test_loopback_scheme_case_must_match(requested):
    assert not redirect_uris.matches(LOOPBACK, requested)


@pytest.mark.parametrize("requested", ["https://127.0.0.1:5000/callback", "https://127.0.0.1:8765/callback"])
def test_loopback_scheme_must_match(requested):
    assert not redirect_uris.matches(LOOPBACK, requested)


@pytest.mark.parametrize("requested", [
    "http://localhost:5000/callback",
    "http://[::1]:5000/callback",
    "http://127.0.0.2:5000/callback",
    "http://127.1:5000/callback",
    "http://2130706433:5000/callback",
    "http://0x7f.0.0.1:5000/callback",
    "http://[0:0:0:0:0:0:0:1]:5000/callback",
    "http://[::ffff:127.0.0.1]:5000/callback",
])
def test_loopback_host_must_be_the_registered_one(requested):
    assert not redirect_uris.matches(LOOPBACK, requested)


@pytest.mark.parametrize("requested", ["http://LOCALHOST:5000/callback", "http://LocalHost:5000/callback"])
def test_loopback_host_case_must_match(requested):
    assert not redirect_uris.matches(["http://localhost/callback"], requested)


@pytest.mark.parametrize("requested", ["http://127.0.0.1.:5000/callback", "http://localhost.:5000/callback"])
def test_loopback_host_with_trailing_dot_is_refused(requested):
    assert not redirect_uris.matches(LOOPBACK + ["http://localhost/callback"], requested)


@pytest.mark.parametrize("requested", [
    "http://127.0.0.1:5000/Callback",
    "http://127.0.0.1:5000/other",
    "http://127.0.0.1:5000/callback/",
    "http://127.0.0.1:5000//callback",
    "http://127.0.0.1:5000/./callback",
    "http://127.0.0.1:5000/x/../callback",
    "http://127.0.0.1:5000",
])
def test_loopback_path_must_match_exactly(requested):
    assert not redirect_uris.matches(LOOPBACK, requested)


@pytest.mark.parametrize("requested", ["http://127.0.0.1:5000/%63allback", "http://127.0.0.1:5000/callbac%6B"])
def test_loopback_percent_encoding_must_match_exactly(requested):
    assert not redirect_uris.matches(LOOPBACK, requested)


@pytest.mark.parametrize("requested", [
    "http://127.0.0.1:5000/callback?",
    "http://127.0.0.1:5000/callback?x=1",
])
def test_loopback_query_must_match_exactly(requested):
    assert not redirect_uris.matches(LOOPBACK, requested)


def test_loopback_registered_query_is_kept():
    registered = ["http://127.0.0.1/callback?app=1"]
    assert redirect_uris.matches(registered, "http://127.0.0.1:5000/callback?app=1")
    assert not redirect_uris.matches(registered, "http://127.0.0.1:5000/callback?app=2")
    assert not redirect_uris.matches(registered, "http://127.0.0.1:5000/callback")


@pytest.mark.parametrize("requested", [
    "http://127.0.0.1:/callback",
    "http://127.0.0.1:0/callback",
    "http://127.0.0.1:65536/callback",
    "http://127.0.0.1:99999/callback",
    "http://127.0.0.1:05000/callback",
    "http://127.0.0.1:+5000/callback",
    "http://127.0.0.1:\u0665/callback",
    "http://127.0.0.1:5000:5001/callback",
])
def test_loopback_port_must_be_1_to_65535_in_plain_digits(requested):
    assert not redirect_uris.matches(LOOPBACK, requested)


@pytest.mark.parametrize("requested", [
    "http://127.0.0.1:5000\\@evil.example/callback",
    "http://127.0.0.1:5000\\callback",
    "http://127.0.0.1:5000/callback\\",
])
def test_loopback_with_backslash_is_refused(requested):
    assert not redirect_uris.matches(LOOPBACK, requested)


@pytest.mark.parametrize("requested", [
    " http://127.0.0.1:5000/callback",
    "http://127.0.0.1:5000/callback ",
    "http://127.0.0.1:5000/call\tback",
    "http://127.0.0.1:5000/callback\n",
    "http://127.0.0.1:50\r00/callback",
])
def test_loopback_with_whitespace_or_control_characters_is_refused(requested):
    assert not redirect_uris.matches(LOOPBACK, requested)


@pytest.mark.parametrize("requested", [
    "http://127.0.0.1:8765@evil.example/callback",
    "http://127.0.0.1:8765.evil.example/callback",
])
def test_loopback_authority_cannot_be_extended(requested):
    assert not redirect_uris.matches(LOOPBACK, requested)


def test_exact_match_still_applies_current_rules():
    """A URI registered before a rule tightened no longer matches (here: an empty port)."""
    assert not redirect_uris.matches(["http://127.0.0.1:/callback"], "http://127.0.0.1:/callback")


@pytest.mark.parametrize("requested", [
    "http://127.0.0.1:5000/callback",     # another loopback host
    "http://localhost:5000/other",         # another path
    "http://localhost:5000/callback?x=1",  # another query
    "https://localhost:5000/callback",     # another scheme
])
def test_loopback_matching_keeps_host_path_query_and_scheme(requested):
    assert not redirect_uris.matches(["http://localhost/callback"], requested)


@pytest.mark.parametrize("requested", ["https://app.example.com/cb#", "https://user@app.example.com/cb"])
def test_https_exact_match_refuses_fragment_and_userinfo(requested):
    assert not redirect_uris.matches(["https://app.example.com/cb"], requested)


def test_wildcard_looking_uri_is_not_a_pattern():
    """RFC 9700 §4.1.1: registered URIs are never patterns."""
    assert not redirect_uris.matches(["https://*.example.com/cb"], "https://evil.example.com/cb")


def test_ipv6_loopback_matches_on_any_port():
    assert redirect_uris.matches(["http://[::1]/cb"], "http://[::1]:9999/cb")


def test_private_use_scheme_needs_exact_match():
    assert redirect_uris.matches(["com.example.app:/cb"], "com.example.app:/cb")
    assert not redirect_uris.matches(["com.example.app:/cb"], "com.example.app:/other")


def test_display_host():
    assert redirect_uris.display_host("https://app.example.com/cb").ascii == "app.example.com"
    assert redirect_uris.display_host("http://[::1]:3000/cb").ascii == "::1"
    assert "com.example.app" in redirect_uris.display_host("com.example.app:/cb").ascii
    assert redirect_uris.display_host("https://аpple.com/cb").ascii == "xn--pple-43d.com"
