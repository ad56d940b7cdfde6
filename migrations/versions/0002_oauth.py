"""oauth: clients (registered and metadata documents), grants, authorization codes, tokens

Revision ID: 0002
Revises: 0001
"""
import sqlalchemy as sa
import sqlmodel
from alembic import op

import core.base.db

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _text(length: int) -> sqlmodel.sql.sqltypes.AutoString:
    return sqlmodel.sql.sqltypes.AutoString(length=length)


def upgrade() -> None:
    op.create_table(
        "oauth_clients",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("client_id", _text(2048), nullable=False),
        sa.Column("secret_hash", _text(64), nullable=True),
        sa.Column("token_endpoint_auth_method", _text(32), nullable=False),
        sa.Column("redirect_uris", sa.JSON(), nullable=False),
        sa.Column("grant_types", sa.JSON(), nullable=False),
        sa.Column("response_types", sa.JSON(), nullable=False),
        sa.Column("client_name", _text(256), nullable=True),
        sa.Column("client_uri", _text(2048), nullable=True),
        sa.Column("scope", _text(1000), nullable=True),
        sa.Column("metadata_document", sa.Boolean(), nullable=False),
        sa.Column("document_expires_at", core.base.db.UTCDateTime(), nullable=True),
        sa.Column("created_at", core.base.db.UTCDateTime(), nullable=False),
        sa.Column("updated_at", core.base.db.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("oauth_clients", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_oauth_clients_client_id"), ["client_id"], unique=True)

    op.create_table(
        "oauth_grants",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("client_id", _text(2048), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("account_id", sa.Uuid(), nullable=False),
        sa.Column("resource", _text(2048), nullable=False),
        sa.Column("scopes", sa.JSON(), nullable=False),
        sa.Column("created_at", core.base.db.UTCDateTime(), nullable=False),
        sa.Column("revoked_at", core.base.db.UTCDateTime(), nullable=True),
        sa.Column("last_used_at", core.base.db.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("oauth_grants", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_oauth_grants_client_id"), ["client_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_oauth_grants_user_id"), ["user_id"], unique=False)

    op.create_table(
        "oauth_authorization_codes",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("code_hash", _text(64), nullable=False),
        sa.Column("client_id", _text(2048), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("account_id", sa.Uuid(), nullable=False),
        sa.Column("redirect_uri", _text(2048), nullable=True),
        sa.Column("scopes", sa.JSON(), nullable=False),
        sa.Column("resource", _text(2048), nullable=False),
        sa.Column("code_challenge", _text(128), nullable=False),
        sa.Column("code_challenge_method", _text(8), nullable=False),
        sa.Column("created_at", core.base.db.UTCDateTime(), nullable=False),
        sa.Column("expires_at", core.base.db.UTCDateTime(), nullable=False),
        sa.Column("used_at", core.base.db.UTCDateTime(), nullable=True),
        sa.Column("grant_id", sa.Uuid(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"]),
        sa.ForeignKeyConstraint(["grant_id"], ["oauth_grants.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("code_hash"),
    )
    with op.batch_alter_table("oauth_authorization_codes", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_oauth_authorization_codes_user_id"), ["user_id"], unique=False)

    op.create_table(
        "oauth_tokens",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("grant_id", sa.Uuid(), nullable=False),
        sa.Column("kind", _text(8), nullable=False),
        sa.Column("token_hash", _text(64), nullable=False),
        sa.Column("scopes", sa.JSON(), nullable=False),
        sa.Column("created_at", core.base.db.UTCDateTime(), nullable=False),
        sa.Column("expires_at", core.base.db.UTCDateTime(), nullable=False),
        sa.Column("revoked_at", core.base.db.UTCDateTime(), nullable=True),
        sa.Column("used_at", core.base.db.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["grant_id"], ["oauth_grants.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_hash"),
    )
    with op.batch_alter_table("oauth_tokens", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_oauth_tokens_grant_id"), ["grant_id"], unique=False)


def downgrade() -> None:
    op.drop_table("oauth_tokens")
    op.drop_table("oauth_authorization_codes")
    op.drop_table("oauth_grants")
    op.drop_table("oauth_clients")
