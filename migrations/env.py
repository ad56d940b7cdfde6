"""Alembic environment: the URL comes from INVOICING_DATABASE_URL (or the caller's connection)."""

from alembic import context
from sqlmodel import SQLModel

import core.models  # noqa: F401  (registers the tables)
from config.settings import get_settings
from core.base.db import make_engine
from core.catalog.name_search import has_a_model

try:  # OAuth tables live with the authorization server.
    import authz.models  # noqa: F401
except ImportError:  # pragma: no cover
    pass

target_metadata = SQLModel.metadata


def render_item(type_, obj, autogen_context):
    """Render our column types as importable names in generated migrations."""
    if type_ == "type" and obj.__class__.__module__ == "core.db":
        autogen_context.imports.add("import core.db")
        return f"core.db.{obj.__class__.__name__}()"
    if type_ == "type" and obj.__class__.__module__.startswith("sqlmodel"):
        autogen_context.imports.add("import sqlmodel")
        return f"sqlmodel.sql.sqltypes.{obj.__class__.__name__}(length={getattr(obj, 'length', None)})"
    return False


def run_migrations() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(get_settings().database_url)
    with engine.connect() as conn:
        _run(conn)
    engine.dispose()


def _run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_item=render_item,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        include_name=has_a_model,  # SQLite's name search index (0009) is no model's
    )
    with context.begin_transaction():
        context.run_migrations()


run_migrations()
