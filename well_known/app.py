"""Routes of `well_known`: the discovery documents, read by browser-based clients too (CORS).

RFC 9728 protected resource metadata for the MCP endpoint and the REST API is built here; the
RFC 8414 authorization server metadata is the authorization server's, handed in by the
composition root.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Mount, Route

from config.settings import get_settings
from core.access import resources

CACHE = {"Cache-Control": "public, max-age=3600"}
CROSS_ORIGIN = Middleware(CORSMiddleware, allow_origins=["*"], allow_methods=["GET"])


def protected_resource_metadata(resource: str) -> dict:
    return {
        "resource": resource,
        "authorization_servers": [get_settings().origin.rstrip("/")],
        "scopes_supported": list(resources.offered_scopes(resource)),
        "bearer_methods_supported": ["header"],
        "resource_name": "Invoicing MCP server" if resource == resources.mcp() else "Invoicing REST API",
    }


def routes(authorization_server_metadata: Callable[[], dict]) -> list[BaseRoute]:
    def document(build: Callable[[], dict]):
        async def endpoint(_: Request) -> JSONResponse:
            return JSONResponse(build(), headers=CACHE)
        return endpoint

    return [Mount("/.well-known", routes=[
        Route("/oauth-authorization-server", document(authorization_server_metadata), methods=["GET"]),
        Route("/oauth-protected-resource/mcp",
              document(lambda: protected_resource_metadata(resources.mcp())), methods=["GET"]),
        Route("/oauth-protected-resource/api/v1",
              document(lambda: protected_resource_metadata(resources.rest_api())), methods=["GET"]),
    ], middleware=[CROSS_ORIGIN])]
