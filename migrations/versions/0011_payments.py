"""payments: money received for an invoice, in part or in full, reversible; what an invoice has been
paid; the open invoices indexed for receivables

An invoice paid before payments were recorded (`POST /invoices/{id}/pay`) gets the payment it stood
for: what remained due then, with its date and reference, method `other`.

Revision ID: 0011
Revises: 0010
"""
import uuid

import sqlalchemy as sa
import sqlmodel
from alembic import op

import core.base.db

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

RECEIVABLE_COLUMNS = ["account_id", "currency", "customer_id", "due_date", "total", "amount_credited", "amount_paid"]


def _text(length: int) -> sa.Column:
    return sqlmodel.sql.sqltypes.AutoString(length=length)


def upgrade() -> None:
    op.add_column("invoices", sa.Column("amount_paid", sa.BigInteger(), nullable=False, server_default="0"))
    payments = op.create_table(
        "payments",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("account_id", sa.Uuid(), sa.ForeignKey("accounts.id"), nullable=False),
        sa.Column("invoice_id", sa.Uuid(), sa.ForeignKey("invoices.id"), nullable=False),
        sa.Column("customer_id", sa.Uuid(), sa.ForeignKey("customers.id"), nullable=False),
        sa.Column("invoice_number", _text(64), nullable=False),
        sa.Column("status", _text(16), nullable=False),
        sa.Column("currency", _text(3), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("amount_applied", sa.BigInteger(), nullable=False),
        sa.Column("balance_amount", sa.BigInteger(), nullable=False),
        sa.Column("balance_remaining", sa.BigInteger(), nullable=False),
        sa.Column("paid_at", core.base.db.UTCDateTime(), nullable=False),
        sa.Column("method", _text(16), nullable=False),
        sa.Column("reference", _text(200), nullable=True),
        sa.Column("note", _text(5000), nullable=True),
        sa.Column("reversed_at", core.base.db.UTCDateTime(), nullable=True),
        sa.Column("reversal_reason", _text(1000), nullable=True),
        sa.Column("created", core.base.db.UTCDateTime(), nullable=False),
        sa.Column("updated", core.base.db.UTCDateTime(), nullable=False),
    )
    op.create_index("ix_payments_account_created", "payments", ["account_id", "created", "id"])
    op.create_index("ix_payments_invoice", "payments", ["invoice_id"])
    op.create_index("ix_payments_customer_balance", "payments", ["customer_id", "currency", "balance_remaining"])
    op.create_index("ix_invoices_open_receivable", "invoices", RECEIVABLE_COLUMNS,
                    postgresql_where=sa.text("status = 'open'"), sqlite_where=sa.text("status = 'open'"))
    connection = op.get_bind()
    connection.execute(sa.text("UPDATE invoices SET amount_paid = balance_applied"))
    invoices = sa.table("invoices", *(sa.column(name, type_) for name, type_ in (
        ("id", sa.Uuid()), ("account_id", sa.Uuid()), ("number", sa.String()), ("customer_id", sa.Uuid()),
        ("currency", sa.String()),
        ("status", sa.String()), ("total", sa.BigInteger()), ("amount_credited", sa.BigInteger()),
        ("balance_applied", sa.BigInteger()), ("paid_at", core.base.db.UTCDateTime()),
        ("payment_reference", sa.String()), ("updated", core.base.db.UTCDateTime()))))
    remained = (invoices.c.total - invoices.c.amount_credited - invoices.c.balance_applied).label("remained")
    paid = connection.execute(sa.select(invoices, remained).where(invoices.c.status == "paid", remained > 0)).all()
    if paid:
        op.bulk_insert(payments, [
            {"id": uuid.uuid4(), "account_id": row.account_id, "invoice_id": row.id, "customer_id": row.customer_id,
             "invoice_number": row.number, "status": "recorded", "currency": row.currency, "amount": row.remained,
             "amount_applied": row.remained,
             "balance_amount": 0, "balance_remaining": 0, "paid_at": row.paid_at or row.updated, "method": "other",
             "reference": row.payment_reference, "note": None, "reversed_at": None, "reversal_reason": None,
             "created": row.paid_at or row.updated, "updated": row.paid_at or row.updated} for row in paid])
        connection.execute(sa.text("UPDATE invoices SET amount_paid = total - amount_credited WHERE status = 'paid'"))


def downgrade() -> None:
    op.drop_index("ix_invoices_open_receivable", "invoices")
    # A paid invoice keeps the reference of its latest payment, where the code before payments kept it.
    op.execute(sa.text(
        "UPDATE invoices SET payment_reference = (SELECT payments.reference FROM payments "
        "WHERE payments.invoice_id = invoices.id AND payments.status = 'recorded' AND payments.reference IS NOT NULL "
        "ORDER BY payments.paid_at DESC LIMIT 1) WHERE status = 'paid'"))
    op.drop_table("payments")
    op.drop_column("invoices", "amount_paid")
