"""Several people and businesses in headless Chromium, as new users would: the owner invites an
accountant, who accepts in another browser; the owner starts a second business, switches between
them, and connects an assistant to the second one."""

from __future__ import annotations

import re
from email import message_from_bytes, policy
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

from tests.e2e.conftest import free_port
from tests.e2e.test_browser import (  # noqa: F401  (the Chromium page fixture)
    PASSWORD,
    page,
    pkce_pair,
    pytestmark,
    shot,
    sign_up_and_onboard,
    verify_email,
)


def _invitation_link(outbox: Path, address: str) -> str:
    messages = [message_from_bytes(p.read_bytes(), policy=policy.default) for p in sorted(outbox.glob("*.eml"))]
    (message,) = [m for m in messages if m["To"] == address]
    return re.search(r"http://\S+/invitations/\S+", message.get_content()).group(0)


def _switch_to(tab, name: str) -> None:
    tab.get_by_label("Business").select_option(label=f"{name} (owner)")
    tab.get_by_role("button", name="Switch").click()
    tab.wait_for_load_state()


def test_invite_accept_switch_and_connect_an_assistant_to_the_second_business(page, live_server,  # noqa: F811
                                                                               test_settings):
    origin = live_server
    verify_email(page, test_settings.outbox_dir, sign_up_and_onboard(page, origin))  # invitations go out from it

    # The owner invites an accountant.
    accountant = "books@example.com"
    page.goto(f"{origin}/members")
    page.get_by_label("E-mail").fill(accountant)
    page.get_by_label("Role").select_option("accountant")
    page.get_by_role("button", name="Send invitation").click()
    page.wait_for_url(f"{origin}/members?notice=invited")
    assert "pending" in page.get_by_role("row", name=re.compile(accountant)).inner_text()
    shot(page, "30-members-invited")

    # The accountant opens the link in another browser, signs up with that address and accepts.
    other = page.context.browser.new_context(viewport={"width": 1100, "height": 800}).new_page()
    other.goto(_invitation_link(test_settings.outbox_dir, accountant))
    assert other.get_by_role("heading", level=1).inner_text() == "Join Engines"
    shot(other, "31-invitation")
    other.get_by_role("link", name="create an account with that address").click()
    other.get_by_label("E-mail").fill(accountant)
    other.get_by_label("Password").fill(PASSWORD)
    other.get_by_role("button", name="Create account").click()
    other.get_by_role("button", name="Accept and join Engines").click()
    other.wait_for_url(f"{origin}/?notice=joined")
    assert other.get_by_label("Business").input_value().startswith("acct_")
    assert "Engines (accountant)" in other.get_by_label("Business").inner_text()
    assert other.get_by_role("link", name="API keys").count() == 0  # managed by owners and admins
    shot(other, "32-joined-as-accountant")
    other.context.close()

    page.goto(f"{origin}/members")
    members = page.get_by_role("region", name="Members")
    assert members.get_by_label(f"Role of {accountant}", exact=True).input_value() == "accountant"
    invitations = page.get_by_role("region", name="Invitations")
    assert "accepted" in invitations.get_by_role("row", name=re.compile(accountant)).inner_text()

    # The owner starts a second business and switches between the two.
    page.get_by_role("link", name="New business").click()
    page.get_by_role("button", name="Start a new business").click()
    page.wait_for_url(f"{origin}/onboarding")
    page.get_by_label("Legal name").fill("Difference Engines Ltd")
    page.get_by_label("Trading name").fill("Difference")
    page.locator("#f-country_code").fill("GB")
    page.get_by_label("Currency").fill("GBP")
    page.get_by_role("button", name="Save business profile").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Difference"
    _switch_to(page, "Engines")
    assert page.get_by_role("heading", level=1).inner_text() == "Engines"
    _switch_to(page, "Difference")
    assert page.get_by_role("heading", level=1).inner_text() == "Difference"
    shot(page, "33-business-switcher")

    # An assistant connected to the second business acts for it alone.
    redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
    client = httpx.post(f"{origin}/oauth/register", json={
        "client_name": "Desk Assistant", "redirect_uris": [redirect_uri], "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]}).json()
    verifier, challenge = pkce_pair()
    page.route(f"{redirect_uri}**", lambda route: route.fulfill(status=200, body="Connected", content_type="text/plain"))
    page.goto(f"{origin}/oauth/authorize?" + urlencode({
        "response_type": "code", "client_id": client["client_id"], "redirect_uri": redirect_uri,
        "code_challenge": challenge, "code_challenge_method": "S256", "state": "s-1"}))
    assert page.get_by_label(re.compile("^Difference")).is_checked()  # the business the dashboard acts for
    page.get_by_label(re.compile("^Engines")).check()
    page.get_by_label(re.compile("^Difference")).check()
    shot(page, "34-consent-business")
    page.get_by_role("button", name="Allow").click()
    page.wait_for_url(f"{redirect_uri}**")
    tokens = httpx.post(f"{origin}/oauth/token", data={
        "grant_type": "authorization_code", "code": parse_qs(urlsplit(page.url).query)["code"][0],
        "redirect_uri": redirect_uri, "client_id": client["client_id"], "code_verifier": verifier})
    assert tokens.status_code == 200, tokens.text
    mcp = httpx.post(f"{origin}/mcp", headers={
        "Authorization": f"Bearer {tokens.json()['access_token']}", "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json", "MCP-Protocol-Version": "2025-11-25"},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_business", "arguments": {}}})
    business = mcp.json()["result"]["structuredContent"]
    assert business["trade_name"] == "Difference" and business["role"] == "owner"

    page.goto(f"{origin}/settings/apps")
    assert "Desk Assistant" in page.content()
    _switch_to(page, "Engines")
    page.goto(f"{origin}/settings/apps")
    assert "Desk Assistant" not in page.content()
