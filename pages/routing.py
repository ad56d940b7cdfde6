"""What every server-rendered page shares: routing by method, sign-in, CSRF, error pages.

Handlers are plain synchronous functions `handler(visit) -> Response`, run in a worker thread
(they use the database and hash passwords). A POST is only handed to its handler after its CSRF
token has been checked; a page that needs a signed-in user sends anyone else to `/login?next=…`.
"""

from __future__ import annotations

import asyncio
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from config.settings import get_settings
from core.access.memberships import Business
from core.access.roles import manages
from core.base.errors import DomainError, FieldError
from core.base.validation import unacceptable_parameters
from core.models import User
from pages.csrf import CsrfFailed, require_csrf
from pages.render import shared
from pages.sessions import ACTING_FOR_FIELD, current_business, current_user, login_url

MAX_FORM_FIELDS = 200
NEW_BUSINESS_PATH = "/businesses/new"
# Signed-in pages a person who belongs to no business may still open.
BUSINESS_FREE_PATHS = frozenset({NEW_BUSINESS_PATH, "/logout", "/verify-email/resend"})


@dataclass
class Visit:
    """One page request: the request, its checked form (POST) and the signed-in user, if any."""

    request: Request
    form: FormData | None
    user: User | None
    path_params: dict[str, str] = field(default_factory=dict)

    def text(self, name: str, max_length: int = 5000, *, strip: bool = True) -> str:
        """A form field as text ('' when absent), cut at `max_length`: pass one more than the
        limit to let validation report over-long input."""
        value = self.form.get(name) if self.form is not None else None
        if not isinstance(value, str):
            return ""
        return (value.strip() if strip else value)[:max_length]

    def values(self, name: str) -> list[str]:
        if self.form is None:
            return []
        return [v.strip() for v in self.form.getlist(name) if isinstance(v, str)]

    def client_ip(self) -> str:
        return self.request.client.host if self.request.client else "unknown"

    @property
    def business(self) -> Business:
        """The business the person acts for (signed-in pages only: they always have one)."""
        return current_business(self.request)

    @property
    def account_id(self) -> uuid.UUID:
        return self.business.account_id

    @property
    def role(self) -> str:
        return self.business.role


Handler = Callable[[Visit], Response]


def redirect(url: str) -> RedirectResponse:
    """See other: after a POST the browser GETs the next page."""
    return RedirectResponse(url, status_code=303)


def error_page(request: Request, status: int, title: str, message: str) -> Response:
    return shared.render(request, "error.html", status_code=status, title=title, message=message)


def too_large(request: Request, limit: str) -> Response:
    """A form over its limit (refused before it is read)."""
    return error_page(request, 413, "This form is too large",
                      f"It holds more than {limit}, more than any form of this service needs.")


def errors_by_field(errors: list[FieldError]) -> dict[str, str]:
    """Field path -> first message, for showing each error next to its field."""
    result: dict[str, str] = {}
    for error in errors:
        result.setdefault(error.path, error.message)
    return result


def errors_of(error: DomainError) -> dict[str, str]:
    """A refusal as field path -> message for its form; one that names no field goes under ''
    (shown above the form)."""
    return errors_by_field(error.errors) if error.errors else {"": error.detail}


def errors_at(error: DomainError, field_of) -> dict[str, str]:
    """`errors_of`, each path turned into the form field it belongs beside (`field_of(path)`); the
    first message of a field stands."""
    errors: dict[str, str] = {}
    for path, message in errors_of(error).items():
        errors.setdefault(field_of(path), message)
    return errors


def sign_in_first(back: str) -> RedirectResponse:
    """Send a signed-out visitor to the sign-in page, and back to `back` (a GET-able path) after."""
    return redirect(login_url(back))


def path_with_query(request: Request) -> str:
    query = request.url.query
    return request.url.path + (f"?{query}" if query else "")


