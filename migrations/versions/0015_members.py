"""members: several people per business and several businesses per person. Memberships with roles
(each account's creator its first owner), e-mailed invitations, the business a browser session acts
for, the person behind each API key and invoice event, and the activity of a business

Revision ID: 0015
Revises: 0014
"""
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
    op.create_index("ix_memberships_account_id", "memberships", ["account_id"])
    op.create_index("ix_memberships_user_id", "memberships", ["user_id"])
    # Every account's creator is its first owner, a member since the account began.
    op.execute(sa.text(
        "INSERT INTO memberships (id, account_id, user_id, role, created_at, updated_at) "
        "SELECT id, id, owner_user_id, 'owner', created_at, created_at FROM accounts"))

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
