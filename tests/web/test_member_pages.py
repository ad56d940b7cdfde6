"""The dashboard with several people and businesses: the members page, invitations accepted in another
browser, the business switcher, starting a business, pages only owners and admins manage, a role
lowered mid-session, and the activity page."""

from __future__ import annotations

import re

import pytest

from core.access import accounts, activity, memberships
from core.base import db
from tests.api.test_activity_order import _all_at_one_moment
from tests.members import invitation_link_token, join, new_person
from tests.oauth_flow import sign_in as cookie_sign_in


def _as(client, address: str):
    from tests.web.conftest import Browser
    cookie_sign_in(client, address)
    return Browser(client, address)


def _verified(address: str) -> None:
    with db.transaction() as session:
        accounts.mark_email_verified(session, accounts.user_by_email(session, address))


def test_the_owner_invites_and_the_invited_accepts_in_another_browser(onboarded, other_browser):
    _verified(onboarded.email)
    address = "accountant@example.com"
    sent = onboarded.submit("/members/invite", {"email": address, "role": "accountant"}, page="/members")
    assert sent.status_code == 303 and sent.headers["location"] == "/members?notice=invited"
    token = invitation_link_token(address)
    assert other_browser.sign_up(address).status_code == 303
    page = other_browser.get(f"/invitations/{token}")
    assert "Accept and join Acme" in page.text
    joined = other_browser.submit(f"/invitations/{token}", page=f"/invitations/{token}")
    assert joined.headers["location"] == "/?notice=joined"
    listing = onboarded.get("/members").text
    assert address in listing and "accountant" in listing
    switcher = other_browser.get("/invoices").text
    assert re.search(r"<option value=\"acct_\w+\" selected>Acme \(accountant\)</option>", switcher)


def test_the_switcher_changes_the_business_every_page_acts_for(onboarded):
    assert onboarded.submit("/businesses/new", page="/businesses/new").headers["location"] == "/onboarding"
    # The new business is empty and acted for: its own invoices, none of the first's.
    assert "(owner)" in onboarded.get("/invoices").text
    with db.transaction() as session:
        user = accounts.user_by_email(session, onboarded.email)
        first, second = memberships.businesses_of(session, user.id)
    onboarded.submit("/businesses/switch", {"business": first.public_id}, page="/invoices")
    assert f'value="{first.public_id}" selected' in onboarded.get("/invoices").text
    onboarded.submit("/businesses/switch", {"business": second.public_id}, page="/invoices")
    assert f'value="{second.public_id}" selected' in onboarded.get("/invoices").text


def test_switching_to_a_business_of_someone_else_is_404(onboarded, tenant):
    response = onboarded.submit("/businesses/switch", {"business": f"acct_{tenant.account_id.hex}"}, page="/invoices")
    assert response.status_code == 404


@pytest.mark.parametrize("path", ["/settings/api-keys", "/settings/webhooks", "/settings/business"])
@pytest.mark.parametrize("role", ["accountant", "sales", "viewer"])
def test_only_owners_and_admins_manage_keys_webhooks_and_the_profile(client, tenant, role, path):
    member = join(tenant, role)
    browser = _as(client, member.user_email)
    response = browser.get(path)
    assert response.status_code == 403 and role in response.text


def test_an_admin_manages_keys(client, tenant):
    browser = _as(client, join(tenant, "admin").user_email)
    assert browser.get("/settings/api-keys").status_code == 200


def test_a_viewer_sees_no_management_links_and_cannot_create(client, tenant):
    browser = _as(client, join(tenant, "viewer").user_email)
    page = browser.get("/invoices").text
    assert 'href="/settings/api-keys"' not in page and 'href="/members"' in page
    response = browser.submit("/customers/new", {"name": "Globex"})
    assert response.status_code == 403 or "viewer" in response.text


