"""The request path's database work: how many statements a read costs, reads without transactions
on PostgreSQL, SQLite writers taking turns, and surviving a dropped database connection."""

from __future__ import annotations

import sqlite3
import threading

import asyncpg
import pytest
from sqlalchemy import create_engine, event, text
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.pool import NullPool
from sqlmodel import func, select

from core.base import db, executor, raw
from core.base.errors import UpstreamFailed
from core.models import Customer
from tests.api.invoicing import add_webhook_endpoint, adhoc, create, customer, draft, finalize


def _dialect() -> str:
    return db.get_engine().dialect.name


def _statements_of(request, monkeypatch) -> list[str]:
    """The first word of each statement a request runs on the executor's drivers (asyncpg, sqlite3)."""
    statements: list[str] = []

    def noted(name):
        original = getattr(asyncpg.Connection, name)

        async def noting(connection, sql, *arguments, **options):
            statements.append(sql.split()[0].rstrip(";"))
            return await original(connection, sql, *arguments, **options)
        return noting
    run = raw.SqliteText.run

    def run_noted(text, connection, parameters):
        statements.append(text.sql.split()[0])
        return run(text, connection, parameters)
    with monkeypatch.context() as scoped:
        for name in ("fetchrow", "fetchval", "fetch", "execute", "executemany"):
            scoped.setattr(asyncpg.Connection, name, noted(name))
        scoped.setattr(raw.SqliteText, "run", run_noted)
        assert request().status_code in (200, 201)
    return statements


def test_reading_an_invoice_again_costs_two_statements_on_postgresql(tenant, monkeypatch):
    invoice = draft(tenant, items=[adhoc(f"Item {n}") for n in range(10)])
    tenant.get("/business")  # the key's first use notes its use: not part of every request
    # The key's check with the request's count; the invoice's version; the first read of a version
    # reads the invoice with its parties and lines in a third statement, whose JSON is kept.
    expected = [["WITH", "SELECT", "SELECT"], ["WITH", "SELECT"]]
    if _dialect() == "sqlite":  # the key; the count in the write turn; the invoice and its lines in one snapshot
        expected = [["SELECT", "INSERT", "SELECT", "SELECT"]] * 2
    assert [_statements_of(lambda: tenant.get(f"/invoices/{invoice['id']}"), monkeypatch) for _ in range(2)] == expected


def test_an_invoice_of_ten_lines_costs_the_statements_of_one_of_a_single_line(tenant, monkeypatch):
    one = draft(tenant, items=[adhoc()])
    ten = draft(tenant, items=[adhoc(f"Item {n}") for n in range(10)])
    tenant.get("/business")
    assert len(_statements_of(lambda: tenant.get(f"/invoices/{ten['id']}"), monkeypatch)) == \
        len(_statements_of(lambda: tenant.get(f"/invoices/{one['id']}"), monkeypatch))


def _sql_during(request) -> list[str]:
    """The text of every statement run while `request()` is answered, one line each: by the engine,
    and by the executor's units (`core.base.executor`, on asyncpg or sqlite3)."""
    statements: list[str] = []
    listener = lambda *args: statements.append(" ".join(args[2].split()))  # noqa: E731
    shape, sqlite_text = executor._shape, raw.sqlite_text

    def shaped(statement):
        compiled = shape(statement)
        statements.append(" ".join(compiled.text.sql.split()))
        return compiled

    def sqlite_compiled(statement):
        compiled = sqlite_text(statement)
        statements.append(" ".join(compiled.sql.split()))
        return compiled
    event.listen(db.get_engine(), "before_cursor_execute", listener)
    executor._shape, raw.sqlite_text = shaped, sqlite_compiled
    try:
        response = request()
    finally:
        executor._shape, raw.sqlite_text = shape, sqlite_text
        event.remove(db.get_engine(), "before_cursor_execute", listener)
    assert response.status_code in (200, 201), response.text
    return statements


def _count(statements: list[str], start: str, table: str) -> int:
    return sum(1 for sql in statements if sql.startswith(start) and f" {table}" in sql.split(" WHERE ")[0])


