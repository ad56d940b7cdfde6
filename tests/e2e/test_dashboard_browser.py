"""The product's own story in a real browser: an assistant drafts over MCP with the draft-only
consent; the person signs in, finds the draft waiting for review with the app's badge, edits a
line, finalizes, sends (the SMTP server receives the PDF) and marks it paid; the history names the
app and the person; the webhook receiver got every event, in order, signed. Then the same for
customers and products. Every page is saved as a screenshot and checked with axe-core (`shot`)."""

from __future__ import annotations

import re

import anyio
import httpx
import pytest
from standardwebhooks import Webhook

from tests.api.invoicing import stored_events
from tests.conftest import make_tenant
from tests.e2e.conftest import wait_for
from tests.e2e.test_browser import SCREENSHOTS, pytestmark, shot  # noqa: F401
from tests.e2e.test_documents_browser import browser_page
from tests.e2e.test_mcp_oauth import ConsentingUser, MemoryStorage, connect

PASSWORD = "correct horse battery"  # make_tenant's
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def origin(test_settings, tmp_path_factory, mailbox):
    """One server and one worker (webhook delivery) for the module, mailing the test SMTP server."""
    from tests.e2e.conftest import LiveServers

    servers = LiveServers(test_settings, tmp_path_factory.mktemp("dashboard"))
    origin = servers(SMTP_URL=mailbox[1])
    servers.start_worker(SMTP_URL=mailbox[1])
    yield origin
    servers.stop_all()


def sign_in(page, origin: str, email: str) -> None:
    page.goto(f"{origin}/login")
    page.get_by_label("E-mail").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{origin}/")


def assistant_drafts(origin: str, email: str) -> tuple[str, str]:
    """An assistant (the official MCP SDK client) connects with the consent's defaults (look-ups and
    drafts only) and drafts an invoice; returns the draft's id and the scopes it was granted."""
    user, storage = ConsentingUser(origin, email), MemoryStorage()

    async def drafting(session):
        customer = await session.call_tool("create_customer", {"name": "Northwind Traders",
                                                               "email": "ap@northwind.example"})
        draft = await session.call_tool("create_invoice", {
            "customer": customer.structured_content["id"],
            "items": [{"description": "Website redesign", "quantity": 2, "unit": "DAY", "unit_amount": 60000,
                       "tax_rate": 20},
                      {"description": "Hosting", "quantity": 1, "unit": "MON", "unit_amount": 2500}]})
        assert not draft.is_error, draft
        return draft.structured_content["id"]

    invoice_id = anyio.run(connect(origin, user, storage), drafting)
    return invoice_id, storage.tokens.scope


def wider_than_the_screen(page) -> list[str]:
    """The elements that stick out of the viewport, to name the culprit of a sideways scroll."""
    return page.evaluate("""() => [...document.querySelectorAll('body *')]
        .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
        .map(e => e.tagName + '.' + e.className + '#' + e.id + ' ' + Math.round(e.getBoundingClientRect().right))
        .slice(0, 15)""")


