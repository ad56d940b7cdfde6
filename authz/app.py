"""Routes of `authz`: /oauth/authorize (consent), /oauth/token, /oauth/register, /oauth/revoke,
/oauth/introspect.

The token, registration and revocation endpoints answer browser-based clients (such as MCP
Inspector) from any origin, without cookies, through Starlette's `CORSMiddleware`.
"""

from __future__ import annotations

import base64
import binascii
import json
from urllib.parse import unquote

from authlib.oauth2.rfc6749 import OAuth2Error
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route

from authz import (
    client_metadata,
    connected_apps,
    consent,
    host_names,
    limits,
    metadata_documents,
    redirect_uris,
    refreshing,
    scoping,
)
from authz.adapter import MAX_FORM_FIELDS, HttpInput, HttpOAuth2Request, bound, urlencoded_fields
from authz.errors import database_fault_response, safe_description
from authz.server import server
from config.settings import get_settings
from core.access import memberships, resources
from core.access.roles import allows
from core.base import metrics
from core.base.addresses import client_network
from core.base.db import database_fault, transaction
from core.base.errors import DomainError
from core.base.validation import text_problem, unacceptable_parameters
from core.billing.business import find_profile
from core.mechanisms import ratelimit
from pages.csrf import CsrfFailed, require_csrf
from pages.routing import error_page, path_with_query, sign_in_first
from pages.sessions import current_business, current_user

MAX_REGISTRATION_BYTES = 16 * 1024
UNACCEPTABLE_TEXT = "The request holds control characters or invalid Unicode in its parameters."
CROSS_ORIGIN = Middleware(CORSMiddleware, allow_origins=["*"], allow_methods=["POST"],
                          allow_headers=["Authorization", "Content-Type"], max_age=86400)


def routes() -> list[BaseRoute]:
    return [
        # OPTIONS answered here (405), or the Mount below would approve a CORS preflight of it.
        Route("/oauth/authorize", authorize, methods=["GET", "POST", "OPTIONS"]),
        Mount("/oauth", routes=[
            Route("/token", token, methods=["POST"]),
            Route("/register", register, methods=["POST"]),
            Route("/revoke", revoke, methods=["POST"]),
            Route("/introspect", introspect, methods=["POST"]),
        ], middleware=[CROSS_ORIGIN]),
    ]


# --- token, revocation, registration --------------------------------------------------------------


async def token(request: Request) -> Response:
    # The first value, as Authlib reads it (the form is read once, then cached).
    asked = next((value for name, value in await _form_params(request) if name == "grant_type"), None)
    response = await _machine_endpoint(request, lambda http: server.create_token_response(http),
                                       on_loop=refreshing.token_response if asked == "refresh_token" else None)
    grant_type = asked if asked in GRANT_TYPES else "other"
    metrics.oauth_token(grant_type, "issued" if response.status_code == 200 else _oauth_error_code(response))
    return response


GRANT_TYPES = ("authorization_code", "refresh_token", "client_credentials")  # metric labels; others: `other`


def _oauth_error_code(response: Response) -> str:
    try:
        error = json.loads(response.body).get("error")
    except (ValueError, AttributeError):
        error = None
    return error if isinstance(error, str) and error.isidentifier() and len(error) < 40 else "error"


async def revoke(request: Request) -> Response:
    return await _machine_endpoint(request, lambda http: server.create_endpoint_response("revocation", http))


async def introspect(request: Request) -> Response:
    return await _machine_endpoint(request, lambda http: server.create_endpoint_response("introspection", http))


