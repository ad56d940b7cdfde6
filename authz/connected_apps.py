"""The apps a user has connected (Settings → Connected apps), and disconnecting one: the
`core.access.connected_apps.ConnectedApps` the dashboard is given."""

from __future__ import annotations

import uuid

from sqlmodel import Session, select

from authz import clients, tokens
from authz.models import OAuthGrant, OAuthToken
from core.access import resources
from core.access.connected_apps import AppSummary
from core.access.scopes import ordered
from core.base.clock import now


def _live_grants(session: Session, user_id: uuid.UUID) -> list[OAuthGrant]:
    """Grants not revoked that still hold a usable token."""
    moment = now()
    usable = select(OAuthToken.grant_id).where(
        OAuthToken.revoked_at.is_(None), OAuthToken.expires_at > moment, OAuthToken.used_at.is_(None))
    query = select(OAuthGrant).where(
        OAuthGrant.user_id == user_id, OAuthGrant.revoked_at.is_(None), OAuthGrant.id.in_(usable))
    return list(session.exec(query.order_by(OAuthGrant.created_at)))


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
        ))
    return sorted(summaries, key=lambda s: (s.last_used_at or s.connected_at), reverse=True)


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
