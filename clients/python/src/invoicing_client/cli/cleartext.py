"""No key or token leaves this computer in clear text unless the person says so.

`invoicing-cli` refuses to send an API key, an access or refresh token or an authorization code over
`http://` to any host but this computer's loopback (127.0.0.0/8, ::1, `localhost`), where nothing
crosses a network: on the way to another host anyone on the path could read the credential and use
it as the person. `--insecure` lifts the refusal for a network the person trusts; https is always
allowed. The check is made before anything is sent, even a look-up. The library does not refuse: a
program's base URL is its author's deliberate setting (docs/decisions.md, issue 33).

http:// to this computer is reached straight, never through a proxy from the environment (`http_client`):
httpx sends even http://127.0.0.1 to HTTP_PROXY or ALL_PROXY unless NO_PROXY names it, and a proxy on
another host would carry the key across the network in clear text. https, and http:// to another host
with `--insecure`, use the proxies the environment sets, as httpx does.
"""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlsplit

import httpx

from invoicing_client.errors import InvoicingError


class ClearTextRefused(InvoicingError):
    """A key or token would have gone over http:// to another host; nothing was sent."""


def exposed(url: str) -> bool:
    """Whether what is sent to `url` crosses a network unencrypted: http:// to any host but loopback."""
    parts = urlsplit(url)
    if parts.scheme != "http":
        return False  # https; the base URL accepts no other scheme
    host = (parts.hostname or "").rstrip(".").lower()
    if host == "localhost":
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return True  # a name, resolved who knows where
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return not address.is_loopback


def local(url: str) -> bool:
    """Whether `url` is http:// to this computer (loopback), the clear text that must not leave it."""
    return urlsplit(url).scheme == "http" and not exposed(url)


def http_client(url: str, **options: Any) -> httpx.Client:
    """httpx for requests to `url`: straight to this computer for http:// to loopback, ignoring
    HTTP_PROXY, ALL_PROXY and the like (httpx would send even http://127.0.0.1 through them); for any
    other URL, the proxies of the environment as httpx applies them (NO_PROXY included)."""
    return httpx.Client(trust_env=not local(url), **options)


def check(url: str, what: str, *, insecure: bool) -> None:
    """Raise `ClearTextRefused` when `what` (such as "your API key") would go to `url` exposed."""
    if insecure or not exposed(url):
        return
    raise ClearTextRefused(
        f"Refusing to send {what} to {url}: sent over http:// to a host other than this computer, it would cross "
        "the network in clear text, for anyone on the way to read and use as you. Use the server's https:// "
        "address, or pass --insecure (invoicing-cli --insecure …) if you trust every network between you and it.")