def test_a_role_lowered_mid_session_applies_to_the_next_page(client, tenant):
    sales = join(tenant, "sales")
    browser = _as(client, sales.user_email)
    assert browser.submit("/customers/new", {"name": "Globex"}).status_code == 303
    with db.transaction() as session:
        user = accounts.user_by_email(session, sales.user_email)
        membership = next(m for m in memberships.list_members(session, tenant.account_id) if m.user_id == user.id)
    tenant.patch(f"/members/mem_{membership.membership_id.hex}", json={"role": "viewer"})
    refused = browser.submit("/customers/new", {"name": "Initech"})
    assert refused.status_code != 303 and "viewer" in refused.text


def test_a_removed_member_lands_on_starting_a_business(client, tenant):
    viewer = join(tenant, "viewer")
    browser = _as(client, viewer.user_email)
    assert browser.get("/invoices").status_code == 200
    with db.transaction() as session:
        user = accounts.user_by_email(session, viewer.user_email)
        membership = next(m for m in memberships.list_members(session, tenant.account_id) if m.user_id == user.id)
    tenant.delete(f"/members/mem_{membership.membership_id.hex}")
    response = browser.get("/invoices")
    assert response.status_code == 303 and response.headers["location"] == "/businesses/new"
    assert "not a member of any business" in browser.get("/businesses/new").text


def test_the_members_page_changes_a_role(onboarded):
    address = new_person()
    with db.transaction() as session:
        owner = accounts.user_by_email(session, onboarded.email)
        account_id = memberships.businesses_of(session, owner.id)[0].account_id
        memberships.join(session, account_id, accounts.user_by_email(session, address).id, "viewer")
        member = next(m for m in memberships.list_members(session, account_id) if m.email == address)
    changed = onboarded.submit(f"/members/mem_{member.membership_id.hex}/role", {"role": "sales"}, page="/members")
    assert changed.headers["location"] == "/members?notice=role_changed"
    assert "Changed the role of " + address in onboarded.get("/activity").text


def test_the_last_owner_cannot_leave(onboarded):
    response = onboarded.submit("/members/leave", page="/members")
    assert response.status_code == 403 and "at least one owner" in response.text


def test_the_activity_page_names_who_acted_and_through_what(client, tenant):
    sales = join(tenant, "sales")
    sales.post("/invoices", json={"customer": sales.post("/customers", json={"name": "Globex"}).json()["data"]["id"],
                                  "currency": "USD"}, idem=True)
    browser = _as(client, tenant.user_email)
    page = browser.get("/activity").text
    assert sales.user_email in page and "API key “sales”" in page and "invoice.created" in page
    assert "Created the customer “Globex”" in page
    with db.transaction() as session:
        owner = accounts.user_by_email(session, tenant.user_email)
        mine = next(m for m in memberships.list_members(session, tenant.account_id) if m.user_id == owner.id)
    filtered = browser.get(f"/activity?member=mem_{mine.membership_id.hex}").text
    assert f"<td>{sales.user_email}</td>" in page and f"<td>{sales.user_email}</td>" not in filtered


def test_an_owner_whose_address_is_not_confirmed_cannot_invite(onboarded):
    refused = onboarded.submit("/members/invite", {"email": "x@example.com", "role": "viewer"}, page="/members")
    assert refused.status_code == 409 and "Confirm your own e-mail address" in refused.text


def test_a_form_shown_for_another_business_changes_nothing(onboarded):
    first_page = onboarded.get("/customers/new").text  # shown while acting for the first business
    onboarded.submit("/businesses/new", page="/businesses/new")  # now acting for a new one (another tab)
    from tests.web.conftest import csrf_of
    stale = onboarded.client.post("/customers/new", data={
        "csrf_token": csrf_of(first_page), "acting_for": re.search(r'name="acting_for" value="([^"]+)"',
                                                                   first_page).group(1), "name": "Globex"})
    assert stale.status_code == 409 and "another business" in stale.text
    assert "Globex" not in onboarded.get("/customers").text


