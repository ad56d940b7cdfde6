"""The `/mcp` route and the lifespan that runs the SDK's session manager and the live streams' follower."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from config.settings import get_settings
from mcp_server import live
from mcp_server.gate import MAX_BODY_BYTES, Gate
from mcp_server.server import build_server

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def transport_security() -> TransportSecuritySettings:
    """Host and Origin must be the service's own (`INVOICING_ORIGIN`); anything else is refused
    (a foreign Origin is 403, a foreign Host 421), against DNS rebinding. A service on a loopback
    origin answers to every loopback name, as local clients use them interchangeably."""
    origin = get_settings().origin.rstrip("/")
    parts = urlsplit(origin)
    hosts, origins = [parts.netloc, f"{parts.netloc.rsplit(':', 1)[0]}:*"], [origin]
    if parts.hostname in ("127.0.0.1", "localhost", "::1"):
        hosts += [f"{name}:*" for name in LOOPBACK_NAMES] + list(LOOPBACK_NAMES)
        origins += [f"{parts.scheme}://{name}:*" for name in LOOPBACK_NAMES]
        origins += [f"{parts.scheme}://{name}" for name in LOOPBACK_NAMES]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)


class McpEndpoint:
    """One stateless Streamable HTTP endpoint. The SDK's session manager runs once per instance, so
    every run of `lifespan` (a server start, a test client) gets a new one."""

    def __init__(self) -> None:
        self.server = build_server()
        self.manager: StreamableHTTPSessionManager | None = None
        self.gateway = Gate(self)

    def route(self) -> Route:
        return Route("/mcp", endpoint=self.gateway, methods=["GET", "POST", "DELETE"])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.manager is None:
            raise RuntimeError("the MCP endpoint serves only while its lifespan runs")
        await self.manager.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        self.manager = StreamableHTTPSessionManager(
            app=self.server, json_response=True, stateless=True, security_settings=transport_security(),
            max_request_body_size=MAX_BODY_BYTES)
        async with self.manager.run(), live.running():  # listen streams end, and their follower stops, first
            yield
