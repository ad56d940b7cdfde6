"""Run a command against a brand-new PostgreSQL database, dropped afterwards.

Usage: with-fresh-postgres.py -- COMMAND...  (server from INVOICING_TEST_POSTGRES_URL)
The command sees the new database as INVOICING_TEST_DATABASE_URL.
"""

import os
import secrets
import subprocess
import sys

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url


def main() -> int:
    command = sys.argv[sys.argv.index("--") + 1:]
    server = make_url(os.environ["INVOICING_TEST_POSTGRES_URL"])
    name = f"invoicing_test_{secrets.token_hex(4)}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        env = {**os.environ, "INVOICING_TEST_DATABASE_URL": server.set(database=name).render_as_string(hide_password=False)}
        print(f"PostgreSQL pass on database {name}", flush=True)
        return subprocess.call(command, env=env)
    finally:
        with admin.connect() as conn:
            leftovers = conn.execute(text("SELECT datname FROM pg_database WHERE datname LIKE :prefix"),
                                     {"prefix": f"{name}%"}).scalars().all()
            for database in leftovers:  # the per-worker databases of pytest-xdist, and this one
                conn.execute(text(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
        admin.dispose()


if __name__ == "__main__":
    sys.exit(main())