def test_viewers_do_not_see_invitations_keys_and_webhooks_in_the_activity(client, tenant):
    tenant.post("/invitations", json={"email": "secret.person@example.com", "role": "viewer"})
    owner = _as(client, tenant.user_email)
    assert "secret.person@example.com" in owner.get("/activity").text
    viewer = _as(client, join(tenant, "viewer").user_email)
    assert "secret.person@example.com" not in viewer.get("/activity").text


def test_an_activity_page_before_a_time_without_a_zone_reads_it_as_utc(client, tenant):
    owner = _as(client, tenant.user_email)
    assert owner.get("/activity?before=2024-01-01T00:00:00").status_code == 200


def test_the_older_link_pages_through_entries_of_one_moment(client, tenant, monkeypatch):
    monkeypatch.setattr(activity, "PAGE", 2)
    _all_at_one_moment(tenant)
    owner, path, shown = _as(client, tenant.user_email), "/activity", []
    while path:
        page = owner.get(path.replace("&amp;", "&")).text
        shown += re.findall(r"<td>(?:<a [^>]*>)?([^<]+)(?:</a>)?</td></tr>", page)
        path = (re.search(r'<a href="(/activity\?[^"]+)">Older</a>', page) or [None, None])[1]
    customers = [what for what in shown if what.startswith("Created the customer")]  # three, and each draft's
    assert len(customers) == 5 == len(set(customers)) and len([w for w in shown if w.startswith("invoice.created")]) == 2


@pytest.mark.parametrize("before", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "yesterday", "x" * 41])
def test_an_activity_page_before_a_time_off_the_calendar_shows_the_latest(client, tenant, before):
    tenant.post("/customers", json={"name": "Globex"})
    page = _as(client, tenant.user_email).get("/activity", params={"before": before})
    assert page.status_code == 200 and "Created the customer “Globex”" in page.text


def test_a_deleted_draft_is_in_the_activity(client, tenant):
    customer_id = tenant.post("/customers", json={"name": "Globex"}).json()["data"]["id"]
    draft = tenant.post("/invoices", json={"customer": customer_id, "currency": "USD"}, idem=True).json()["data"]
    assert tenant.delete(f"/invoices/{draft['id']}").status_code == 200
    assert f"Deleted the draft {draft['id']}" in _as(client, tenant.user_email).get("/activity").text


def test_a_person_starts_a_few_businesses_a_day(onboarded, monkeypatch):
    monkeypatch.setattr(memberships, "NEW_PER_DAY", 1)
    assert onboarded.submit("/businesses/new", page="/businesses/new").status_code == 303
    refused = onboarded.submit("/businesses/new", page="/businesses/new")
    assert refused.status_code == 429


def test_a_sign_up_with_a_made_up_invitation_starts_a_business_of_its_own(browser):
    form = browser.get("/signup?next=/invitations/made-up")
    response = browser.client.post("/signup", data={
        "csrf_token": re.search(r'name="csrf_token" value="([^"]+)"', form.text).group(1), "email": "new@example.com",
        "password": "correct horse battery", "name": "", "next": "/invitations/made-up"}, follow_redirects=False)
    assert response.headers["location"] == "/onboarding"


def test_keys_and_the_profile_are_in_the_activity_whichever_way_they_were_made(onboarded):
    onboarded.submit("/settings/api-keys", {"name": "Sync", "access": "read_only", "expires_in_days": "0"})
    with db.transaction() as session:  # as an admin command makes one: the same core function
        from core.access import apikeys
        owner = accounts.user_by_email(session, onboarded.email)
        account_id = memberships.businesses_of(session, owner.id)[0].account_id
        apikeys.revoke_key(session, account_id, apikeys.list_keys(session, account_id)[0].lookup_id, by=owner.id)
    page = onboarded.get("/activity").text
    for what in ("Started the business", "Saved the business profile", "Created the API key “Sync”",
                 "Revoked the API key “Sync”"):
        assert what in page, what
