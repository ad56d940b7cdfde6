"""The migrations build exactly the schema the models describe (no drift either way)."""

import os
import uuid
from contextlib import contextmanager
from datetime import timedelta

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.engine import make_url
from sqlmodel import Session, SQLModel

import authz.models  # noqa: F401  (its tables belong to the metadata)
import core.models  # noqa: F401
from core.base import db
from core.base.clock import now
from core.catalog import name_search
from core.models import Customer, Product
from service.migrate import alembic_config


# SQLite cannot reflect expression indexes (the trigram indexes are PostgreSQL's alone anyway).
# SQLite's trigram index of names (FTS5 tables and their keys, migration 0009) has no model.
@pytest.mark.filterwarnings("ignore:autogenerate skipping metadata-specified expression-based index")
def test_the_migrated_schema_matches_the_models(test_settings):
    with db.get_engine().connect() as connection:
        context = MigrationContext.configure(connection, opts={"include_name": name_search.has_a_model})
        differences = compare_metadata(context, SQLModel.metadata)
    assert differences == []



# --- 0008: one set of limits per app, person and business (issue 33) ---------------------------------

FINALIZE = [{"type": "invoice_actions", "actions": ["finalize", "void"], "max_amount": {"currency": "USD", "amount": 100000}}]
SEND = [{"type": "invoice_actions", "actions": ["send"], "max_per_day": 1}]
UNLIMITED_SEND = [{"type": "invoice_actions", "actions": ["send"]}]
GRANTS = sa.table("oauth_grants", *(sa.column(name, type_) for name, type_ in [
    ("id", sa.Uuid()), ("client_id", sa.String()), ("user_id", sa.Uuid()), ("account_id", sa.Uuid()),
    ("resource", sa.String()), ("scopes", sa.JSON()), ("authorization_details", sa.JSON()),
    ("created_at", db.UTCDateTime()), ("revoked_at", db.UTCDateTime())]))
ACTIONS = sa.table("delegated_actions", *(sa.column(name, type_) for name, type_ in [
    ("id", sa.Uuid()), ("account_id", sa.Uuid()), ("grant_id", sa.Uuid()), ("action", sa.String()),
    ("via", sa.String()), ("invoice_id", sa.Uuid()), ("invoice_label", sa.String()), ("amount", sa.Integer()),
    ("currency", sa.String()), ("outcome", sa.String()), ("created_at", db.UTCDateTime()),
    ("client_id", sa.String()), ("user_id", sa.Uuid())]))


def migrate(engine, revision: str) -> None:
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


USERS = sa.table("users", sa.column("id", sa.Uuid()), sa.column("email", sa.String()),
                 sa.column("password_hash", sa.String()), sa.column("created_at", db.UTCDateTime()))
ACCOUNTS = sa.table("accounts", sa.column("id", sa.Uuid()), sa.column("owner_user_id", sa.Uuid()),
                    sa.column("created_at", db.UTCDateTime()))


@contextmanager
def own_database(tmp_path, name: str):
    """An empty database of its own: on the PostgreSQL server when INVOICING_TEST_DATABASE_URL names
    one (dropped afterwards), else an SQLite file."""
    url = os.environ.get("INVOICING_TEST_DATABASE_URL", "")
    if not url.startswith("postgresql"):
        engine = sa.create_engine(f"sqlite:///{tmp_path / name}.db")
        yield engine
        engine.dispose()
        return
    server = make_url(url)
    database = f"{server.database}_{name}_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(sa.text(f'CREATE DATABASE "{database}"'))
    engine = sa.create_engine(server.set(database=database))
    try:
        yield engine
    finally:
        engine.dispose()
        with admin.connect() as connection:
            connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
        admin.dispose()


