"""Expired OAuth codes and tokens are forgotten a day after expiry; empty grants with them."""

from datetime import timedelta

from sqlmodel import select

from authz.cleanup import purge_expired
from authz.models import OAuthAuthorizationCode, OAuthGrant, OAuthToken
from core.access import accounts
from core.base import db
from core.base.clock import now


def make_grant(session, tenant, *, token_expiry, code_expiry):
    user = accounts.user_by_email(session, tenant.user_email)
    grant = OAuthGrant(client_id="cl_x", user_id=user.id, account_id=tenant.account_id, resource="r",
                       scopes=["clients:read"], created_at=now() - timedelta(days=40))
    session.add(grant)
    session.flush()
    session.add(OAuthToken(grant_id=grant.id, kind="refresh", token_hash=f"h-{grant.id}", scopes=[],
                           expires_at=token_expiry))
    session.add(OAuthAuthorizationCode(code_hash=f"c-{grant.id}", client_id="cl_x", user_id=user.id,
                                       account_id=tenant.account_id, scopes=[], resource="r", code_challenge="x",
                                       code_challenge_method="S256", expires_at=code_expiry, grant_id=grant.id))
    return grant.id


def test_purge_keeps_recent_rows_and_forgets_old_ones(tenant):
    with db.transaction() as session:
        make_grant(session, tenant, token_expiry=now() - timedelta(days=2), code_expiry=now() - timedelta(days=2))
        recent = make_grant(session, tenant, token_expiry=now() - timedelta(hours=1), code_expiry=now())
    with db.transaction() as session:
        purge_expired(session)
    with db.transaction() as session:
        assert [g.id for g in session.exec(select(OAuthGrant))] == [recent]
        assert [t.grant_id for t in session.exec(select(OAuthToken))] == [recent]
        assert [c.grant_id for c in session.exec(select(OAuthAuthorizationCode))] == [recent]


def test_cleanup_is_a_registered_job():
    from service import worker
    assert "oauth-cleanup" in {job.name for job in worker.default_jobs()}
