"""Members of a business: who belongs to which business with which role, and the rules of changing
that. A business always keeps an owner; an admin manages every member but owners; only an owner
makes another owner or hands ownership over. A removed member's API keys are revoked and their
apps' sign-ins end (`register_on_removed`, wired by the composition root for the authorization server's)."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlmodel import Session, select

from core.access import activity
from core.access.principal import Principal
from core.access.roles import MANAGERS, ROLES
from core.base.clock import iso, now
from core.base.errors import InvalidState, NotAllowed, NotFound, ValidationFailed
from core.base.ids import public_id, try_parse
from core.mechanisms import ratelimit
from core.models import Account, ApiKey, BusinessProfile, Invitation, Membership, User

UNNAMED = "New business"  # a business before its profile is filled in
MAX_OWNED = 20  # businesses a person owns
NEW_PER_DAY = 5  # businesses a person starts a day

# Ends a removed member's OAuth sign-ins in the business: (session, account_id, user_id).
RemovedHook = Callable[[Session, uuid.UUID, uuid.UUID], None]
_on_removed: RemovedHook | None = None


def register_on_removed(hook: RemovedHook | None) -> None:
    global _on_removed
    _on_removed = hook


MEMBERSHIPS = Membership.__table__


@dataclass(frozen=True)
class Business:
    """A business as one of its members sees it."""

    account_id: uuid.UUID
    name: str
    role: str

    @property
    def public_id(self) -> str:
        return public_id("account", self.account_id)


@dataclass(frozen=True)
class Member:
    membership_id: uuid.UUID
    user_id: uuid.UUID
    email: str
    name: str | None
    role: str
    joined_at: datetime


def role_of(session: Session, account_id: uuid.UUID, user_id: uuid.UUID) -> str | None:
    return session.exec(select(Membership.role).where(Membership.account_id == account_id,
                                                      Membership.user_id == user_id)).first()


def join(session: Session, account_id: uuid.UUID, user_id: uuid.UUID, role: str) -> Membership:
    if role not in ROLES:
        raise ValidationFailed.at("role", f"must be one of {', '.join(ROLES)}")
    membership = Membership(account_id=account_id, user_id=user_id, role=role)
    session.add(membership)
    session.flush()
    return membership


def businesses_of(session: Session, user_id: uuid.UUID) -> list[Business]:
    """The person's businesses, the oldest membership first."""
    rows = session.exec(select(Membership.account_id, Membership.role, BusinessProfile.legal_name, BusinessProfile.trade_name)
                        .join(BusinessProfile, BusinessProfile.account_id == Membership.account_id, isouter=True)
                        .where(Membership.user_id == user_id).order_by(Membership.created_at, Membership.id))
    return [Business(account_id, trade or legal or UNNAMED, role) for account_id, role, legal, trade in rows]


def business_of(session: Session, user_id: uuid.UUID, account_id: uuid.UUID | None) -> Business | None:
    """The business `account_id` if the person is a member of it, else their first; None when they
    belong to none."""
    return chosen(businesses_of(session, user_id), account_id)


def chosen(businesses: list[Business], account_id: uuid.UUID | None) -> Business | None:
    """Of a person's businesses, the one `account_id` names, else their first (None: they have none)."""
    return next((b for b in businesses if b.account_id == account_id), businesses[0] if businesses else None)


def name_of(session: Session, account_id: uuid.UUID) -> str:
    """A business's name as people know it (its trading name), from its profile."""
    profile = session.exec(select(BusinessProfile.legal_name, BusinessProfile.trade_name)
                           .where(BusinessProfile.account_id == account_id)).first()
    return (profile[1] or profile[0]) if profile else UNNAMED


def find_business(session: Session, user_id: uuid.UUID, text: str) -> Business:
    """One of the person's businesses by its `acct_…` id (or UUID); NotFound otherwise."""
    account_id = try_parse("account", text)
    found = next((b for b in businesses_of(session, user_id) if b.account_id == account_id), None)
    if found is None:
        raise NotFound(f"You are not a member of a business {text!r}.")
    return found


def create_business(session: Session, user: User, *, counted: bool = False) -> Account:
    """A new business, its creator its first owner (its profile is filled in next). `counted`: one a
    person starts from the dashboard, within their limits (each business brings its own e-mail and
    invitation limits, so how many a person starts is limited too)."""
    if counted:
        if sum(b.role == "owner" for b in businesses_of(session, user.id)) >= MAX_OWNED:
            raise NotAllowed(f"A person owns at most {MAX_OWNED} businesses.")
        ratelimit.hit(session, ratelimit.Limit("new_business", NEW_PER_DAY, 24 * 3600), str(user.id)) \
            .raise_if_exceeded("new businesses per person")
    account = Account(owner_user_id=user.id)
    session.add(account)
    session.flush()
    join(session, account.id, user.id, "owner")
    activity.by_person(session, account.id, user.id, "business.created", "Started the business")
    return account


def owners(session: Session, account_id: uuid.UUID) -> list[User]:
    return list(session.exec(select(User).join(Membership, Membership.user_id == User.id).where(
        Membership.account_id == account_id, Membership.role == "owner").order_by(Membership.created_at)))


# --- managing members ----------------------------------------------------------------------------


def list_members(session: Session, account_id: uuid.UUID) -> list[Member]:
    rows = session.exec(select(Membership, User).join(User, User.id == Membership.user_id)
                        .where(Membership.account_id == account_id).order_by(Membership.created_at, Membership.id))
    return [Member(m.id, u.id, u.email, u.name, m.role, m.created_at) for m, u in rows]


