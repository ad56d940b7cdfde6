"""The activity of the business: who did what, through the dashboard, an API key or an app."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from core.access import activity, memberships
from core.access.roles import manages
from core.base.db import transaction
from core.base.ids import public_id, try_parse
from pages.routing import Visit, page
from web.rendering import render


def activity_page(visit: Visit) -> Response:
    chosen = visit.request.query_params.get("member", "")
    before = activity.Position.parse(visit.request.query_params.get("before", ""))
    with transaction() as session:
        found_members = memberships.list_members(session, visit.account_id)
        membership_id = try_parse("member", chosen) if chosen else None
        member = next((m for m in found_members if m.membership_id == membership_id), None)
        entries = activity.entries(session, visit.account_id, user_id=member.user_id if member else None,
                                   before=before, managing=manages(visit.role))
    older = entries[-1].position.text() if len(entries) == activity.PAGE else None
    return render(visit.request, "activity.html", entries=entries, members=found_members,
                  chosen=public_id("member", member.membership_id) if member else "", older=older,
                  member_id=lambda m: public_id("member", m.membership_id))


def routes() -> list[Route]:
    return [page("/activity", get=activity_page)]
