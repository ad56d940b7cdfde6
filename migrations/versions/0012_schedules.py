"""schedules: recurring invoices, each period made once; the invoices they make name them and their period

Revision ID: 0012
Revises: 0011
"""
import sqlalchemy as sa
import sqlmodel
from alembic import op

import core.base.db

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def _text(length: int) -> sa.Column:
    return sqlmodel.sql.sqltypes.AutoString(length=length)


def upgrade() -> None:
    op.create_table(
        "invoice_schedules",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("account_id", sa.Uuid(), sa.ForeignKey("accounts.id"), nullable=False),
        sa.Column("customer_id", sa.Uuid(), sa.ForeignKey("customers.id"), nullable=False),
        sa.Column("status", _text(16), nullable=False),
        sa.Column("mode", _text(24), nullable=False),
        sa.Column("template", sa.JSON(), nullable=False),
        sa.Column("recurrence", sa.JSON(), nullable=False),
        sa.Column("time_zone", _text(64), nullable=False),
        sa.Column("catch_up", _text(16), nullable=False),
        sa.Column("max_attempts", sa.Integer(), nullable=False),
        sa.Column("next_index", sa.Integer(), nullable=False),
        sa.Column("next_run_at", core.base.db.UTCDateTime(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", _text(1000), nullable=True),
        sa.Column("last_error_at", core.base.db.UTCDateTime(), nullable=True),
        sa.Column("pause_reason", _text(1000), nullable=True),
        sa.Column("paused_at", core.base.db.UTCDateTime(), nullable=True),
        sa.Column("cancelled_at", core.base.db.UTCDateTime(), nullable=True),
        sa.Column("created_by_actor", _text(16), nullable=False),
        sa.Column("created_by_api_key_id", sa.Uuid(), nullable=True),
        sa.Column("created_by_client_id", _text(200), nullable=True),
        sa.Column("created_by_grant_id", sa.Uuid(), nullable=True),
        sa.Column("created_by_user_id", sa.Uuid(), nullable=True),
        sa.Column("created", core.base.db.UTCDateTime(), nullable=False),
        sa.Column("updated", core.base.db.UTCDateTime(), nullable=False),
    )
    op.create_index("ix_invoice_schedules_account_created", "invoice_schedules", ["account_id", "created", "id"])
    op.create_index("ix_invoice_schedules_due", "invoice_schedules", ["status", "next_run_at"])
    op.create_index("ix_invoice_schedules_customer_id", "invoice_schedules", ["customer_id"])
    # Added in place, never by copying the table (SQLite's ADD COLUMN takes a REFERENCES clause, which
    # Alembic does not write for it).
    if op.get_bind().dialect.name == "sqlite":
        op.execute("ALTER TABLE invoices ADD COLUMN schedule_id CHAR(32) REFERENCES invoice_schedules (id)")
    else:
        op.add_column("invoices", sa.Column("schedule_id", sa.Uuid(), sa.ForeignKey("invoice_schedules.id",
                                                                                    name="fk_invoices_schedule_id")))
    op.add_column("invoices", sa.Column("period_start", sa.Date(), nullable=True))
    op.add_column("invoices", sa.Column("period_end", sa.Date(), nullable=True))
    op.create_index("ix_invoices_schedule_id", "invoices", ["schedule_id"])
    op.create_table(
        "schedule_runs",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("account_id", sa.Uuid(), sa.ForeignKey("accounts.id"), nullable=False),
        sa.Column("schedule_id", sa.Uuid(), sa.ForeignKey("invoice_schedules.id"), nullable=False),
        sa.Column("period_index", sa.Integer(), nullable=False),
        sa.Column("period_start", sa.Date(), nullable=False),
        sa.Column("period_end", sa.Date(), nullable=False),
        sa.Column("scheduled_for", core.base.db.UTCDateTime(), nullable=False),
        sa.Column("status", _text(16), nullable=False),
        sa.Column("invoice_id", sa.Uuid(), sa.ForeignKey("invoices.id"), nullable=True),
        sa.Column("email_status", _text(16), nullable=True),
        sa.Column("email_next_at", core.base.db.UTCDateTime(), nullable=True),
        sa.Column("email_attempts", sa.Integer(), nullable=False),
        sa.Column("email_error", _text(1000), nullable=True),
        sa.Column("created_at", core.base.db.UTCDateTime(), nullable=False),
        sa.UniqueConstraint("schedule_id", "period_index", name="uq_schedule_runs_period"),
    )
    op.create_index("ix_schedule_runs_email", "schedule_runs", ["email_status", "email_next_at"])


def downgrade() -> None:
    op.drop_table("schedule_runs")
    op.drop_index("ix_invoices_schedule_id", "invoices")
    with op.batch_alter_table("invoices") as batch:  # SQLite drops a referencing column only by a copy
        for column in ("period_end", "period_start", "schedule_id"):
            batch.drop_column(column)
    op.drop_table("invoice_schedules")
