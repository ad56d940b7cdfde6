"""The consent page with limits, in Chromium: the app's request shown in words next to the scope it
narrows, the person lowering it, and the token carrying what the person allowed."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from core.access import accounts
from core.base import db
from pages.sessions import SESSION_COOKIE, start_session
from tests.conftest import make_tenant
from tests.e2e.test_browser import page, shot  # noqa: F401  (the Chromium page fixture)
from tests.oauth_flow import REDIRECT_URI, exchange, pkce_pair, register

pytestmark = [pytest.mark.e2e, pytest.mark.browser]
ASKED = [{"type": "invoice_actions", "actions": ["finalize", "send"],
          "max_amount": {"currency": "USD", "amount": 100000}, "max_per_day": 5}]


def test_a_person_lowers_the_limit_an_app_asked_for(live_server, page):  # noqa: F811
    tenant = make_tenant(None)
    with db.transaction() as session:
        cookie = start_session(session, accounts.user_by_email(session, tenant.user_email))
    page.context.add_cookies([{"name": SESSION_COOKIE, "value": cookie, "url": live_server}])
    app = register(httpx.Client(base_url=live_server), token_endpoint_auth_method="none", client_name="Books Assistant")
    verifier, challenge = pkce_pair()
    query = httpx.QueryParams({"response_type": "code", "client_id": app["client_id"], "redirect_uri": REDIRECT_URI,
                               "code_challenge": challenge, "code_challenge_method": "S256", "state": "s",
                               "scope": "invoices:read invoices:finalize invoices:send",
                               "authorization_details": json.dumps(ASKED)})
    page.route(f"{REDIRECT_URI}**", lambda route: route.fulfill(status=200, body="Connected", content_type="text/plain"))
    page.goto(f"{live_server}/oauth/authorize?{query}")
    page.get_by_text("The app asks: Finalize or send invoices up to 1,000.00 USD, at most 5 a day").wait_for()
    page.locator("#scope-invoices-finalize").check()
    page.locator("#scope-invoices-send").check()
    page.locator('input[name="detail0.amount"]').fill("250")
    page.locator('input[name="detail0.per_day"]').fill("2")
    shot(page, "22-consent-limits")
    with page.expect_request(lambda request: request.url.startswith(REDIRECT_URI)) as redirected:
        page.get_by_role("button", name="Allow").click()
    code = parse_qs(urlsplit(redirected.value.url).query)["code"][0]
    token = exchange(httpx.Client(base_url=live_server), app["client_id"], code, verifier).json()
    assert token["authorization_details"] == [{"type": "invoice_actions", "actions": ["finalize", "send"],
                                               "max_amount": {"currency": "USD", "amount": 25000}, "max_per_day": 2}]