class Before0008:
    """A database of its own (SQLite, or PostgreSQL when the tests run on it) at revision 0007 with one
    person and their business."""

    def __init__(self, engine) -> None:
        self.engine = engine
        migrate(self.engine, "0007")
        self.user, self.account, self.made = uuid.uuid4(), uuid.uuid4(), 0
        with self.engine.begin() as connection:
            connection.execute(USERS.insert().values(id=self.user, email="a@example.com", password_hash="x",
                                                     created_at=now()))
            connection.execute(ACCOUNTS.insert().values(id=self.account, owner_user_id=self.user, created_at=now()))

    def grant(self, client_id: str, scopes: list[str], details: list | None, *, revoked: bool = False) -> uuid.UUID:
        """A grant of the person, made after the ones before."""
        grant_id, self.made = uuid.uuid4(), self.made + 1
        with self.engine.begin() as connection:
            connection.execute(GRANTS.insert().values(
                id=grant_id, client_id=client_id, user_id=self.user, account_id=self.account, resource="r",
                scopes=scopes, authorization_details=details, created_at=now() + timedelta(seconds=self.made),
                revoked_at=now() if revoked else None))
        return grant_id

    def action(self, grant_id: uuid.UUID) -> None:
        with self.engine.begin() as connection:
            connection.execute(ACTIONS.insert().values(
                id=uuid.uuid4(), account_id=self.account, grant_id=grant_id, action="finalize", via="MCP",
                invoice_id=uuid.uuid4(), invoice_label="INV-1", amount=100, currency="USD", outcome="done",
                created_at=now()))


    def limits(self) -> dict[uuid.UUID, list | None]:
        """Each grant's authorization details, by its id."""
        with self.engine.connect() as connection:
            return dict(connection.execute(sa.select(GRANTS.c.id, GRANTS.c.authorization_details)).all())


@pytest.fixture
def before_0008(tmp_path):
    with own_database(tmp_path, "before_0008") as engine:
        yield Before0008(engine)


def test_0008_names_the_app_and_person_of_actions_recorded_before(before_0008):
    before_0008.action(before_0008.grant("cl_books", ["invoices:finalize"], None))
    migrate(before_0008.engine, "0008")
    with before_0008.engine.connect() as connection:
        assert connection.execute(sa.select(ACTIONS.c.client_id, ACTIONS.c.user_id)).one() == ("cl_books",
                                                                                              before_0008.user)


def test_0008_gives_the_grants_of_one_app_standing_side_by_side_the_apps_limits(before_0008):
    side_by_side = [before_0008.grant("cl_books", ["invoices:finalize"], FINALIZE),
                    before_0008.grant("cl_books", ["invoices:read"], None),
                    before_0008.grant("cl_books", ["invoices:send"], SEND)]
    revoked = before_0008.grant("cl_books", ["invoices:send"], UNLIMITED_SEND, revoked=True)
    other_app = before_0008.grant("cl_other", ["invoices:send"], SEND)
    migrate(before_0008.engine, "0008")
    held = before_0008.limits()
    assert [held[grant_id] for grant_id in side_by_side] == [FINALIZE + SEND] * 3
    assert held[revoked] == UNLIMITED_SEND and held[other_app] == SEND


def test_0008_keeps_an_older_grants_limit_beside_a_later_grant_without_any(before_0008):
    """The review's case: MCP may finalize up to 1,000 USD; a later REST grant of the app, whose consent
    page did not start from the MCP grant's limits, has none. Its scopes alone allowed finalizing
    without limit; the MCP grant's tokens must not gain that."""
    mcp = before_0008.grant("cl_books", ["invoices:read", "invoices:finalize"], FINALIZE)
    rest = before_0008.grant("cl_books", ["invoices:read", "invoices:finalize", "invoices:send"], None)
    migrate(before_0008.engine, "0008")
    held = before_0008.limits()
    assert held[mcp] == held[rest] == FINALIZE + UNLIMITED_SEND


def test_0008_keeps_the_strictest_limit_of_each_action(before_0008):
    limit = lambda actions, **fields: {"type": "invoice_actions", "actions": actions, **fields}  # noqa: E731
    grants = [before_0008.grant("cl_books", ["invoices:finalize", "invoices:send"],
                                [limit(["finalize", "void"], max_amount={"currency": "USD", "amount": 100000},
                                       max_per_day=5), limit(["send"], max_per_day=1)]),
              before_0008.grant("cl_books", ["invoices:finalize"],
                                [limit(["finalize", "void"], max_amount={"currency": "USD", "amount": 50000})]),
              before_0008.grant("cl_books", ["invoices:finalize", "invoices:send"],
                                [limit(["finalize", "void"], max_per_day=3), limit(["send"])])]
    migrate(before_0008.engine, "0008")
    held = before_0008.limits()
    assert [held[grant_id] for grant_id in grants] == [[
        limit(["finalize", "void"], max_amount={"currency": "USD", "amount": 50000}, max_per_day=3),
        limit(["send"], max_per_day=1)]] * 3


