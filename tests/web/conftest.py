"""Helpers for the page tests: a browser-like client that submits forms with their CSRF token."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.conftest import OWNER_PASSWORD, TEST_ORIGIN

PASSWORD = "correct horse battery staple"
CSRF_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_of(html: str) -> str:
    match = CSRF_FIELD.search(html)
    assert match, "the page has no CSRF field"
    return match.group(1)


@dataclass
class Browser:
    client: TestClient
    email: str = ""

    def get(self, path: str, **kw):
        return self.client.get(path, follow_redirects=False, **kw)

    def submit(self, path: str, data: dict | list | None = None, *, page: str | None = None):
        """Open `page` (default `path`), take its CSRF token and POST the form to `path`."""
        token = csrf_of(self.client.get(page or path).text)
        fields: dict[str, list[str]] = {}
        for name, value in (data.items() if isinstance(data, dict) else data or []):
            fields.setdefault(name, []).append(value)
        fields["csrf_token"] = [token]
        return self.client.post(path, data=fields, follow_redirects=False)

    def sign_up(self, email: str | None = None, password: str = PASSWORD, name: str = "Ada"):
        self.email = email or f"user-{uuid.uuid4().hex[:8]}@example.com"
        return self.submit("/signup", {"email": self.email, "password": password, "name": name})

    def sign_in(self, email: str, password: str = PASSWORD, next_path: str = "/"):
        self.email = email
        return self.submit("/login", {"email": email, "password": password, "next": next_path})


@pytest.fixture
def browser(client) -> Browser:
    return Browser(client)


@pytest.fixture
def other_browser(app) -> Browser:
    with TestClient(app, base_url=TEST_ORIGIN) as second:
        yield Browser(second)


@pytest.fixture
def signed_in(browser) -> Browser:
    assert browser.sign_up().status_code == 303
    return browser


BUSINESS_FORM = {
    "legal_name": "Acme Trading Ltd", "trade_name": "Acme", "country_code": "GB", "currency": "GBP",
    "tax_id": "GB123456789", "email": "billing@acme.test", "phone": "+44 20 7946 0000", "invoice_prefix": "ACM",
    "address.line1": "1 High Street", "address.city": "London", "address.postal_code": "EC1A 1AA",
    "address.country_code": "GB", "address.country": "United Kingdom",
    "bank.bank_name": "Bank", "bank.account_name": "Acme Trading Ltd", "bank.account_number": "12345678",
    "bank.routing_number": "12-34-56",
}


@pytest.fixture
def onboarded(signed_in) -> Browser:
    assert signed_in.submit("/onboarding", BUSINESS_FORM).status_code == 303
    return signed_in


def outbox_messages(outbox: Path, to: str) -> list[EmailMessage]:
    messages = [message_from_bytes(path.read_bytes(), policy=policy.default)
                for path in sorted(outbox.glob("*.eml"))] if outbox.exists() else []
    return [m for m in messages if m["To"] == to]


@pytest.fixture
def outbox(test_settings) -> Path:
    return test_settings.outbox_dir




@pytest.fixture
def person(client, tenant) -> Browser:
    """The owner of `tenant` (an account with a business profile and an API key), signed in."""
    browser = Browser(client)
    assert browser.sign_in(tenant.user_email, OWNER_PASSWORD).status_code == 303
    return browser