def test_a_person_reviews_and_sends_what_their_assistant_drafted(origin, mailbox, hooks, test_settings):
    from playwright.sync_api import sync_playwright

    tenant = make_tenant(None)
    with httpx.Client(base_url=f"{origin}/api/v1", headers={"Authorization": f"Bearer {tenant.key}"}) as api:
        secret = api.post("/webhook-endpoints", json={"url": hooks.url}).raise_for_status().json()["data"]["secret"]
    invoice_id, granted = assistant_drafts(origin, tenant.user_email)
    assert not {"invoices:finalize", "invoices:send", "payments:write"} & set(granted.split())

    with sync_playwright() as playwright:
        browser, page = browser_page(playwright, DESKTOP)
        try:
            sign_in(page, origin, tenant.user_email)
            review = page.get_by_role("region", name="Waiting for your review")
            assert "Drafted by Test Assistant" in review.inner_text()
            shot(page, "50-dashboard-home")

            review.get_by_role("link", name="Review draft").click()
            page.wait_for_url(re.compile(f"/invoices/{invoice_id}"))
            assert "Drafted by Test Assistant" in page.locator("h1").inner_text()
            shot(page, "51-draft-review")

            page.get_by_text("Edit line 1").click()
            page.locator("#line-1-quantity").fill("3")
            live = page.locator("form[data-line] [data-preview-output]").first  # live totals, before saving
            live.filter(has_text="The invoice would total 2,185.00 USD").wait_for()
            assert live.inner_text().startswith("This line: 1,800.00 USD plus 360.00 USD tax.")
            page.get_by_role("button", name="Save line 1").click()
            page.wait_for_url(re.compile("notice=line_saved"))
            assert "2,185.00 USD" in page.locator("table.totals").inner_text()  # 3 × 600 + 20 % tax + 25

            page.get_by_role("link", name="Finalize…").click()
            assert "It will be numbered INV-0001 and can no longer be edited" in page.locator("#consequence").inner_text()
            shot(page, "52-confirm-finalize")
            page.get_by_role("button", name="Finalize").click()
            page.wait_for_url(re.compile("notice=finalized"))
            assert page.locator("h1").inner_text().startswith("INV-0001")

            page.get_by_role("link", name="Send…").click()
            assert page.locator("#f-to").input_value() == "ap@northwind.example"
            page.get_by_label("Message").fill("Thank you for your business.")
            shot(page, "53-confirm-send")
            page.get_by_role("button", name="Send e-mail").click()
            page.wait_for_url(re.compile("notice=sent"))
            received = mailbox[0].received[-1]
            assert received.rcpt_tos == ["ap@northwind.example"]
            assert [a.get_content_type() for a in received.attachments()] == ["application/pdf"]

            page.get_by_role("link", name="Mark paid…").click()
            shot(page, "63-confirm-pay")
            page.get_by_label("Reference").fill("BACS 7781")
            page.get_by_role("button", name="Mark paid").click()
            page.wait_for_url(re.compile("notice=paid"))
            history = page.get_by_role("region", name="History").inner_text()
            assert "Test Assistant (connected app)" in history and "(dashboard)" in history
            assert "reference BACS 7781" in history
            shot(page, "54-invoice-paid")

            page.goto(f"{origin}/invoices?status=paid")
            assert "INV-0001" in page.get_by_role("table").inner_text()
            shot(page, "55-invoices-list")

            page.set_viewport_size(PHONE)
            page.goto(f"{origin}/invoices/{invoice_id}")
            assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], wider_than_the_screen(page)
            page.screenshot(path=str(SCREENSHOTS / "56-invoice-phone.png"), full_page=True)
        finally:
            browser.close()

    stored = [event.type for event in sorted(stored_events(tenant.account_id), key=lambda e: e.created_at)]
    assert stored[0] == "invoice.created" and stored[-1] == "invoice.paid"
    assert {"invoice.updated", "invoice.finalized", "invoice.emailed"} <= set(stored)
    wait_for(lambda: len(hooks.types()) >= len(stored))
    assert hooks.types() == stored  # every event, in the order it happened
    for headers, body in hooks.received:
        Webhook(secret).verify(body, headers)


def test_a_person_manages_customers_and_products(origin):
    from playwright.sync_api import sync_playwright

    tenant = make_tenant(None)

    with sync_playwright() as playwright:
        browser, page = browser_page(playwright, DESKTOP)
        try:
            sign_in(page, origin, tenant.user_email)
            page.get_by_role("navigation", name="Main").get_by_role("link", name="Customers").click()
            page.get_by_role("link", name="New customer").click()
            page.get_by_label("Name").fill("Globex GmbH")
            page.get_by_label("Billing e-mail").fill("ap@globex.example")
            page.get_by_label("City").fill("Berlin")
            shot(page, "57-customer-form")
            page.get_by_role("button", name="Add customer").click()
            page.wait_for_url(re.compile("notice=customer_created"))
            page.get_by_role("button", name="Archive customer").click()
            page.wait_for_url(re.compile("notice=customer_archived"))
            page.get_by_role("button", name="Restore customer").click()
            page.wait_for_url(re.compile("notice=customer_restored"))
            page.goto(f"{origin}/customers")
            assert "Globex GmbH" in page.get_by_role("table").inner_text()
            shot(page, "58-customers")

            page.goto(f"{origin}/products/new")
            page.get_by_label("Name").fill("Support plan")
            page.get_by_role("button", name="Add product").click()
            page.wait_for_url(re.compile("notice=product_created"))
            page.get_by_label("Amount").fill("99.50")
            page.get_by_label("Billing").select_option("recurring")
            page.get_by_label("Every").select_option("month")
            page.get_by_role("button", name="Add price").click()
            page.wait_for_url(re.compile("notice=price_created"))
            assert "99.50 USD" in page.get_by_role("table").inner_text()
            shot(page, "59-product")

            page.goto(f"{origin}/invoices/new")
            shot(page, "61-new-draft")
            page.get_by_label("Customer").select_option(label="Globex GmbH (ap@globex.example)")
            page.get_by_role("button", name="Create draft").click()
            page.wait_for_url(re.compile("notice=created"))
            page.locator("#add-price").select_option(index=1)
            page.get_by_role("button", name="Add line").click()
            page.wait_for_url(re.compile("notice=line_added"))
            assert "Support plan" in page.get_by_role("region", name="Lines").inner_text()

            page.goto(f"{origin}/settings/business")
            shot(page, "60-business-profile")
            page.goto(f"{origin}/products")
            shot(page, "62-products")
            page.goto(f"{origin}/invoices/in_{'0' * 32}")
            assert page.get_by_role("heading", level=1).inner_text() == "No such invoice"
            shot(page, "64-not-found")
        finally:
            browser.close()