def test_creating_an_invoice_costs_one_transaction_after_the_key_and_the_claim(tenant, monkeypatch):
    if _dialect() != "postgresql":
        pytest.skip("asyncpg's statements")
    buyer = customer(tenant)["id"]
    tenant.get("/business")
    # The key's check and the count; the claim; then in one transaction the customer and the profile,
    # the draft, its ten lines in one executemany, its event, the endpoints it goes to, its change noted
    # for MCP listen streams (with its NOTIFY), the stored answer.
    assert _statements_of(lambda: create(tenant, customer_id=buyer, items=[adhoc(f"Item {n}") for n in range(10)]),
                          monkeypatch) == ["WITH", "INSERT", "BEGIN", "SELECT", "SELECT", "INSERT", "INSERT", "INSERT",
                                           "SELECT", "WITH", "UPDATE", "COMMIT"]


def test_finalizing_runs_cores_finalization_in_one_transaction_after_the_key_and_the_claim(tenant, monkeypatch):
    if _dialect() != "postgresql":
        pytest.skip("asyncpg's statements")
    invoice = draft(tenant)
    # The key's check and the count; the claim; then in one transaction `finalization.finalize`: the
    # draft locked and read, the endpoints that subscribe, the number taken, the invoice written, its
    # event, its change noted (with its NOTIFY); and the stored answer.
    assert _statements_of(lambda: finalize(tenant, invoice["id"]), monkeypatch) == [
        "WITH", "INSERT", "BEGIN", "SELECT", "SELECT", "INSERT", "UPDATE", "INSERT", "WITH", "UPDATE", "COMMIT"]


def test_creating_an_invoice_reads_its_customer_and_profile_once_and_writes_it_once(tenant):
    buyer = customer(tenant)["id"]
    statements = _sql_during(lambda: create(tenant, customer_id=buyer, items=[adhoc(f"Item {n}") for n in range(10)]))
    assert _count(statements, "SELECT", "customers") == 1  # for the draft, its event and the answer
    assert _count(statements, "SELECT", "business_profiles") == 1
    assert _count(statements, "INSERT INTO", "invoices") == 1 and _count(statements, "UPDATE", "invoices") == 0
    assert _count(statements, "INSERT INTO", "invoice_lines") == 1  # the ten lines in one executemany
    assert not any("max(invoice_events.created_at)" in sql for sql in statements)  # its first event


def test_finalizing_takes_the_number_in_one_statement_and_writes_the_invoice_once(tenant):
    invoice = draft(tenant)
    statements = _sql_during(lambda: finalize(tenant, invoice["id"]))
    assert sum(1 for sql in statements if "invoice_counters" in sql) == 1
    assert _count(statements, "UPDATE", "invoices") == 1


def test_once_the_number_is_taken_only_the_finalizations_writes_follow(tenant):
    """The account's numbering stays locked from the number's taking to the commit, so the endpoints
    the event goes to are read before it; after it come the invoice, its event, its delivery and its
    change (for MCP listen streams), and the stored answer."""
    add_webhook_endpoint(tenant.account_id)
    invoice = draft(tenant)
    statements = _sql_during(lambda: finalize(tenant, invoice["id"]))
    numbered = next(at for at, sql in enumerate(statements) if "invoice_counters" in sql)
    assert any("FROM webhook_endpoints" in sql for sql in statements[:numbered])
    assert [_written_table(sql) for sql in statements[numbered + 1:]] == [
        "invoices", "invoice_events", "webhook_deliveries", "change_feed", "idempotency_records"]


def _written_table(sql: str) -> str:
    """The table a statement writes (an INSERT inside a WITH too: the change feed's note and NOTIFY)."""
    words = sql.split()
    return words[1] if words[0] == "UPDATE" else words[words.index("INTO") + 1] if "INTO" in words else sql


def test_a_read_on_postgresql_runs_outside_a_transaction(tenant):
    if _dialect() != "postgresql":
        pytest.skip("SQLite keeps one snapshot for a read (a deferred BEGIN)")
    with db.new_session(read_only=True) as session:
        session.execute(text("SELECT 1"))
        assert session.connection().connection.dbapi_connection.autocommit


