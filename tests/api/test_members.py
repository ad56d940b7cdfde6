"""Members over REST: listing, role changes taking effect on the next request, removal, the last
owner, ownership transfer, and the invitation life cycle (sent, accepted once by its address only,
expired, revoked, resent, limited)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlmodel import select

from core.base import db
from core.base.clock import now
from core.models import Invitation
from tests.members import invitation_link_token, join, member_id, new_person
from tests.oauth_flow import sign_in


def _invite(tenant, address: str, role: str = "viewer"):
    return tenant.post("/invitations", json={"email": address, "role": role})


# --- members -----------------------------------------------------------------------------------


def test_the_owner_is_the_first_member(tenant):
    [owner] = tenant.get("/members").json()["data"]
    assert owner["email"] == tenant.user_email and owner["role"] == "owner" and owner["id"].startswith("mem_")


def test_every_member_may_list_the_members(tenant):
    viewer = join(tenant, "viewer")
    assert {m["role"] for m in viewer.get("/members").json()["data"]} == {"owner", "viewer"}


def test_get_business_says_which_business_and_the_callers_role(tenant):
    sales = join(tenant, "sales")
    body = sales.get("/business").json()["data"]
    assert body["account"] == f"acct_{tenant.account_id.hex}" and body["role"] == "sales"


def test_a_lowered_role_applies_to_the_next_request(tenant):
    sales = join(tenant, "sales")
    assert sales.post("/customers", json={"name": "Globex"}).status_code == 201
    changed = tenant.patch(f"/members/{member_id(tenant, sales.user_email)}", json={"role": "viewer"})
    assert changed.status_code == 200 and changed.json()["data"]["role"] == "viewer"
    refused = sales.post("/customers", json={"name": "Initech"})
    assert refused.status_code == 403 and "viewer" in refused.json()["detail"]


def test_a_raised_role_applies_to_the_next_request(tenant):
    viewer = join(tenant, "viewer")
    assert viewer.post("/customers", json={"name": "Globex"}).status_code == 403
    tenant.patch(f"/members/{member_id(tenant, viewer.user_email)}", json={"role": "sales"})
    assert viewer.post("/customers", json={"name": "Globex"}).status_code == 201


def test_a_removed_members_keys_stop_at_once(tenant):
    accountant = join(tenant, "accountant")
    assert accountant.get("/invoices").status_code == 200
    removed = tenant.delete(f"/members/{member_id(tenant, accountant.user_email)}")
    assert removed.status_code == 200 and removed.json()["data"]["deleted"] is True
    assert accountant.get("/invoices").status_code == 401


def test_the_last_owner_cannot_be_demoted_or_removed(tenant):
    mine = member_id(tenant, tenant.user_email)
    demoted = tenant.patch(f"/members/{mine}", json={"role": "admin"})
    assert demoted.status_code == 403 and "at least one owner" in demoted.json()["detail"]
    assert tenant.delete(f"/members/{mine}").status_code == 403


def test_an_admin_manages_members_but_not_owners(tenant):
    admin = join(tenant, "admin")
    viewer = join(tenant, "viewer")
    assert admin.patch(f"/members/{member_id(tenant, viewer.user_email)}", json={"role": "sales"}).status_code == 200
    owner = member_id(tenant, tenant.user_email)
    assert admin.patch(f"/members/{owner}", json={"role": "viewer"}).status_code == 403
    assert admin.delete(f"/members/{owner}").status_code == 403
    assert admin.patch(f"/members/{member_id(tenant, viewer.user_email)}", json={"role": "owner"}).status_code == 403
    assert _invite(admin, "boss@example.com", "owner").status_code == 403


@pytest.mark.parametrize("role", ["accountant", "sales", "viewer"])
def test_other_roles_cannot_manage_members(tenant, role):
    member = join(tenant, role)
    assert member.patch(f"/members/{member_id(tenant, tenant.user_email)}", json={"role": "viewer"}).status_code == 403
    assert _invite(member, "x@example.com").status_code == 403
    assert member.get("/invitations").status_code == 403


def test_ownership_transfer_makes_the_owner_an_admin(tenant):
    admin = join(tenant, "admin")
    moved = tenant.post(f"/members/{member_id(tenant, admin.user_email)}/transfer_ownership")
    assert moved.status_code == 200 and moved.json()["data"]["role"] == "owner"
    roles = {m["email"]: m["role"] for m in tenant.get("/members").json()["data"]}
    assert roles == {tenant.user_email: "admin", admin.user_email: "owner"}


def test_a_second_owner_lets_the_first_step_down(tenant):
    other = join(tenant, "admin")
    assert tenant.patch(f"/members/{member_id(tenant, other.user_email)}", json={"role": "owner"}).status_code == 200
    assert tenant.patch(f"/members/{member_id(tenant, tenant.user_email)}", json={"role": "viewer"}).status_code == 200


@pytest.mark.parametrize("made_up", ["mem_" + "0" * 32, "nonsense", "in_" + "0" * 32])
def test_an_unknown_member_is_404(tenant, made_up):
    assert tenant.patch(f"/members/{made_up}", json={"role": "viewer"}).status_code == 404


def test_another_business_member_is_404(tenant, other_tenant):
    theirs = member_id(other_tenant, other_tenant.user_email)
    assert tenant.patch(f"/members/{theirs}", json={"role": "viewer"}).status_code == 404
    assert tenant.delete(f"/members/{theirs}").status_code == 404


def test_an_unknown_role_is_422(tenant):
    viewer = join(tenant, "viewer")
    response = tenant.patch(f"/members/{member_id(tenant, viewer.user_email)}", json={"role": "god"})
    assert response.status_code == 422


# --- invitations -------------------------------------------------------------------------------


def test_an_invitation_is_emailed_and_listed_as_pending(tenant):
    address = "new.accountant@example.com"
    created = _invite(tenant, address, "accountant")
    assert created.status_code == 201, created.text
    body = created.json()["data"]
    assert body["status"] == "pending" and body["id"].startswith("invite_") and body["role"] == "accountant"
    assert invitation_link_token(address)
    assert [i["email"] for i in tenant.get("/invitations").json()["data"]] == [address]


def test_inviting_a_member_or_an_address_already_invited_is_409(tenant):
    assert _invite(tenant, tenant.user_email).status_code == 409
    _invite(tenant, "twice@example.com")
    assert _invite(tenant, "twice@example.com").status_code == 409


def test_the_invited_address_accepts_once(client, tenant):
    address = new_person()
    _invite(tenant, address, "sales")
    token = invitation_link_token(address)
    sign_in(client, address)
    page = client.get(f"/invitations/{token}")
    assert page.status_code == 200 and "Accept and join" in page.text
    accepted = client.post(f"/invitations/{token}", data={"csrf_token": _csrf(page.text)}, follow_redirects=False)
    assert accepted.status_code == 303
    roles = {m["email"]: m["role"] for m in tenant.get("/members").json()["data"]}
    assert roles[address] == "sales"
    again = client.get(f"/invitations/{token}")
    assert "used already" in again.text


def test_another_address_cannot_accept(client, tenant):
    _invite(tenant, "intended@example.com")
    token = invitation_link_token("intended@example.com")
    intruder = new_person()
    sign_in(client, intruder)
    page = client.get(f"/invitations/{token}")
    assert "Accept and join" not in page.text and "i***@example.com" in page.text
    refused = client.post(f"/invitations/{token}", data={"csrf_token": _csrf(page.text)})
    assert refused.status_code == 403
    assert intruder not in {m["email"] for m in tenant.get("/members").json()["data"]}


def test_an_expired_invitation_fails(client, tenant):
    address = new_person()
    _invite(tenant, address)
    token = invitation_link_token(address)
    with db.transaction() as session:
        row = session.exec(select(Invitation).where(Invitation.email == address)).one()
        row.expires_at = now() - timedelta(seconds=1)
    sign_in(client, address)
    page = client.get(f"/invitations/{token}")
    assert "expired" in page.text
    assert client.post(f"/invitations/{token}", data={"csrf_token": _csrf(page.text)}).status_code == 409
    assert tenant.get("/invitations").json()["data"][0]["status"] == "expired"


def test_a_revoked_invitation_fails(client, tenant):
    address = new_person()
    invitation = _invite(tenant, address).json()["data"]
    token = invitation_link_token(address)
    assert tenant.delete(f"/invitations/{invitation['id']}").json()["data"]["status"] == "revoked"
    sign_in(client, address)
    page = client.get(f"/invitations/{token}")
    assert "revoked" in page.text
    assert client.post(f"/invitations/{token}", data={"csrf_token": _csrf(page.text)}).status_code == 409


def test_resending_replaces_the_link(client, tenant):
    address = new_person()
    invitation = _invite(tenant, address).json()["data"]
    first = invitation_link_token(address)
    assert tenant.post(f"/invitations/{invitation['id']}/resend").status_code == 200
    second = invitation_link_token(address)
    assert first != second
    assert client.get(f"/invitations/{first}").status_code == 404
    assert client.get(f"/invitations/{second}").status_code == 200


def test_a_made_up_link_is_404(client):
    assert client.get("/invitations/not-a-real-token").status_code == 404


def test_invitations_are_limited_per_business_an_hour(tenant, monkeypatch):
    from config.settings import get_settings
    monkeypatch.setattr(get_settings(), "rate_limit_invitations", 2)
    assert _invite(tenant, "a@example.com").status_code == 201
    assert _invite(tenant, "b@example.com").status_code == 201
    refused = _invite(tenant, "c@example.com")
    assert refused.status_code == 429 and refused.json()["code"] == "rate_limited"


def test_signing_up_from_an_invitation_joins_that_business_only(client, tenant):
    address = "brand.new@example.com"
    _invite(tenant, address, "viewer")
    token = invitation_link_token(address)
    form = client.get(f"/signup?next=/invitations/{token}")
    signed_up = client.post("/signup", data={"csrf_token": _csrf(form.text), "email": address, "name": "",
                                             "password": "correct horse battery", "next": f"/invitations/{token}"},
                            follow_redirects=False)
    assert signed_up.headers["location"] == f"/invitations/{token}"
    page = client.get(f"/invitations/{token}")
    client.post(f"/invitations/{token}", data={"csrf_token": _csrf(page.text)})
    assert client.get("/").status_code == 200
    assert "(viewer)" in client.get("/invoices").text  # the switcher lists that business only
    with db.transaction() as session:
        from core.access import accounts, memberships
        user = accounts.user_by_email(session, address)
        assert [b.account_id for b in memberships.businesses_of(session, user.id)] == [tenant.account_id]
        assert user.email_verified_at is not None


def _csrf(html: str) -> str:
    import re
    return re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)


def test_an_invitation_of_a_sender_removed_since_is_withdrawn(client, tenant):
    admin = join(tenant, "admin")
    with db.transaction() as session:
        from core.access import accounts
        accounts.mark_email_verified(session, accounts.user_by_email(session, admin.user_email))
    address = new_person()
    assert _invite(admin, address, "admin").status_code == 201
    token = invitation_link_token(address)
    tenant.delete(f"/members/{member_id(tenant, admin.user_email)}")
    sign_in(client, address)
    page = client.get(f"/invitations/{token}")
    assert "revoked" in page.text
    assert client.post(f"/invitations/{token}", data={"csrf_token": _csrf(page.text)}).status_code == 409


def test_an_unverified_sender_cannot_invite(tenant):
    admin = join(tenant, "admin")
    refused = _invite(admin, "someone@example.com")
    assert refused.status_code == 409 and "Confirm your own e-mail address" in refused.json()["detail"]


def test_an_admin_cannot_revoke_an_owners_invitation(tenant):
    invitation = _invite(tenant, "co-owner@example.com", "owner").json()["data"]
    admin = join(tenant, "admin")
    assert admin.delete(f"/invitations/{invitation['id']}").status_code == 403
