"""Composition: REST, MCP, OAuth, well-known documents and web pages on one origin."""

from __future__ import annotations

import logging

from starlette.applications import Starlette
from starlette.routing import Mount

from rest.app import create_rest_app
from service.settings import get_settings

log = logging.getLogger("invoicing")


def create_app() -> Starlette:
    settings = get_settings()
    settings.warn_if_unsafe()
    routes = [Mount("/api/v1", app=create_rest_app())]
    return Starlette(routes=routes)