def test_authentication_and_counting_run_outside_a_transaction_on_postgresql(tenant, monkeypatch):
    """The credential's check, the count and the key's use commit on their own: no BEGIN and COMMIT."""
    if _dialect() != "postgresql":
        pytest.skip("on SQLite they share one short write transaction")
    commands, execute = [], asyncpg.Connection.execute

    async def noted(connection, sql, *arguments, **options):
        commands.append(sql.split()[0].upper())
        return await execute(connection, sql, *arguments, **options)
    monkeypatch.setattr(asyncpg.Connection, "execute", noted)
    statements = _sql_during(lambda: tenant.get("/customers"))
    assert any("rate_limit" in sql for sql in statements)  # counted on the executor's connections
    assert "BEGIN" not in commands


def test_a_connection_that_served_a_read_writes_in_a_transaction_again(tenant):
    with db.new_session(read_only=True) as session:
        session.execute(text("SELECT 1"))
    with pytest.raises(LookupError):
        with db.transaction() as session:
            session.add(Customer(account_id=tenant.account_id, name="Rolled back"))
            session.flush()
            raise LookupError
    with db.transaction() as session:
        assert session.exec(select(func.count()).select_from(Customer)).one() == 0


def test_a_read_survives_the_database_dropping_every_connection(tenant):
    if _dialect() != "postgresql":
        pytest.skip("an embedded SQLite database has no connection to drop")
    assert tenant.get("/business").status_code == 200  # the pools now hold connections
    invoice = draft(tenant)
    assert tenant.get(f"/invoices/{invoice['id']}").status_code == 200
    # This process's connections only: the other test processes share the database.
    ours = [record.dbapi_connection.info.backend_pid for record in list(db.get_engine().pool._pool.queue)
            if record.dbapi_connection is not None]
    outsider = create_engine(db.get_engine().url, poolclass=NullPool)
    with outsider.connect() as connection:
        dropped = connection.execute(text(
            # Waiting (up to 5 s) until each has ended: the requests below meet dead connections.
            "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity WHERE pid = ANY(CAST(:pids AS int[])) "
            "OR application_name = :fast"), {"pids": ours, "fast": raw.application_name()}).scalar()
    outsider.dispose()
    assert dropped >= 2  # the ORM's pool and the executor's
    for _ in range(3):  # however the pools hand the dead connections out
        assert tenant.get("/business").status_code == 200
        assert tenant.get(f"/invoices/{invoice['id']}").status_code == 200


def test_the_servers_last_word_before_it_closes_a_connection_is_a_disconnect(tenant, monkeypatch):
    """psycopg may read the server's error (57P01) before it sees the socket close; the connection
    must be replaced all the same, not handed out again."""
    if _dialect() != "postgresql":
        pytest.skip("an embedded SQLite database has no connection to drop")
    engine = db.make_engine(db.get_engine().url.render_as_string(hide_password=False))  # a pool of its own
    try:
        with engine.connect() as connection:  # the pool's one connection, whose backend ends below
            pid = connection.execute(text("SELECT pg_backend_pid()")).scalar()
        outsider = create_engine(engine.url, poolclass=NullPool)
        with outsider.connect() as connection:
            connection.execute(text("SELECT pg_terminate_backend(:pid, 5000)"), {"pid": pid})
        outsider.dispose()
        monkeypatch.setattr(type(engine.dialect), "is_disconnect", lambda *_: False)  # EOF not seen yet
        with pytest.raises(DBAPIError) as raised:
            with engine.connect() as connection:
                connection.execute(text("SELECT 1"))
        assert raised.value.connection_invalidated
        with engine.connect() as connection:  # the pool's connections were replaced
            assert connection.execute(text("SELECT 1")).scalar() == 1
    finally:
        engine.dispose()


def _dropping_the_first_connection(monkeypatch) -> list:
    """Handlers on the ORM whose first session loses its connection; the calls' sessions, in order."""
    from operations import pipeline
    sessions, new = [], pipeline.new_session

    def dropped(*_args, **_options):
        raise OperationalError("SELECT 1", None, Exception("server closed the connection"),
                               connection_invalidated=True)

    def recorded(**options):
        session = new(**options)
        sessions.append(session)
        if len(sessions) == 1:
            for name in ("execute", "exec", "get", "flush", "commit"):
                setattr(session, name, dropped)
        return session
    monkeypatch.setattr(pipeline, "new_session", recorded)
    return sessions


