"""The apps a user has connected (Settings → Connected apps), and disconnecting one: the
`core.access.connected_apps.ConnectedApps` the dashboard is given."""

from __future__ import annotations

import uuid

from sqlmodel import Session, select

from authz import clients, tokens
from authz.models import OAuthGrant, OAuthToken
from core.access import authorization_details, resources
from core.access.connected_apps import AppSummary, Grant
from core.access.scopes import ordered
from core.base.clock import now


def _live_grants(session: Session, user_id: uuid.UUID, *conditions) -> list[OAuthGrant]:
    """The user's grants not revoked that still hold a usable token (and meet `conditions`), oldest first."""
    moment = now()
    usable = select(OAuthToken.grant_id).where(
        OAuthToken.revoked_at.is_(None), OAuthToken.expires_at > moment, OAuthToken.used_at.is_(None))
    query = select(OAuthGrant).where(
        OAuthGrant.user_id == user_id, OAuthGrant.revoked_at.is_(None), OAuthGrant.id.in_(usable), *conditions)
    return list(session.exec(query.order_by(OAuthGrant.created_at)))


def _live_grant(session: Session, user_id: uuid.UUID, grant_id: uuid.UUID) -> OAuthGrant | None:
    found = _live_grants(session, user_id, OAuthGrant.id == grant_id)
    return found[0] if found else None


def connected_apps(session: Session, user_id: uuid.UUID) -> list[AppSummary]:
    """One summary per app with a live sign-in, most recently used first."""
    by_client: dict[str, list[OAuthGrant]] = {}
    for grant in _live_grants(session, user_id):
        by_client.setdefault(grant.client_id, []).append(grant)
    summaries = []
    for client_id, grants in by_client.items():
        client = clients.find(session, client_id)
        used = [g.last_used_at for g in grants if g.last_used_at]
        summaries.append(AppSummary(
            client_id=client_id,
            name=client.name if client else "Unknown app",
            verified=bool(client and client.verified),
            host=client.host if client else "",
            scopes=ordered({s for g in grants for s in g.scopes}),
            resources=sorted({resources.label(g.resource) for g in grants}),
            connected_at=min(g.created_at for g in grants),
            last_used_at=max(used) if used else None,
            grants=[_grant(g, client.name if client else "Unknown app") for g in grants],
        ))
    return sorted(summaries, key=lambda s: (s.last_used_at or s.connected_at), reverse=True)


def _grant(row: OAuthGrant, app_name: str) -> Grant:
    return Grant(id=row.id, client_id=row.client_id, app_name=app_name, resource=resources.label(row.resource),
                 scopes=ordered(row.scopes), connected_at=row.created_at,
                 authorization_details=authorization_details.from_stored(row.authorization_details))


def grant(session: Session, user_id: uuid.UUID, grant_id: uuid.UUID) -> Grant | None:
    """One of the user's live sign-ins, or None (another person's, revoked, or unknown)."""
    row = _live_grant(session, user_id, grant_id)
    if row is None:
        return None
    client = clients.find(session, row.client_id)
    return _grant(row, client.name if client else "Unknown app")


def current_limits(session: Session, user_id: uuid.UUID, client_id: str, resource: str) -> tuple | None:
    """The limits of the app's latest live sign-in to `resource`: asking again (for more scopes, say)
    starts from them, so stepping up does not drop what the person set."""
    latest = _live_grants(session, user_id, OAuthGrant.client_id == client_id, OAuthGrant.resource == resource)
    return authorization_details.from_stored(latest[-1].authorization_details) if latest else None


def set_limits(session: Session, user_id: uuid.UUID, grant_id: uuid.UUID, details: tuple | None) -> bool:
    row = _live_grant(session, user_id, grant_id)
    if row is None:
        return False
    row.authorization_details = authorization_details.to_json(details)
    session.add(row)
    return True


def disconnect(session: Session, user_id: uuid.UUID, client_id: str) -> int:
    """Revoke every sign-in of this app for this user; its tokens stop on the next request.
    Returns how many sign-ins were revoked (0 when the app was not connected)."""
    grants = session.exec(select(OAuthGrant).where(
        OAuthGrant.user_id == user_id, OAuthGrant.client_id == client_id, OAuthGrant.revoked_at.is_(None)))
    count = 0
    for grant in grants:
        tokens.revoke_grant(session, grant.id)
        count += 1
    return count
