"""The consent page of `/oauth/authorize` and the page for authorization requests that cannot be
sent back to the app (templates in `authz/templates`, on the shared layout of `pages`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse

from authz.host_names import ShownHost
from core.access.scopes import IMPLIED, SCOPE_DESCRIPTIONS, ordered
from pages.render import Templates

templates = Templates(Path(__file__).parent / "templates")


@dataclass(frozen=True)
class ScopeChoice:
    scope: str
    description: str
    ticked: bool
    implies: list[str]  # what this scope grants too, even when those boxes are unticked


@dataclass(frozen=True)
class ConsentPage:
    app_name: str
    verified: bool
    app_host: ShownHost  # the client_id host of a verified app
    redirect_host: ShownHost  # where the user is sent back to (or which app opens a private-use link)
    redirect_is_local: bool  # a loopback address: an app on this computer
    resource_label: str
    groups: list[tuple[str, list[ScopeChoice]]]
    action: str  # the authorization request URL the form posts back to
    limits: list = field(default_factory=list)  # authz.limits.LimitRow, under the scope each narrows
    currency: str = "USD"  # the business's, for limits the app did not ask for
    businesses: list = field(default_factory=list)  # the person's (core.access.memberships.Business)
    chosen: object = None  # the business the app is to act for

    def limits_of(self, scope: str) -> list:
        return [row for row in self.limits if row.scope == scope]


def choices(groups: list[tuple[str, list[str]]], ticked) -> list[tuple[str, list[ScopeChoice]]]:
    return [(title, [ScopeChoice(s, SCOPE_DESCRIPTIONS[s], ticked(s), ordered(IMPLIED.get(s, ()))) for s in members])
            for title, members in groups]


def render_consent(request: Request, page: ConsentPage, *, error: str | None = None,
                   status_code: int = 200) -> HTMLResponse:
    return templates.render(request, "consent.html", page=page, error=error, status_code=status_code)


def render_authorization_error(request: Request, *, error: str, description: str,
                               status_code: int = 400) -> HTMLResponse:
    return templates.render(request, "oauth_error.html", error=error, description=description, status_code=status_code)
