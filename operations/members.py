"""Members of the business and invitations to join it: list, invite, resend, revoke, change a role,
remove, hand ownership over. Reading who belongs is every member's; the rest needs `members:manage`
(owners and admins), and what concerns owners an owner."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field
from sqlmodel import Session

from core.access import invitations, memberships
from core.access.roles import ROLES, Role
from core.base.api_types import Timestamp
from core.base.errors import UpstreamFailed
from core.base.validation import EMAIL_MAX, Input
from core.models import User
from core.outbound.mailer import MailRejected
from operations.pipeline import Call, Operation

MANAGE = "members:manage"


class MemberOut(BaseModel):
    """A person in the business, with the role that bounds everything they (and their keys and apps) do in it."""

    id: str = Field(description="`mem_…`")
    object: Literal["member"] = Field("member", description="Always `member`")
    email: str = Field(description="Their sign-in address")
    name: str | None = Field(description="Their name, when they gave one")
    role: Role = Field(description="owner, admin, accountant, sales or viewer")
    joined_at: Timestamp = Field(description="When they joined the business")


class MemberUpdate(Input):
    """A member's new role."""

    role: Role = Field(description=f"The new role: one of {', '.join(ROLES)}. Only an owner gives or takes `owner`; "
                                   "the last owner keeps it")


class InvitationOut(BaseModel):
    """An e-mailed invitation to join the business."""

    id: str = Field(description="`invite_…`")
    object: Literal["invitation"] = Field("invitation", description="Always `invitation`")
    email: str = Field(description="The invited address: only a sign-in with it can accept")
    role: Role = Field(description="The role the invited person gets")
    status: Literal["pending", "accepted", "revoked", "expired"] = Field(description="Whether its link still works")
    created_at: Timestamp = Field(description="When it was first sent")
    sent_at: Timestamp = Field(description="When it was last e-mailed")
    expires_at: Timestamp = Field(description="14 days after it was last e-mailed")
    accepted_at: Timestamp | None = Field(description="When it was accepted; null until then")
    revoked_at: Timestamp | None = Field(description="When it was revoked; null unless it was")


class InvitationCreate(Input):
    """Who to invite, and as what."""

    email: str = Field(min_length=3, max_length=EMAIL_MAX, description="Who to invite")
    role: Role = Field(description="The role they get on accepting")


def _list_members(call: Call) -> dict:
    return {"data": [memberships.member_to_api(m) for m in memberships.list_members(*call.account())]}


def _update_member(call: Call) -> dict:
    return memberships.member_to_api(memberships.change_role(call.session, call.principal, call.params["id"], call.body.role))


def _remove_member(call: Call) -> dict:
    removed = memberships.remove(call.session, call.principal, call.params["id"])
    return {**memberships.member_to_api(removed), "deleted": True}


def _transfer_ownership(call: Call) -> dict:
    return memberships.member_to_api(memberships.transfer_ownership(call.session, call.principal, call.params["id"]))


def _list_invitations(call: Call) -> dict:
    return {"data": [invitations.invitation_to_api(row) for row in invitations.list_invitations(*call.account())]}


def _create_invitation(call: Call) -> dict:
    sent = invitations.invite(call.session, call.principal, email=call.body.email, role=call.body.role)
    return _delivered(call.session, call, sent)


def _resend_invitation(call: Call) -> dict:
    return _delivered(call.session, call, invitations.resend(call.session, call.principal, call.params["id"]))


def _delivered(session: Session, call: Call, sent: invitations.Sent) -> dict:
    """Commit the invitation, then e-mail it: a mail server refusing leaves it to be resent."""
    inviter = session.get(User, call.principal.user_id)
    session.commit()
    try:
        invitations.deliver(session, sent, inviter)
    except MailRejected as exc:
        raise UpstreamFailed(f"The e-mail provider did not accept the invitation ({exc.detail}); it is saved: "
                             "resend it.") from None
    return invitations.invitation_to_api(sent.invitation)


def _revoke_invitation(call: Call) -> dict:
    return invitations.invitation_to_api(invitations.revoke(call.session, call.principal, call.params["id"]))


list_members = Operation("list_members", _list_members, scope="business:read", response=MemberOut, shape="items")
update_member = Operation("update_member", _update_member, scope=MANAGE, body=MemberUpdate, body_required=True,
                          idempotency="optional", response=MemberOut)
remove_member = Operation("remove_member", _remove_member, scope=MANAGE, idempotency="optional", response=MemberOut)
transfer_ownership = Operation("transfer_ownership", _transfer_ownership, scope=MANAGE, idempotency="optional",
                               response=MemberOut)
list_invitations = Operation("list_invitations", _list_invitations, scope=MANAGE, response=InvitationOut, shape="items")
create_invitation = Operation("create_invitation", _create_invitation, scope=MANAGE, body=InvitationCreate,
                              body_required=True, idempotency="optional", response=InvitationOut)
resend_invitation = Operation("resend_invitation", _resend_invitation, scope=MANAGE, idempotency="optional",
                              response=InvitationOut)
revoke_invitation = Operation("revoke_invitation", _revoke_invitation, scope=MANAGE, idempotency="optional",
                              response=InvitationOut)