def test_0008_shows_what_no_invoice_could_meet_as_0_a_day(before_0008):
    grants = [before_0008.grant("cl_books", ["invoices:finalize"], FINALIZE),
              before_0008.grant("cl_books", ["invoices:finalize"], [
                  {"type": "invoice_actions", "actions": ["finalize", "void"],
                   "max_amount": {"currency": "EUR", "amount": 90000}}])]
    migrate(before_0008.engine, "0008")
    held = before_0008.limits()
    assert [held[grant_id] for grant_id in grants] == [[
        {"type": "invoice_actions", "actions": ["finalize", "void"], "max_per_day": 0}]] * 2


# --- 0009: SQLite's trigram index of names (issue 34) -----------------------------------------------


class Before0009:
    """A database of its own (SQLite) at revision 0008 with one person and their business."""

    def __init__(self, path) -> None:
        self.engine = sa.create_engine(f"sqlite:///{path}")
        migrate(self.engine, "0008")
        self.user, self.account = uuid.uuid4(), uuid.uuid4()
        with self.engine.begin() as connection:
            connection.execute(sa.text("INSERT INTO users (id, email, password_hash, created_at) "
                                       "VALUES (:id, 'a@example.com', 'x', '2026-01-01')"), {"id": self.user.hex})
            connection.execute(sa.text("INSERT INTO accounts (id, owner_user_id, created_at) "
                                       "VALUES (:id, :user, '2026-01-01')"), {"id": self.account.hex, "user": self.user.hex})

    def add(self, model, *names: str) -> list[uuid.UUID]:
        with Session(self.engine, expire_on_commit=False) as session, session.begin():
            rows = [model(account_id=self.account, name=name) for name in names]
            session.add_all(rows)
        return [row.id for row in rows]

    def search(self, model, typed: str) -> tuple[set, str]:
        with Session(self.engine) as session:
            statement = name_search.of_account(session, model, self.account, typed)
            return {row.id for row in session.scalars(statement)}, str(statement.compile(self.engine))

    def objects(self) -> set[str]:
        with self.engine.connect() as connection:
            return set(connection.scalars(sa.text("SELECT name FROM sqlite_master WHERE name LIKE '%name_fts%' "
                                                  "OR name LIKE '%name_keys%'")))


@pytest.fixture
def before_0009(tmp_path):
    database = Before0009(tmp_path / "before-0009.db")
    yield database
    database.engine.dispose()


@pytest.mark.parametrize("model", [Customer, Product])
def test_0009_indexes_the_names_of_rows_made_before(before_0009, model):
    wanted = before_0009.add(model, "Northwind Traders", "NORTHWIND LTD")
    before_0009.add(model, "Southwind", "Contoso")
    migrate(before_0009.engine, "0009")
    found, statement = before_0009.search(model, "northwind")
    assert found == set(wanted) and "MATCH" in statement
    later = before_0009.add(model, "Northwind again")
    assert before_0009.search(model, "northwind")[0] == set(wanted + later)


def test_0009_without_fts5_trigrams_leaves_the_search_reading_the_account(before_0009, monkeypatch):
    monkeypatch.setattr(name_search, "trigram_available", lambda _connection: False)
    wanted = before_0009.add(Customer, "Northwind Traders")
    migrate(before_0009.engine, "0009")
    assert before_0009.objects() == set()
    found, statement = before_0009.search(Customer, "northwind")
    assert found == set(wanted) and "MATCH" not in statement


def test_0009_downgrade_removes_the_index_and_its_triggers(before_0009):
    migrate(before_0009.engine, "0009")
    assert before_0009.objects()
    with before_0009.engine.begin() as connection:
        config = alembic_config()
        config.attributes["connection"] = connection
        command.downgrade(config, "0008")
    assert before_0009.objects() == set()
    wanted = before_0009.add(Customer, "Northwind Traders")
    assert before_0009.search(Customer, "northwind")[0] == set(wanted)


