"""The activity of the business: who did what, through the dashboard, an API key or an app."""

from __future__ import annotations

from datetime import UTC, datetime

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
    before = _moment(visit.request.query_params.get("before", ""))
    with transaction() as session:
        found_members = memberships.list_members(session, visit.account_id)
        membership_id = try_parse("member", chosen) if chosen else None
        member = next((m for m in found_members if m.membership_id == membership_id), None)
        entries = activity.entries(session, visit.account_id, user_id=member.user_id if member else None,
                                   before=before, managing=manages(visit.role))
    older = entries[-1].at.isoformat() if len(entries) == activity.PAGE else None
    return render(visit.request, "activity.html", entries=entries, members=found_members,
                  chosen=public_id("member", member.membership_id) if member else "", older=older,
                  member_id=lambda m: public_id("member", m.membership_id))


def _moment(text: str) -> datetime | None:
    """The `before` of the next page: a timestamp, read as UTC when it names no zone; None if not one."""
    try:
        moment = datetime.fromisoformat(text) if text and len(text) <= 40 else None
        if moment is None:
            return None
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except (ValueError, OverflowError):  # not a time, or one whose UTC is off the calendar (year 1 at +01:00)
        return None


def routes() -> list[Route]:
    return [page("/activity", get=activity_page)]