def _run(handlers: dict[str, Handler], signed_in: bool, request: Request, form: FormData | None,
         managers_only: bool = False) -> Response:
    """Run a page's handler after the checks every page shares. The forms of signed-out pages
    (sign-up, sign-in) carry tokens good for one submission each."""
    user = current_user(request)
    if signed_in and user is None:
        # After signing in the browser GETs `next`: a POST-only path would answer 405.
        back = path_with_query(request) if request.method == "GET" else (
            request.url.path if "GET" in handlers else "/")
        return sign_in_first(back)
    if signed_in and current_business(request) is None and request.url.path not in BUSINESS_FREE_PATHS:
        return redirect(NEW_BUSINESS_PATH)  # a member of no business any more: they start one (or are invited)
    if signed_in and form is not None and _shown_for_another_business(request, form):
        return error_page(request, 409, "This form was for another business",
                          f"You act for {current_business(request).name} now (you switched, perhaps in another tab, "
                          "or left the business the form was for). Nothing was changed: open the page again.")
    if managers_only and not manages(current_business(request).role):
        return error_page(request, 403, "Owners and admins only",
                          f"Your role in {current_business(request).name} is {current_business(request).role}: "
                          "the business's profile, API keys and webhooks are managed by its owners and admins.")
    if unacceptable_parameters(list(request.path_params.items())):  # no id holds a control character
        return error_page(request, 404, "Not found", "There is nothing at this address.")
    sent = request.query_params.multi_items() + (form.multi_items() if form is not None else [])
    # Multi-line text is the loosest rule (what a text area takes); each form's own model is stricter.
    if unacceptable_parameters(sent, multi_line=True):
        return error_page(request, 400, "This form holds characters we cannot accept",
                          "Control characters (such as NUL) cannot be stored. Go back, remove them and try again.")
    if form is not None:
        try:
            require_csrf(request, form, single_use=not signed_in)
        except CsrfFailed:
            return error_page(request, 403, "This form has expired",
                              "The form could not be accepted because its security token is missing, expired, "
                              "or from another browser. Go back, reload the page and try again.")
    return handlers[request.method](Visit(request, form, user, dict(request.path_params)))


def _shown_for_another_business(request: Request, form: FormData) -> bool:
    """Whether a form names a business other than the one the browser acts for now (a form without
    the field, such as a script's, is taken for the current one)."""
    shown_for, business = form.get(ACTING_FOR_FIELD), current_business(request)
    return isinstance(shown_for, str) and business is not None and shown_for != business.public_id


def _page_threads() -> anyio.CapacityLimiter:
    """The worker threads pages run in, apart from the ones the operations they call run in: a page
    acting through the pipeline (`web.acting`) waits in its thread for the pipeline's own threads, so
    pages holding every shared thread would wait for each other for ever."""
    loop = asyncio.get_running_loop()  # a limiter belongs to its event loop (tests run several in turn)
    if loop not in _PAGE_THREADS:
        _PAGE_THREADS[loop] = anyio.CapacityLimiter(get_settings().request_threads)
    return _PAGE_THREADS[loop]


_PAGE_THREADS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def page(path: str, *, get: Handler | None = None, post: Handler | None = None,
         signed_in: bool = True, managers_only: bool = False) -> Route:
    """A route serving `get` and/or `post`; `signed_in` pages require a signed-in user, `managers_only`
    pages an owner or admin of the business they act for."""
    handlers = {method: h for method, h in (("GET", get), ("POST", post)) if h is not None}
    if get is not None:
        handlers["HEAD"] = get

    async def endpoint(request: Request) -> Response:
        form = None
        if request.method == "POST":
            form = await request.form(max_files=0, max_fields=MAX_FORM_FIELDS)
        return await anyio.to_thread.run_sync(_run, handlers, signed_in, request, form, managers_only,
                                              limiter=_page_threads())

    return Route(path, endpoint, methods=list(handlers))
