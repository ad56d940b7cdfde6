"""The apps a user has connected (Settings → Connected apps), their limits, and disconnecting one:
the `core.access.connected_apps.ConnectedApps` the dashboard is given.

Limits are the app's, for one person and business, however many times they authorized it (a
step-up, a second device, MCP and the REST API): every grant of the app that is not revoked holds the
same authorization details, so every token of the app meets the same limits (the resource server,
introspection and token responses read its grant's). They change in two places only, both under the
account's row lock (the one delegated actions take), so two changes cannot interleave:

- a new grant (`adopt_limits`): its limits become the app's for the actions its scopes allow, the
  app's earlier limits stay for the others (`core.access.authorization_details.for_app`);
- the dashboard (`set_limits`): the person's limits replace the app's.

No grant is revoked for it. The day's count is the app's too (`core.billing.delegated_actions`).
"""

from __future__ import annotations

import uuid

from sqlalchemy import update
from sqlmodel import Session, select

from authz import clients, tokens
from authz.models import OAuthAuthorizationCode, OAuthGrant, OAuthToken
from authz.verifier import CREDENTIAL_PREFIX
from core.access import authorization_details, memberships, resources
from core.access.connected_apps import AppSummary, Grant
from core.access.principal import Principal
from core.access.scopes import ordered
from core.base.clock import now
from core.models import Account


def _live_grants(session: Session, user_id: uuid.UUID, *conditions) -> list[OAuthGrant]:
    """The user's grants not revoked that still hold a usable token (and meet `conditions`), oldest first."""
    moment = now()
    usable = select(OAuthToken.grant_id).where(
        OAuthToken.revoked_at.is_(None), OAuthToken.expires_at > moment, OAuthToken.used_at.is_(None))
    query = select(OAuthGrant).where(
        OAuthGrant.user_id == user_id, OAuthGrant.revoked_at.is_(None), OAuthGrant.id.in_(usable), *conditions)
    return list(session.exec(query.order_by(OAuthGrant.created_at)))


def _of_app(client_id: str, user_id: uuid.UUID, account_id: uuid.UUID) -> tuple:
    return OAuthGrant.client_id == client_id, OAuthGrant.user_id == user_id, OAuthGrant.account_id == account_id


def _live_grant(session: Session, user_id: uuid.UUID, grant_id: uuid.UUID) -> OAuthGrant | None:
    found = _live_grants(session, user_id, OAuthGrant.id == grant_id)
    return found[0] if found else None


def connected_apps(session: Session, user_id: uuid.UUID, account_id: uuid.UUID) -> list[AppSummary]:
    """One summary per app with a live sign-in for the business, most recently used first."""
    by_client: dict[str, list[OAuthGrant]] = {}
    for grant in _live_grants(session, user_id, OAuthGrant.account_id == account_id):
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
    return Grant(id=row.id, client_id=row.client_id, app_name=app_name, account_id=row.account_id,
                 resource=resources.label(row.resource),
                 scopes=ordered(row.scopes), connected_at=row.created_at,
                 authorization_details=authorization_details.from_stored(row.authorization_details))


def grant(session: Session, user_id: uuid.UUID, grant_id: uuid.UUID) -> Grant | None:
    """One of the user's live sign-ins, or None (another person's, revoked, or unknown)."""
    row = _live_grant(session, user_id, grant_id)
    if row is None:
        return None
    client = clients.find(session, row.client_id)
    return _grant(row, client.name if client else "Unknown app")


def current_limits(session: Session, user_id: uuid.UUID, account_id: uuid.UUID, client_id: str) -> tuple | None:
    """The app's limits (those of its latest live sign-in, to either resource): asking again (for more
    scopes, say, or for the other resource) starts from them, so it does not drop what the person set."""
    latest = _live_grants(session, user_id, *_of_app(client_id, user_id, account_id))
    return authorization_details.from_stored(latest[-1].authorization_details) if latest else None


