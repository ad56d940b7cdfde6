"""Members and invitations: the members page (everyone sees who belongs; owners and admins invite,
change roles, remove and resend), handing ownership over, leaving, and accepting an invitation.

Managing goes through the same operations as `/members` and `/invitations` of the REST API
(`operations.members`), so the dashboard meets the same rules, limits and errors."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from core.access import invitations, memberships
from core.access.invitations import mask
from core.access.roles import ROLE_DESCRIPTIONS, ROLES, manages
from core.base.db import transaction
from core.base.errors import DomainError
from core.base.validation import EMAIL_MAX
from operations import members as member_operations
from pages.routing import Visit, errors_of, page, redirect
from pages.sessions import current_user, login_url, switch_business
from web.acting import act, new_form_key, principal_of
from web.rendering import notice_of, render

NOTICES = {
    "invited": "The invitation is on its way. The link works once, for that address, for 14 days.",
    "resent": "The invitation was sent again with a new link; the earlier link no longer works.",
    "revoked": "The invitation is revoked: its link no longer works.",
    "role_changed": "The role is changed. It applies from the member's next request.",
    "removed": "The member is removed: their API keys are revoked and their apps disconnected from this business.",
    "transferred": "Ownership is handed over. You are an admin of this business now.",
}


def members_page(visit: Visit, *, errors: dict[str, str] | None = None, values: dict | None = None,
                 status_code: int = 200) -> Response:
    with transaction() as session:
        found = memberships.list_members(session, visit.account_id)
        pending = [(row, invitations.status(row)) for row in invitations.list_invitations(session, visit.account_id)] \
            if manages(visit.role) else []
    return render(visit.request, "members.html", status_code=status_code, members=found, invitations=pending,
                  roles=ROLES, role_descriptions=ROLE_DESCRIPTIONS, manages=manages(visit.role), me=visit.user.id,
                  is_owner=visit.role == "owner", errors=errors or {}, form_key=new_form_key(),
                  values=values or {"email": "", "role": "viewer"}, notice=notice_of(visit, NOTICES))


def _acted(visit: Visit, operation, notice: str, *, refill: dict | None = None, **arguments) -> Response:
    """Run a members operation from its form; a refusal shows the page with it (and the invitation form
    refilled, when that was the form)."""
    try:
        act(visit, operation, keyed=True, **arguments)
    except DomainError as refused:
        return members_page(visit, errors=errors_of(refused), status_code=refused.status, values=refill)
    return redirect(f"/members?notice={notice}")


def invite(visit: Visit) -> Response:
    body = {"email": visit.text("email", EMAIL_MAX + 1), "role": visit.text("role", 20)}
    return _acted(visit, member_operations.create_invitation, "invited", body=body,
                  refill={**body, "role": body["role"] or "viewer"})


def change_role(visit: Visit) -> Response:
    return _acted(visit, member_operations.update_member, "role_changed", params={"id": visit.path_params["member_id"]},
                  body={"role": visit.text("role", 20)})


def remove(visit: Visit) -> Response:
    return _acted(visit, member_operations.remove_member, "removed", params={"id": visit.path_params["member_id"]})


def transfer(visit: Visit) -> Response:
    return _acted(visit, member_operations.transfer_ownership, "transferred",
                  params={"id": visit.path_params["member_id"]})


def resend(visit: Visit) -> Response:
    return _acted(visit, member_operations.resend_invitation, "resent", params={"id": visit.path_params["invitation_id"]})


def revoke(visit: Visit) -> Response:
    return _acted(visit, member_operations.revoke_invitation, "revoked", params={"id": visit.path_params["invitation_id"]})


def leave(visit: Visit) -> Response:
    """Any member may leave (not the last owner): a person's own choice, needing no `members:manage`."""
    try:
        with transaction() as session:
            memberships.leave(session, principal_of(visit))
    except DomainError as refused:
        return members_page(visit, errors=errors_of(refused), status_code=refused.status)
    switch_business(visit.request, None)
    return redirect("/")


# --- accepting an invitation (open to anyone holding the link) ------------------------------


def _invitation_view(visit: Visit, *, error: str | None = None, status_code: int = 200) -> Response:
    token = visit.path_params["token"]
    with transaction() as session:
        try:
            row = invitations.by_token(session, token)
        except DomainError as missing:
            return render(visit.request, "invitation.html", status_code=404, invitation=None, error=missing.detail)
        state = invitations.status(row)
        business_name = memberships.name_of(session, row.account_id)
    user = current_user(visit.request)
    return render(visit.request, "invitation.html", status_code=status_code, invitation=row, state=state,
                  business_name=business_name, masked=mask(row.email),
                  matches=user is not None and user.email == row.email, error=error,
                  login_url=login_url(visit.request.url.path),
                  signup_url=f"/signup?next={visit.request.url.path}")


def invitation(visit: Visit) -> Response:
    return _invitation_view(visit)


def accept(visit: Visit) -> Response:
    user = current_user(visit.request)
    if user is None:
        return redirect(login_url(visit.request.url.path))
    try:
        with transaction() as session:
            joined = invitations.accept(session, visit.path_params["token"], user)
    except DomainError as refused:
        return _invitation_view(visit, error=refused.detail, status_code=refused.status)
    switch_business(visit.request, joined.account_id)
    return redirect("/?notice=joined")


def routes() -> list[Route]:
    return [
        page("/members", get=members_page),
        page("/members/invite", post=invite),
        page("/members/leave", post=leave),
        page("/members/{member_id}/role", post=change_role),
        page("/members/{member_id}/remove", post=remove),
        page("/members/{member_id}/transfer", post=transfer),
        page("/members/invitations/{invitation_id}/resend", post=resend),
        page("/members/invitations/{invitation_id}/revoke", post=revoke),
        page("/invitations/{token}", get=invitation, post=accept, signed_in=False),
    ]

