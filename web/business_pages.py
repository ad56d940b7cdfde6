"""Which business the dashboard acts for: the switcher, and starting a new business."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from core.access import memberships
from core.base.db import transaction
from core.base.errors import DomainError, NotFound
from pages.routing import NEW_BUSINESS_PATH, Visit, error_page, page, redirect
from pages.sessions import switch_business
from web.rendering import render


def switch(visit: Visit) -> Response:
    with transaction() as session:
        try:
            chosen = memberships.find_business(session, visit.user.id, visit.text("business", 100))
        except NotFound as missing:
            return error_page(visit.request, 404, "No such business", missing.detail)
    switch_business(visit.request, chosen.account_id)
    return redirect("/")


def new_business_form(visit: Visit) -> Response:
    return render(visit.request, "business_new.html", member_of_none=visit.business is None)


def create_business(visit: Visit) -> Response:
    try:
        with transaction() as session:
            account = memberships.create_business(session, visit.user, counted=True)
    except DomainError as refused:
        return error_page(visit.request, refused.status, "No new business now", refused.detail)
    switch_business(visit.request, account.id)
    return redirect("/onboarding")


def routes() -> list[Route]:
    return [
        page("/businesses/switch", post=switch),
        page(NEW_BUSINESS_PATH, get=new_business_form, post=create_business),
    ]
