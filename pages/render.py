"""Jinja2 rendering with autoescaping, the CSRF token, the signed-in user and the business they act
for (with their other businesses, for the switcher) in every context, and `may(operation, ...)`:
whether their role there allows those operations, so a page offers only the actions the person may take
(the operations still check every one).

Each surface renders from its own template folder with the shared layout as fallback:
`Templates(Path(__file__).parent / "templates")`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from jinja2 import ChoiceLoader, Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from core.access.memberships import Business
from core.access.roles import allows
from pages.csrf import attach_cookie, csrf_token
from pages.sessions import ACTING_FOR_FIELD, businesses, current_business, current_user

SHARED_TEMPLATES = Path(__file__).parent / "templates"
STATIC_FILES = Path(__file__).parent / "static"  # Pico CSS and the service's own app.css

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def when(value: datetime | None, missing: str = "") -> str:
    """A timestamp as people read it: `2026-11-22 14:05 UTC`."""
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if value else missing


def permissions(business: Business | None) -> Callable[..., bool]:
    """`may(*actions)` for templates: whether the person's role in `business` allows every one of
    `actions` (nothing when signed out or a member of no business). An action is an operation (what it
    declares as its `scope` decides, so a page follows the operation) or a scope a rule of `core` names."""
    def may(*actions: object) -> bool:
        scopes = [action if isinstance(action, str) else action.scope for action in actions]
        return business is not None and all(allows(business.role, scope) for scope in scopes)
    return may


class Templates:
    """The templates of one surface (its own folder first, then the shared layout)."""

    def __init__(self, folder: Path | None = None) -> None:
        folders = [folder, SHARED_TEMPLATES] if folder else [SHARED_TEMPLATES]
        self.environment = Environment(loader=ChoiceLoader([FileSystemLoader(f) for f in folders]),
                                       autoescape=select_autoescape(["html"]))
        self.environment.filters["when"] = when

    def render(self, request: Request, template_name: str, *, status_code: int = 200, **context) -> HTMLResponse:
        template = self.environment.get_template(template_name)
        user = current_user(request)
        business = current_business(request) if user else None
        html = template.render(request=request, csrf_token=lambda: csrf_token(request), user=user,
                               business=business, may=permissions(business),
                               businesses=businesses(request) if user else [], acting_for_field=ACTING_FOR_FIELD,
                               **context)
        response = HTMLResponse(html, status_code=status_code, headers=SECURITY_HEADERS)
        attach_cookie(request, response)
        return response


shared = Templates()
