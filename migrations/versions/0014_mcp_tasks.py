"""mcp tasks: tool calls run as tasks, e-invoice exports kept a day, the change feed of the listen
streams, and the open listen streams per credential

Revision ID: 0014
Revises: 0013
"""
import sqlalchemy as sa
import sqlmodel
from alembic import op

import core.base.db

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def _text(length: int) -> sa.Column:
    return sqlmodel.sql.sqltypes.AutoString(length=length)


def upgrade() -> None:
    op.create_table(
        "mcp_tasks",
        sa.Column("id", _text(64), primary_key=True),
        sa.Column("account_id", sa.Uuid(), sa.ForeignKey("accounts.id"), nullable=False),
        sa.Column("binding", _text(64), nullable=False),
        sa.Column("tool", _text(64), nullable=False),
        sa.Column("arguments", sa.JSON(), nullable=False),
        sa.Column("status", _text(16), nullable=False),
        sa.Column("status_message", _text(2000), nullable=True),
        sa.Column("input_requests", sa.JSON(), nullable=True),
        sa.Column("input_responses", sa.JSON(), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("cancel_requested", sa.Boolean(), nullable=False),
        sa.Column("runner", _text(200), nullable=True),
        sa.Column("heartbeat_at", core.base.db.UTCDateTime(), nullable=True),
        sa.Column("created_at", core.base.db.UTCDateTime(), nullable=False),
        sa.Column("updated_at", core.base.db.UTCDateTime(), nullable=False),
        sa.Column("expires_at", core.base.db.UTCDateTime(), nullable=False),
    )
    op.create_index("ix_mcp_tasks_account_id", "mcp_tasks", ["account_id"])
    op.create_index("ix_mcp_tasks_expires_at", "mcp_tasks", ["expires_at"])
    op.create_table(
        "e_invoice_exports",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("account_id", sa.Uuid(), sa.ForeignKey("accounts.id"), nullable=False),
        sa.Column("format", _text(16), nullable=False),
        sa.Column("period_start", sa.Date(), nullable=False),
        sa.Column("period_end", sa.Date(), nullable=False),
        sa.Column("filename", _text(200), nullable=False),
        sa.Column("documents", sa.Integer(), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", core.base.db.UTCDateTime(), nullable=False),
        sa.Column("expires_at", core.base.db.UTCDateTime(), nullable=False),
    )
    op.create_index("ix_e_invoice_exports_account_id", "e_invoice_exports", ["account_id"])
    op.create_index("ix_e_invoice_exports_expires_at", "e_invoice_exports", ["expires_at"])
    op.create_table(
        "change_feed",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("account_id", sa.Uuid(), nullable=False),
        sa.Column("uri", _text(200), nullable=False),
        sa.Column("kind", _text(64), nullable=False),
        sa.Column("created_at", core.base.db.UTCDateTime(), nullable=False),
    )
    op.create_index("ix_change_feed_account_id", "change_feed", ["account_id"])
    op.create_index("ix_change_feed_created_at", "change_feed", ["created_at"])
    op.create_table(
        "mcp_listen_streams",
        sa.Column("id", _text(64), primary_key=True),
        sa.Column("binding", _text(64), nullable=False),
        sa.Column("heartbeat_at", core.base.db.UTCDateTime(), nullable=False),
    )
    op.create_index("ix_mcp_listen_streams_binding", "mcp_listen_streams", ["binding"])


def downgrade() -> None:
    op.drop_table("mcp_listen_streams")
    op.drop_table("change_feed")
    op.drop_table("e_invoice_exports")
    op.drop_table("mcp_tasks")
