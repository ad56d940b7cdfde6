"""The apps a user has connected (Settings → Connected apps), and disconnecting one."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlmodel import Session, select

from authz import clients, tokens
from authz.models import OAuthGrant, OAuthToken
from core.clock import now
from core.scopes import ordered
from service.settings import get_settings


@dataclass(frozen=True)
class AppSummary:
    client_id: str
    name: str
    verified: bool  # identified by a client metadata document (its host is `host`)
    host: str
    scopes: list[str]  # granted scopes, across its live sign-ins
    resources: list[str]  # "MCP" and/or "REST API"
    connected_at: datetime
    last_used_at: datetime | None


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
            resources=sorted({_resource_label(g.resource) for g in grants}),
            connected_at=min(g.created_at for g in grants),
            last_used_at=max(used) if used else None,
        ))
    return sorted(summaries, key=lambda s: (s.last_used_at or s.connected_at), reverse=True)


def _resource_label(resource: str) -> str:
    return "MCP" if resource == get_settings().mcp_resource else "REST API"


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
