"""name search: trigram indexes for the case-insensitive substring search of customers and products
(PostgreSQL; SQLite keeps reading the account's rows)

Revision ID: 0004
Revises: 0003
"""
import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

TABLES = ("customers", "products")


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    # pg_trgm ships with PostgreSQL and is a trusted extension: the database's owner may create it.
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for table in TABLES:
        op.create_index(f"ix_{table}_name_trigrams", table, [sa.text("lower(name::text) gin_trgm_ops")],
                        postgresql_using="gin")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in TABLES:
        op.drop_index(f"ix_{table}_name_trigrams", table_name=table)