# --- 0011: payments (issue 36) --------------------------------------------------------------------

CUSTOMERS = sa.table("customers", *(sa.column(name, type_) for name, type_ in [
    ("id", sa.Uuid()), ("account_id", sa.Uuid()), ("name", sa.String()), ("created", db.UTCDateTime()),
    ("updated", db.UTCDateTime())]))
INVOICES = sa.table("invoices", *(sa.column(name, type_) for name, type_ in [
    ("id", sa.Uuid()), ("account_id", sa.Uuid()), ("customer_id", sa.Uuid()), ("number", sa.String()),
    ("status", sa.String()), ("currency", sa.String()), ("collection_method", sa.String()),
    ("issue_date", sa.Date()), ("subtotal", sa.BigInteger()), ("discount", sa.BigInteger()),
    ("taxable", sa.BigInteger()), ("tax", sa.BigInteger()), ("total", sa.BigInteger()),
    ("amount_credited", sa.BigInteger()), ("balance_applied", sa.BigInteger()), ("paid_at", db.UTCDateTime()),
    ("payment_reference", sa.String()), ("created", db.UTCDateTime()), ("updated", db.UTCDateTime())]))
PAYMENTS = sa.table("payments", *(sa.column(name, type_) for name, type_ in [
    ("invoice_id", sa.Uuid()), ("invoice_number", sa.String()), ("amount", sa.BigInteger()),
    ("amount_applied", sa.BigInteger()), ("method", sa.String()), ("reference", sa.String()),
    ("paid_at", db.UTCDateTime()), ("status", sa.String())]))


class Before0011(Before0008):
    """A database at revision 0010 with one person, their business and a customer."""

    def __init__(self, engine) -> None:
        super().__init__(engine)
        migrate(self.engine, "0010")
        self.customer = uuid.uuid4()
        with self.engine.begin() as connection:
            connection.execute(CUSTOMERS.insert().values(id=self.customer, account_id=self.account, name="C",
                                                         created=now(), updated=now()))

    def invoice(self, status: str, total: int, *, credited: int = 0, balance: int = 0, reference: str | None = None,
                paid_at=None) -> uuid.UUID:
        invoice_id = uuid.uuid4()
        with self.engine.begin() as connection:
            connection.execute(INVOICES.insert().values(
                id=invoice_id, account_id=self.account, customer_id=self.customer, number=f"INV-{invoice_id.hex[:4]}",
                status=status, currency="EUR", collection_method="send_invoice", issue_date=now().date(), subtotal=total,
                discount=0, taxable=total, tax=0, total=total, amount_credited=credited, balance_applied=balance,
                paid_at=paid_at, payment_reference=reference, created=now(), updated=now()))
        return invoice_id

    def paid(self, invoice_id: uuid.UUID) -> tuple[int, list]:
        with self.engine.connect() as connection:
            amount_paid = connection.execute(sa.select(sa.column("amount_paid")).select_from(INVOICES)
                                             .where(INVOICES.c.id == invoice_id)).scalar_one()
            made = connection.execute(sa.select(PAYMENTS.c.amount, PAYMENTS.c.amount_applied, PAYMENTS.c.method,
                                                PAYMENTS.c.reference, PAYMENTS.c.paid_at, PAYMENTS.c.status)
                                      .where(PAYMENTS.c.invoice_id == invoice_id)).all()
        return amount_paid, [tuple(row) for row in made]


@pytest.fixture
def before_0011(tmp_path):
    with own_database(tmp_path, "before_0011") as engine:
        yield Before0011(engine)


def test_0011_gives_an_invoice_marked_paid_the_payment_of_what_remained_due(before_0011):
    moment = now().replace(microsecond=0)
    invoice = before_0011.invoice("paid", 5000, credited=1000, balance=500, reference="TRF-9", paid_at=moment)
    migrate(before_0011.engine, "0011")
    assert before_0011.paid(invoice) == (4000, [(3500, 3500, "other", "TRF-9", moment, "recorded")])