def member(session: Session, account_id: uuid.UUID, member_id: str) -> Member:
    """A member of the business by its `mem_…` id; NotFound for any other business's."""
    membership_id = try_parse("member", member_id)
    found = next((m for m in list_members(session, account_id) if m.membership_id == membership_id), None)
    if found is None:
        raise NotFound(f"No such member: {member_id!r}")
    return found


def change_role(session: Session, principal: Principal, member_id: str, role: str) -> Member:
    if role not in ROLES:
        raise ValidationFailed.at("role", f"must be one of {', '.join(ROLES)}")
    principal = locked(session, principal)
    target = member(session, principal.account_id, member_id)
    _may_manage(principal, target.role, role)
    if target.role == role:
        return target
    if target.role == "owner" and len(owners(session, principal.account_id)) == 1:
        raise NotAllowed("A business keeps at least one owner: make another member owner first.")
    _set_role(session, target.membership_id, role)
    if target.role in MANAGERS and role not in MANAGERS or target.role == "owner":
        _withdraw_invitations(session, principal.account_id, target.user_id, owners_only=role in MANAGERS)
    activity.record(session, principal, "member.role_changed",
                    f"Changed the role of {target.email} from {target.role} to {role}")
    return member(session, principal.account_id, member_id)


def remove(session: Session, principal: Principal, member_id: str) -> Member:
    """Remove a member (a member may also leave): their keys are revoked and their apps disconnected
    from this business at once."""
    principal = locked(session, principal)
    target = member(session, principal.account_id, member_id)
    if target.user_id != principal.user_id:
        _may_manage(principal, target.role, None)
    if target.role == "owner" and len(owners(session, principal.account_id)) == 1:
        raise NotAllowed("A business keeps at least one owner: make another member owner before this one leaves.")
    session.execute(sa.delete(MEMBERSHIPS).where(MEMBERSHIPS.c.id == target.membership_id))
    session.execute(sa.update(ApiKey.__table__).where(
        ApiKey.__table__.c.account_id == principal.account_id, ApiKey.__table__.c.created_by_user_id == target.user_id,
        ApiKey.__table__.c.revoked_at.is_(None)).values(revoked_at=now()))
    _withdraw_invitations(session, principal.account_id, target.user_id)
    if _on_removed is not None:
        _on_removed(session, principal.account_id, target.user_id)
    what = "Left the business" if target.user_id == principal.user_id else f"Removed {target.email} ({target.role})"
    activity.record(session, principal, "member.removed", what)
    return target


def transfer_ownership(session: Session, principal: Principal, member_id: str) -> Member:
    """Make another member the owner; the owner handing over becomes an admin."""
    principal = locked(session, principal)
    principal.require("members:manage")
    if principal.role != "owner":
        raise NotAllowed(f"Only an owner can hand ownership over; your role is {principal.role}.")
    target = member(session, principal.account_id, member_id)
    if target.user_id == principal.user_id:
        raise InvalidState("You are an owner already: choose another member to hand ownership to.")
    _set_role(session, target.membership_id, "owner")
    mine = session.exec(select(Membership.id).where(Membership.account_id == principal.account_id,
                                                    Membership.user_id == principal.user_id)).one()
    _set_role(session, mine, "admin")
    _withdraw_invitations(session, principal.account_id, principal.user_id, owners_only=True)  # no longer theirs to give
    activity.record(session, principal, "member.ownership_transferred",
                    f"Handed ownership to {target.email} (was {target.role}) and became admin")
    return member(session, principal.account_id, member_id)


def _may_manage(principal: Principal, current: str, wanted: str | None) -> None:
    principal.require("members:manage")
    if principal.role != "owner" and "owner" in (current, wanted):
        raise NotAllowed("Only an owner can change or remove an owner, or make someone owner.")


def _set_role(session: Session, membership_id: uuid.UUID, role: str) -> None:
    session.execute(sa.update(MEMBERSHIPS).where(MEMBERSHIPS.c.id == membership_id)
                    .values(role=role, updated_at=now()))


def leave(session: Session, principal: Principal) -> Member:
    """The person leaves the business (not its last owner): their own choice, needing no `members:manage`."""
    mine = next((m for m in list_members(session, principal.account_id) if m.user_id == principal.user_id), None)
    if mine is None:
        raise NotFound("You are not a member of this business.")
    return remove(session, principal, public_id("member", mine.membership_id))


def locked(session: Session, principal: Principal) -> Principal:
    """Changes to one business's members one at a time (two owners demoting each other at once would
    otherwise leave none), by the caller as their role stands once the lock is held."""
    lock_business(session, principal.account_id)
    role = role_of(session, principal.account_id, principal.user_id) if principal.user_id else None
    if role is None:
        raise NotAllowed("You are no longer a member of this business.")
    return dataclasses.replace(principal, role=role)


def lock_business(session: Session, account_id: uuid.UUID) -> None:
    """Hold the business's row until the transaction ends: its members change one at a time."""
    session.exec(select(Account.id).where(Account.id == account_id).with_for_update()).first()


def _withdraw_invitations(session: Session, account_id: uuid.UUID, user_id: uuid.UUID, *,
                          owners_only: bool = False) -> None:
    """The pending invitations a person sent who may no longer send them (removed, no longer an admin,
    or no longer an owner: `owners_only`) stop working."""
    table = Invitation.__table__
    query = sa.update(table).where(table.c.account_id == account_id, table.c.invited_by_user_id == user_id,
                                   table.c.accepted_at.is_(None), table.c.revoked_at.is_(None))
    if owners_only:
        query = query.where(table.c.role == "owner")
    session.execute(query.values(revoked_at=now()))


def member_to_api(found: Member) -> dict:
    return {"id": public_id("member", found.membership_id), "object": "member", "email": found.email,
            "name": found.name, "role": found.role, "joined_at": iso(found.joined_at)}
