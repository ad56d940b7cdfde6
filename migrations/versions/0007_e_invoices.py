"""e-invoices: electronic addresses of businesses and customers, the buyer's references of an
invoice, and the VAT category of a line

Revision ID: 0007
Revises: 0006
"""
import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def _text(length: int) -> sa.Column:
    return sqlmodel.sql.sqltypes.AutoString(length=length)


def upgrade() -> None:
    op.add_column("business_profiles", sa.Column("peppol_id", _text(100), nullable=True))
    op.add_column("customers", sa.Column("peppol_id", _text(100), nullable=True))
    op.add_column("invoices", sa.Column("buyer_reference", _text(200), nullable=True))
    op.add_column("invoices", sa.Column("order_reference", _text(200), nullable=True))
    op.add_column("invoice_lines", sa.Column("tax_category", _text(2), nullable=True))
    op.add_column("invoice_lines", sa.Column("tax_exemption_reason", _text(1000), nullable=True))


def downgrade() -> None:
    op.drop_column("invoice_lines", "tax_exemption_reason")
    op.drop_column("invoice_lines", "tax_category")
    op.drop_column("invoices", "order_reference")
    op.drop_column("invoices", "buyer_reference")
    op.drop_column("customers", "peppol_id")
    op.drop_column("business_profiles", "peppol_id")
