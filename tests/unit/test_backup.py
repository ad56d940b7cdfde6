"""`invoicing db backup`: a checked, self-contained copy of the SQLite database; never overwrites."""

from __future__ import annotations

import sqlite3

import pytest

from service import backup


@pytest.fixture
def live_database(tmp_path):
    path = tmp_path / "live.db"
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("CREATE TABLE t (x INTEGER)")
        connection.executemany("INSERT INTO t VALUES (?)", [(n,) for n in range(100)])
    return path


def test_the_copy_holds_every_row_in_one_file(live_database, tmp_path):
    target = tmp_path / "copies" / "copy.db"
    size = backup.backup(f"sqlite:///{live_database}", target)
    assert size == target.stat().st_size > 0
    with sqlite3.connect(target) as copy:
        assert copy.execute("SELECT count(*), sum(x) FROM t").fetchone() == (100, 4950)
        assert copy.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    assert sorted(p.name for p in target.parent.iterdir()) == ["copy.db"]


def test_an_existing_file_is_never_overwritten(live_database, tmp_path):
    target = tmp_path / "copy.db"
    target.write_text("precious")
    with pytest.raises(backup.BackupRefused, match="exists already"):
        backup.backup(f"sqlite:///{live_database}", target)
    assert target.read_text() == "precious"


def test_a_missing_database_is_refused(tmp_path):
    with pytest.raises(backup.BackupRefused, match="no SQLite database"):
        backup.backup(f"sqlite:///{tmp_path / 'none.db'}", tmp_path / "copy.db")
    assert not (tmp_path / "none.db").exists()


def test_postgresql_is_pointed_to_its_own_tools(tmp_path):
    with pytest.raises(backup.BackupRefused, match="pg_dump"):
        backup.backup("postgresql+psycopg://db.example/invoicing", tmp_path / "copy.db")
