"""credit notes: a document of its own correcting an issued invoice, numbered in a series of its own;
what an invoice has been credited and the customer's balance it was finalized with

Revision ID: 0010
Revises: 0009
"""
import sqlalchemy as sa
import sqlmodel
from alembic import op

import core.base.db

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def _text(length: int) -> sa.Column:
    return sqlmodel.sql.sqltypes.AutoString(length=length)


def upgrade() -> None:
    op.add_column("business_profiles", sa.Column("credit_note_prefix", _text(20), nullable=False, server_default="CN"))
    op.add_column("invoices", sa.Column("amount_credited", sa.BigInteger(), nullable=False, server_default="0"))
    op.add_column("invoices", sa.Column("balance_applied", sa.BigInteger(), nullable=False, server_default="0"))
    op.create_table(
        "credit_note_counters",
        sa.Column("account_id", sa.Uuid(), sa.ForeignKey("accounts.id"), primary_key=True),
        sa.Column("last_number", sa.Integer(), nullable=False),
    )
    op.create_table(
        "credit_notes",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("account_id", sa.Uuid(), sa.ForeignKey("accounts.id"), nullable=False),
        sa.Column("invoice_id", sa.Uuid(), sa.ForeignKey("invoices.id"), nullable=False),
        sa.Column("customer_id", sa.Uuid(), sa.ForeignKey("customers.id"), nullable=False),
        sa.Column("number", _text(64), nullable=False),
        sa.Column("status", _text(16), nullable=False),
        sa.Column("currency", _text(3), nullable=False),
        sa.Column("reason", _text(32), nullable=True),
        sa.Column("memo", _text(5000), nullable=True),
        sa.Column("issue_date", sa.Date(), nullable=False),
        sa.Column("subtotal", sa.BigInteger(), nullable=False),
        sa.Column("tax", sa.BigInteger(), nullable=False),
        sa.Column("total", sa.BigInteger(), nullable=False),
        sa.Column("credit_amount", sa.BigInteger(), nullable=False),
        sa.Column("refund_amount", sa.BigInteger(), nullable=False),
        sa.Column("refund_reference", _text(200), nullable=True),
        sa.Column("refunded_on", sa.Date(), nullable=True),
        sa.Column("balance_amount", sa.BigInteger(), nullable=False),
        sa.Column("balance_remaining", sa.BigInteger(), nullable=False),
        sa.Column("amount_in_words", _text(1000), nullable=True),
        sa.Column("invoice_number", _text(64), nullable=False),
        sa.Column("invoice_issue_date", sa.Date(), nullable=False),
        sa.Column("customer_snapshot", sa.JSON(), nullable=False),
        sa.Column("issuer_snapshot", sa.JSON(), nullable=True),
        sa.Column("public_url_token", _text(64), nullable=False, unique=True),
        sa.Column("voided_at", core.base.db.UTCDateTime(), nullable=True),
        sa.Column("created", core.base.db.UTCDateTime(), nullable=False),
        sa.Column("updated", core.base.db.UTCDateTime(), nullable=False),
        sa.UniqueConstraint("account_id", "number", name="uq_credit_notes_account_number"),
    )
    op.create_index("ix_credit_notes_account_created", "credit_notes", ["account_id", "created", "id"])
    op.create_index("ix_credit_notes_invoice", "credit_notes", ["invoice_id"])
    op.create_index("ix_credit_notes_customer_balance", "credit_notes", ["customer_id", "currency", "balance_remaining"])
    op.create_table(
        "credit_note_lines",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("account_id", sa.Uuid(), sa.ForeignKey("accounts.id"), nullable=False),
        sa.Column("credit_note_id", sa.Uuid(), sa.ForeignKey("credit_notes.id", ondelete="CASCADE"), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("type", _text(16), nullable=False),
        sa.Column("invoice_line_id", sa.Uuid(), sa.ForeignKey("invoice_lines.id"), nullable=True),
        sa.Column("description", _text(5000), nullable=False),
        sa.Column("quantity", core.base.db.DecimalText(), nullable=True),
        sa.Column("unit", _text(3), nullable=False),
        sa.Column("unit_amount", sa.BigInteger(), nullable=True),
        sa.Column("discount_percent", core.base.db.DecimalText(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("tax_rate", core.base.db.DecimalText(), nullable=False),
        sa.Column("tax_category", _text(2), nullable=True),
        sa.Column("tax_exemption_reason", _text(1000), nullable=True),
        sa.Column("tax_amount", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_credit_note_lines_credit_note_id", "credit_note_lines", ["credit_note_id"])
    op.create_index("ix_credit_note_lines_invoice_line_id", "credit_note_lines", ["invoice_line_id"])


def downgrade() -> None:
    op.drop_table("credit_note_lines")
    op.drop_table("credit_notes")
    op.drop_table("credit_note_counters")
    op.drop_column("invoices", "balance_applied")
    op.drop_column("invoices", "amount_credited")
    op.drop_column("business_profiles", "credit_note_prefix")