def test_a_person_credits_part_of_an_invoice(origin):
    from playwright.sync_api import sync_playwright

    tenant = make_tenant(None)
    api = httpx.Client(base_url=f"{origin}/api/v1", headers={"Authorization": f"Bearer {tenant.key}"})
    customer = api.post("/customers", json={"name": "Initech", "email": "ap@initech.example"}).json()["data"]
    invoice = api.post("/invoices", headers={"Idempotency-Key": "cn-draft"}, json={
        "customer": customer["id"], "items": [{"description": "Workshop", "unit_amount": 50000, "quantity": 2,
                                               "tax_rate": 20}]}).json()["data"]
    api.post(f"/invoices/{invoice['id']}/finalize", headers={"Idempotency-Key": "cn-finalize"})

    with sync_playwright() as playwright:
        browser, page = browser_page(playwright, DESKTOP)
        try:
            sign_in(page, origin, tenant.user_email)
            page.goto(f"{origin}/invoices/{invoice['id']}")
            page.get_by_role("link", name="Issue a credit note…").click()
            page.get_by_label("Chosen lines, or a line of your own").check()
            page.get_by_label("Line 1: quantity").fill("1")
            page.get_by_label("Reason").select_option(label="Order change")
            page.get_by_label("Memo").fill("One workshop day was cancelled")
            shot(page, "76-credit-note-form")
            page.get_by_role("button", name="Preview the credit note").click()
            assert "600.00" in page.get_by_role("main").inner_text()
            shot(page, "77-credit-note-preview")
            page.get_by_role("button", name="Issue credit note").click()
            page.get_by_role("heading", name=re.compile("CN-0001")).wait_for()
            shot(page, "78-credit-note")
            page.get_by_role("link", name=re.compile(invoice["id"] + "|INV-0001")).first.click()
            assert "CN-0001" in page.get_by_role("main").inner_text()
        finally:
            browser.close()
    assert api.get(f"/invoices/{invoice['id']}").json()["data"]["amount_due"] == 60000


def test_a_person_records_part_of_a_payment_reverses_it_and_reads_receivables(origin):
    from datetime import UTC, datetime, timedelta

    from playwright.sync_api import sync_playwright

    tenant = make_tenant(None)
    api = httpx.Client(base_url=f"{origin}/api/v1", headers={"Authorization": f"Bearer {tenant.key}"})
    customer = api.post("/customers", json={"name": "Umbrella Corp", "email": "ap@umbrella.example"}).json()["data"]
    due = datetime.now(UTC).date() - timedelta(days=10)  # 1–30 days overdue
    invoice = api.post("/invoices", headers={"Idempotency-Key": "py-draft"}, json={
        "customer": customer["id"], "issue_date": (due - timedelta(days=30)).isoformat(), "due_date": due.isoformat(),
        "items": [{"description": "Audit", "unit_amount": 100000, "tax_rate": 20}]}).json()["data"]
    api.post(f"/invoices/{invoice['id']}/finalize", headers={"Idempotency-Key": "py-finalize"})

    with sync_playwright() as playwright:
        browser, page = browser_page(playwright, DESKTOP)
        try:
            sign_in(page, origin, tenant.user_email)
            page.goto(f"{origin}/invoices/{invoice['id']}")
            assert page.get_by_label("Amount received (USD)").input_value() == "1200.00"  # what is due
            page.get_by_label("Amount received (USD)").fill("400.00")
            page.get_by_label("Method").select_option(label="Cheque")
            page.get_by_label("Reference").fill("Cheque 000123")
            page.get_by_role("button", name="Record payment").click()
            page.wait_for_url(re.compile("notice=payment_recorded"))
            assert "Overdue, part paid" in page.locator("h1").inner_text()
            assert "-400.00 USD" in page.locator("table.totals").inner_text()
            shot(page, "79-invoice-part-paid")

            page.get_by_role("link", name=re.compile("Reverse the payment of 400.00 USD")).click()
            page.get_by_label("Reason").fill("The cheque bounced")
            shot(page, "80-confirm-reverse-payment")
            page.get_by_role("button", name="Reverse payment").click()
            page.wait_for_url(re.compile("notice=payment_reversed"))
            assert "The cheque bounced" in page.get_by_role("region", name="Payments").inner_text()

            page.get_by_role("navigation", name="Main").get_by_role("link", name="Receivables").click()
            chart = page.get_by_role("table", name="Age of what is owed in USD")
            assert "1,200.00 USD" in chart.get_by_role("row", name=re.compile("1–30 days overdue")).inner_text()
            assert "Umbrella Corp" in page.get_by_role("region", name="By customer").inner_text()
            shot(page, "81-receivables")
        finally:
            browser.close()
    assert api.get(f"/invoices/{invoice['id']}").json()["data"]["amount_due"] == 120000
