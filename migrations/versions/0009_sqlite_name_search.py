"""name search on SQLite: an FTS5 trigram index of the names of customers and products, keyed by a
stable integer, filled from the rows there are and kept in step by triggers (PostgreSQL has pg_trgm
since 0004). An SQLite without FTS5's trigram tokenizer (before 3.34) keeps reading the account's rows.

Revision ID: 0009
Revises: 0008
"""
import logging

from alembic import op

from core.catalog import name_search

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

TABLES = ("customers", "products")


def upgrade() -> None:
    connection = op.get_bind()
    if connection.dialect.name != "sqlite":
        return
    if not name_search.trigram_available(connection):
        logging.getLogger("alembic").warning(
            "This SQLite has no FTS5 trigram tokenizer (SQLite 3.34 or later with FTS5): name search "
            "will read every customer and product of an account.")
        return
    for table in TABLES:
        _index(table)


def _index(table: str) -> None:
    fts, keys = f"{table}_name_fts", f"{table}_name_keys"
    # The key: an INTEGER PRIMARY KEY is the row's rowid and never changes (VACUUM may renumber the
    # implicit rowid of a table keyed by a UUID). The FTS5 table keeps its own copy of the name, so
    # an update or delete finds the old entry by its rowid alone.
    op.execute(f"CREATE TABLE {keys} (key INTEGER PRIMARY KEY, id CHAR(32) NOT NULL UNIQUE)")
    op.execute(f"CREATE VIRTUAL TABLE {fts} USING fts5(name, tokenize = 'trigram')")
    op.execute(f"INSERT INTO {keys} (id) SELECT id FROM {table} ORDER BY created, id")
    op.execute(f"INSERT INTO {fts} (rowid, name) SELECT k.key, t.name FROM {keys} k JOIN {table} t ON t.id = k.id")
    key_of = f"(SELECT key FROM {keys} WHERE id = {{row}}.id)"
    op.execute(f"""CREATE TRIGGER {fts}_insert AFTER INSERT ON {table} BEGIN
        INSERT INTO {keys} (id) VALUES (new.id);
        INSERT INTO {fts} (rowid, name) VALUES ({key_of.format(row="new")}, new.name);
    END""")
    op.execute(f"""CREATE TRIGGER {fts}_rename AFTER UPDATE OF name ON {table} WHEN old.name IS NOT new.name BEGIN
        UPDATE {fts} SET name = new.name WHERE rowid = {key_of.format(row="new")};
    END""")
    op.execute(f"""CREATE TRIGGER {fts}_delete AFTER DELETE ON {table} BEGIN
        DELETE FROM {fts} WHERE rowid = {key_of.format(row="old")};
        DELETE FROM {keys} WHERE id = old.id;
    END""")


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for table in TABLES:
        fts = f"{table}_name_fts"
        for trigger in ("insert", "rename", "delete"):
            op.execute(f"DROP TRIGGER IF EXISTS {fts}_{trigger}")
        op.execute(f"DROP TABLE IF EXISTS {fts}")
        op.execute(f"DROP TABLE IF EXISTS {table}_name_keys")
