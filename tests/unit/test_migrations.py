"""The migrations build exactly the schema the models describe (no drift either way)."""

import uuid
from datetime import timedelta

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlmodel import SQLModel

import authz.models  # noqa: F401  (its tables belong to the metadata)
import core.models  # noqa: F401
from core.base import db
from core.base.clock import now
from service.migrate import alembic_config


# SQLite cannot reflect expression indexes (the trigram indexes are PostgreSQL's alone anyway).
@pytest.mark.filterwarnings("ignore:autogenerate skipping metadata-specified expression-based index")
def test_the_migrated_schema_matches_the_models(test_settings):
    with db.get_engine().connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), SQLModel.metadata)
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
