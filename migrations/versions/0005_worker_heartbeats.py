"""worker heartbeats: when each background worker last ran its jobs without a failure

Revision ID: 0005
Revises: 0004
"""
import sqlalchemy as sa
import sqlmodel
from alembic import op

from core.base.db import UTCDateTime

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "worker_heartbeats",
        sa.Column("worker_id", sqlmodel.sql.sqltypes.AutoString(length=200), primary_key=True),
        sa.Column("last_success_at", UTCDateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("worker_heartbeats")
