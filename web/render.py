"""Server-rendered pages: Jinja2 templates with autoescaping, CSRF token and user in context."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from web.csrf import attach_cookie, csrf_token
from web.sessions import current_user

TEMPLATES = Path(__file__).parent / "templates"
environment = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]))


def when(value: datetime | None, missing: str = "") -> str:
    """A timestamp as people read it: `2026-11-22 14:05 UTC`."""
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if value else missing


environment.filters["when"] = when

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def render(request: Request, template_name: str, *, status_code: int = 200, **context) -> HTMLResponse:
    template = environment.get_template(template_name)
    html = template.render(request=request, csrf_token=lambda: csrf_token(request),
                           user=current_user(request), **context)
    response = HTMLResponse(html, status_code=status_code, headers=SECURITY_HEADERS)
    attach_cookie(request, response)
    return response
