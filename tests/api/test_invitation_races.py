"""Invitations when other changes land meanwhile: an ownership handed over withdraws the old owner's
invitations to become owner; a link replaced while its acceptance waited is dead; an accepted
invitation cannot be revoked; a sender demoted while waiting for the business's lock acts no more."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import pytest
import sqlalchemy as sa

from core.access import accounts, invitations, memberships
from core.access.principal import Principal
from core.base import crypto, db
from core.base.errors import Forbidden, InvalidState, NotFound
from core.models import Invitation
from tests.members import invitation_link_token, join, member_id, new_person
from tests.oauth_flow import user_id_of


def _invite(tenant, address: str, role: str = "viewer") -> dict:
    response = tenant.post("/invitations", json={"email": address, "role": role})
    assert response.status_code == 201, response.text
    return response.json()["data"]


def _pending(tenant) -> tuple[str, dict, str, Principal]:
    """An invitation to a new person: their address, the invitation, its link's token, and the owner who sent it."""
    address = new_person()
    invitation = _invite(tenant, address)
    owner = Principal.signed_in_person(tenant.account_id, user_id_of(tenant), "owner")
    return address, invitation, invitation_link_token(address), owner


def _stale_admin(tenant) -> Principal:
    """An admin as a request saw them before waiting for the business's lock; a viewer by the time it is held."""
    admin = join(tenant, "admin")
    with db.transaction() as session:
        user = accounts.user_by_email(session, admin.user_email)
        accounts.mark_email_verified(session, user)
        seen = Principal.signed_in_person(tenant.account_id, user.id, "admin")
    assert tenant.patch(f"/members/{member_id(tenant, admin.user_email)}", json={"role": "viewer"}).status_code == 200
    return seen


def _postgres_only() -> None:
    if db.get_engine().dialect.name != "postgresql":
        pytest.skip("SQLite runs one writing transaction at a time: no transaction waits on another's row locks")


def _behind(first: Callable, then: Callable) -> Future:
    """`then` in a transaction of its own while `first`'s, its work done, is still open: `first` commits
    once `then` waits on a lock (PostgreSQL's), and `then` goes on. What `then` returned or raised."""
    with ThreadPoolExecutor(1) as pool:
        with db.transaction() as session:
            first(session)
            session.flush()
            outcome = _waiting(pool, then)
    return outcome


def _waiting(pool: ThreadPoolExecutor, work: Callable) -> Future:
    """`work` started in a transaction of its own, once it waits on another transaction's lock."""
    backend, started = [], threading.Event()

    def run():
        with db.transaction() as session:
            backend.append(session.connection().exec_driver_sql("SELECT pg_backend_pid()").scalar())
            started.set()
            return work(session)
    outcome = pool.submit(run)
    assert started.wait(10)
    _until_waiting_on_a_lock(backend[0], outcome)
    return outcome


def _until_waiting_on_a_lock(pid: int, outcome: Future) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not outcome.done():
        with db.get_engine().connect() as conn:
            waiting = conn.execute(sa.text("SELECT wait_event_type FROM pg_stat_activity WHERE pid = :pid"),
                                   {"pid": pid}).scalar()
        if waiting == "Lock":
            return
        time.sleep(0.02)
    raise AssertionError("the second transaction never waited for the first's lock")


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


def test_the_old_link_of_a_resent_invitation_cannot_be_accepted(tenant):
    address = new_person()
    invitation = _invite(tenant, address)
    old = invitation_link_token(address)
    assert tenant.post(f"/invitations/{invitation['id']}/resend").status_code == 200
    with db.transaction() as session, pytest.raises(NotFound):
        invitations.accept(session, old, accounts.user_by_email(session, address))
    assert tenant.get("/invitations").json()["data"][0]["status"] == "pending"


def test_an_acceptance_waiting_behind_a_resend_of_its_link_is_refused(tenant):
    _postgres_only()
    address, invitation, old, owner = _pending(tenant)
    outcome = _behind(lambda session: invitations.resend(session, owner, invitation["id"]),
                      lambda session: invitations.accept(session, old, accounts.user_by_email(session, address)))
    assert isinstance(outcome.exception(), NotFound)
    assert address not in {m["email"] for m in tenant.get("/members").json()["data"]}


def test_a_revocation_waiting_behind_the_acceptance_is_refused_and_it_stays_accepted(tenant):
    _postgres_only()
    address, invitation, token, owner = _pending(tenant)
    outcome = _behind(lambda session: invitations.accept(session, token, accounts.user_by_email(session, address)),
                      lambda session: invitations.revoke(session, owner, invitation["id"]))
    assert isinstance(outcome.exception(), InvalidState)
    [shown] = tenant.get("/invitations").json()["data"]
    assert (shown["status"], shown["revoked_at"]) == ("accepted", None)


def test_an_acceptance_arriving_while_a_revocation_is_under_way_waits_for_it_and_is_refused(tenant, monkeypatch):
    """Revoke holds the business's lock when it reads the invitation; accept takes that lock first too,
    so it waits there (rather than taking the invitation's lock and meeting revoke's in a deadlock)."""
    _postgres_only()
    address, invitation, token, owner = _pending(tenant)
    found, go_on, find = threading.Event(), threading.Event(), invitations.find

    def found_then_paused(*arguments):
        row = find(*arguments)
        found.set()
        assert go_on.wait(10)
        return row
    monkeypatch.setattr(invitations, "find", found_then_paused)

    def revoking():
        with db.transaction() as session:
            invitations.revoke(session, owner, invitation["id"])
    with ThreadPoolExecutor(2) as pool:
        revoked = pool.submit(revoking)
        assert found.wait(10)
        try:
            accepted = _waiting(pool, lambda session: invitations.accept(
                session, token, accounts.user_by_email(session, address)))
        finally:
            go_on.set()
    assert revoked.exception() is None
    assert isinstance(accepted.exception(), InvalidState)
    [shown] = tenant.get("/invitations").json()["data"]
    assert (shown["status"], shown["accepted_at"]) == ("revoked", None)
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
