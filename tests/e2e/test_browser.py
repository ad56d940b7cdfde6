"""A person in headless Chromium: sign up, onboard, create an API key, connect an app, disconnect it.

Runs against a live server (uvicorn on the test database) with Debian's Chromium. Each page is
saved as a screenshot in a temporary folder; `INVOICING_SCREENSHOTS=docs/screenshots` refreshes the
committed ones (docs/screenshots/), so an ordinary test run leaves the work tree clean.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import secrets
import shutil
import tempfile
import uuid
from email import message_from_bytes, policy
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from tests.e2e.conftest import free_port

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = Path(os.environ.get("INVOICING_SCREENSHOTS") or tempfile.mkdtemp(prefix="screenshots-"))
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PASSWORD = "correct horse battery staple"
LOOKUPS_AND_DRAFTS = ("business:read", "clients:read", "products:read", "invoices:read",
                      "clients:write", "invoices:write")
NEVER_PRE_TICKED = ("invoices:finalize", "invoices:send", "payments:write")
NEVER_OFFERED_TO_MCP = ("products:write", "webhooks:manage", "members:manage")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.e2e,
    pytest.mark.skipif(not CHROMIUM.exists() and shutil.which("chromium") is None,
                       reason="Debian's chromium is not installed (scripts/test-prerequisites installs it)"),
]


@pytest.fixture
def page():
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM if CHROMIUM.exists() else
                                                                 shutil.which("chromium")),
                                             args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1100, "height": 800})
        context.set_default_timeout(15_000)
        try:
            yield context.new_page()
        finally:
            context.close()
            browser.close()


def shot(page, name: str) -> None:
    """Save the page as a screenshot and check it with axe-core: no accessibility violation."""
    from axe_playwright_python.sync_playwright import Axe

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
    results = Axe().run(page)
    assert results.violations_count == 0, f"{name}: {page.url}\n{results.generate_report()}"


def sign_up_and_onboard(page, origin: str) -> str:
    email = f"ada-{uuid.uuid4().hex[:6]}@example.com"
    page.goto(f"{origin}/signup")
    shot(page, "01-signup")
    page.get_by_label("E-mail").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_label("Your name").fill("Ada Lovelace")
    page.get_by_role("button", name="Create account").click()
    page.wait_for_url(f"{origin}/onboarding")

    page.get_by_role("button", name="Save business profile").click()  # nothing filled in yet
    assert page.locator("#f-legal_name-error").is_visible()
    shot(page, "02-onboarding-errors")
    page.get_by_label("Legal name").fill("Analytical Engines Ltd")
    page.get_by_label("Trading name").fill("Engines")
    page.locator("#f-country_code").fill("GB")
    page.get_by_label("Currency").fill("GBP")
    page.get_by_label("Address line 1").fill("12 St James's Square")
    page.get_by_label("City").fill("London")
    page.get_by_label("Postal code").fill("SW1Y 4LB")
    page.get_by_label("Bank name").fill("Coutts")
    page.get_by_label("Account number").fill("12345678")
    shot(page, "03-onboarding")
    page.get_by_role("button", name="Save business profile").click()
    page.wait_for_url(re.compile(re.escape(origin) + r"/\?notice=profile_saved"))
    assert page.get_by_role("heading", level=1).inner_text() == "Engines"
    shot(page, "04-dashboard")
    return email


def verify_email(page, outbox: Path, email: str) -> None:
    messages = [message_from_bytes(p.read_bytes(), policy=policy.default) for p in outbox.glob("*.eml")]
    (message,) = [m for m in messages if m["To"] == email]
    link = re.search(r"http://\S+/verify-email\?token=\S+", message.get_content()).group(0)
    page.goto(link)
    assert page.get_by_role("heading", level=1).inner_text() == "Your e-mail address is verified"
    shot(page, "05-email-verified")


def create_key(page, origin: str) -> str:
    page.goto(f"{origin}/settings/api-keys")
    page.get_by_label("Name", exact=True).fill("Accounting sync")
    page.get_by_label("Full access").check()
    shot(page, "06-api-keys-create")
    page.get_by_role("button", name="Create key").click()
    key = page.get_by_label("API key").input_value()
    assert re.fullmatch(r"inv_live_[A-Za-z0-9]{8}_[A-Za-z0-9]{32}", key)
    shot(page, "07-api-key-created")
    page.get_by_role("link", name="Done, back to API keys").click()
    assert key not in page.content()
    shot(page, "08-api-keys-list")
    return key


def add_webhook_endpoint_and_raise_an_invoice(page, origin: str, key: str) -> None:
    page.goto(f"{origin}/settings/webhooks")
    page.get_by_label("URL").fill("https://127.0.0.1:9/hooks/invoicing")
    page.get_by_label("Only the kinds ticked below").check()
    page.get_by_label("invoice.created").check()
    page.get_by_label("invoice.paid").check()
    page.get_by_role("button", name="Add endpoint").click()
    assert page.get_by_label("Signing secret").input_value().startswith("whsec_")
    shot(page, "09-webhook-created")
    api = httpx.Client(base_url=f"{origin}/api/v1", headers={"Authorization": f"Bearer {key}"})
    customer = api.post("/customers", json={"name": "Charles Babbage", "email": "charles@example.com"})
    assert customer.status_code == 201, customer.text
    invoice = api.post("/invoices", json={"customer": customer.json()["data"]["id"]},
                       headers={"Idempotency-Key": uuid.uuid4().hex})
    assert invoice.status_code == 201, invoice.text
    page.goto(f"{origin}/settings/webhooks")
    assert "invoice.created" in page.locator("table").first.inner_text()
    shot(page, "10-webhooks")


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def test_sign_up_onboard_create_a_key_connect_and_disconnect_an_app(page, live_server, test_settings):
    origin = live_server
    email = sign_up_and_onboard(page, origin)
    verify_email(page, test_settings.outbox_dir, email)

    key = create_key(page, origin)
    business = httpx.get(f"{origin}/api/v1/business", headers={"Authorization": f"Bearer {key}"})
    assert business.status_code == 200
    assert business.json()["data"]["legal_name"] == "Analytical Engines Ltd"

    add_webhook_endpoint_and_raise_an_invoice(page, origin, key)

    registered = httpx.post(f"{origin}/oauth/register", json={
        "client_name": "Desk Assistant", "redirect_uris": [f"http://127.0.0.1:{free_port()}/callback"],
        "token_endpoint_auth_method": "none", "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"]})
    if registered.status_code == 404:
        pytest.skip("the authorization server is not mounted yet")
    assert registered.status_code == 201, registered.text
    client = registered.json()
    redirect_uri = client["redirect_uris"][0]
    verifier, challenge = pkce_pair()
    page.route(f"{redirect_uri}**", lambda route: route.fulfill(status=200, body="Connected", content_type="text/plain"))
    page.goto(f"{origin}/oauth/authorize?" + urlencode({
        "response_type": "code", "client_id": client["client_id"], "redirect_uri": redirect_uri,
        "code_challenge": challenge, "code_challenge_method": "S256", "state": "s-1"}))

    assert "Desk Assistant" in page.get_by_role("heading", level=1).inner_text()
    assert page.locator("#app-identity").inner_text().startswith("Unverified app")
    boxes = page.locator("input[type=checkbox][name=scope]")
    offered = {boxes.nth(i).get_attribute("value"): boxes.nth(i).is_checked() for i in range(boxes.count())}
    assert {scope for scope, ticked in offered.items() if ticked} == set(LOOKUPS_AND_DRAFTS)
    assert all(offered[scope] is False for scope in NEVER_PRE_TICKED)
    assert not set(NEVER_OFFERED_TO_MCP) & set(offered)
    shot(page, "20-consent-mcp")

    page.get_by_label(re.compile("invoices:send")).check()  # the person adds sending, nothing else
    page.get_by_role("button", name="Allow").click()
    page.wait_for_url(f"{redirect_uri}**")
    query = parse_qs(urlsplit(page.url).query)
    assert query["state"] == ["s-1"]
    assert query["iss"] == [origin]
    tokens = httpx.post(f"{origin}/oauth/token", data={
        "grant_type": "authorization_code", "code": query["code"][0], "redirect_uri": redirect_uri,
        "client_id": client["client_id"], "code_verifier": verifier})
    assert tokens.status_code == 200, tokens.text
    granted = set(tokens.json()["scope"].split())
    assert granted == set(LOOKUPS_AND_DRAFTS) | {"invoices:send"}

    # Step-up: the app asks for one more permission; the page shows what it already has.
    page.goto(f"{origin}/oauth/authorize?" + urlencode({
        "response_type": "code", "client_id": client["client_id"], "redirect_uri": redirect_uri,
        "code_challenge": challenge, "code_challenge_method": "S256", "state": "s-2",
        "scope": "invoices:finalize"}))
    assert page.get_by_label(re.compile("invoices:finalize")).count() == 1
    shot(page, "21-consent-mcp-step-up")

    page.goto(f"{origin}/settings/apps")
    row = page.get_by_role("row", name=re.compile("Desk Assistant"))
    assert "invoices:send" in row.inner_text()
    assert "Unverified app" in row.inner_text()
    shot(page, "12-connected-apps")
    row.get_by_role("button", name="Disconnect Desk Assistant").click()
    page.wait_for_url(f"{origin}/settings/apps?notice=app_disconnected")
    assert "No apps are connected" in page.content()
    shot(page, "13-app-disconnected")

    refreshed = httpx.post(f"{origin}/oauth/token", data={
        "grant_type": "refresh_token", "refresh_token": tokens.json()["refresh_token"],
        "client_id": client["client_id"]})
    assert refreshed.status_code == 400
    assert refreshed.json()["error"] == "invalid_grant"


def test_sign_in_with_a_wrong_password_then_the_right_one(page, live_server):
    origin = live_server
    page.goto(f"{origin}/signup")
    email = f"grace-{uuid.uuid4().hex[:6]}@example.com"
    page.get_by_label("E-mail").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    page.wait_for_url(f"{origin}/onboarding")
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(f"{origin}/login")

    page.goto(f"{origin}/settings/api-keys")  # signed out: sent to sign in, then back
    page.wait_for_url(re.compile(re.escape(f"{origin}/login?next=")))
    page.get_by_label("E-mail").fill(email)
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    assert page.get_by_role("alert").inner_text() == "The e-mail address or the password is incorrect."
    shot(page, "00-login-error")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{origin}/settings/api-keys")
