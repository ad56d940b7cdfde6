"""Composition: REST, MCP, OAuth, well-known documents and web pages on one origin."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.routing import Mount

from authz.app import routes as authz_routes
from rest.app import create_rest_app
from service.settings import get_settings
from web.app import routes as web_routes
from well_known.app import routes as well_known_routes


def create_app() -> Starlette:
    settings = get_settings()
    settings.warn_if_unsafe()
    routes = [
        Mount("/api/v1", app=create_rest_app()),
        *well_known_routes(),
        *authz_routes(),
        *web_routes(),
    ]
    return Starlette(routes=routes)