async def register(request: Request) -> Response:
    body = await request.body()  # at most MAX_REGISTRATION_BYTES: service.body_limits refuses more unread
    try:
        document = client_metadata.loads(body)
    except client_metadata.MetadataError:
        document = None
    if not isinstance(document, dict):
        return _oauth_error("invalid_client_metadata", "The body must be a JSON object.")
    usage = await run_in_threadpool(_count_registration, client_network(request.client.host if request.client else ""))
    if usage.exceeded:
        usage.refused()
        response = _oauth_error("invalid_request", f"Too many registrations from this address: "
                                f"{usage.limit} per hour. Retry after {usage.retry_after} seconds.", 429)
        response.headers["Retry-After"] = str(usage.retry_after)
        return response
    try:
        client_metadata.check_shape(document)
    except client_metadata.MetadataError as exc:
        return _oauth_error("invalid_client_metadata", safe_description(f"The metadata is refused: {exc}."))
    http = HttpInput(request.method, str(request.url), request.headers, json=document)
    return await run_in_threadpool(_in_transaction, lambda: server.create_endpoint_response("client_registration", http))


def registrations_per_address() -> ratelimit.Limit:
    return ratelimit.Limit("oauth-register", get_settings().rate_limit_registrations, 3600)


def _count_registration(address: str) -> ratelimit.Usage:
    with transaction() as session:
        # Registration is open; this keeps one network (an IPv4 address, an IPv6 /64) from filling the clients table.
        return ratelimit.hit(session, registrations_per_address(), address)


async def _machine_endpoint(request: Request, handle, *, on_loop=None) -> Response:
    """The request checked, then `handle(http)` in a worker thread within one transaction, or
    `on_loop(http, client_id)` on the event loop (the refresh grant, `authz.refreshing`)."""
    http = HttpInput(request.method, str(request.url), request.headers, await _form_params(request))
    if unacceptable_parameters(http.params + request.query_params.multi_items()):
        return _oauth_error("invalid_request", UNACCEPTABLE_TEXT)
    try:
        basic_client_id = _basic_auth_client_id(request)
    except ValueError:
        response = _oauth_error("invalid_client", "The Basic credentials are not base64 of UTF-8 text "
                                "without control characters.", 401)
        response.headers["WWW-Authenticate"] = 'Basic realm="oauth"'
        return response
    errors = await _prefetch_documents(request, [dict(http.params).get("client_id"), basic_client_id])
    if on_loop is None:
        return await run_in_threadpool(_in_transaction, lambda: handle(http), errors)
    try:
        with bound(None, errors):
            return await on_loop(http, basic_client_id or dict(http.params).get("client_id"))
    except ValueError as exc:
        if not _is_unprintable_description(exc):
            raise
        return _oauth_error("invalid_request", "The request contains characters not allowed in its parameters.")
    except DomainError as fault:  # the executor's: the database unreachable (502)
        return database_fault_response(fault)
    except Exception as exc:
        if (fault := database_fault(exc)) is None:
            raise
        return database_fault_response(fault)


async def _form_params(request: Request) -> list[tuple[str, str]]:
    if not request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        return []
    return urlencoded_fields(await request.body())


