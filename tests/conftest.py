"""Test set-up shared by every test.

The database is SQLite (a fresh file per run) unless INVOICING_TEST_DATABASE_URL names another,
for example PostgreSQL. Migrations run once per run; tables are emptied after each test.
"""

from __future__ import annotations

import functools
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError
from sqlmodel import SQLModel
from starlette.testclient import TestClient

from config.settings import Settings, set_settings
from core.base import db

TEST_ORIGIN = "http://testserver"


def _database_url(tmp: Path) -> str:
    url = os.environ.get("INVOICING_TEST_DATABASE_URL")
    if not url:
        return f"sqlite:///{tmp}/test.db"
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return _worker_database(url, worker) if worker else url


def _worker_database(url: str, worker: str) -> str:
    """Each pytest-xdist worker gets a database of its own on the same server."""
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url
    server = make_url(url)
    name = f"{server.database}_{worker}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return server.set(database=name).render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("var")


@pytest.fixture(scope="session")
def test_settings(data_dir) -> Settings:
    settings = Settings(
        database_url=_database_url(data_dir), origin=TEST_ORIGIN, secret_key="test-secret-key",
        data_dir=data_dir, unsafe_webhook_allow_hosts="127.0.0.1,localhost",
    )
    set_settings(settings)
    db.reset_engine()
    from service.migrate import upgrade
    upgrade()
    yield settings
    db.reset_engine()


def _empty_tables(attempts: int = 5) -> None:
    """Empty every table, children first, in one transaction. DELETE rather than TRUNCATE on
    PostgreSQL: a TRUNCATE of every table costs a quarter of a second (it replaces each table's files),
    a DELETE of a test's few rows a few milliseconds, and it takes no lock a reader waits for. A live
    server's background jobs writing at that moment can still deadlock with it (PostgreSQL then
    cancels one side), so it is tried again: the jobs' write is over by then."""
    engine = db.get_engine()
    deletes = [f'DELETE FROM "{t.name}"' for t in reversed(SQLModel.metadata.sorted_tables)]
    for attempt in range(attempts):
        try:
            with engine.begin() as conn:
                if engine.dialect.name == "postgresql":
                    conn.execute(text("; ".join(deletes)))  # one round trip
                else:
                    for delete in deletes:
                        conn.execute(text(delete))
            return
        except OperationalError as exc:
            if "deadlock detected" not in str(exc.orig) or attempt == attempts - 1:
                raise


@pytest.fixture(autouse=True)
def clean_database(request, test_settings) -> Iterator[None]:
    set_settings(test_settings)
    yield
    _empty_tables()


@pytest.fixture(scope="session")
def app(test_settings):
    from service.app import create_app
    return create_app()


@pytest.fixture
def client(app) -> Iterator[TestClient]:
    with TestClient(app, base_url=TEST_ORIGIN) as test_client:
        yield test_client


@dataclass
class Tenant:
    """An account with a business profile and a key, and a client that sends that key."""

    account_id: uuid.UUID
    user_email: str
    key: str
    key_id: uuid.UUID
    client: TestClient

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    def request(self, method: str, path: str, *, idem: str | bool | None = None, headers=None, **kw):
        all_headers = dict(self.headers)
        if idem:
            all_headers["Idempotency-Key"] = idem if isinstance(idem, str) else uuid.uuid4().hex
        all_headers.update(headers or {})
        return self.client.request(method, "/api/v1" + path, headers=all_headers, **kw)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, json=None, **kw):
        return self.request("POST", path, json=json, **kw)

    def patch(self, path, json=None, **kw):
        return self.request("PATCH", path, json=json, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)

    def key_with(self, scopes: list[str]) -> str:
        from core.access import apikeys
        with db.transaction() as session:
            return apikeys.create_key(session, self.account_id, created_by=_owner_id(session, self.account_id),
                                      name="scoped", scopes=scopes).key

    def as_key(self, key: str) -> Tenant:
        return Tenant(self.account_id, self.user_email, key, self.key_id, self.client)


