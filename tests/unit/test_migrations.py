"""The migrations build exactly the schema the models describe (no drift either way)."""

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlmodel import SQLModel

import authz.models  # noqa: F401  (its tables belong to the metadata)
import core.models  # noqa: F401
from core.base import db


# SQLite cannot reflect expression indexes (the trigram indexes are PostgreSQL's alone anyway).
@pytest.mark.filterwarnings("ignore:autogenerate skipping metadata-specified expression-based index")
def test_the_migrated_schema_matches_the_models(test_settings):
    with db.get_engine().connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), SQLModel.metadata)
    assert differences == []
