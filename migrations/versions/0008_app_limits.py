"""one set of limits per app, person and business: delegated actions name the app and the person and
are counted by them; the grants of an app that stand side by side take the app's limits

Revision ID: 0008
Revises: 0007
"""
import sqlalchemy as sa
import sqlmodel
from alembic import op

from core.access import authorization_details

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
    _share_limits()


def _share_limits() -> None:
    """The grants of one app, person and business not revoked take one set of limits that widens none
    of them (`authorization_details.limits_of_all`): before this revision each grant held its own, and
    the consent page started only from those of a grant for the same resource, so a later grant often
    has fewer (none, say, beside an MCP grant that may finalize up to 1,000 USD). Taking the newest's,
    as a new grant does from now on, would have lifted limits the person set without telling them."""
    grants = sa.table("oauth_grants", sa.column("id", sa.Uuid()), sa.column("client_id", sa.String()),
                      sa.column("user_id", sa.Uuid()), sa.column("account_id", sa.Uuid()),
                      sa.column("scopes", sa.JSON()), sa.column("authorization_details", sa.JSON()),
                      sa.column("created_at"), sa.column("revoked_at"))
    connection = op.get_bind()
    by_app: dict[tuple, list] = {}
    columns = (grants.c.id, grants.c.client_id, grants.c.user_id, grants.c.account_id, grants.c.scopes,
               grants.c.authorization_details)
    for row in connection.execute(sa.select(*columns).where(grants.c.revoked_at.is_(None))
                                  .order_by(grants.c.created_at, grants.c.id)):
        by_app.setdefault((row.client_id, row.user_id, row.account_id), []).append(row)
    for rows in by_app.values():
        if len(rows) < 2:
            continue
        limits = authorization_details.limits_of_all(
            (authorization_details.actions_of(row.scopes), authorization_details.from_stored(row.authorization_details))
            for row in rows)
        if limits is None:  # none of them has any (or may act at all)
            continue
        connection.execute(grants.update().where(grants.c.id.in_([row.id for row in rows]))
                           .values(authorization_details=authorization_details.to_json(limits)))


def downgrade() -> None:
    op.create_index("ix_delegated_actions_grant_created", "delegated_actions", ["grant_id", "created_at"])
    op.drop_index("ix_delegated_actions_app_created", table_name="delegated_actions")
    with op.batch_alter_table("delegated_actions") as batch:
        batch.drop_column("user_id")
        batch.drop_column("client_id")
