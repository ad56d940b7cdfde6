"""`invoicing db backup FILE`: a consistent copy of the embedded SQLite database while the service
runs, through SQLite's online backup API (readers and writers go on meanwhile). PostgreSQL has its
own tools (`pg_dump`, or base backups with WAL archiving): docs/operations.md."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from sqlalchemy.engine import make_url


class BackupRefused(Exception):
    pass


def sqlite_file(database_url: str) -> Path:
    url = make_url(database_url)
    if url.get_backend_name() != "sqlite":
        raise BackupRefused(f"the database is {url.get_backend_name()}, not the embedded SQLite: back it up with "
                            "its own tools (PostgreSQL: pg_dump --format=custom; see docs/operations.md)")
    if not url.database or url.database == ":memory:" or not Path(url.database).is_file():
        raise BackupRefused(f"there is no SQLite database at {url.database or '(none)'}")
    return Path(url.database)


def backup(database_url: str, target: Path) -> int:
    """Copy the database to `target` (which must not exist) and check the copy; returns its size."""
    source = sqlite_file(database_url)
    if target.exists():
        raise BackupRefused(f"{target} exists already: choose a new file name")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    with sqlite3.connect(f"file:{source}?mode=ro", uri=True) as reading, sqlite3.connect(partial) as copy:
        reading.backup(copy)  # one step: a consistent snapshot, under a read lock only
        problems = copy.execute("PRAGMA integrity_check").fetchall()
        copy.execute("PRAGMA journal_mode = DELETE")  # one self-contained file, no -wal beside it
    if problems != [("ok",)]:
        partial.unlink(missing_ok=True)
        raise BackupRefused(f"the copy failed its integrity check: {problems[:3]}")
    os.replace(partial, target)
    return target.stat().st_size
