"""Forget OAuth rows that can no longer matter; registered as a background job.

Codes and tokens are kept a day past their expiry: a rotated refresh token must still be
recognised when it is presented again (reuse detection) for as long as it could have been used.
A grant goes once no token or code of it remains.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete, exists, select
from sqlmodel import Session

from authz.models import OAuthAuthorizationCode, OAuthGrant, OAuthToken
from core.base.clock import now
from core.base.db import transaction

KEEP_AFTER_EXPIRY = timedelta(days=1)
INTERVAL_SECONDS = 3600.0


def purge_expired(session: Session) -> None:
    cutoff = now() - KEEP_AFTER_EXPIRY
    session.execute(delete(OAuthAuthorizationCode).where(OAuthAuthorizationCode.expires_at < cutoff))
    session.execute(delete(OAuthToken).where(OAuthToken.expires_at < cutoff))
    has_token = exists(select(OAuthToken.id).where(OAuthToken.grant_id == OAuthGrant.id))
    has_code = exists(select(OAuthAuthorizationCode.id).where(OAuthAuthorizationCode.grant_id == OAuthGrant.id))
    session.execute(delete(OAuthGrant).where(OAuthGrant.created_at < cutoff, ~has_token, ~has_code))


def cleanup() -> None:
    with transaction() as session:
        purge_expired(session)