def test_0011_counts_the_balance_applied_as_paid_and_makes_no_payment_for_it(before_0011):
    invoice = before_0011.invoice("open", 5000, balance=1200)
    migrate(before_0011.engine, "0011")
    assert before_0011.paid(invoice) == (1200, [])


def test_0011_makes_no_payment_for_an_invoice_credit_notes_settled(before_0011):
    invoice = before_0011.invoice("paid", 5000, credited=5000, paid_at=now())
    migrate(before_0011.engine, "0011")
    assert before_0011.paid(invoice) == (0, [])


def test_0011_downgrade_gives_a_paid_invoice_back_its_latest_payments_reference(before_0011):
    invoice = before_0011.invoice("paid", 5000, reference="TRF-9", paid_at=now())
    migrate(before_0011.engine, "0011")
    with before_0011.engine.begin() as connection:  # a later payment's reference, as payments would record it
        connection.execute(sa.text("UPDATE payments SET reference = 'TRF-10'"))
        config = alembic_config()
        config.attributes["connection"] = connection
        command.downgrade(config, "0010")
    with before_0011.engine.connect() as connection:
        assert connection.execute(sa.select(INVOICES.c.payment_reference).where(INVOICES.c.id == invoice)).scalar() \
            == "TRF-10"


# --- 0015: members and businesses (issue 39) -------------------------------------------------------

KEYS = sa.table("api_keys", *(sa.column(name, type_) for name, type_ in [
    ("id", sa.Uuid()), ("account_id", sa.Uuid()), ("name", sa.String()), ("lookup_id", sa.String()),
    ("secret_hash", sa.String()), ("scopes", sa.JSON()), ("created_at", db.UTCDateTime()),
    ("created_by_user_id", sa.Uuid())]))
EVENTS = sa.table("invoice_events", *(sa.column(name, type_) for name, type_ in [
    ("id", sa.Uuid()), ("account_id", sa.Uuid()), ("invoice_id", sa.Uuid()), ("type", sa.String()),
    ("meta", sa.JSON()), ("payload", sa.JSON()), ("created_at", db.UTCDateTime()), ("user_id", sa.Uuid())]))
MEMBERSHIPS = sa.table("memberships", *(sa.column(name, sa.Uuid()) for name in ("id", "account_id", "user_id")),
                       sa.column("role", sa.String()))


def test_0015_makes_each_accounts_creator_its_owner_and_of_its_keys_and_past_events(tmp_path):
    with own_database(tmp_path, "before_0015") as engine:
        before = Before0008(engine)  # one person and their business
        migrate(engine, "0014")
        key, app_person = uuid.uuid4(), uuid.uuid4()
        with engine.begin() as connection:
            connection.execute(USERS.insert().values(id=app_person, email="b@example.com", password_hash="x",
                                                     created_at=now()))
            connection.execute(KEYS.insert().values(id=key, account_id=before.account, name="k", lookup_id="abcd1234",
                                                    secret_hash="h", scopes=["invoices:read"], created_at=now()))
            for meta in ({"actor": "api_key", "api_key_id": str(key)}, {"actor": "oauth_app", "user_id": str(app_person)},
                         None):
                connection.execute(EVENTS.insert().values(
                    id=uuid.uuid4(), account_id=before.account, invoice_id=uuid.uuid4(), type="invoice.created",
                    meta=meta, payload={}, created_at=now()))
        migrate(engine, "0015")
        with engine.connect() as connection:
            [(membership_id, role, user)] = connection.execute(
                sa.select(MEMBERSHIPS.c.id, MEMBERSHIPS.c.role, MEMBERSHIPS.c.user_id)).all()
            assert (role, user) == ("owner", before.user) and membership_id != before.account
            assert connection.execute(sa.select(KEYS.c.created_by_user_id)).scalar_one() == before.user
            people = [row.user_id for row in connection.execute(sa.select(EVENTS.c.user_id, EVENTS.c.meta))]
            assert sorted(map(str, filter(None, people))) == sorted([str(before.user), str(app_person)])
            assert people.count(None) == 1  # the customer's
