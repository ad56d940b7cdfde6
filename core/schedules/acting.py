"""Who a schedule's run acts as: the credential that created the schedule, as it stands at the run (its
scopes now, an app's limits now), or the reason it no longer can.

An API key is read here; an OAuth grant through the lookup the authorization server registers
(`register_grant_lookup`, wired by the composition root), so `core` never knows how grants are stored.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable

from sqlmodel import Session

from core.access import apikeys, memberships
from core.access.principal import Principal
from core.base.clock import now
from core.base.errors import DomainError
from core.models import ApiKey, InvoiceSchedule

GrantLookup = Callable[[Session, uuid.UUID, uuid.UUID], Principal | None]
_grant_lookup: GrantLookup | None = None


class CredentialGone(DomainError):
    """The credential a schedule acts as can no longer act: its runs stop until a person resumes it
    (as themselves)."""

    code, status, slug, title = "credential_revoked", 409, "credential-revoked", "Credential revoked"


def register_grant_lookup(lookup: GrantLookup | None) -> None:
    global _grant_lookup
    _grant_lookup = lookup


def creator_fields(principal: Principal) -> dict:
    """The `created_by_*` columns of a schedule `principal` creates (or resumes: it then acts as them)."""
    return {"created_by_actor": principal.actor, "created_by_api_key_id": principal.api_key_id,
            "created_by_client_id": principal.client_id, "created_by_grant_id": principal.grant_id,
            "created_by_user_id": principal.user_id}


def acting_principal(session: Session, schedule: InvoiceSchedule) -> Principal:
    """The caller the schedule's runs act as, now; CredentialGone saying why when it cannot."""
    actor = schedule.created_by_actor
    if actor == "api_key":
        principal = _key_principal(session, schedule)
    elif actor == "oauth_app":
        found = None
        if _grant_lookup is not None and schedule.created_by_user_id and schedule.created_by_grant_id:
            found = _grant_lookup(session, schedule.created_by_user_id, schedule.created_by_grant_id)
        if found is None or found.account_id != schedule.account_id:
            raise CredentialGone(f"The app that created this schedule ({schedule.created_by_client_id}) was "
                                 "disconnected: resume the schedule to let it run as you.")
        principal = found
    else:
        role = memberships.role_of(session, schedule.account_id, schedule.created_by_user_id) \
            if schedule.created_by_user_id else None
        if role is None:
            raise CredentialGone("The person who created this schedule is no longer a member of this business.")
        principal = Principal.signed_in_person(schedule.account_id, schedule.created_by_user_id, role)
    return dataclasses.replace(principal, schedule_id=schedule.id)


def _key_principal(session: Session, schedule: InvoiceSchedule) -> Principal:
    key = session.get(ApiKey, schedule.created_by_api_key_id) if schedule.created_by_api_key_id else None
    if key is None or key.account_id != schedule.account_id or key.revoked_at is not None:
        raise CredentialGone("The API key that created this schedule was revoked: resume the schedule with another "
                             "key, or in the dashboard.")
    if key.expires_at is not None and key.expires_at <= now():
        raise CredentialGone("The API key that created this schedule has expired: resume the schedule with another "
                             "key, or in the dashboard.")
    role = memberships.role_of(session, key.account_id, key.created_by_user_id)
    if role is None:
        raise CredentialGone("The person who created the API key of this schedule is no longer a member of this "
                             "business: resume the schedule with another key, or in the dashboard.")
    return Principal(account_id=key.account_id, granted_scopes=frozenset(key.scopes), actor="api_key", role=role,
                     api_key_id=key.id, user_id=key.created_by_user_id,
                     credential_id=f"{apikeys.CREDENTIAL_PREFIX}{key.id}")
