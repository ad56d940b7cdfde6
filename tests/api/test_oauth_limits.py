"""Consent with limits (RFC 9396 `invoice_actions`): requested, lowered or set on the consent page,
carried by token responses and introspection, kept on refresh, and enforced the same way on REST and
MCP: the action listed, the total within `max_amount` in that currency, and the day's count."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from core.access import resources
from tests.api.invoicing import adhoc, customer
from tests.mcp.jsonrpc import HEADERS
from tests.oauth_flow import (
    REDIRECT_URI,
    authorize_query,
    basic,
    obtain,
    pkce_pair,
    refresh,
    register,
)

ACTING = ["invoices:read", "invoices:finalize", "invoices:send", "payments:write"]
FINALIZE_1000 = [{"type": "invoice_actions", "actions": ["finalize"], "max_amount": {"currency": "USD", "amount": 100000},
                  "max_per_day": 5}]


@pytest.fixture
def app_client(client):
    return register(client, token_endpoint_auth_method="none", client_name="Bookkeeper")


def rest_token(browser, app_client, **kw) -> dict:
    return obtain(browser, app_client, resource=resources.rest_api(), scopes=ACTING, **kw)


def as_token(client, token: str):
    class Caller:
        def post(self, path, **kw):
            headers = {"Authorization": f"Bearer {token}", **kw.pop("headers", {})}
            return client.post(f"/api/v1{path}", headers=headers, **kw)
    return Caller()


def draft_of(tenant, amount: int, currency: str = "USD") -> dict:
    response = tenant.post("/invoices", json={"customer": customer(tenant)["id"], "currency": currency,
                                              "items": [adhoc("Work", amount)]}, idem=True)
    assert response.status_code == 201, response.text
    return response.json()["data"]


def finalize(caller, invoice_id: str, key: str = "k"):
    return caller.post(f"/invoices/{invoice_id}/finalize", headers={"Idempotency-Key": f"{key}-{invoice_id}"})


# --- requesting ------------------------------------------------------------------------------------

def test_the_server_says_it_takes_invoice_actions(client):
    metadata = client.get("/.well-known/oauth-authorization-server").json()
    assert metadata["authorization_details_types_supported"] == ["invoice_actions"]
    assert metadata["introspection_endpoint"] == "http://testserver/oauth/introspect"


@pytest.mark.parametrize("details", [
    "not json", "[]", '{"type": "invoice_actions"}', '[{"type": "payment_initiation", "actions": ["send"]}]',
    '[{"type": "invoice_actions", "actions": []}]', '[{"type": "invoice_actions", "actions": ["refund"]}]',
    '[{"type": "invoice_actions", "actions": ["send"], "max_amount": {"currency": "USD", "amount": -1}}]',
    '[{"type": "invoice_actions", "actions": ["send"], "max_amount": {"currency": "USD", "amount": 10.5}}]',
    '[{"type": "invoice_actions", "actions": ["send"], "max_amount": {"currency": "XYZ", "amount": 1}}]',
    '[{"type": "invoice_actions", "actions": ["send"], "max_per_day": -2}]',
    '[{"type": "invoice_actions", "actions": ["send"], "colour": "red"}]',
])
def test_malformed_details_are_invalid_authorization_details_sent_back(browser, app_client, details):
    response = browser.get(authorize_query(app_client["client_id"], pkce_pair()[1], authorization_details=details),
                           follow_redirects=False)
    assert response.status_code in (302, 303), response.text
    assert parse_qs(urlsplit(response.headers["location"]).query)["error"] == ["invalid_authorization_details"]


def test_the_consent_page_shows_a_requested_limit_in_words_next_to_its_scope(browser, app_client):
    page = browser.get(authorize_query(app_client["client_id"], pkce_pair()[1], resource=resources.rest_api(),
                                       scope="invoices:read", authorization_details=json.dumps(FINALIZE_1000)))
    assert page.status_code == 200
    html = page.text
    assert "The app asks: Finalize invoices up to 1,000.00 USD, at most 5 a day" in html
    assert html.index('value="invoices:finalize"') < html.index("The app asks")  # under its scope
    assert 'value="invoices:finalize" checked' not in html  # still never ticked for the person


# --- granting ---------------------------------------------------------------------------------------

def test_a_requested_limit_is_granted_and_returned_with_the_token(browser, app_client):
    token = rest_token(browser, app_client, authorization_details=FINALIZE_1000)
    assert token["authorization_details"] == [  # and, as limits exist, the other ticked actions, unlimited
        FINALIZE_1000[0], {"type": "invoice_actions", "actions": ["send"]}, {"type": "invoice_actions", "actions": ["pay"]}]


def test_the_person_may_lower_a_requested_limit(browser, app_client):
    token = rest_token(browser, app_client, authorization_details=FINALIZE_1000,
                       fields={"detail0.amount": "250", "detail0.per_day": "2"})
    assert token["authorization_details"][0]["max_amount"] == {"currency": "USD", "amount": 25000}
    assert token["authorization_details"][0]["max_per_day"] == 2


@pytest.mark.parametrize("fields", [{"detail0.amount": "5000"}, {"detail0.per_day": "9"}])
def test_the_person_cannot_raise_what_the_app_asked(browser, app_client, fields):
    from tests.oauth_flow import submit_consent
    query = authorize_query(app_client["client_id"], pkce_pair()[1], resource=resources.rest_api(),
                            authorization_details=json.dumps(FINALIZE_1000))
    response = submit_consent(browser, query, scopes=ACTING, fields=fields)
    assert response.status_code == 400
    assert "you can lower that, not raise it" in response.text


def test_a_person_may_set_limits_the_app_did_not_ask_for(browser, app_client):
    token = rest_token(browser, app_client, fields={"invoices-send.amount": "2,000", "invoices-send.currency": "EUR",
                                                     "payments-write.per_day": "3"})
    details = {tuple(d["actions"]): d for d in token["authorization_details"]}
    assert details[("send",)]["max_amount"] == {"currency": "EUR", "amount": 200000}
    assert details[("pay",)]["max_per_day"] == 3
    assert details[("finalize", "void")] == {"type": "invoice_actions", "actions": ["finalize", "void"]}


def test_without_any_limit_tokens_carry_none(browser, app_client):
    assert "authorization_details" not in rest_token(browser, app_client)


def test_unticking_a_scope_drops_its_actions(browser, app_client):
    token = obtain(browser, app_client, resource=resources.rest_api(), scopes=["invoices:read", "invoices:send"],
                   fields={"payments-write.per_day": "3", "invoices-send.per_day": "4"})
    assert token["authorization_details"] == [{"type": "invoice_actions", "actions": ["send"], "max_per_day": 4}]


def test_refresh_keeps_the_limits_and_refuses_others(browser, client, app_client):
    token = rest_token(browser, app_client, authorization_details=FINALIZE_1000)
    renewed = refresh(client, app_client["client_id"], token["refresh_token"])
    assert renewed.json()["authorization_details"] == token["authorization_details"]
    wider = [{**FINALIZE_1000[0], "max_per_day": 50}, *token["authorization_details"][1:]]
    refused = refresh(client, app_client["client_id"], renewed.json()["refresh_token"],
                      authorization_details=json.dumps(wider))
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_authorization_details"


def test_refresh_may_repeat_its_details_after_the_app_was_authorized_again(browser, client, app_client):
    """The review's case: authorizing the app for the other resource rewrites the details every grant of
    the app holds (here their order), and the REST token's client repeats what it was given (RFC 9396 §6)."""
    token = rest_token(browser, app_client, authorization_details=FINALIZE_1000)
    obtain(browser, app_client, scopes=["invoices:read", "invoices:send"])  # MCP: sending, its limits as filled in
    renewed = refresh(client, app_client["client_id"], token["refresh_token"],
                      authorization_details=json.dumps(token["authorization_details"]))
    assert renewed.status_code == 200, renewed.text
    held = renewed.json()["authorization_details"]
    assert held != token["authorization_details"]
    assert sorted(held, key=json.dumps) == sorted(token["authorization_details"], key=json.dumps)


