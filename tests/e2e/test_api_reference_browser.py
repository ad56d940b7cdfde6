"""The API reference at /api/v1/docs as a person sees it in Chromium: the operations render from
the OpenAPI document, and no request leaves the service's origin."""

from __future__ import annotations

import pytest

from tests.e2e.test_browser import SCREENSHOTS, page, pytestmark  # noqa: F401  (fixture and markers)


def test_the_reference_renders_every_tag_and_loads_nothing_from_elsewhere(page, live_server):  # noqa: F811
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(f"{live_server}/api/v1/docs")
    page.get_by_text("Create a draft invoice").first.wait_for()
    for tag in ("Business", "Customers", "Products", "Prices", "Invoices", "Invoice items", "Webhook endpoints"):
        assert page.locator(f"h3#operations-tag-{tag.replace(' ', '_')}").count() == 1, tag
    page.screenshot(path=str(SCREENSHOTS / "40-api-reference.png"), full_page=True)  # Swagger UI: not our markup
    assert requested and all(url.startswith(live_server) or url.startswith("data:") for url in requested), requested


def test_an_operation_opens_with_its_description_and_example(page, live_server):  # noqa: F811
    page.goto(f"{live_server}/api/v1/docs#/Invoices/finalize_invoice")
    page.get_by_text("Assigns the next number").wait_for()
    assert page.get_by_text("invoices:finalize").count() >= 1
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("#operations-Invoices-finalize_invoice").scroll_into_view_if_needed()
    page.screenshot(path=str(SCREENSHOTS / "41-api-reference-operation.png"))  # the viewport: the operation's top


@pytest.fixture
def live_server(live_server_factory):
    return live_server_factory()
