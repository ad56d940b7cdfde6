"""limits that hold in every span, sign-in challenges, single-use tokens, MCP confirmations,
apps' authorization details and their actions, kept documents, webhook endpoints' availability

Revision ID: 0006
Revises: 0005
"""
import sqlalchemy as sa
import sqlmodel
from alembic import op

from core.base.db import UTCDateTime

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("rate_limit_windows", sa.Column("allowed", sa.Boolean(), server_default=sa.true(), nullable=False))
    op.create_table(
        "rate_limit_logs",
        sa.Column("bucket", sqlmodel.sql.sqltypes.AutoString(length=200), primary_key=True),
        sa.Column("stamps", sa.Text(), nullable=False),
        sa.Column("head", sa.Integer(), nullable=False),
        sa.Column("allowed", sa.Boolean(), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_rate_limit_logs_expires_at", "rate_limit_logs", ["expires_at"])
    op.create_table(
        "sign_in_challenges",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("token_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False, unique=True),
        sa.Column("user_id", sa.Uuid(), sa.ForeignKey("users.id"), nullable=True),
        sa.Column("account_subject", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("code_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("email_hint", sqlmodel.sql.sqltypes.AutoString(length=300), nullable=False),
        sa.Column("next_path", sqlmodel.sql.sqltypes.AutoString(length=2000), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_sign_in_challenges_user_id", "sign_in_challenges", ["user_id"])
    op.create_index("ix_sign_in_challenges_expires_at", "sign_in_challenges", ["expires_at"])
    op.create_table(
        "invoice_documents",
        sa.Column("invoice_id", sa.Uuid(), sa.ForeignKey("invoices.id"), primary_key=True),
        sa.Column("variant", sqlmodel.sql.sqltypes.AutoString(length=100), primary_key=True),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.Column("etag", sqlmodel.sql.sqltypes.AutoString(length=80), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.add_column("webhook_endpoints", sa.Column("available_at", UTCDateTime(), nullable=True))
    op.add_column("oauth_grants", sa.Column("authorization_details", sa.JSON(), nullable=True))
    op.add_column("oauth_authorization_codes", sa.Column("authorization_details", sa.JSON(), nullable=True))
    op.create_table(
        "delegated_actions",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("account_id", sa.Uuid(), sa.ForeignKey("accounts.id"), nullable=False),
        sa.Column("grant_id", sa.Uuid(), nullable=False),
        sa.Column("client_name", sqlmodel.sql.sqltypes.AutoString(length=256), nullable=True),
        sa.Column("action", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("via", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("invoice_id", sa.Uuid(), nullable=False),
        sa.Column("invoice_label", sqlmodel.sql.sqltypes.AutoString(length=300), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("currency", sqlmodel.sql.sqltypes.AutoString(length=3), nullable=False),
        sa.Column("outcome", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("detail", sqlmodel.sql.sqltypes.AutoString(length=1000), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_delegated_actions_grant_created", "delegated_actions", ["grant_id", "created_at"])
    op.create_table(
        "mcp_confirmations",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=64), primary_key=True),
        sa.Column("binding", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("answer", sa.JSON(), nullable=True),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_mcp_confirmations_expires_at", "mcp_confirmations", ["expires_at"])
    op.create_table(
        "spent_tokens",
        sa.Column("token_hash", sqlmodel.sql.sqltypes.AutoString(length=64), primary_key=True),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_spent_tokens_expires_at", "spent_tokens", ["expires_at"])


def downgrade() -> None:
    op.drop_table("spent_tokens")
    op.drop_table("mcp_confirmations")
    op.drop_table("delegated_actions")
    for table in ("oauth_grants", "oauth_authorization_codes"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("authorization_details")
    op.drop_table("invoice_documents")
    with op.batch_alter_table("webhook_endpoints") as batch:
        batch.drop_column("available_at")
    op.drop_table("sign_in_challenges")
    op.drop_index("ix_rate_limit_logs_expires_at", table_name="rate_limit_logs")
    op.drop_table("rate_limit_logs")
    with op.batch_alter_table("rate_limit_windows") as batch:
        batch.drop_column("allowed")