def test_refresh_may_ask_for_less_and_gets_the_apps_limits(browser, client, app_client):
    token = rest_token(browser, app_client, authorization_details=FINALIZE_1000)
    fewer = [{**FINALIZE_1000[0], "max_amount": {"currency": "USD", "amount": 25000}, "max_per_day": 1}]
    renewed = refresh(client, app_client["client_id"], token["refresh_token"], authorization_details=json.dumps(fewer))
    assert renewed.status_code == 200, renewed.text
    assert renewed.json()["authorization_details"] == token["authorization_details"]  # what the token holds


def test_refresh_cannot_ask_again_for_a_limit_the_app_no_longer_has(browser, client, app_client):
    older = rest_token(browser, app_client, authorization_details=FINALIZE_1000)
    rest_token(browser, app_client, authorization_details=FINALIZE_1000, fields={"detail0.amount": "250"})
    refused = refresh(client, app_client["client_id"], older["refresh_token"],
                      authorization_details=json.dumps(older["authorization_details"]))
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_authorization_details"


def test_refresh_and_introspection_take_more_than_ten_details_the_app_holds(browser, client, app_client):
    from sqlmodel import select

    from authz.models import OAuthGrant
    from core.base import db
    token = rest_token(browser, app_client, authorization_details=FINALIZE_1000)
    twelve = [{"type": "invoice_actions", "actions": [action], "max_per_day": n}
              for action in ("finalize", "send") for n in range(1, 7)]
    with db.transaction() as session:
        for grant in session.exec(select(OAuthGrant).where(OAuthGrant.client_id == app_client["client_id"])):
            grant.authorization_details = twelve
            session.add(grant)
    plain = refresh(client, app_client["client_id"], token["refresh_token"])
    assert plain.status_code == 200 and plain.json()["authorization_details"] == twelve
    repeated = refresh(client, app_client["client_id"], plain.json()["refresh_token"],
                       authorization_details=json.dumps(twelve[::-1]))
    assert repeated.status_code == 200, repeated.text
    assert repeated.json()["authorization_details"] == twelve
    answer = client.post("/oauth/introspect", data={"token": repeated.json()["access_token"],
                                                    "client_id": app_client["client_id"]}).json()
    assert answer["active"] is True and answer["authorization_details"] == twelve
    wider = refresh(client, app_client["client_id"], repeated.json()["refresh_token"],
                    authorization_details=json.dumps([*twelve, {"type": "invoice_actions", "actions": ["pay"]}]))
    assert wider.status_code == 400 and wider.json()["error"] == "invalid_authorization_details"