def test_a_read_whose_connection_was_dropped_is_answered_on_a_new_one(tenant, monkeypatch):
    sessions = _dropping_the_first_connection(monkeypatch)
    assert tenant.get("/business").status_code == 200
    assert len(sessions) == 2 and sessions[0] is not sessions[1]  # a new session, so a new connection


def test_a_write_whose_connection_was_dropped_is_not_repeated(tenant, monkeypatch):
    sessions = _dropping_the_first_connection(monkeypatch)
    assert tenant.post("/customers", json={"name": "Globex"}).status_code == 502
    assert len(sessions) == 1  # whether it was done is unknown: the caller retries with its idempotency key


def test_a_unit_is_repeated_once_after_a_dropped_connection():
    calls = []

    def unit():
        calls.append(1)
        if len(calls) == 1:
            raise DBAPIError("SELECT 1", None, Exception("server closed the connection"), connection_invalidated=True)
        return "done"
    assert db.retrying_disconnects(unit) == "done" and len(calls) == 2


def test_a_unit_is_not_repeated_after_another_database_error():
    calls = []

    def unit():
        calls.append(1)
        raise DBAPIError("SELECT 1", None, Exception("syntax error"))
    with pytest.raises(DBAPIError):
        db.retrying_disconnects(unit)
    assert len(calls) == 1


# --- SQLite: writers of one process take turns ------------------------------------------------


@pytest.fixture
def sqlite_only():
    if _dialect() != "sqlite":
        pytest.skip("the writers' turns are SQLite's")


def _write_customer_in_thread(account_id, name: str, done: threading.Event, errors: list) -> threading.Thread:
    def write():
        try:
            with db.transaction() as session:
                session.add(Customer(account_id=account_id, name=name))
        except Exception as exc:  # reported to the test's thread
            errors.append(exc)
        finally:
            done.set()
    thread = threading.Thread(target=write)
    thread.start()
    return thread


def _names() -> list[str]:
    with db.transaction() as session:
        return list(session.exec(select(Customer.name).order_by(Customer.created)))


def test_a_writer_waits_for_the_writer_before_it_and_goes_once_it_commits(tenant, sqlite_only):
    done, errors = threading.Event(), []
    with db.transaction() as session:
        session.add(Customer(account_id=tenant.account_id, name="First"))
        session.flush()
        second = _write_customer_in_thread(tenant.account_id, "Second", done, errors)
        assert not done.wait(0.3)  # still waiting for its turn while the first holds it
    assert done.wait(10) and not errors
    second.join()
    assert _names() == ["First", "Second"]


def test_a_writer_gives_its_turn_back_when_it_rolls_back(tenant, sqlite_only):
    with pytest.raises(LookupError):
        with db.transaction() as session:
            session.add(Customer(account_id=tenant.account_id, name="Rolled back"))
            raise LookupError
    done, errors = threading.Event(), []
    _write_customer_in_thread(tenant.account_id, "Next", done, errors).join(10)
    assert done.is_set() and not errors and _names() == ["Next"]


def test_a_writer_gives_its_turn_back_when_its_connection_is_dropped(tenant, sqlite_only):
    session = db.new_session()
    session.execute(text("SELECT 1"))  # begins: the turn is taken
    session.connection().invalidate()
    session.close()
    done, errors = threading.Event(), []
    _write_customer_in_thread(tenant.account_id, "Next", done, errors).join(10)
    assert done.is_set() and not errors


def test_a_writer_that_waits_too_long_fails_as_an_unavailable_database(tenant, sqlite_only, monkeypatch):
    monkeypatch.setattr(db, "SQLITE_BUSY_SECONDS", 0.2)
    done, errors = threading.Event(), []
    with db.transaction() as session:
        session.execute(text("SELECT 1"))  # begins: the turn is taken
        _write_customer_in_thread(tenant.account_id, "Late", done, errors).join(10)
    assert len(errors) == 1 and isinstance(errors[0], OperationalError)
    assert isinstance(db.database_fault(errors[0]), UpstreamFailed)


