"""What the benchmark reads back from its database: the numbering after the finalize load, and the
query plans of the first list page and of a customer search, captured from the statements `core`
really runs (so a plan shown is the plan served).

    python -m bench.plans numbering ACCOUNT
    python -m bench.plans explain ACCOUNT NAME
    python -m bench.plans receivables ACCOUNT
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

from sqlalchemy import event, select

ROOT = Path(__file__).resolve().parents[1]


def _in_subprocess(database_url: str, *args: str) -> dict:
    env = {**os.environ, "INVOICING_DATABASE_URL": database_url, "INVOICING_SECRET_KEY": "bench-secret",
           "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "bench.plans", *args], env=env, cwd=ROOT, capture_output=True,
                         text=True)
    if out.returncode:
        raise SystemExit(out.stderr)
    return json.loads(out.stdout)


def numbering(database_url: str, account: str) -> dict:
    return _in_subprocess(database_url, "numbering", account)


def explain(database_url: str, account: str, name: str) -> dict:
    return _in_subprocess(database_url, "explain", account, name)


def explain_receivables(database_url: str, account: str) -> dict:
    return _in_subprocess(database_url, "receivables", account)


def _numbering(account: str) -> dict:
    """The account's invoice numbers form 1..N with no gap and no repeat."""
    from core.base import db
    from core.models import Invoice
    with db.transaction() as session:
        numbers = session.execute(select(Invoice.number).where(Invoice.account_id == uuid.UUID(account),
                                                               Invoice.number.is_not(None))).scalars().all()
    sequence = sorted(int(re.search(r"(\d+)$", number).group(1)) for number in numbers)
    return {"finalized": len(sequence), "gapless": sequence == list(range(1, len(sequence) + 1))}


def _explain(account: str, name: str) -> dict:
    from core.base import db, executor
    from core.billing import invoices
    from core.billing.invoice_inputs import InvoiceListQuery
    from core.catalog import customers
    from core.catalog.customers import CustomerListQuery
    engine = db.get_engine()
    owner = uuid.UUID(account)
    reads = {
        "first page of invoices (limit 10)": lambda s: executor.within(s, invoices.list_invoices, owner,
                                                                       InvoiceListQuery(limit=10)),
        f"customer search for {name!r}": lambda s: customers.list_customers(s, owner, CustomerListQuery(query=name)),
    }
    plans = {}
    for label, read in reads.items():
        captured: list[tuple[str, object]] = []

        def capture(_conn, _cursor, statement, parameters, _context, _many, into=captured):
            into.append((statement, parameters))
        event.listen(engine, "before_cursor_execute", capture)
        try:
            with db.new_session(read_only=True) as session:
                read(session)
        finally:
            event.remove(engine, "before_cursor_execute", capture)
        # The page's statement (a search on SQLite first counts the trigram index's matches).
        statement, parameters = next((s, p) for s, p in captured
                                     if s.lstrip().upper().startswith("SELECT") and "ORDER BY" in s)
        prefix = "EXPLAIN QUERY PLAN " if engine.dialect.name == "sqlite" else "EXPLAIN (ANALYZE, COSTS OFF) "
        raw = engine.raw_connection()
        try:
            cursor = raw.cursor()
            cursor.execute(prefix + statement, parameters)
            rows = cursor.fetchall()
        finally:
            raw.close()
        plan = [" ".join(str(part) for part in row[3:]) if engine.dialect.name == "sqlite" else row[0] for row in rows]
        plans[label] = {"statement": statement, "plan": plan}
    return plans


def _explain_receivables(account: str) -> dict:
    """The plans of the two statements of `GET /receivables` (no cursor, no filter), on PostgreSQL with
    the settings of the connections that run them (`core.base.raw`: no sequential scan, no sort where
    another plan exists) and the database's own JIT setting; with costs, as only then does PostgreSQL
    show the JIT's time."""
    from datetime import date

    from core.base import db, raw
    from core.billing import receivables
    engine = db.get_engine()
    parameters = {**receivables.statement_parameters(uuid.UUID(account), date.today(), None), "rows": 26}
    statements = {"receivables per currency": receivables.currencies_statement(currency=False),
                  "receivables per customer, first page": receivables.customers_statement(currency=False, after=False)}
    plans = {}
    for label, statement in statements.items():
        if engine.dialect.name == "sqlite":
            text = raw.sqlite_text(statement)
            connection = engine.raw_connection()
            try:
                rows = connection.cursor().execute("EXPLAIN QUERY PLAN " + text.sql, text.arguments(parameters)).fetchall()
            finally:
                connection.close()
            plans[label] = {"statement": text.sql, "plan": [" ".join(str(part) for part in row[3:]) for row in rows]}
            continue
        compiled = statement.compile(dialect=engine.dialect, compile_kwargs={"render_postcompile": True})
        with engine.connect() as connection:
            connection.exec_driver_sql("SET enable_seqscan = off")
            connection.exec_driver_sql("SET enable_sort = off")
            rows = connection.exec_driver_sql("EXPLAIN (ANALYZE) " + str(compiled),
                                              compiled.construct_params(parameters)).fetchall()
        plans[label] = {"statement": str(compiled), "plan": [row[0] for row in rows]}
    return plans


def main(argv: list[str]) -> None:
    command, *args = argv
    result = {"numbering": _numbering, "explain": _explain, "receivables": _explain_receivables}[command](*args)
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