def test_asking_again_for_more_scopes_starts_from_the_limits_the_person_set(browser, app_client):
    obtain(browser, app_client, resource=resources.rest_api(), scopes=["invoices:read", "invoices:finalize"],
           fields={"invoices-finalize.amount": "100", "invoices-finalize.per_day": "2"})
    page = browser.get(authorize_query(app_client["client_id"], pkce_pair()[1], resource=resources.rest_api(),
                                       scope=" ".join(ACTING)))
    assert "Filled in with the limits you set for this app before." in page.text
    assert 'name="invoices-finalize.amount" value="100.00"' in page.text
    stepped_up = obtain(browser, app_client, resource=resources.rest_api(), scopes=ACTING)  # fields as the page fills them
    details = {tuple(d["actions"]): d for d in stepped_up["authorization_details"]}
    assert details[("finalize", "void")] == {"type": "invoice_actions", "actions": ["finalize", "void"],
                                             "max_amount": {"currency": "USD", "amount": 10000}, "max_per_day": 2}


def test_an_earlier_lower_limit_narrows_what_the_app_asks_for_again(browser, app_client):
    rest_token(browser, app_client, authorization_details=FINALIZE_1000, fields={"detail0.amount": "250"})
    again = rest_token(browser, app_client, authorization_details=FINALIZE_1000)
    assert again["authorization_details"][0]["max_amount"] == {"currency": "USD", "amount": 25000}


def test_another_resource_starts_from_the_apps_limits(browser, app_client):
    rest_token(browser, app_client, fields={"invoices-send.per_day": "1"})
    mcp = obtain(browser, app_client, resource=resources.mcp(), scopes=["invoices:read", "invoices:send"])
    details = {tuple(d["actions"]): d for d in mcp["authorization_details"]}
    assert details[("send",)] == {"type": "invoice_actions", "actions": ["send"], "max_per_day": 1}


def test_introspection_returns_the_limits_to_the_tokens_own_client(browser, client, app_client):
    token = rest_token(browser, app_client, authorization_details=FINALIZE_1000)
    answer = client.post("/oauth/introspect", data={"token": token["access_token"],
                                                    "client_id": app_client["client_id"]}).json()
    assert answer["active"] is True and answer["authorization_details"] == token["authorization_details"]
    assert answer["aud"] == resources.rest_api() and "invoices:finalize" in answer["scope"]
    other = register(client, client_name="Other")
    foreign = client.post("/oauth/introspect", data={"token": token["access_token"]},
                          headers=basic(other["client_id"], other["client_secret"])).json()
    assert foreign == {"active": False}


