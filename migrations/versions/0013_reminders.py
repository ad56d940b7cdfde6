"""reminders: an account's payment reminder policy, each invoice's reminders sent once per step, invoices'
reminders paused, and late fees' invoices naming the overdue one

Revision ID: 0013
Revises: 0012
"""
import sqlalchemy as sa
import sqlmodel
from alembic import op

import core.base.db

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def _text(length: int) -> sa.Column:
    return sqlmodel.sql.sqltypes.AutoString(length=length)


def upgrade() -> None:
    op.add_column("invoices", sa.Column("reminders_paused", sa.Boolean(), nullable=False, server_default=sa.false()))
    # In place, as 0012 adds schedule_id (SQLite's ADD COLUMN takes a REFERENCES clause).
    if op.get_bind().dialect.name == "sqlite":
        op.execute("ALTER TABLE invoices ADD COLUMN late_fee_for_id CHAR(32) REFERENCES invoices (id)")
    else:
        op.add_column("invoices", sa.Column("late_fee_for_id", sa.Uuid(), sa.ForeignKey(
            "invoices.id", name="fk_invoices_late_fee_for_id")))
    op.create_table(
        "reminder_policies",
        sa.Column("account_id", sa.Uuid(), sa.ForeignKey("accounts.id"), primary_key=True),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("steps", sa.JSON(), nullable=False),
        sa.Column("late_fee", sa.JSON(), nullable=True),
        sa.Column("reference_rate", core.base.db.DecimalText(), nullable=True),
        sa.Column("updated", core.base.db.UTCDateTime(), nullable=False),
    )
    op.create_table(
        "invoice_reminders",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("account_id", sa.Uuid(), sa.ForeignKey("accounts.id"), nullable=False),
        sa.Column("invoice_id", sa.Uuid(), sa.ForeignKey("invoices.id"), nullable=False),
        sa.Column("step_days", sa.Integer(), nullable=False),
        sa.Column("manual", sa.Boolean(), nullable=False),
        sa.Column("status", _text(16), nullable=False),
        sa.Column("next_attempt_at", core.base.db.UTCDateTime(), nullable=True),
        sa.Column("sent_to", _text(254), nullable=True),
        sa.Column("late_fee_invoice_id", sa.Uuid(), sa.ForeignKey("invoices.id"), nullable=True),
        sa.Column("error", _text(1000), nullable=True),
        sa.Column("sent_at", core.base.db.UTCDateTime(), nullable=True),
        sa.Column("created_at", core.base.db.UTCDateTime(), nullable=False),
    )
    op.create_index("uq_invoice_reminders_step", "invoice_reminders", ["invoice_id", "step_days"], unique=True,
                    postgresql_where=sa.text("NOT manual"), sqlite_where=sa.text("NOT manual"))
    op.create_index("ix_invoice_reminders_due", "invoice_reminders", ["status", "next_attempt_at"])


def downgrade() -> None:
    op.drop_table("invoice_reminders")
    op.drop_table("reminder_policies")
    with op.batch_alter_table("invoices") as batch:  # SQLite drops a referencing column only by a copy
        batch.drop_column("late_fee_for_id")
        batch.drop_column("reminders_paused")