def test_a_read_only_session_does_not_wait_for_a_writer(tenant, sqlite_only):
    with db.transaction() as session:
        session.add(Customer(account_id=tenant.account_id, name="Uncommitted"))
        session.flush()
        seen: list = []

        def read():
            with db.new_session(read_only=True) as reader:
                seen.append(reader.exec(select(func.count()).select_from(Customer)).one())
        reader = threading.Thread(target=read)
        reader.start()
        reader.join(10)
        assert seen == [0]  # read while the writer still held its turn, and saw only committed rows


def test_requests_run_on_as_many_threads_as_the_setting_names(test_settings):
    import anyio
    from starlette.testclient import TestClient

    from config.settings import set_settings
    from service.app import create_app
    set_settings(test_settings.model_copy(update={"request_threads": 3}))
    with TestClient(create_app()) as client:
        assert client.portal.call(lambda: anyio.to_thread.current_default_thread_limiter().total_tokens) == 3


def test_a_credentials_requests_do_not_wait_for_each_other(tenant):
    if _dialect() != "postgresql":
        pytest.skip("SQLite has one writer at a time: there every write waits for the one before it")
    invoice = draft(tenant)
    blocker = create_engine(db.get_engine().url, poolclass=NullPool)
    finished: list[int] = []
    with blocker.connect() as connection:
        connection.execute(text("SELECT id FROM invoices WHERE id = CAST(:id AS uuid) FOR UPDATE"),
                           {"id": invoice["id"].removeprefix("in_")})
        slow = threading.Thread(target=lambda: finished.append(
            tenant.post(f"/invoices/{invoice['id']}/finalize", idem=True).status_code))
        slow.start()  # counted, then waits for the invoice's row inside its operation
        slow.join(0.5)
        assert slow.is_alive()
        assert tenant.get("/customers").status_code == 200  # the same key, meanwhile
        connection.rollback()
    slow.join(10)
    blocker.dispose()
    assert finished == [200]


def test_postgresql_plans_every_statement_for_its_parameters(tenant):
    if _dialect() != "postgresql":
        pytest.skip("a plan cache is PostgreSQL's")
    with db.new_session(read_only=True) as session:
        assert session.execute(text("SHOW plan_cache_mode")).scalar() == "force_custom_plan"


@pytest.mark.parametrize(("fault", "code"), [
    (sqlite3.OperationalError("database is locked"), "upstream_failed"),
    (sqlite3.IntegrityError("UNIQUE constraint failed"), "conflict"),
    (sqlite3.DataError("string or blob too big"), "validation"),
    (asyncpg.AdminShutdownError("terminating connection due to administrator command"), "upstream_failed"),
    (asyncpg.QueryCanceledError("canceling statement due to statement timeout"), "upstream_failed"),
    (asyncpg.DeadlockDetectedError("deadlock detected"), "upstream_failed"),
    (asyncpg.UniqueViolationError("duplicate key value"), "conflict"),
    (asyncpg.DataError("value too long"), "validation"),
])
def test_the_executors_drivers_faults_mean_what_sqlalchemys_do(fault, code):
    """Units run on sqlite3 and asyncpg themselves (core.base.executor): their faults are mapped as the ORM's."""
    assert db.database_fault(fault).code == code


def test_an_access_tokens_check_and_count_are_one_statement_on_postgresql(client, browser, tenant, monkeypatch):
    if _dialect() != "postgresql":
        pytest.skip("asyncpg's statements")
    from tests.oauth_flow import obtain, register
    app = register(client, token_endpoint_auth_method="none")
    token = obtain(client, app, resource="http://testserver/api/v1")["access_token"]
    headers = {"Authorization": f"Bearer {token}"}
    assert client.get("/api/v1/business", headers=headers).status_code == 200  # the grant's first use noted
    # The token, its grant, client and checks, the count, the grant's use: one statement; the
    # customers are read on the ORM.
    assert _statements_of(lambda: client.get("/api/v1/customers", headers=headers), monkeypatch) == ["WITH"]
