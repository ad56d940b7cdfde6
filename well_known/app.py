"""Routes of `well_known`: RFC 8414 authorization server metadata and RFC 9728 protected
resource metadata for the MCP endpoint and the REST API."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from authz.metadata import authorization_server_metadata, protected_resource_metadata
from service.settings import get_settings

# Public documents, read by browser-based clients too.
HEADERS = {"Access-Control-Allow-Origin": "*", "Cache-Control": "public, max-age=3600"}


def routes() -> list[BaseRoute]:
    return [
        Route("/.well-known/oauth-authorization-server", authorization_server, methods=["GET"]),
        Route("/.well-known/oauth-protected-resource/mcp", mcp_resource, methods=["GET"]),
        Route("/.well-known/oauth-protected-resource/api/v1", api_resource, methods=["GET"]),
    ]


async def authorization_server(request: Request) -> JSONResponse:
    return JSONResponse(authorization_server_metadata(), headers=HEADERS)


async def mcp_resource(request: Request) -> JSONResponse:
    return JSONResponse(protected_resource_metadata(get_settings().mcp_resource), headers=HEADERS)


async def api_resource(request: Request) -> JSONResponse:
    return JSONResponse(protected_resource_metadata(get_settings().base_url), headers=HEADERS)