def test_introspection_of_a_revoked_grant_is_inactive(browser, client, app_client):
    token = rest_token(browser, app_client, authorization_details=FINALIZE_1000)
    assert client.post("/oauth/revoke", data={"token": token["refresh_token"],
                                              "client_id": app_client["client_id"]}).status_code == 200
    answer = client.post("/oauth/introspect", data={"token": token["access_token"], "client_id": app_client["client_id"]})
    assert answer.json() == {"active": False}


# --- enforcement on REST -----------------------------------------------------------------------------

def test_within_the_limit_the_action_runs(browser, client, app_client, tenant):
    caller = as_token(client, rest_token(browser, app_client, authorization_details=FINALIZE_1000)["access_token"])
    assert finalize(caller, draft_of(tenant, 50000)["id"]).status_code == 200


def test_over_the_amount_is_a_403_saying_what_to_do(browser, client, app_client, tenant):
    caller = as_token(client, rest_token(browser, app_client, authorization_details=FINALIZE_1000)["access_token"])
    invoice = draft_of(tenant, 250000)
    response = finalize(caller, invoice["id"])
    assert response.status_code == 403
    body = response.json()
    assert body["code"] == "grant_limit_exceeded" and body["type"].endswith("/problems/grant-limit-exceeded")
    assert "up to 1,000.00 USD" in body["detail"] and "2,500.00 USD" in body["detail"]
    assert body["remediation_url"].startswith("http://testserver/settings/apps/")
    assert response.headers["www-authenticate"].startswith('Bearer error="insufficient_authorization"')
    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["status"] == "draft"
    assert [e["type"] for e in tenant.get(f"/invoices/{invoice['id']}/events").json()["data"]] == ["invoice.created"]


def test_another_currency_is_outside_the_limit(browser, client, app_client, tenant):
    caller = as_token(client, rest_token(browser, app_client, authorization_details=FINALIZE_1000)["access_token"])
    response = finalize(caller, draft_of(tenant, 100, currency="EUR")["id"])
    assert response.status_code == 403 and "in EUR" in response.json()["detail"]


def test_the_day_count_stops_at_the_limit(browser, client, app_client, tenant):
    details = [{**FINALIZE_1000[0], "max_per_day": 2}]
    caller = as_token(client, rest_token(browser, app_client, authorization_details=details)["access_token"])
    statuses = [finalize(caller, draft_of(tenant, 1000)["id"]).status_code for _ in range(3)]
    assert statuses == [200, 200, 403]


def test_a_failed_action_is_not_counted(browser, client, app_client, tenant):
    details = [{**FINALIZE_1000[0], "max_per_day": 1}]
    caller = as_token(client, rest_token(browser, app_client, authorization_details=details)["access_token"])
    empty = tenant.post("/invoices", json={"customer": customer(tenant)["id"]}, idem=True).json()["data"]
    assert finalize(caller, empty["id"]).status_code == 422  # no lines
    assert finalize(caller, draft_of(tenant, 1000)["id"]).status_code == 200


def test_an_action_not_listed_is_refused(tenant):
    import uuid

    from core.access.authorization_details import parse
    from core.access.principal import Principal
    from core.base import db, executor
    from core.base.errors import GrantLimitExceeded
    from core.billing import delegated_actions
    from core.models import Invoice
    invoice = draft_of(tenant, 1000)
    principal = Principal(account_id=tenant.account_id, granted_scopes=frozenset(ACTING), actor="oauth_app", role="owner",
                          grant_id=uuid.uuid4(), authorization_details=parse(FINALIZE_1000))
    with db.transaction() as session, pytest.raises(GrantLimitExceeded) as refused:
        row = session.get(Invoice, uuid.UUID(invoice["id"].removeprefix("in_")))
        executor.within(session, delegated_actions.act_for, principal, "pay", row)
    assert "did not allow this app to record payments of" in refused.value.detail


def test_api_keys_are_unaffected(tenant):
    assert tenant.post(f"/invoices/{draft_of(tenant, 10**9)['id']}/finalize", idem=True).status_code == 200


