"""Name search of customers and products (`query`): a case-insensitive substring of the name.

The condition is the same on both databases, `lower(name) LIKE '%' || lower(query) || '%'` with the
query lowered by Python and `%`, `_` and `/` escaped: on SQLite, whose lower() and LIKE fold ASCII
letters only, a name with É is found by a query with É, not é. PostgreSQL serves it from a trigram
index on lower(name) (pg_trgm, migration 0004).

SQLite (migration 0009): an FTS5 table per searched table, `<table>_name_fts`, holds the names
under the trigram tokenizer, keyed by `<table>_name_keys.key` (an INTEGER PRIMARY KEY, stable through
VACUUM, unlike the implicit rowid of a table whose key is a UUID); triggers keep both in step with
the table. For a query of three characters or more the FTS match narrows the rows read: it finds
every name the condition finds (it folds case per character, Unicode too, so a match of the
condition is a match of the index) and the condition then decides, so the answer is the
condition's. A shorter query has no trigram to look up; one that `MANY` names or more contain
anywhere in the database reads the account newest first instead, where a page of matches comes
soon. A database whose SQLite lacks FTS5's trigram tokenizer has no such tables and reads the
account as before.
"""

from __future__ import annotations

import functools
import sqlite3
import uuid
import weakref

import sqlalchemy as sa
from sqlalchemy.sql import operators
from sqlalchemy.sql.elements import UnaryExpression
from sqlmodel import Session, select

SEARCHED = ("customers", "products")
TRIGRAM = 3  # the trigram tokenizer finds nothing for a shorter string
MANY = 2000  # this many candidates anywhere: the account's newest rows hold a page sooner
TRIGRAM_SQLITE = (3, 34, 0)  # the first SQLite with FTS5's trigram tokenizer


def fts_table(table: str) -> str:
    return f"{table}_name_fts"


def keys_table(table: str) -> str:
    return f"{table}_name_keys"


def has_a_model(name: str | None, type_: str, _parent_names: dict) -> bool:
    """Alembic's `include_name`: the index's tables (the FTS5 table, its shadow tables and its keys)
    are SQLite's own and have no model; everything else does."""
    return type_ != "table" or not any(name and name.startswith((fts_table(t), keys_table(t))) for t in SEARCHED)


def trigram_available(connection: sa.Connection) -> bool:
    """Whether this SQLite has FTS5 and its trigram tokenizer (migration 0009 asks)."""
    if sqlite3.sqlite_version_info < TRIGRAM_SQLITE:
        return False
    return bool(connection.exec_driver_sql("SELECT sqlite_compileoption_used('ENABLE_FTS5')").scalar())


def of_account(session: Session, model, account_id: uuid.UUID, typed: str | None):
    """select(model) of the account's rows (customers or products), narrowed to the names that
    contain `typed`, in any case, when it is given."""
    owner = model.account_id == account_id
    if not typed:
        return select(model).where(owner)
    lowered = typed.lower()
    condition = sa.func.lower(model.name).contains(lowered, autoescape=True)
    table = model.__tablename__
    if len(lowered) < TRIGRAM or table not in _indexed_tables(session):
        return select(model).where(owner, condition)
    phrase = '"' + lowered.replace('"', '""') + '"'  # an FTS5 string: every character literal
    if _candidates(session, table, phrase) >= MANY:
        return select(model).where(owner, condition)
    # The account's index by creation would look cheaper to SQLite's planner (it assumes a few rows per
    # account); `+account_id` keeps it out of the choice, so the matches are read by id and sorted.
    return select(model).where(_unindexed(model.account_id) == account_id, condition,
                               model.id.in_(_matching(table, phrase)))


def _unindexed(column):
    return UnaryExpression(column, operator=operators.custom_op("+"), type_=column.type)


@functools.cache
def _tables(table: str) -> tuple[sa.TableClause, sa.TableClause]:
    fts = sa.table(fts_table(table), sa.column("rowid", sa.Integer()), sa.column(fts_table(table)))
    keys = sa.table(keys_table(table), sa.column("key", sa.Integer()), sa.column("id", sa.Uuid()))
    return fts, keys


def _match(table: str, phrase: str):
    fts, _keys = _tables(table)
    return fts.c[fts_table(table)].op("MATCH")(phrase)


def _matching(table: str, phrase: str):
    """The ids of the rows whose name the index matches `phrase` for (a superset of the condition's)."""
    fts, keys = _tables(table)
    return sa.select(keys.c.id).join(fts, fts.c.rowid == keys.c.key).where(_match(table, phrase))


def _candidates(session: Session, table: str, phrase: str) -> int:
    """How many names anywhere the index matches `phrase` for, counted up to MANY."""
    first = sa.select(sa.literal(1)).where(_match(table, phrase)).limit(MANY).subquery()
    return session.execute(sa.select(sa.func.count()).select_from(first)).scalar_one()


_indexed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _indexed_tables(session: Session) -> frozenset[str]:
    """The searched tables with a trigram index in this database: read once per engine (its pool),
    as the schema changes only by migrations, which run before the service serves."""
    bind = session.get_bind()
    if bind.dialect.name != "sqlite":
        return frozenset()
    found = _indexed.get(bind.pool)
    if found is None:
        names = set(session.scalars(sa.text("SELECT name FROM sqlite_master WHERE type = 'table'")))
        found = frozenset(table for table in SEARCHED if {fts_table(table), keys_table(table)} <= names)
        _indexed[bind.pool] = found
    return found
