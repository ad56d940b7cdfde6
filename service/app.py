"""Composition: REST, MCP, OAuth, well-known documents and web pages on one origin.

Everything a surface needs from another is handed over here, explicitly: the OAuth access-token
verifier to `core.access.credentials`, the authorization server metadata to `well_known`, the
connected-apps directory to `web`.
"""

from __future__ import annotations

import contextlib
import gc
import logging

import anyio
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from authz import connected_apps, verifier
from authz.app import MAX_REGISTRATION_BYTES
from authz.app import routes as authz_routes
from authz.app import too_large as oauth_too_large
from authz.errors import database_fault_response
from authz.metadata import authorization_server_metadata
from config.settings import get_settings
from core.access import credentials, memberships
from core.base import raw
from core.base.db import DATABASE_FAULTS, database_fault
from core.base.errors import ValidationFailed
from core.schedules import acting
from mcp_server.app import McpEndpoint
from mcp_server.gate import MAX_BODY_BYTES as MCP_MAX_BODY_BYTES
from mcp_server.gate import too_large as mcp_too_large
from pages.render import STATIC_FILES
from pages.routing import error_page
from pages.routing import too_large as page_too_large
from pages.sessions import current_user
from rest.app import create_rest_app
from rest.app import operations as rest_operations
from rest.framework import MAX_BODY_BYTES as API_MAX_BODY_BYTES
from rest.framework import too_large as api_too_large
from rest.framework import unrouted
from service import health, metrics_endpoint, observability, tracing
from service.body_limits import KB, BodyLimit, BodyLimits
from service.direct import Direct
from web.app import routes as web_routes
from well_known.app import routes as well_known_routes

log = logging.getLogger("invoicing")


def create_app() -> ASGIApp:
    settings = get_settings()
    settings.warn_if_unsafe()
    credentials.register_oauth_verifier(verifier.verify_access_token, verifier.verify_access_token_counted)
    acting.register_grant_lookup(connected_apps.acting_principal)
    memberships.register_on_removed(connected_apps.end_member_sign_ins)
    mcp = McpEndpoint()
    routes = [
        *health.routes(),
        *metrics_endpoint.routes(),
        Mount("/api/v1", app=create_rest_app()),
        mcp.route(),
        *well_known_routes(authorization_server_metadata),
        *authz_routes(),
        *web_routes(connected_apps),
        Mount("/static", app=StaticFiles(directory=STATIC_FILES), name="static"),  # the pages' stylesheets
        # Where people look first for an API's documentation.
        Route("/docs", lambda _: RedirectResponse("/api/v1/docs", status_code=308), methods=["GET"]),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette):
        # Every surface runs its blocking work on anyio's default thread pool.
        anyio.to_thread.current_default_thread_limiter().total_tokens = get_settings().request_threads
        # Everything loaded by now lives as long as the process: out of the collector's sight, so that a
        # full collection walks what requests make, not the whole application (pauses of 50-100 ms).
        gc.freeze()
        async with mcp.lifespan():  # Starlette runs no lifespan of a mounted app: the SDK's runs here
            yield
        await raw.close_postgres_connections()  # the event loop's connections (core.base.executor)
        observability.forget_this_process()

    database_faults = dict.fromkeys(DATABASE_FAULTS, _database_fault)
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={404: _not_found, **database_faults},
                    middleware=[Middleware(observability.RequestObservation, name_spans=tracing.requested()),
                                Middleware(BodyLimits, limits=body_limits(), signed_in=_signed_in)])
    tracing.configure(app)
    # The operations on the event loop routed from their declarations (not while traces are on: their
    # spans are the stack's).
    if tracing.requested():
        return app
    return Direct(app, "/api/v1", rest_operations(), "/mcp", mcp.gateway, MCP_MAX_BODY_BYTES)


def body_limits() -> list[BodyLimit]:
    """How large a body each surface takes (the first matching prefix decides), and its 413."""
    return [
        BodyLimit("/api/v1/", API_MAX_BODY_BYTES, api_too_large),
        BodyLimit("/mcp", MCP_MAX_BODY_BYTES, mcp_too_large),
        BodyLimit("/oauth/register", MAX_REGISTRATION_BYTES, oauth_too_large),
        BodyLimit("/oauth/", 8 * KB, oauth_too_large),  # token, revocation, the consent form
        # Sign-in and sign-up forms are a few KB; a signed-in person's draft of 250 lines is megabytes.
        BodyLimit("/", 16 * KB, page_too_large, max_bytes_signed_in=API_MAX_BODY_BYTES),
    ]


def _signed_in(request: Request) -> bool:
    """A valid session, for the pages' larger body allowance. The user read is kept on the request,
    so the page does not read it again. A database that cannot tell gets the smaller allowance (a
    413, not a 500; a form of a few KB still reaches its page, whose own read reports the fault)."""
    try:
        return current_user(request) is not None
    except DATABASE_FAULTS:
        return False


def _database_fault(request: Request, exc: Exception) -> Response:
    """A database fault outside the API's pipeline (pages, OAuth endpoints), as the pipeline reads
    it (`core.base.db.database_fault`); pages and OAuth answer bad input with 400, not 422."""
    fault = database_fault(exc)
    unavailable = fault.status >= 500
    log.log(logging.ERROR if unavailable else logging.WARNING, "database fault on %s %s: %s", request.method,
            request.url.path, exc.__class__.__name__, exc_info=unavailable)
    if request.url.path.startswith("/oauth/") and request.url.path != "/oauth/authorize":
        return database_fault_response(fault)
    status = 400 if isinstance(fault, ValidationFailed) else fault.status
    return error_page(request, status, fault.title, fault.detail)


def _not_found(request: Request, exc: Exception) -> Response:
    """What no mount took. A mount matches no path holding a line break (Starlette's `{path:path}`
    stops at one), so the API's own 404 problem is given here too."""
    if request.url.path.startswith("/api/v1/"):
        return unrouted(request, exc)
    return error_page(request, 404, "Page not found", "There is nothing at this address.")