def test_lowering_a_limit_in_the_dashboard_reaches_the_next_request(browser, client, app_client, tenant):
    caller = as_token(client, rest_token(browser, app_client, authorization_details=FINALIZE_1000)["access_token"])
    assert finalize(caller, draft_of(tenant, 60000)["id"]).status_code == 200
    page = browser.get("/settings/apps")
    grant_id = page.text.split("/settings/apps/", 1)[1].split('"', 1)[0]
    form = browser.get(f"/settings/apps/{grant_id}").text
    token = form.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
    saved = browser.post(f"/settings/apps/{grant_id}", data={"csrf_token": token, "detail0.amount": "500",
                                                             "detail0.currency": "USD", "detail0.per_day": "5"},
                         follow_redirects=False)
    assert saved.status_code == 303
    assert finalize(caller, draft_of(tenant, 60000)["id"]).status_code == 403


@pytest.mark.parametrize("fields", [{"detail0.per_day": "200000"}, {"detail0.amount": "-5", "detail0.currency": "USD"}])
def test_the_dashboard_refuses_a_limit_the_grant_could_not_hold(browser, client, app_client, tenant, fields):
    caller = as_token(client, rest_token(browser, app_client, authorization_details=FINALIZE_1000)["access_token"])
    grant_id = browser.get("/settings/apps").text.split("/settings/apps/", 1)[1].split('"', 1)[0]
    form = browser.get(f"/settings/apps/{grant_id}").text
    token = form.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
    refused = browser.post(f"/settings/apps/{grant_id}", data={"csrf_token": token, **fields}, follow_redirects=False)
    assert refused.status_code == 422
    assert finalize(caller, draft_of(tenant, 50000)["id"]).status_code == 200  # the grant still loads and holds


def test_the_apps_page_shows_limits_and_what_the_app_did(browser, client, app_client, tenant):
    caller = as_token(client, rest_token(browser, app_client, authorization_details=FINALIZE_1000)["access_token"])
    finalize(caller, draft_of(tenant, 50000)["id"])
    refused = finalize(caller, draft_of(tenant, 250000)["id"]).json()
    listing = browser.get("/settings/apps").text
    assert "Finalize invoices up to 1,000.00 USD, at most 5 a day" in listing
    detail = browser.get(urlsplit(refused["remediation_url"]).path + "?" + urlsplit(refused["remediation_url"]).query)
    assert detail.status_code == 200
    assert "The app asked to finalize a draft (2,500.00 USD)" in detail.text
    assert detail.text.count("refused") >= 1 and "done" in detail.text and "REST API" in detail.text


def test_another_persons_grant_page_is_not_found(browser, client, app_client, tenant_factory):
    rest_token(browser, app_client, authorization_details=FINALIZE_1000)
    grant_id = browser.get("/settings/apps").text.split("/settings/apps/", 1)[1].split('"', 1)[0]
    from tests.oauth_flow import sign_in
    client.cookies.clear()
    sign_in(client, tenant_factory().user_email)
    assert client.get(f"/settings/apps/{grant_id}").status_code == 404


# --- one set of limits per app, person and business (issue 33) -------------------------------------

TWO_A_DAY = [{**FINALIZE_1000[0], "max_per_day": 2}]


def mcp_finalize(client, token: str, invoice_id: str) -> dict:
    response = client.post("/mcp", headers={**HEADERS, "Authorization": f"Bearer {token}"}, content=json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "finalize_invoice", "arguments": {"invoice": invoice_id}}}))
    return response.json()["result"]


def grant_ids(client_id: str) -> list[str]:
    """The app's grants, oldest first."""
    from sqlmodel import select

    from authz.models import OAuthGrant
    from core.base import db
    with db.transaction() as session:
        return [str(g.id) for g in session.exec(select(OAuthGrant).where(OAuthGrant.client_id == client_id)
                                                .order_by(OAuthGrant.created_at))]


def save_limits(browser, grant_id: str, **fields):
    form = browser.get(f"/settings/apps/{grant_id}").text
    csrf = form.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
    return browser.post(f"/settings/apps/{grant_id}", data={"csrf_token": csrf, **fields}, follow_redirects=False)


def test_two_grants_of_one_app_share_one_daily_count(browser, client, app_client, tenant):
    first = as_token(client, rest_token(browser, app_client, authorization_details=TWO_A_DAY)["access_token"])
    second = as_token(client, rest_token(browser, app_client, authorization_details=TWO_A_DAY)["access_token"])
    assert finalize(first, draft_of(tenant, 1000)["id"]).status_code == 200
    assert finalize(second, draft_of(tenant, 1000)["id"]).status_code == 200
    for caller in (first, second):
        refused = finalize(caller, draft_of(tenant, 1000)["id"])
        assert refused.status_code == 403 and refused.json()["code"] == "grant_limit_exceeded"


