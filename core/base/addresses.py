"""Client addresses as the units limits count by."""

from __future__ import annotations

import ipaddress


def client_network(client_ip: str) -> str:
    """The unit an address is counted by: an IPv4 address, or the /64 network of an IPv6 address."""
    try:
        address = ipaddress.ip_address((client_ip or "").strip())
    except ValueError:
        return (client_ip or "").strip() or "unknown"  # not an IP (a Unix socket, a test client)
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)
