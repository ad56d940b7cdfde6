"""The consent page asks which business an app acts for: its token is bound to that one (its ids
only), never grants more than the person's role there allows, and stops when the person leaves."""

from __future__ import annotations

import pytest

from core.access import accounts, memberships
from core.base import db
from tests.conftest import second_business
from tests.members import member_id
from tests.oauth_flow import obtain, register

API = "http://testserver/api/v1"


@pytest.fixture
def app_client(client):
    return register(client, token_endpoint_auth_method="none", client_name="Books Sync")


def _get(client, token, path):
    return client.get("/api/v1" + path, headers={"Authorization": f"Bearer {token}"})


def test_the_consent_page_lists_the_persons_businesses_with_their_role(client, browser, app_client, tenant):
    second_business(client, tenant)
    from tests.oauth_flow import authorize_query, pkce_pair
    page = browser.get(authorize_query(app_client["client_id"], pkce_pair()[1], resource=API)).text
    assert "Which business may it act for?" in page
    assert page.count("(your role: owner)") == 2 and ">Acme <" in page and ">Second <" in page
    assert f'value="acct_{tenant.account_id.hex}" checked' in page  # the one the dashboard acts for


def test_the_token_is_bound_to_the_chosen_business(client, browser, app_client, tenant):
    second = second_business(client, tenant)
    mine = tenant.post("/customers", json={"name": "In the first"}).json()["data"]
    second.post("/customers", json={"name": "In the second"})
    token = obtain(client, app_client, resource=API, fields={"business": f"acct_{second.account_id.hex}"})["access_token"]
    assert [c["name"] for c in _get(client, token, "/customers").json()["data"]] == ["In the second"]
    assert _get(client, token, f"/customers/{mine['id']}").status_code == 404
    business = _get(client, token, "/business").json()["data"]
    assert business["account"] == f"acct_{second.account_id.hex}" and business["trade_name"] == "Second"


def test_a_business_of_someone_else_is_refused(client, browser, app_client, tenant, tenant_factory):
    stranger = tenant_factory()
    from tests.oauth_flow import authorize_query, pkce_pair, submit_consent
    response = submit_consent(browser, authorize_query(app_client["client_id"], pkce_pair()[1], resource=API),
                              fields={"business": f"acct_{stranger.account_id.hex}"})
    assert response.status_code == 400 and "not one of yours" in response.text


def test_an_app_gets_no_scope_beyond_the_persons_role(client, app_client, tenant):
    from tests.members import join
    from tests.oauth_flow import sign_in
    viewer = join(tenant, "viewer")
    sign_in(client, viewer.user_email)
    issued = obtain(client, app_client, resource=API, scopes=["clients:read", "clients:write"])
    assert issued["scope"] == "clients:read"


def test_an_app_of_a_person_who_leaves_stops(client, app_client, tenant):
    from tests.members import join
    from tests.oauth_flow import sign_in
    accountant = join(tenant, "accountant")
    sign_in(client, accountant.user_email)
    token = obtain(client, app_client, resource=API)["access_token"]
    assert _get(client, token, "/invoices").status_code == 200
    tenant.delete(f"/members/{member_id(tenant, accountant.user_email)}")
    assert _get(client, token, "/invoices").status_code == 401


def test_a_lowered_role_bounds_a_connected_app_at_its_next_request(client, app_client, tenant):
    from tests.members import join
    from tests.oauth_flow import sign_in
    sales = join(tenant, "sales")
    sign_in(client, sales.user_email)
    token = obtain(client, app_client, resource=API, scopes=["clients:write"])["access_token"]
    create = lambda: client.post("/api/v1/customers", json={"name": "Globex"},  # noqa: E731
                                 headers={"Authorization": f"Bearer {token}"})
    assert create().status_code == 201
    tenant.patch(f"/members/{member_id(tenant, sales.user_email)}", json={"role": "viewer"})
    refused = create()
    assert refused.status_code == 403 and "viewer" in refused.json()["detail"]


def test_a_person_in_no_business_cannot_connect_an_app(client, app_client):
    from tests.members import new_person
    from tests.oauth_flow import authorize_query, pkce_pair, sign_in
    sign_in(client, new_person())
    page = client.get(authorize_query(app_client["client_id"], pkce_pair()[1], resource=API))
    assert page.status_code == 403 and "member of no business" in page.text


def test_the_connected_apps_page_shows_the_apps_of_the_business_acted_for(client, browser, app_client, tenant):
    second = second_business(client, tenant)
    obtain(client, app_client, resource=API, fields={"business": f"acct_{second.account_id.hex}"})
    assert "Books Sync" not in browser.get("/settings/apps").text
    page = browser.get("/invoices").text
    from tests.oauth_flow import csrf_token
    browser.post("/businesses/switch", data={"csrf_token": csrf_token(page), "business": f"acct_{second.account_id.hex}"})
    assert "Books Sync" in browser.get("/settings/apps").text
    with db.transaction() as session:
        user = accounts.user_by_email(session, tenant.user_email)
        assert len(memberships.businesses_of(session, user.id)) == 2


def test_an_app_may_suggest_the_business_the_person_then_sees_chosen(client, browser, app_client, tenant):
    second = second_business(client, tenant)
    from tests.oauth_flow import authorize_query, pkce_pair
    suggested = f"acct_{second.account_id.hex}"
    page = browser.get(authorize_query(app_client["client_id"], pkce_pair()[1], resource=API, business=suggested)).text
    assert f'value="{suggested}" checked' in page


def test_a_suggested_business_of_someone_else_is_ignored(client, browser, app_client, tenant, tenant_factory):
    stranger = tenant_factory()
    from tests.oauth_flow import authorize_query, pkce_pair
    page = browser.get(authorize_query(app_client["client_id"], pkce_pair()[1], resource=API,
                                       business=f"acct_{stranger.account_id.hex}")).text
    assert f'value="acct_{stranger.account_id.hex}"' not in page
    assert f'value="acct_{tenant.account_id.hex}" checked' in page


def test_a_sign_in_unfinished_when_its_person_is_removed_gets_no_token(client, app_client, tenant):
    from tests.members import join
    from tests.oauth_flow import exchange, get_code, sign_in
    accountant = join(tenant, "accountant")
    sign_in(client, accountant.user_email)
    code, verifier = get_code(client, app_client["client_id"], resource=API)
    tenant.delete(f"/members/{member_id(tenant, accountant.user_email)}")
    refused = exchange(client, app_client["client_id"], code, verifier, resource=API)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"


def test_limits_changed_while_acting_for_another_business_are_logged_in_the_apps_business(client, browser, app_client,
                                                                                        tenant):
    from sqlmodel import select

    from authz.models import OAuthGrant
    from core.models import ActivityEntry
    from tests.oauth_flow import csrf_token
    second = second_business(client, tenant)
    obtain(client, app_client, resource=API, fields={"business": f"acct_{second.account_id.hex}"})
    with db.transaction() as session:
        grant_id = session.exec(select(OAuthGrant.id).where(OAuthGrant.account_id == second.account_id)).one()
    form = browser.get(f"/settings/apps/{grant_id}").text  # the link of a refusal, while acting for the first
    assert browser.post(f"/settings/apps/{grant_id}", data={"csrf_token": csrf_token(form)},
                        follow_redirects=False).status_code == 303
    with db.transaction() as session:
        logged = session.exec(select(ActivityEntry.account_id).where(ActivityEntry.action == "app.limits_changed",
                                                                    ActivityEntry.account_id.in_(
                                                                        [tenant.account_id, second.account_id]))).all()
    assert logged == [second.account_id]
