"""one set of limits per app, person and business: delegated actions name the app and the person and
are counted by them

Revision ID: 0008
Revises: 0007
"""
import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("delegated_actions", sa.Column("client_id", sqlmodel.sql.sqltypes.AutoString(length=2048),
                                                 nullable=True))
    op.add_column("delegated_actions", sa.Column("user_id", sa.Uuid(), nullable=True))
    actions = sa.table("delegated_actions", sa.column("grant_id", sa.Uuid()), sa.column("client_id", sa.String()),
                       sa.column("user_id", sa.Uuid()))
    grants = sa.table("oauth_grants", sa.column("id", sa.Uuid()), sa.column("client_id", sa.String()),
                      sa.column("user_id", sa.Uuid()))
    of_grant = grants.c.id == actions.c.grant_id
    op.execute(actions.update().values(
        client_id=sa.select(grants.c.client_id).where(of_grant).scalar_subquery(),
        user_id=sa.select(grants.c.user_id).where(of_grant).scalar_subquery()))
    op.create_index("ix_delegated_actions_app_created", "delegated_actions",
                    ["account_id", "user_id", "client_id", "created_at"])
    op.drop_index("ix_delegated_actions_grant_created", table_name="delegated_actions")


def downgrade() -> None:
    op.create_index("ix_delegated_actions_grant_created", "delegated_actions", ["grant_id", "created_at"])
    op.drop_index("ix_delegated_actions_app_created", table_name="delegated_actions")
    with op.batch_alter_table("delegated_actions") as batch:
        batch.drop_column("user_id")
        batch.drop_column("client_id")
