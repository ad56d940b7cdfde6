"""members: several people per business and several businesses per person. Memberships with roles
(each account's creator its first owner), e-mailed invitations, the business a browser session acts
for, the person behind each API key and invoice event (past events too), and the activity of a business

Revision ID: 0015
Revises: 0014
"""
import uuid

import sqlalchemy as sa
import sqlmodel
from alembic import op

import core.base.db

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def _text(length: int) -> sa.Column:
    return sqlmodel.sql.sqltypes.AutoString(length=length)


def upgrade() -> None:
    op.create_table(
        "memberships",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("account_id", sa.Uuid(), sa.ForeignKey("accounts.id"), nullable=False),
        sa.Column("user_id", sa.Uuid(), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("role", _text(16), nullable=False),
        sa.Column("created_at", core.base.db.UTCDateTime(), nullable=False),
        sa.Column("updated_at", core.base.db.UTCDateTime(), nullable=False),
        sa.UniqueConstraint("account_id", "user_id"),
    )
    op.create_index("ix_memberships_user_id", "memberships", ["user_id"])
    # Every account's creator is its first owner, a member since the account began.
    connection = op.get_bind()
    accounts = sa.table("accounts", sa.column("id", sa.Uuid()), sa.column("owner_user_id", sa.Uuid()),
                        sa.column("created_at", core.base.db.UTCDateTime()))
    memberships = sa.table("memberships", *(sa.column(name, sa.Uuid()) for name in ("id", "account_id", "user_id")),
                           sa.column("role", sa.String()), sa.column("created_at", core.base.db.UTCDateTime()),
                           sa.column("updated_at", core.base.db.UTCDateTime()))
    owners = [{"id": uuid.uuid4(), "account_id": row.id, "user_id": row.owner_user_id, "role": "owner",
               "created_at": row.created_at, "updated_at": row.created_at}
              for row in connection.execute(sa.select(accounts))]
    if owners:
        connection.execute(memberships.insert(), owners)

    op.create_table(
        "invitations",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("account_id", sa.Uuid(), sa.ForeignKey("accounts.id"), nullable=False),
        sa.Column("email", _text(254), nullable=False),
        sa.Column("role", _text(16), nullable=False),
        sa.Column("token_hash", _text(64), nullable=False, unique=True),
        sa.Column("invited_by_user_id", sa.Uuid(), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("sent_count", sa.Integer(), nullable=False),
        sa.Column("created_at", core.base.db.UTCDateTime(), nullable=False),
        sa.Column("sent_at", core.base.db.UTCDateTime(), nullable=False),
        sa.Column("expires_at", core.base.db.UTCDateTime(), nullable=False),
        sa.Column("accepted_at", core.base.db.UTCDateTime(), nullable=True),
        sa.Column("accepted_by_user_id", sa.Uuid(), sa.ForeignKey("users.id"), nullable=True),
        sa.Column("revoked_at", core.base.db.UTCDateTime(), nullable=True),
    )
    op.create_index("ix_invitations_account_id", "invitations", ["account_id"])

    op.create_table(
        "activity",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("account_id", sa.Uuid(), sa.ForeignKey("accounts.id"), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=True),
        sa.Column("actor", _text(16), nullable=False),
        sa.Column("api_key_id", sa.Uuid(), nullable=True),
        sa.Column("client_id", _text(2048), nullable=True),
        sa.Column("client_name", _text(256), nullable=True),
        sa.Column("action", _text(64), nullable=False),
        sa.Column("summary", _text(1000), nullable=False),
        sa.Column("created_at", core.base.db.UTCDateTime(), nullable=False),
    )
    op.create_index("ix_activity_account_created", "activity", ["account_id", "created_at"])

    # Every key so far was made by its account's only person.
    with op.batch_alter_table("api_keys") as batch:
        batch.add_column(sa.Column("created_by_user_id", sa.Uuid(), nullable=True))
    op.execute(sa.text("UPDATE api_keys SET created_by_user_id = "
                       "(SELECT owner_user_id FROM accounts WHERE accounts.id = api_keys.account_id)"))
    with op.batch_alter_table("api_keys") as batch:
        batch.alter_column("created_by_user_id", existing_type=sa.Uuid(), nullable=False)
        batch.create_foreign_key("fk_api_keys_created_by_user_id_users", "users", ["created_by_user_id"], ["id"])
        batch.create_index("ix_api_keys_created_by_user_id", ["created_by_user_id"])

    with op.batch_alter_table("web_sessions") as batch:
        batch.add_column(sa.Column("account_id", sa.Uuid(), nullable=True))
        batch.create_foreign_key("fk_web_sessions_account_id_accounts", "accounts", ["account_id"], ["id"])

    with op.batch_alter_table("invoice_events") as batch:
        batch.add_column(sa.Column("user_id", sa.Uuid(), nullable=True))
        batch.create_index("ix_invoice_events_account_user", ["account_id", "user_id", "created_at"])
    _people_of_past_events(connection)


def _people_of_past_events(connection) -> None:
    """The person behind each past event: the one its `meta` names (a person in the dashboard, an
    app's person), or for a key its account's owner, who made every key so far."""
    events = sa.table("invoice_events", sa.column("id", sa.Uuid()), sa.column("account_id", sa.Uuid()),
                      sa.column("meta", sa.JSON()), sa.column("user_id", sa.Uuid()))
    owners = dict(connection.execute(sa.text("SELECT id, owner_user_id FROM accounts")).all())
    owners = {_uuid(k): _uuid(v) for k, v in owners.items()}
    changes = []
    for row in connection.execute(sa.select(events.c.id, events.c.account_id, events.c.meta)
                                  .where(events.c.meta.is_not(None))):
        meta = row.meta if isinstance(row.meta, dict) else {}
        person = _uuid(meta.get("user_id")) or (owners.get(_uuid(row.account_id)) if meta.get("actor") == "api_key"
                                                else None)
        if person is not None:
            changes.append({"event_id": row.id, "person": person})
    if changes:
        connection.execute(events.update().where(events.c.id == sa.bindparam("event_id"))
                           .values(user_id=sa.bindparam("person")), changes)


def _uuid(value) -> uuid.UUID | None:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def downgrade() -> None:
    with op.batch_alter_table("invoice_events") as batch:
        batch.drop_index("ix_invoice_events_account_user")
        batch.drop_column("user_id")
    with op.batch_alter_table("web_sessions") as batch:
        batch.drop_constraint("fk_web_sessions_account_id_accounts", type_="foreignkey")
        batch.drop_column("account_id")
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_index("ix_api_keys_created_by_user_id")
        batch.drop_constraint("fk_api_keys_created_by_user_id_users", type_="foreignkey")
        batch.drop_column("created_by_user_id")
    op.drop_table("activity")
    op.drop_table("invitations")
    op.drop_table("memberships")