def adopt_limits(session: Session, grant: OAuthGrant) -> None:
    """A new grant's limits become the app's (written to every grant of it not revoked, the new one
    included) for the actions its scopes allow; the app's limits before stay for the other actions its
    live grants allow."""
    _lock_account(session, grant.account_id)
    others = [g for g in _live_grants(session, grant.user_id, *_of_app(grant.client_id, grant.user_id, grant.account_id))
              if g.id != grant.id]
    details = authorization_details.for_app(
        authorization_details.from_stored(grant.authorization_details), authorization_details.actions_of(grant.scopes),
        authorization_details.from_stored(others[-1].authorization_details) if others else None,
        authorization_details.actions_of(scope for g in others for scope in g.scopes))
    _write_limits(session, grant.client_id, grant.user_id, grant.account_id, details)


def set_limits(session: Session, user_id: uuid.UUID, grant_id: uuid.UUID, details: tuple | None) -> bool:
    """The person's limits become the app's, the app of this live grant: every grant of it not revoked
    holds them from the next request."""
    row = _live_grant(session, user_id, grant_id)
    if row is None:
        return False
    _lock_account(session, row.account_id)
    _write_limits(session, row.client_id, user_id, row.account_id, details)
    return True


def _lock_account(session: Session, account_id: uuid.UUID) -> None:
    session.exec(select(Account.id).where(Account.id == account_id).with_for_update()).first()


def _write_limits(session: Session, client_id: str, user_id: uuid.UUID, account_id: uuid.UUID,
                  details: tuple | None) -> None:
    stored = authorization_details.to_json(details)
    for row in session.exec(select(OAuthGrant).where(*_of_app(client_id, user_id, account_id),
                                                     OAuthGrant.revoked_at.is_(None))):
        row.authorization_details = stored
        session.add(row)


def disconnect(session: Session, user_id: uuid.UUID, account_id: uuid.UUID, client_id: str | None = None) -> int:
    """Revoke every sign-in of this app (of every app: None) for this user in this business; its tokens
    stop on the next request. Returns how many sign-ins were revoked (0 when the app was not connected)."""
    query = select(OAuthGrant).where(OAuthGrant.user_id == user_id, OAuthGrant.account_id == account_id,
                                     OAuthGrant.revoked_at.is_(None))
    if client_id is not None:
        query = query.where(OAuthGrant.client_id == client_id)
    count = 0
    for grant in session.exec(query):
        tokens.revoke_grant(session, grant.id)
        count += 1
    return count


def end_member_sign_ins(session: Session, account_id: uuid.UUID, user_id: uuid.UUID) -> None:
    """A member removed from a business: every app they connected to it is disconnected, and the codes
    of sign-ins not yet finished are spent (none becomes a grant afterwards)."""
    disconnect(session, user_id, account_id)
    codes = OAuthAuthorizationCode.__table__
    session.execute(update(codes).where(codes.c.account_id == account_id, codes.c.user_id == user_id,
                                        codes.c.used_at.is_(None)).values(used_at=now()))


def acting_principal(session: Session, user_id: uuid.UUID, grant_id: uuid.UUID) -> Principal | None:
    """The caller a live grant of the user's stands for (what its tokens verify as, with the grant's scopes
    and the app's limits now), for work done later on its behalf (a schedule's runs); None once it is
    revoked, its app disconnected, it holds no usable token any more, or the person left the business."""
    grant = _live_grant(session, user_id, grant_id)
    role = memberships.role_of(session, grant.account_id, user_id) if grant is not None else None
    if role is None:
        return None
    client = clients.find(session, grant.client_id)
    return Principal(
        account_id=grant.account_id, granted_scopes=frozenset(grant.scopes), actor="oauth_app", role=role,
        client_id=grant.client_id, client_name=client.name if client else None, user_id=grant.user_id,
        credential_id=f"{CREDENTIAL_PREFIX}{grant.id}", grant_id=grant.id, resource=grant.resource,
        authorization_details=authorization_details.from_stored(grant.authorization_details))