def test_the_mcp_and_rest_grants_of_one_app_share_one_daily_count(browser, client, app_client, tenant):
    rest = as_token(client, rest_token(browser, app_client, authorization_details=TWO_A_DAY)["access_token"])
    mcp = obtain(browser, app_client, scopes=ACTING, authorization_details=TWO_A_DAY)["access_token"]
    assert [finalize(rest, draft_of(tenant, 1000)["id"]).status_code for _ in range(2)] == [200, 200]
    result = mcp_finalize(client, mcp, draft_of(tenant, 1000)["id"])
    assert result["isError"] is True and json.loads(result["content"][0]["text"])["code"] == "grant_limit_exceeded"


def test_the_newest_grants_lower_limit_applies_to_an_older_grants_token(browser, client, app_client, tenant):
    older = as_token(client, rest_token(browser, app_client, authorization_details=FINALIZE_1000)["access_token"])
    rest_token(browser, app_client, authorization_details=FINALIZE_1000, fields={"detail0.amount": "250"})
    refused = finalize(older, draft_of(tenant, 60000)["id"])
    assert refused.status_code == 403 and "up to 250.00 USD" in refused.json()["detail"]


def test_the_newest_grants_higher_limit_applies_to_an_older_grants_token(browser, client, app_client, tenant):
    older = as_token(client, rest_token(browser, app_client, authorization_details=FINALIZE_1000,
                                        fields={"detail0.amount": "250"})["access_token"])
    rest_token(browser, app_client, authorization_details=FINALIZE_1000, fields={"detail0.amount": "1000"})
    assert finalize(older, draft_of(tenant, 60000)["id"]).status_code == 200


def test_an_older_grants_introspection_says_the_apps_limits(browser, client, app_client):
    older = rest_token(browser, app_client, authorization_details=FINALIZE_1000)["access_token"]
    newest = rest_token(browser, app_client, authorization_details=FINALIZE_1000, fields={"detail0.amount": "250"})
    answer = client.post("/oauth/introspect", data={"token": older, "client_id": app_client["client_id"]}).json()
    assert answer["authorization_details"] == newest["authorization_details"]


def test_another_grant_revokes_none(browser, client, app_client, tenant):
    older = rest_token(browser, app_client, authorization_details=FINALIZE_1000)["access_token"]
    rest_token(browser, app_client, authorization_details=FINALIZE_1000, fields={"detail0.amount": "250"})
    obtain(browser, app_client, scopes=ACTING, authorization_details=FINALIZE_1000)
    response = client.get("/api/v1/invoices", headers={"Authorization": f"Bearer {older}"})
    assert response.status_code == 200
    assert len(grant_ids(app_client["client_id"])) == 3


def test_a_grant_that_may_not_act_leaves_the_apps_limits_as_they_were(browser, client, app_client, tenant):
    rest = as_token(client, rest_token(browser, app_client, authorization_details=FINALIZE_1000)["access_token"])
    obtain(browser, app_client, scopes=["invoices:read"])  # MCP, reading only: no limits of its own
    assert finalize(rest, draft_of(tenant, 250000)["id"]).status_code == 403


def test_a_grant_for_other_actions_keeps_the_apps_limits_on_the_rest(browser, client, app_client, tenant):
    rest = as_token(client, rest_token(browser, app_client, authorization_details=FINALIZE_1000)["access_token"])
    obtain(browser, app_client, scopes=["invoices:read", "invoices:send"])  # MCP, sending only, no limit set
    assert finalize(rest, draft_of(tenant, 250000)["id"]).status_code == 403


def test_disconnecting_and_connecting_again_keeps_the_days_count(browser, client, app_client, tenant):
    one_a_day = [{**FINALIZE_1000[0], "max_per_day": 1}]
    first = as_token(client, rest_token(browser, app_client, authorization_details=one_a_day)["access_token"])
    assert finalize(first, draft_of(tenant, 1000)["id"]).status_code == 200
    csrf = browser.get("/settings/apps").text.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
    assert browser.post("/settings/apps/disconnect", data={"csrf_token": csrf, "client_id": app_client["client_id"]},
                        follow_redirects=False).status_code == 303
    again = as_token(client, rest_token(browser, app_client, authorization_details=one_a_day)["access_token"])
    assert finalize(again, draft_of(tenant, 1000)["id"]).status_code == 403