BUSINESS = {
    "legal_name": "Acme Trading Ltd", "trade_name": "Acme", "country_code": "GB", "currency": "USD",
    "tax_id": "GB123456789", "email": "billing@acme.test", "phone": "+44 20 7946 0000",
    "address": {"line1": "1 High Street", "city": "London", "postal_code": "EC1A 1AA",
                "country_code": "GB", "country": "United Kingdom"},
    "bank": {"bank_name": "Bank", "account_name": "Acme Trading Ltd", "account_number": "12345678",
             "routing_number": "12-34-56"},
    "invoice_prefix": "INV",
}


OWNER_PASSWORD = "correct horse battery"


def _cheapest_hasher():
    from argon2 import PasswordHasher
    return PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)


@functools.cache
def owner_password_hash() -> str:
    """The argon2 hash of the owners' password, made once per test process (at the cheapest cost, as
    `cheap_password_hashing`)."""
    return _cheapest_hasher().hash(OWNER_PASSWORD)


@pytest.fixture(autouse=True)
def cheap_password_hashing(request, monkeypatch):
    """Argon2 at its smallest cost in the tests' own process: the service's cost takes a tenth of a
    second of both cores for every hash and every sign-in, and the tests sign up and sign in thousands
    of times (the sign-in protection alone counts dozens of guesses a test). What is tested is the same
    code with the same algorithm; a hash carries its own parameters. Servers the tests start as
    processes keep the service's cost, and tests marked `service_password_cost` check it."""
    if request.node.get_closest_marker("service_password_cost"):
        return
    from core.access import accounts, sign_in
    monkeypatch.setattr(accounts, "_hasher", _cheapest_hasher())
    monkeypatch.setattr(sign_in, "_dummy_hash", None)


def _owner_id(session, account_id):
    from core.access import accounts
    return accounts.owner_of(session, account_id).id


def make_tenant(client: TestClient, *, scopes=None, business: dict | None = BUSINESS,
                verified: bool = True, email: str | None = None) -> Tenant:
    from core.access import accounts, apikeys
    from core.access.scopes import ALL_SCOPES
    from core.billing.business import BusinessInput, set_profile
    email = email or f"owner-{uuid.uuid4().hex[:8]}@example.com"
    with db.transaction() as session:
        user, account = accounts.create_account(session, email=email, password_hash=owner_password_hash())
        if verified:
            accounts.mark_email_verified(session, user)
        if business is not None:
            set_profile(session, account.id, BusinessInput.model_validate(business))
        created = apikeys.create_key(session, account.id, created_by=user.id, name="test", scopes=list(scopes or ALL_SCOPES))
    return Tenant(account.id, email, created.key, created.row.id, client)


@pytest.fixture
def tenant(client) -> Tenant:
    return make_tenant(client)


def second_business(client: TestClient, of: Tenant, *, business: dict | None = BUSINESS) -> Tenant:
    """Another business of the same person as `of` (its owner too), with a key of its own."""
    from core.access import accounts, apikeys, memberships
    from core.access.scopes import ALL_SCOPES
    from core.billing.business import BusinessInput, set_profile
    with db.transaction() as session:
        user = accounts.user_by_email(session, of.user_email)
        account = memberships.create_business(session, user)
        if business is not None:
            set_profile(session, account.id, BusinessInput.model_validate({**business, "legal_name": "Second Ltd",
                                                                           "trade_name": "Second"}))
        created = apikeys.create_key(session, account.id, created_by=user.id, name="second", scopes=list(ALL_SCOPES))
    return Tenant(account.id, of.user_email, created.key, created.row.id, client)


@pytest.fixture(params=["another_person", "same_person"])
def other_tenant(request, client, tenant) -> Tenant:
    """Another business: of another person, or (isolation holds between one person's businesses too)
    a second business of the tenant's own person."""
    if request.param == "same_person":
        return second_business(client, tenant)
    return make_tenant(client)


@pytest.fixture
def tenant_factory(client):
    return lambda **kw: make_tenant(client, **kw)


@pytest.fixture
def browser(client, tenant):
    """The in-process client with the tenant's owner signed in (a session cookie), for OAuth pages."""
    from tests.oauth_flow import sign_in
    sign_in(client, tenant.user_email)
    return client
