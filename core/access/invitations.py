"""Invitations to join a business: e-mailed links, each for one address, used once, good for 14 days.

The link's secret is kept only hashed. Sending one counts against the business's invitations an hour
and its e-mails an hour (the cap invoice e-mails share). Accepting needs a sign-in with the invited
address, which the link proves the person reads: it marks that address verified.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta
from email.message import EmailMessage

from sqlmodel import Session, select

from config.settings import get_settings
from core.access import activity, memberships
from core.access.accounts import mark_email_verified, plain_name
from core.access.principal import Principal
from core.access.roles import ROLES, manages
from core.base import crypto
from core.base.clock import iso, now
from core.base.errors import Conflict, InvalidState, NotAllowed, NotFound, ValidationFailed
from core.base.ids import public_id, try_parse
from core.base.validation import normalize_email
from core.mechanisms import ratelimit
from core.models import Invitation, User
from core.outbound import mailer

LIFETIME = timedelta(days=14)
TOKEN_MAX = 200


def invitations_per_business() -> ratelimit.Limit:
    return ratelimit.Limit("invitation", get_settings().rate_limit_invitations, 3600)


def invitations_per_person() -> ratelimit.Limit:
    return ratelimit.Limit("invitation_sender", get_settings().rate_limit_invitations, 3600)


@dataclass(frozen=True)
class Sent:
    invitation: Invitation
    link: str  # shown to nobody but the invited address's inbox


def status(row: Invitation) -> str:
    if row.accepted_at is not None:
        return "accepted"
    if row.revoked_at is not None:
        return "revoked"
    if row.expires_at <= now():
        return "expired"
    return "pending"


def invite(session: Session, principal: Principal, *, email: str, role: str) -> Sent:
    """A new invitation, counted against the business's limits; `deliver` sends it after the commit."""
    principal.require("members:manage")
    if role not in ROLES:
        raise ValidationFailed.at("role", f"must be one of {', '.join(ROLES)}")
    email = normalize_email(email, path="email")
    principal = memberships.locked(session, principal)  # one invitation to an address at a time
    principal.require("members:manage")  # as the role stands under the lock
    if role == "owner" and principal.role != "owner":
        raise NotAllowed("Only an owner can invite another owner.")
    _verified_sender(session, principal)
    if any(m.email == email for m in memberships.list_members(session, principal.account_id)):
        raise Conflict(f"{email} is already a member of this business.")
    if any(status(row) == "pending" for row in _to(session, principal.account_id, email)):
        raise Conflict(f"{email} has a pending invitation already: resend it, or revoke it first.")
    _count(session, principal)
    token, moment = crypto.token(32), now()
    row = Invitation(account_id=principal.account_id, email=email, role=role, token_hash=crypto.sha256_hex(token),
                     invited_by_user_id=principal.user_id, created_at=moment, sent_at=moment,
                     expires_at=moment + LIFETIME)
    session.add(row)
    session.flush()
    activity.record(session, principal, "invitation.sent", f"Invited {email} as {role}")
    return Sent(row, link_of(token))


def resend(session: Session, principal: Principal, invitation_id: str) -> Sent:
    """The invitation again under a new link (the old one stops working), good for 14 days from now."""
    principal, row = _managed(session, principal, invitation_id, "resend")
    if status(row) in ("accepted", "revoked"):
        raise InvalidState(f"The invitation is {status(row)}: invite {row.email} again instead.")
    _verified_sender(session, principal)
    _count(session, principal)
    token, moment = crypto.token(32), now()
    row.token_hash, row.expires_at, row.sent_at, row.sent_count = (
        crypto.sha256_hex(token), moment + LIFETIME, moment, row.sent_count + 1)
    session.add(row)
    activity.record(session, principal, "invitation.resent", f"Sent the invitation of {row.email} again")
    return Sent(row, link_of(token))


def revoke(session: Session, principal: Principal, invitation_id: str) -> Invitation:
    principal, row = _managed(session, principal, invitation_id, "revoke")
    if status(row) == "accepted":
        raise InvalidState("The invitation was accepted: remove the member instead.")
    if row.revoked_at is None:
        row.revoked_at = now()
        session.add(row)
        activity.record(session, principal, "invitation.revoked", f"Revoked the invitation of {row.email}")
    return row


def _managed(session: Session, principal: Principal, invitation_id: str, verb: str) -> tuple[Principal, Invitation]:
    """The caller (as their role stands under the business's lock) and the invitation they may `verb`."""
    principal.require("members:manage")
    principal = memberships.locked(session, principal)
    principal.require("members:manage")  # as the role stands under the lock
    row = find(session, principal.account_id, invitation_id)
    session.refresh(row, with_for_update=True)  # after the business's lock, as accept takes them
    if row.role == "owner" and principal.role != "owner":
        raise NotAllowed(f"Only an owner can {verb} an invitation to become owner.")
    return principal, row


def list_invitations(session: Session, account_id: uuid.UUID) -> list[Invitation]:
    return list(session.exec(select(Invitation).where(Invitation.account_id == account_id)
                             .order_by(Invitation.created_at.desc())))