def test_another_app_keeps_its_own_count(browser, client, app_client, tenant):
    one_a_day = [{**FINALIZE_1000[0], "max_per_day": 1}]
    first = as_token(client, rest_token(browser, app_client, authorization_details=one_a_day)["access_token"])
    assert finalize(first, draft_of(tenant, 1000)["id"]).status_code == 200
    other_app = register(client, token_endpoint_auth_method="none", client_name="Other books")
    other = as_token(client, rest_token(browser, other_app, authorization_details=one_a_day)["access_token"])
    assert finalize(other, draft_of(tenant, 1000)["id"]).status_code == 200


def test_the_same_app_for_another_person_or_business_keeps_its_own_count(browser, client, app_client, tenant, other_tenant):
    from tests.oauth_flow import sign_in
    one_a_day = [{**FINALIZE_1000[0], "max_per_day": 1}]
    mine = as_token(client, rest_token(browser, app_client, authorization_details=one_a_day)["access_token"])
    assert finalize(mine, draft_of(tenant, 1000)["id"]).status_code == 200
    client.cookies.clear()
    sign_in(client, other_tenant.user_email, other_tenant.account_id)  # another person, or another business
    theirs = as_token(client, rest_token(client, app_client, authorization_details=one_a_day)["access_token"])
    assert finalize(theirs, draft_of(other_tenant, 1000)["id"]).status_code == 200


def test_saving_limits_in_the_dashboard_changes_every_grant_of_the_app(browser, client, app_client, tenant):
    rest_token(browser, app_client, authorization_details=FINALIZE_1000)
    newest = as_token(client, rest_token(browser, app_client, authorization_details=FINALIZE_1000)["access_token"])
    older_id = grant_ids(app_client["client_id"])[0]
    saved = save_limits(browser, older_id, **{"detail0.amount": "500", "detail0.currency": "USD", "detail0.per_day": "5"})
    assert saved.status_code == 303
    assert finalize(newest, draft_of(tenant, 60000)["id"]).status_code == 403


def test_the_apps_page_shows_the_count_its_grants_share(browser, client, app_client, tenant):
    for _ in range(2):
        caller = as_token(client, rest_token(browser, app_client, authorization_details=FINALIZE_1000)["access_token"])
        assert finalize(caller, draft_of(tenant, 1000)["id"]).status_code == 200
    page = browser.get(f"/settings/apps/{grant_ids(app_client['client_id'])[0]}").text
    assert "In the last 24 hours: 2 of 5" in page


def test_the_apps_page_lists_what_it_did_through_every_grant(browser, client, app_client, tenant):
    for _ in range(2):
        caller = as_token(client, rest_token(browser, app_client, authorization_details=FINALIZE_1000)["access_token"])
        assert finalize(caller, draft_of(tenant, 1000)["id"]).status_code == 200
    page = browser.get(f"/settings/apps/{grant_ids(app_client['client_id'])[0]}").text
    assert page.count("<td>done</td>") == 2


# --- enforcement on MCP --------------------------------------------------------------------------------

def test_over_the_limit_is_a_tool_error_with_a_structured_denial(browser, client, app_client, tenant):
    token = obtain(browser, app_client, scopes=ACTING, authorization_details=FINALIZE_1000)["access_token"]
    invoice = draft_of(tenant, 250000)
    response = client.post("/mcp", headers={**HEADERS, "Authorization": f"Bearer {token}"}, content=json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "finalize_invoice", "arguments": {"invoice": invoice["id"]}}}))
    result = response.json()["result"]
    assert result["isError"] is True
    assert json.loads(result["content"][0]["text"])["code"] == "grant_limit_exceeded"
    denial = result["_meta"]["io.modelcontextprotocol/authorization"]
    assert denial["reason"] == "insufficient_authorization" and denial["remediation"] == "available"
    assert denial["url"].startswith("http://testserver/settings/apps/")
    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["status"] == "draft"