def _basic_auth_client_id(request: Request) -> str | None:
    """The client id of Basic credentials (None without them), checked here once so that Authlib,
    which decodes them again, only ever sees UTF-8 text holding no control character. ValueError
    when they are not that."""
    scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        client_id, _, secret = base64.b64decode(credentials.strip(), validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        raise ValueError("not base64 of UTF-8 text") from None
    if any(text_problem(unquote(part)) for part in (client_id, secret)):
        raise ValueError("control characters")
    return unquote(client_id)


def _in_transaction(handle, errors: dict[str, str] | None = None) -> Response:
    errors = errors or {}
    try:
        with transaction() as session, bound(session, errors):
            return handle()
    except ValueError as exc:
        if not _is_unprintable_description(exc):
            raise
        return _oauth_error("invalid_request", "The request contains characters not allowed in its parameters.")


def _is_unprintable_description(exc: ValueError) -> bool:
    """Authlib refuses to build an OAuth error whose description (which can echo a request
    parameter) holds characters RFC 6749 forbids there: that is bad input, not a server fault."""
    return str(exc).startswith("Error description contains forbidden characters")


async def _prefetch_documents(request: Request, client_ids) -> dict[str, str]:
    """Fetch the metadata documents of https client ids, off the request threads and before any
    transaction; why each one that cannot be used is refused."""
    errors = {}
    client_ip = request.client.host if request.client else ""
    for client_id in dict.fromkeys(client_ids):
        if metadata_documents.is_document_client_id(client_id):
            if error := await metadata_documents.ensure_fresh(client_id, client_ip, run_blocking=run_in_threadpool):
                errors[client_id] = error
    return errors


def too_large(request: Request, limit: str) -> Response:
    """A body over the endpoint's limit (refused before it is read): the OAuth error format, or a
    page for the authorization endpoint, which people see."""
    if request.url.path == "/oauth/authorize":
        return error_page(request, 413, "This request is too large", f"A form here is never larger than {limit}.")
    return _oauth_error("invalid_request", f"The request body is larger than {limit}.", 413)


def _oauth_error(error: str, description: str, status_code: int = 400) -> Response:
    body = json.dumps({"error": error, "error_description": description})
    return Response(body, status_code=status_code, media_type="application/json", headers={"Cache-Control": "no-store"})


# --- authorization endpoint and consent ---------------------------------------------------------


async def authorize(request: Request) -> Response:
    if request.method == "OPTIONS":
        return Response(status_code=405, headers={"Allow": "GET, POST"})
    form = await request.form(max_files=0, max_fields=MAX_FORM_FIELDS) if request.method == "POST" else None
    if unacceptable_parameters(request.query_params.multi_items() + (form.multi_items() if form else [])):
        return consent.render_authorization_error(request, error="invalid_request", description=UNACCEPTABLE_TEXT)
    errors = await _prefetch_documents(request, [request.query_params.get("client_id")])
    try:
        return await run_in_threadpool(_authorize, request, form, errors)
    except ValueError as exc:
        if not _is_unprintable_description(exc):
            raise
        return consent.render_authorization_error(
            request, error="invalid_request", description="The request contains characters not allowed in its parameters.")


def _authorize(request: Request, form, errors: dict[str, str]) -> Response:
    user = current_user(request)  # before the transaction: it opens its own
    dashboard_business = current_business(request)
    http = HttpInput(request.method, str(request.url), request.headers, list(request.query_params.multi_items()))
    oauth_request = HttpOAuth2Request(http)
    with transaction() as session, bound(session, errors):
        try:
            grant = server.get_consent_grant(oauth_request, end_user=user)
        except OAuth2Error as error:
            if error.redirect_uri and user is None:
                # RFC 9700 §4.11.2: the user signs in before any redirect, or anyone could register a
                # client and bounce browsers off this site to theirs.
                return sign_in_first(path_with_query(request))
            if error.redirect_uri:
                return server.error_redirect(oauth_request, error)
            return consent.render_authorization_error(
                request, error=error.error, description=error.description or _default_description(error))
        if user is None:
            return sign_in_first(path_with_query(request))
        businesses = memberships.businesses_of(session, user.id)
        if not businesses:
            return consent.render_authorization_error(
                request, error="access_denied", status_code=403,
                description="You are a member of no business: start one in the dashboard, then connect the app again.")
        oauth_request.business = _chosen_business(form, businesses, dashboard_business,
                                                  hint=request.query_params.get("business"))
        if oauth_request.business is None:  # a business the person is no member of (another's id, a stale page)
            return consent.render_authorization_error(request, error="invalid_request", status_code=400, description=(
                "The business chosen is not one of yours. Go back to the app and connect again."))
        account_id = oauth_request.business.account_id
        oauth_request.earlier_details = connected_apps.current_limits(session, user.id, account_id,
                                                                      grant.client.get_client_id())
        page = _consent_page(request, grant, oauth_request, currency=_business_currency(session, account_id),
                             businesses=businesses)
        if request.method == "GET":
            return consent.render_consent(request, page)
        return _decide(request, form, grant, oauth_request, page, user)


def _chosen_business(form, businesses: list, dashboard_business, *, hint: str | None = None):
    """The business the form names (None: not one of the person's); without one (the page itself, a
    form that left the pre-chosen answer out) the one the app suggested (`business=acct_…` on the
    authorization request, such as `invoicing-cli login --business`), else the one the person acts for
    in the dashboard, else their first. The person sees the choice and may change it."""
    by_id = {b.public_id: b for b in businesses}
    if form is not None and "business" in form:
        return by_id.get(form.get("business"))
    fallback = dashboard_business.public_id if dashboard_business is not None else None
    return by_id.get(hint or "") or by_id.get(fallback) or businesses[0]


def _business_currency(session, account_id) -> str:
    profile = find_profile(session, account_id)
    return profile.currency if profile is not None else "USD"


def _decide(request: Request, form, grant, oauth_request: HttpOAuth2Request, page: consent.ConsentPage, user):
    try:
        require_csrf(request, form)
    except CsrfFailed:
        return consent.render_authorization_error(
            request, error="invalid_request", status_code=403,
            description="This form expired or was not sent from this site. Go back to the app and connect again.")
    decision = form.get("decision")
    if decision == "deny":
        metrics.oauth_consent("denied")
        return server.create_authorization_response(oauth_request, grant_user=None, grant=grant)
    if decision != "allow":
        return consent.render_consent(request, page, error="Choose Allow or Deny.", status_code=400)
    ticked = set(form.getlist("scope"))
    business = oauth_request.business
    page = _consent_page(request, grant, oauth_request, ticked=ticked, currency=page.currency, form=form,
                         businesses=page.businesses)
    if not any(scope in ticked for scope in oauth_request.requested_scopes):
        return consent.render_consent(request, page, status_code=400,
                                      error="Tick at least one permission, or choose Deny.")
    # An app never gets more than the person's role in the business allows (and is told which scopes
    # it got, in the token response).
    granted = [scope for scope in oauth_request.requested_scopes if scope in ticked and allows(business.role, scope)]
    if not granted:
        return consent.render_consent(request, page, status_code=400, error=(
            f"Your role in {business.name} ({business.role}) allows none of the permissions ticked: "
            "choose another business, or Deny."))
    try:
        oauth_request.granted_details = limits.granted(page.limits, set(granted))
    except limits.LimitsRefused as refused:
        return consent.render_consent(request, page, status_code=400, error=str(refused))
    oauth_request.granted_scopes = granted
    metrics.oauth_consent("allowed")
    return server.create_authorization_response(oauth_request, grant_user=user, grant=grant)


def _consent_page(request: Request, grant, oauth_request: HttpOAuth2Request, ticked=None, *, currency: str,
                  businesses: list, form=None) -> consent.ConsentPage:
    client = grant.client
    is_ticked = (lambda scope: scope in ticked) if ticked is not None else scoping.pre_ticked
    return consent.ConsentPage(
        limits=limits.rows(oauth_request.requested_scopes, oauth_request.requested_details, currency, form,
                           earlier=oauth_request.earlier_details),
        currency=currency,
        app_name=client.name, verified=client.verified, app_host=host_names.shown(client.host),
        redirect_host=redirect_uris.display_host(grant.redirect_uri),
        redirect_is_local=redirect_uris.is_loopback(grant.redirect_uri),
        resource_label="MCP server (AI assistants)" if oauth_request.resource == resources.mcp() else "REST API",
        groups=consent.choices(scoping.grouped(oauth_request.requested_scopes), is_ticked),
        action=path_with_query(request), businesses=businesses, chosen=oauth_request.business,
    )


def _default_description(error: OAuth2Error) -> str:
    return safe_description(f"The request was refused ({error.error}).")
