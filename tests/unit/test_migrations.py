"""The migrations build exactly the schema the models describe (no drift either way)."""

import uuid
from datetime import timedelta

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
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

FINALIZE = [{"type": "invoice_actions", "actions": ["finalize"], "max_amount": {"currency": "USD", "amount": 100000}}]
SEND = [{"type": "invoice_actions", "actions": ["send"], "max_per_day": 1}]
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


class Before0008:
    """A database of its own (SQLite) at revision 0007 with one person and their business."""

    def __init__(self, path) -> None:
        self.engine = sa.create_engine(f"sqlite:///{path}")
        migrate(self.engine, "0007")
        self.user, self.account, self.made = uuid.uuid4(), uuid.uuid4(), 0
        with self.engine.begin() as connection:
            connection.execute(sa.text("INSERT INTO users (id, email, password_hash, created_at) "
                                       "VALUES (:id, 'a@example.com', 'x', '2026-01-01')"), {"id": self.user.hex})
            connection.execute(sa.text("INSERT INTO accounts (id, owner_user_id, created_at) "
                                       "VALUES (:id, :user, '2026-01-01')"), {"id": self.account.hex, "user": self.user.hex})

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


@pytest.fixture
def before_0008(tmp_path):
    database = Before0008(tmp_path / "before-0008.db")
    yield database
    database.engine.dispose()


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
    unlimited_send = [{"type": "invoice_actions", "actions": ["send"]}]
    revoked = before_0008.grant("cl_books", ["invoices:send"], unlimited_send, revoked=True)
    other_app = before_0008.grant("cl_other", ["invoices:send"], SEND)
    migrate(before_0008.engine, "0008")
    with before_0008.engine.connect() as connection:
        held = dict(connection.execute(sa.select(GRANTS.c.id, GRANTS.c.authorization_details)).all())
    assert [held[grant_id] for grant_id in side_by_side] == [SEND + FINALIZE] * 3
    assert held[revoked] == unlimited_send and held[other_app] == SEND


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
