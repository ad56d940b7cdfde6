"""No key or token leaves this computer in clear text unless the person says so.

`invoicing-cli` refuses to send an API key, an access or refresh token or an authorization code over
`http://` to any host but this computer's loopback (127.0.0.0/8, ::1, `localhost`), where nothing
crosses a network: on the way to another host anyone on the path could read the credential and use
it as the person. `--insecure` lifts the refusal for a network the person trusts; https is always
allowed. The check is made before anything is sent, even a look-up. The library does not refuse: a
program's base URL is its author's deliberate setting (docs/decisions.md, issue 33).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

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


def check(url: str, what: str, *, insecure: bool) -> None:
    """Raise `ClearTextRefused` when `what` (such as "your API key") would go to `url` exposed."""
    if insecure or not exposed(url):
        return
    raise ClearTextRefused(
        f"Refusing to send {what} to {url}: sent over http:// to a host other than this computer, it would cross "
        "the network in clear text, for anyone on the way to read and use as you. Use the server's https:// "
        "address, or pass --insecure (invoicing-cli --insecure …) if you trust every network between you and it.")