def test_an_action_refused_over_mcp_is_listed_on_the_grant_page_as_made_through_mcp(browser, client, app_client,
                                                                                      tenant):
    token = obtain(browser, app_client, scopes=ACTING, authorization_details=FINALIZE_1000)["access_token"]
    response = client.post("/mcp", headers={**HEADERS, "Authorization": f"Bearer {token}"}, content=json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "finalize_invoice", "arguments": {"invoice": draft_of(tenant, 250000)["id"]}}}))
    url = urlsplit(response.json()["result"]["_meta"]["io.modelcontextprotocol/authorization"]["url"])
    detail = browser.get(f"{url.path}?{url.query}").text
    assert "The app asked to finalize a draft (2,500.00 USD)" in detail
    assert '<span class="muted">(MCP)</span>' in detail


def test_no_confirmation_is_asked_for_what_the_limits_refuse(browser, client, app_client, tenant):
    token = obtain(browser, app_client, scopes=ACTING, authorization_details=FINALIZE_1000)["access_token"]
    session = client.post("/mcp", headers={**HEADERS, "Authorization": f"Bearer {token}"}, content=json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "clientInfo": {"name": "c", "version": "1"},
            "capabilities": {"elicitation": {}}}})).headers["mcp-session-id"]
    invoice = draft_of(tenant, 250000)
    response = client.post("/mcp", headers={**HEADERS, "Authorization": f"Bearer {token}", "Mcp-Session-Id": session},
                           content=json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                               "name": "finalize_invoice", "arguments": {"invoice": invoice["id"]}}}))
    assert response.headers["content-type"].startswith("application/json")  # no question streamed
    assert response.json()["result"]["isError"] is True


def test_redirect_uri_is_the_registered_one(app_client):
    assert app_client["redirect_uris"] == [REDIRECT_URI]


# --- crediting --------------------------------------------------------------------------------------

CREDIT_10 = [{"type": "invoice_actions", "actions": ["credit"], "max_amount": {"currency": "USD", "amount": 1000},
              "max_per_day": 2}]


def open_of(tenant, amount: int) -> dict:
    invoice = draft_of(tenant, amount)
    assert tenant.post(f"/invoices/{invoice['id']}/finalize", idem=True).status_code == 200
    return invoice


def credit_as(caller, invoice_id: str, amount: int, key: str):
    return caller.post("/credit-notes", json={"invoice": invoice_id, "lines": [{"description": "Goodwill",
                                                                               "amount": amount}]},
                       headers={"Idempotency-Key": key})


def test_crediting_is_limited_by_the_credit_notes_total_not_the_invoices(browser, app_client, tenant, client):
    token = obtain(browser, app_client, resource=resources.rest_api(), scopes=["invoices:read", "credit_notes:write"],
                   authorization_details=CREDIT_10)
    caller = as_token(client, token["access_token"])
    invoice = open_of(tenant, 500000)  # 5,000.00: far beyond the limit, but only its credit note counts
    assert credit_as(caller, invoice["id"], 1000, "a").status_code == 201
    refused = credit_as(caller, invoice["id"], 1001, "b")
    assert refused.status_code == 403 and refused.json()["code"] == "grant_limit_exceeded"
    assert "this one totals 10.01 USD" in refused.json()["detail"]


def test_crediting_counts_against_the_day(browser, app_client, tenant, client):
    token = obtain(browser, app_client, resource=resources.rest_api(), scopes=["invoices:read", "credit_notes:write"],
                   authorization_details=CREDIT_10)
    caller = as_token(client, token["access_token"])
    invoice = open_of(tenant, 500000)
    assert [credit_as(caller, invoice["id"], 100, key).status_code for key in "abc"] == [201, 201, 403]


def test_an_app_not_allowed_to_credit_is_refused(browser, app_client, tenant, client):
    token = rest_token(browser, app_client, authorization_details=FINALIZE_1000)  # no credit_notes:write at all
    response = credit_as(as_token(client, token["access_token"]), open_of(tenant, 1000)["id"], 100, "a")
    assert response.status_code == 403 and response.json()["code"] == "forbidden"


def test_a_person_may_limit_crediting_on_the_consent_page(browser, app_client):
    token = obtain(browser, app_client, resource=resources.rest_api(), scopes=["invoices:read", "credit_notes:write"],
                   fields={"credit_notes-write.amount": "50", "credit_notes-write.currency": "USD",
                           "credit_notes-write.per_day": "2"})
    assert token["authorization_details"] == [{"type": "invoice_actions", "actions": ["credit"],
                                                "max_amount": {"currency": "USD", "amount": 5000}, "max_per_day": 2}]
