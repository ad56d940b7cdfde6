"""Recurring invoices and payment reminders in a real browser: a person reviews the draft a schedule made
(opened from the schedule's runs, finalized from its page), sets the reminder policy in Settings and
sees it saved, and finds the invoice's reminders on its page (the next one, a reminder sent now, pausing).
Each page is saved as a screenshot in /tmp/shots/ and checked with axe-core."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest

from tests.conftest import make_tenant
from tests.e2e.test_browser import pytestmark  # noqa: F401
from tests.e2e.test_dashboard_browser import DESKTOP, sign_in
from tests.e2e.test_documents_browser import browser_page

SHOTS = Path("/tmp/shots")


@pytest.fixture(scope="module")
def origin(test_settings, tmp_path_factory, mailbox):
    """One server for the module, mailing the test SMTP server."""
    from tests.e2e.conftest import LiveServers

    servers = LiveServers(test_settings, tmp_path_factory.mktemp("reminders"))
    yield servers(SMTP_URL=mailbox[1])
    servers.stop_all()


def look(page, name: str) -> None:
    """Save the page to /tmp/shots/<name>.png and check it with axe-core: no accessibility violation."""
    from axe_playwright_python.sync_playwright import Axe

    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    results = Axe().run(page)
    assert results.violations_count == 0, f"{name}: {page.url}\n{results.generate_report()}"


def api_of(origin: str, tenant) -> httpx.Client:
    return httpx.Client(base_url=f"{origin}/api/v1", headers={"Authorization": f"Bearer {tenant.key}"})


def keyed() -> dict[str, str]:
    return {"Idempotency-Key": str(uuid.uuid4())}


def drafted_by_a_schedule(api: httpx.Client) -> tuple[str, str]:
    """A monthly schedule in draft mode from today (the business is in London) and its first period made
    now; the schedule's id and the draft's."""
    customer = api.post("/customers", json={"name": "Initech", "email": "ap@initech.example"}).raise_for_status()
    start = datetime.now(UTC).astimezone(ZoneInfo("Europe/London")).date().isoformat()
    schedule = api.post("/invoice-schedules", headers=keyed(), json={
        "customer": customer.json()["data"]["id"], "mode": "draft",
        "invoice": {"currency": "EUR", "days_until_due": 14,
                    "items": [{"description": "Monthly retainer", "unit_amount": 120000, "tax_rate": 20}]},
        "recurrence": {"interval": "month", "start_date": start}}).raise_for_status().json()["data"]
    run = api.post(f"/invoice-schedules/{schedule['id']}/run", headers=keyed()).raise_for_status().json()["data"]
    assert run["invoice"], run
    return schedule["id"], run["invoice"]


def test_a_person_reviews_a_drafted_recurring_invoice_and_sets_the_reminders(origin, mailbox):
    from playwright.sync_api import sync_playwright

    tenant = make_tenant(None)
    with api_of(origin, tenant) as api:
        schedule_id, invoice_id = drafted_by_a_schedule(api)

    with sync_playwright() as playwright:
        browser, page = browser_page(playwright, DESKTOP)
        page.set_default_timeout(15_000)
        try:
            sign_in(page, origin, tenant.user_email)
            page.get_by_role("navigation", name="Main").get_by_role("link", name="Schedules").click()
            page.wait_for_url(f"{origin}/schedules")
            page.get_by_role("link", name="Initech").click()
            page.wait_for_url(f"{origin}/schedules/{schedule_id}")
            runs = page.get_by_role("region", name="Runs so far")
            runs.get_by_role("link", name="View invoice").click()
            page.wait_for_url(f"{origin}/invoices/{invoice_id}")
            assert "Drafted by a schedule" in page.locator("h1").inner_text()
            assert page.locator("#schedule-review").is_visible()

            page.get_by_role("link", name="Finalize…").click()
            page.get_by_role("button", name="Finalize").click()
            page.wait_for_url(re.compile("notice=finalized"))
            heading = page.locator("h1").inner_text()
            assert heading.startswith("INV-0001") and "Open" in heading and "Drafted by" not in heading
            assert page.locator("#schedule-review").count() == 0
            assert "Payment reminders are off" in page.locator("#next-reminder").inner_text()

            # Settings → Reminders: on, the second default step charging a fixed fee of 15.00
            page.get_by_role("navigation", name="Main").get_by_role("link", name="Reminders").click()
            page.wait_for_url(f"{origin}/settings/reminders")
            assert page.locator("#f-steps-0-days").input_value() == "-3"
            page.get_by_label("Send payment reminders").check()
            page.locator("#f-steps-1-late_fee").check()
            page.get_by_label("A fixed amount").check()
            page.get_by_label("Fixed late fee (USD)").fill("15.00")
            page.get_by_role("button", name="Remove step 3").click()
            page.wait_for_url(f"{origin}/settings/reminders")
            assert page.locator("#f-steps-2-days").count() == 0
            page.get_by_role("button", name="Save reminders").click()
            page.wait_for_url(re.compile("notice=saved"))
            assert page.get_by_role("status").inner_text() == "The reminder policy is saved."
            page.reload()
            assert page.get_by_label("Send payment reminders").is_checked()
            assert page.locator("#f-steps-1-late_fee").is_checked()
            assert page.get_by_label("Fixed late fee (USD)").input_value() == "15.00"
            assert page.locator("article.step").count() == 2
            look(page, "reminders-settings")

            # A refused policy: the error beside its field
            page.locator("#f-steps-0-body").fill("Pay {amount} now")
            page.get_by_role("button", name="Save reminders").click()
            assert "unknown placeholder {amount}" in page.locator("#f-steps-0-body-error").inner_text()
            assert page.locator("#f-steps-0-body").get_attribute("aria-invalid") == "true"
            look(page, "reminders-settings-error")

            # Back on the invoice: the next reminder, a reminder now, pause
            page.goto(f"{origin}/invoices/{invoice_id}")
            next_text = page.locator("#next-reminder").inner_text()
            assert re.match(r"Next reminder on \d{4}-\d{2}-\d{2} \(3 days before the due date\)\.", next_text), \
                next_text
            page.get_by_role("link", name="Send a reminder…").click()
            assert "will be e-mailed now to ap@initech.example" in page.locator("#consequence").inner_text()
            page.get_by_label("Message").fill("Just a friendly nudge.")
            look(page, "invoice-remind-confirm")
            page.get_by_role("button", name="Send reminder").click()
            page.wait_for_url(re.compile("notice=reminded"))
            received = mailbox[0].received[-1]
            assert received.rcpt_tos == ["ap@initech.example"]
            assert received.message.get_body(("plain",)).get_content().startswith("Just a friendly nudge.")
            history = page.get_by_role("region", name="History").inner_text()
            assert "payment reminder sent" in history and "sent by request" in history

            page.get_by_role("button", name="Pause reminders").click()
            page.wait_for_url(re.compile("notice=reminders_paused"))
            assert page.locator("#next-reminder").inner_text().startswith("Reminders paused")
            look(page, "invoice-reminders")
            page.get_by_role("button", name="Resume reminders").click()
            page.wait_for_url(re.compile("notice=reminders_resumed"))
            assert page.locator("#next-reminder").inner_text().startswith("Next reminder on")
        finally:
            browser.close()
