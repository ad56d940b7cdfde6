"""Invitations when other changes land meanwhile: an ownership handed over withdraws the old owner's
invitations to become owner; a link replaced while its acceptance waited is dead; an accepted
invitation cannot be revoked; a sender demoted while waiting for the business's lock acts no more."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from core.access import accounts, invitations, memberships
from core.access.principal import Principal
from core.base import crypto, db
from core.base.errors import Forbidden, NotFound
from core.models import Invitation
from tests.members import invitation_link_token, join, member_id, new_person


def _invite(tenant, address: str, role: str = "viewer") -> dict:
    response = tenant.post("/invitations", json={"email": address, "role": role})
    assert response.status_code == 201, response.text
    return response.json()["data"]


def _stale_admin(tenant) -> Principal:
    """An admin as a request saw them before waiting for the business's lock; a viewer by the time it is held."""
    admin = join(tenant, "admin")
    with db.transaction() as session:
        user = accounts.user_by_email(session, admin.user_email)
        accounts.mark_email_verified(session, user)
        seen = Principal.signed_in_person(tenant.account_id, user.id, "admin")
    assert tenant.patch(f"/members/{member_id(tenant, admin.user_email)}", json={"role": "viewer"}).status_code == 200
    return seen


def test_handing_ownership_over_withdraws_the_old_owners_invitations_to_become_owner(tenant):
    invitation = _invite(tenant, "co-owner@example.com", "owner")
    kept = _invite(tenant, "helper@example.com", "viewer")
    admin = join(tenant, "admin")
    handed = tenant.post(f"/members/{member_id(tenant, admin.user_email)}/transfer_ownership")
    assert handed.status_code == 200, handed.text
    statuses = {i["id"]: i["status"] for i in admin.get("/invitations").json()["data"]}
    assert statuses == {invitation["id"]: "revoked", kept["id"]: "pending"}


def test_a_link_replaced_while_its_acceptance_waited_for_the_lock_is_dead(tenant, monkeypatch):
    address = new_person()
    _invite(tenant, address)
    token = invitation_link_token(address)
    waited = memberships.lock_business

    def resent_meanwhile(session, account_id):
        waited(session, account_id)
        # what a resend committed while this acceptance waited leaves in the row (behind the ORM's back)
        session.execute(sa.update(Invitation).where(Invitation.email == address)
                        .values(token_hash=crypto.sha256_hex("new")))
    monkeypatch.setattr(memberships, "lock_business", resent_meanwhile)
    with db.transaction() as session, pytest.raises(NotFound):
        invitations.accept(session, token, accounts.user_by_email(session, address))
    assert address not in {m["email"] for m in tenant.get("/members").json()["data"]}


def test_an_accepted_invitation_cannot_be_revoked_and_stays_accepted(tenant):
    address = new_person()
    invitation = _invite(tenant, address)
    with db.transaction() as session:
        invitations.accept(session, invitation_link_token(address), accounts.user_by_email(session, address))
    refused = tenant.delete(f"/invitations/{invitation['id']}")
    assert refused.status_code == 409 and refused.json()["code"] == "invalid_state"
    assert tenant.get("/invitations").json()["data"][0]["status"] == "accepted"


def test_a_sender_demoted_while_waiting_for_the_lock_cannot_invite(tenant):
    stale = _stale_admin(tenant)
    with db.transaction() as session, pytest.raises(Forbidden):
        invitations.invite(session, stale, email="late@example.com", role="viewer")
    assert tenant.get("/invitations").json()["data"] == []


@pytest.mark.parametrize("act", [invitations.revoke, invitations.resend])
def test_a_member_demoted_while_waiting_for_the_lock_cannot_revoke_or_resend(tenant, act):
    invitation = _invite(tenant, "someone@example.com")
    stale = _stale_admin(tenant)
    with db.transaction() as session, pytest.raises(Forbidden):
        act(session, stale, invitation["id"])
    [shown] = tenant.get("/invitations").json()["data"]
    assert (shown["status"], shown["sent_at"]) == ("pending", invitation["sent_at"])