def find(session: Session, account_id: uuid.UUID, invitation_id: str) -> Invitation:
    row_id = try_parse("invitation", invitation_id)
    row = session.get(Invitation, row_id) if row_id else None
    if row is None or row.account_id != account_id:
        raise NotFound(f"No such invitation: {invitation_id!r}")
    return row


def by_token(session: Session, token: str) -> Invitation:
    """The invitation of a link, whatever its state; NotFound for a link that never was (or was replaced)."""
    row = None
    if token and len(token) <= TOKEN_MAX:
        row = session.exec(select(Invitation).where(Invitation.token_hash == crypto.sha256_hex(token))).first()
    if row is None:
        raise NotFound("This invitation link is not valid: it may have been replaced by a newer one.")
    return row


def accept(session: Session, token: str, user: User) -> memberships.Business:
    """Join the business as the invitation says, signed in as the invited address."""
    row = by_token(session, token)
    # The business's lock, then the invitation's (the order of revoke, resend and a member's removal):
    # one acceptance of a link however many clicks, and none of a link replaced or revoked meanwhile.
    memberships.lock_business(session, row.account_id)
    session.refresh(row, with_for_update=True)
    if not crypto.same(row.token_hash, crypto.sha256_hex(token)):
        raise NotFound("This invitation link is not valid: it may have been replaced by a newer one.")
    state = status(row)
    if state != "pending":
        raise InvalidState({"accepted": "This invitation has been used already.",
                            "revoked": "This invitation was revoked.",
                            "expired": "This invitation has expired: ask for a new one."}[state])
    if user.email != row.email:
        raise NotAllowed(f"This invitation is for another e-mail address: sign in as {mask(row.email)} to accept it.")
    if memberships.role_of(session, row.account_id, user.id) is not None:
        raise Conflict("You are a member of this business already.")
    # Only as good as its sender's say now: one who left, or may no longer invite to that role, invites nobody.
    sender = memberships.role_of(session, row.account_id, row.invited_by_user_id)
    if not manages(sender) or row.role == "owner" and sender != "owner":
        raise InvalidState("This invitation was withdrawn: ask for a new one.")
    memberships.join(session, row.account_id, user.id, row.role)
    row.accepted_at, row.accepted_by_user_id = now(), user.id
    session.add(row)
    mark_email_verified(session, user)  # the link reached this address
    activity.record(session, Principal.signed_in_person(row.account_id, user.id, row.role), "invitation.accepted",
                    f"Joined as {row.role}")
    return memberships.business_of(session, user.id, row.account_id)


def mask(email: str) -> str:
    """`j***@example.com`: enough to recognise one's own address, not to learn another's."""
    local, _, domain = email.partition("@")
    return f"{local[:1]}***@{domain}"


def link_of(token: str) -> str:
    return f"{get_settings().origin.rstrip('/')}/invitations/{token}"


def _to(session: Session, account_id: uuid.UUID, email: str) -> list[Invitation]:
    return list(session.exec(select(Invitation).where(Invitation.account_id == account_id, Invitation.email == email)))


def _verified_sender(session: Session, principal: Principal) -> None:
    """Invitations go out in the name of their sender: one whose own address is confirmed."""
    sender = session.get(User, principal.user_id)
    if sender is None or sender.email_verified_at is None:
        raise InvalidState("Confirm your own e-mail address before inviting anyone.")


def _count(session: Session, principal: Principal) -> None:
    """Per business, and per person across their businesses (a person may start several)."""
    subject = str(principal.account_id)
    ratelimit.hit(session, invitations_per_business(), subject).raise_if_exceeded("invitations per business")
    ratelimit.hit(session, invitations_per_person(), str(principal.user_id)).raise_if_exceeded("invitations per person")
    ratelimit.hit(session, ratelimit.emails_per_account(), subject).raise_if_exceeded("e-mails per account")


def message(session: Session, sent: Sent, inviter: User) -> EmailMessage:
    name = plain_name(inviter.name) or inviter.email
    business_name = plain_name(memberships.name_of(session, sent.invitation.account_id), 80)
    where = f"“{business_name}”" if business_name else "their business"
    body = (f"Hello,\n\n{name} invites you to join {where} on Invoicing as {sent.invitation.role}.\n\n"
            f"Accept the invitation here:\n\n{sent.link}\n\n"
            f"The link works once, for this address only, until "
            f"{sent.invitation.expires_at.strftime('%Y-%m-%d %H:%M UTC')}. If you did not expect it, ignore this message.\n")
    return mailer.compose(to=sent.invitation.email, subject="You are invited to join a business on Invoicing",
                          body=body)


def deliver(session: Session, sent: Sent, inviter: User) -> None:
    """Send the invitation's e-mail (after the transaction that made it is committed)."""
    mailer.send(message(session, sent, inviter), kind="invitation")


def invitation_to_api(row: Invitation) -> dict:
    return {"id": public_id("invitation", row.id), "object": "invitation", "email": row.email, "role": row.role,
            "status": status(row), "created_at": iso(row.created_at), "sent_at": iso(row.sent_at),
            "expires_at": iso(row.expires_at), "accepted_at": iso(row.accepted_at), "revoked_at": iso(row.revoked_at)}
