"""The invoice documents as their reader sees them: the public page in Chromium at desktop and
phone widths, the HTML e-mail as the SMTP server received it, and the PDF as an image (pdftoppm).
With `INVOICING_SCREENSHOTS=docs/screenshots` they refresh the committed pictures."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid

import httpx
import pytest

from tests.conftest import make_tenant
from tests.e2e.test_browser import CHROMIUM, CHROMIUM_ARGS, SCREENSHOTS, pytestmark, shot  # noqa: F401

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


@pytest.fixture(scope="module")
def origin(test_settings, tmp_path_factory, mailbox):
    """One server for the module, sending through the test SMTP server."""
    from tests.e2e.conftest import LiveServers

    servers = LiveServers(test_settings, tmp_path_factory.mktemp("documents"))
    yield servers(SMTP_URL=mailbox[1])
    servers.stop_all()


@pytest.fixture
def sent(origin, mailbox):
    """A realistic invoice from a British business to a German customer, sent by e-mail (every test's
    records are removed after it)."""
    handler, _ = mailbox
    tenant = make_tenant(None)
    api = httpx.Client(base_url=f"{origin}/api/v1", headers={"Authorization": f"Bearer {tenant.key}"})
    customer = api.post("/customers", json={
        "name": "Northwind Handels GmbH", "email": "buchhaltung@northwind.example", "tax_id": "DE123456789",
        "address": {"line1": "Hauptstraße 5", "line2": "Hinterhaus", "city": "Berlin", "postal_code": "10115",
                    "country": "DE"}}).raise_for_status().json()["data"]
    items = [
        {"description": "Discovery workshop and written recommendations for the new billing platform, "
                        "including two follow-up calls", "quantity": 3, "unit": "DAY", "unit_amount": 80000,
         "discount_percent": 10, "tax_rate": 20},
        {"description": "Hosting (months)", "quantity": 1.5, "unit": "MON", "unit_amount": 1500, "tax_rate": 20},
        {"description": "Printed manuals", "quantity": 10, "unit": "PCS", "unit_amount": 1200, "tax_rate": 0},
    ]
    invoice = api.post("/invoices", headers={"Idempotency-Key": uuid.uuid4().hex}, json={
        "customer": customer["id"], "currency": "USD", "items": items,
        "description": "Work for November as agreed in the statement of work of 2 October 2026.",
        "footer": "Payment within 30 days by bank transfer. Please quote the invoice number."}).raise_for_status()
    invoice_id = invoice.json()["data"]["id"]
    response = api.post(f"/invoices/{invoice_id}/send", headers={"Idempotency-Key": uuid.uuid4().hex},
                        json={"message": "Thank you for a great month working together."})
    response.raise_for_status()
    return {"origin": origin, "invoice": response.json()["data"], "message": handler.received[-1].message}


def browser_page(playwright, viewport):
    browser = playwright.chromium.launch(executable_path=str(CHROMIUM if CHROMIUM.exists() else
                                                             shutil.which("chromium")), args=CHROMIUM_ARGS)
    return browser, browser.new_context(viewport=viewport).new_page()


@pytest.mark.parametrize("name, viewport", [("31-public-invoice-desktop", DESKTOP), ("32-public-invoice-phone", PHONE)])
def test_the_public_page_shows_every_amount_at_its_width(sent, name, viewport):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser, page = browser_page(playwright, viewport)
        try:
            page.goto(sent["invoice"]["public_url"])
            shot(page, name)
            for amount in ("2,160.00 USD", "22.50 USD", "120.00 USD", "2,739.00 USD"):
                assert page.get_by_text(amount, exact=True).first.is_visible(), amount
            assert page.get_by_role("link", name="Sign in").count() == 0
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= viewport["width"], f"the page scrolls sideways: {width}px"
        finally:
            browser.close()


def test_long_unbroken_texts_wrap_on_a_phone(origin):
    from playwright.sync_api import sync_playwright

    tenant = make_tenant(None)
    api = httpx.Client(base_url=f"{origin}/api/v1", headers={"Authorization": f"Bearer {tenant.key}"})
    customer = api.post("/customers", json={"name": "N" * 256}).raise_for_status().json()["data"]
    word = "Supercalifragilistic" * 50
    invoice = api.post("/invoices", headers={"Idempotency-Key": uuid.uuid4().hex}, json={
        "customer": customer["id"], "description": word, "footer": word,
        "items": [{"description": word, "unit_amount": 100}]}).raise_for_status().json()["data"]
    opened = api.post(f"/invoices/{invoice['id']}/finalize", headers={"Idempotency-Key": uuid.uuid4().hex})
    with sync_playwright() as playwright:
        browser, page = browser_page(playwright, PHONE)
        try:
            page.goto(opened.raise_for_status().json()["data"]["public_url"])
            assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        finally:
            browser.close()


def test_the_html_email_renders_with_its_button(sent, tmp_path):
    from playwright.sync_api import sync_playwright

    html = sent["message"].get_body(("html",)).get_content()
    path = tmp_path / "email.html"
    path.write_text(html)
    with sync_playwright() as playwright:
        browser, page = browser_page(playwright, {"width": 700, "height": 900})
        try:
            page.goto(path.as_uri())
            button = page.get_by_role("link", name="View invoice")
            assert button.is_visible() and button.get_attribute("href") == sent["invoice"]["public_url"]
            assert page.get_by_text("Thank you for a great month working together.").is_visible()
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "33-invoice-email.png"), full_page=True)
        finally:
            browser.close()


@pytest.mark.skipif(shutil.which("pdftoppm") is None and os.environ.get("CI") != "true",
                    reason="pdftoppm (poppler-utils) is not installed")
def test_the_pdf_renders_to_an_image(sent, tmp_path):
    [attachment] = sent["message"].iter_attachments()
    pdf = tmp_path / "invoice.pdf"
    pdf.write_bytes(attachment.get_content())
    subprocess.run(["pdftoppm", "-png", "-r", "80", "-singlefile", str(pdf), str(tmp_path / "page")], check=True)
    image = (tmp_path / "page.png").read_bytes()
    assert image.startswith(b"\x89PNG") and len(image) > 20_000
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    (SCREENSHOTS / "30-invoice-pdf.png").write_bytes(image)
