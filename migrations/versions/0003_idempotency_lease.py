"""idempotency lease: a claim carries its holder's token, so a takeover fences the old holder out

Revision ID: 0003
Revises: 0002
"""
import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("idempotency_records") as table:
        table.add_column(sa.Column("claim_token", sqlmodel.sql.sqltypes.AutoString(length=32),
                                   nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("idempotency_records") as table:
        table.drop_column("claim_token")
