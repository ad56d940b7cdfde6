"""The real `invoicing` command, on a SQLite database of its own (not the shared test database)."""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.e2e

KEY = re.compile(r"inv_live_[A-Za-z0-9]{8}_[A-Za-z0-9]{32}")
INVOICING = shutil.which("invoicing", path=str(Path(sys.executable).parent)) or "invoicing"
TIMEOUT = 60


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("cli")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("INVOICING_")}
    return {**clean, "INVOICING_DATABASE_URL": f"sqlite:///{home}/invoicing.db",
            "INVOICING_DATA_DIR": str(home / "var"), "INVOICING_SECRET_KEY": "cli-test-secret"}


@pytest.fixture(scope="module")
def cli(env):
    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([INVOICING, *args], env=env, input=stdin, capture_output=True, text=True,
                              timeout=TIMEOUT)
    return run


def refused(result: subprocess.CompletedProcess) -> str:
    """The stderr of a command that failed the way a user mistake should: exit 2, no traceback."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    return result.stderr


def new_email() -> str:
    return f"owner-{uuid.uuid4().hex[:8]}@example.com"


@pytest.fixture(scope="module")
def account(cli) -> str:
    """One owner shared by the tests of this module (each command run costs a Python start-up)."""
    email = new_email()
    assert cli("accounts", "create", "--email", email, "--password", "correct horse").returncode == 0
    return email


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server(env):
    """`invoicing serve --no-worker` on a free port, sharing the CLI's database."""
    port = free_port()
    process = subprocess.Popen([INVOICING, "serve", "--port", str(port), "--no-worker"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}/api/v1"
    deadline = time.monotonic() + TIMEOUT
    while True:
        assert process.poll() is None, process.stdout.read()
        try:
            if httpx.get(f"{base}/openapi.json", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.2)
    yield base
    process.send_signal(signal.SIGTERM)
    process.wait(TIMEOUT)


def test_without_a_command_usage_is_printed_and_it_exits_2(cli):
    result = cli()
    assert result.returncode == 2 and "usage: invoicing" in result.stderr


def test_db_upgrade_creates_the_schema(cli, env):
    result = cli("db", "upgrade")
    assert result.returncode == 0, result.stderr
    assert Path(env["INVOICING_DATABASE_URL"].removeprefix("sqlite:///")).exists()


def test_accounts_create_prints_the_account_id(cli):
    result = cli("accounts", "create", "--email", new_email(), "--password", "correct horse", "--name", "Ann")
    assert result.returncode == 0, result.stderr
    uuid.UUID(result.stdout.strip())


def test_accounts_create_twice_with_one_email_is_refused_clearly(cli, account):
    stderr = refused(cli("accounts", "create", "--email", account.upper(), "--password", "another one"))
    assert "already exists" in stderr


def test_accounts_create_with_a_short_password_names_the_field(cli):
    stderr = refused(cli("accounts", "create", "--email", new_email(), "--password", "short"))
    assert "password: must be at least 8 characters" in stderr


def test_accounts_verify_email(cli, account):
    result = cli("accounts", "verify-email", "--email", account)
    assert result.returncode == 0 and "verified" in result.stdout


def test_accounts_verify_email_of_an_unknown_user_is_refused(cli):
    assert "No user" in refused(cli("accounts", "verify-email", "--email", new_email()))


BUSINESS = {"legal_name": "Acme Ltd", "country_code": "gb", "currency": "gbp",
            "address": {"line1": "1 High Street", "city": "London"}}


def test_business_set_writes_the_profile(cli, account, tmp_path, server):
    file = tmp_path / "business.json"
    file.write_text(json.dumps(BUSINESS))
    result = cli("business", "set", "--email", account, "--file", str(file))
    assert result.returncode == 0, result.stderr
    key = cli("keys", "create", "--email", account, "--name", "k", "--preset", "read_only").stdout.strip()
    business = httpx.get(f"{server}/business", headers={"Authorization": f"Bearer {key}"}).json()["data"]
    assert (business["legal_name"], business["currency"], business["address"]["city"]) == ("Acme Ltd", "GBP", "London")


def test_business_set_reads_stdin(cli, account):
    result = cli("business", "set", "--email", account, "--file", "-", stdin=json.dumps(BUSINESS))
    assert result.returncode == 0, result.stderr


def test_business_set_with_an_invalid_file_prints_each_field_path(cli, account, tmp_path):
    file = tmp_path / "business.json"
    file.write_text(json.dumps({**BUSINESS, "country_code": "GBR", "address": {"city": 5}, "colour": "red"}))
    stderr = refused(cli("business", "set", "--email", account, "--file", str(file)))
    for path in ("country_code:", "address.city:", "colour: unknown field"):
        assert path in stderr


def test_business_set_without_required_fields_names_them(cli, account, tmp_path):
    file = tmp_path / "business.json"
    file.write_text("{}")
    stderr = refused(cli("business", "set", "--email", account, "--file", str(file)))
    assert "legal_name: is required" in stderr and "currency: is required" in stderr


def test_business_set_with_a_file_that_is_not_json_is_refused(cli, account, tmp_path):
    file = tmp_path / "business.json"
    file.write_text("legal_name = Acme")
    assert "not valid JSON" in refused(cli("business", "set", "--email", account, "--file", str(file)))


def test_business_set_with_a_missing_file_is_refused(cli, account, tmp_path):
    stderr = refused(cli("business", "set", "--email", account, "--file", str(tmp_path / "none.json")))
    assert "cannot read" in stderr


def test_keys_create_prints_only_the_key_on_stdout(cli, account):
    result = cli("keys", "create", "--email", account, "--name", "ci", "--preset", "read_only")
    assert result.returncode == 0, result.stderr
    assert KEY.fullmatch(result.stdout.strip())


def test_keys_create_json_prints_id_key_and_scopes(cli, account):
    result = cli("keys", "create", "--email", account, "--name", "ci", "--scopes", "invoices:read,clients:write",
                 "--expires-days", "30", "--json")
    assert result.returncode == 0, result.stderr
    created = json.loads(result.stdout)
    assert set(created) == {"id", "key", "scopes"}
    uuid.UUID(created["id"])
    assert KEY.fullmatch(created["key"])
    assert created["scopes"] == ["clients:write", "invoices:read"]


def test_keys_create_with_an_unknown_scope_is_refused(cli, account):
    stderr = refused(cli("keys", "create", "--email", account, "--name", "x", "--scopes", "clients:read,bogus"))
    assert "unknown scope bogus" in stderr


def test_keys_create_needs_a_preset_or_scopes_but_not_both(cli, account):
    assert cli("keys", "create", "--email", account, "--name", "x").returncode == 2
    both = cli("keys", "create", "--email", account, "--name", "x", "--preset", "read_only", "--scopes", "clients:read")
    assert both.returncode == 2 and "not allowed with" in both.stderr


def test_keys_create_with_a_negative_expiry_is_refused(cli, account):
    stderr = refused(cli("keys", "create", "--email", account, "--name", "x", "--preset", "read_only",
                         "--expires-days", "-1"))
    assert "expires_in_days" in stderr


def test_keys_list_shows_ids_and_scopes_but_never_the_secret(cli, account):
    created = json.loads(cli("keys", "create", "--email", account, "--name", "listed", "--preset", "read_only",
                             "--json").stdout)
    result = cli("keys", "list", "--email", account)
    assert result.returncode == 0, result.stderr
    assert created["id"] in result.stdout and "business:read clients:read invoices:read" in result.stdout
    assert created["key"][:17] in result.stdout and created["key"][18:] not in result.stdout


def test_keys_list_json(cli, account):
    created = json.loads(cli("keys", "create", "--email", account, "--name", "listed", "--preset", "full_access",
                             "--json").stdout)
    [listed] = [key for key in json.loads(cli("keys", "list", "--email", account, "--json").stdout)
                if key["id"] == created["id"]]
    assert (listed["id"], listed["name"], listed["revoked_at"]) == (created["id"], "listed", None)


def test_keys_revoke_of_an_unknown_key_is_refused(cli, account):
    assert "No such API key" in refused(cli("keys", "revoke", "--email", account, str(uuid.uuid4())))


def test_keys_revoke_makes_the_key_401_on_the_next_request(cli, account, server):
    created = json.loads(cli("keys", "create", "--email", account, "--name", "doomed", "--preset", "full_access",
                             "--json").stdout)
    headers = {"Authorization": f"Bearer {created['key']}"}
    assert httpx.get(f"{server}/customers", headers=headers).status_code == 200
    result = cli("keys", "revoke", "--email", account, created["id"])
    assert result.returncode == 0, result.stderr
    response = httpx.get(f"{server}/customers", headers=headers)
    assert response.status_code == 401 and "revoked" in response.json()["detail"]


def test_keys_of_another_account_cannot_be_revoked(cli, account):
    other = json.loads(cli("keys", "create", "--email", account, "--name", "x", "--preset", "read_only",
                           "--json").stdout)
    stranger = new_email()
    cli("accounts", "create", "--email", stranger, "--password", "correct horse")
    assert "No such API key" in refused(cli("keys", "revoke", "--email", stranger, other["id"]))


def test_demo_prints_a_key_that_works_against_the_server(cli, server):
    result = cli("demo")
    assert result.returncode == 0, result.stderr
    key = KEY.search(result.stdout).group()
    assert "demo@example.com" in result.stdout
    assert f"Checked: the server at {server} accepts this key." in result.stdout
    response = httpx.get(f"{server}/customers", headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 200 and response.json() == {"data": [], "next_cursor": None}
    business = httpx.get(f"{server}/business", headers={"Authorization": f"Bearer {key}"})
    assert business.status_code == 200


def test_demo_prints_the_origin_serve_recorded(cli, server):
    """`serve --port P` without INVOICING_ORIGIN: the demo's links name that port, not 8000."""
    origin = server.removesuffix("/api/v1")
    stdout = cli("demo").stdout
    assert f"export INVOICING_URL={origin} API_KEY=" in stdout
    assert f"{origin}/login" in stdout and "127.0.0.1:8000" not in stdout


def test_demo_origin_option_wins(cli, server):
    stdout = cli("demo", "--origin", server.removesuffix("/api/v1") + "/").stdout
    assert f"{server}/docs" in stdout and "accepts this key" in stdout


def test_demo_with_no_server_running_says_so(cli, server):
    port = free_port()
    result = cli("demo", "--origin", f"http://127.0.0.1:{port}")
    assert result.returncode == 0, result.stderr
    assert f"No server answers at http://127.0.0.1:{port}/api/v1 yet" in result.stdout


def test_demo_refuses_to_create_a_stray_database(env, tmp_path):
    elsewhere = {**env, "INVOICING_DATABASE_URL": f"sqlite:///{tmp_path}/invoicing.db",
                 "INVOICING_DATA_DIR": str(tmp_path / "var")}
    result = subprocess.run([INVOICING, "demo"], env=elsewhere, capture_output=True, text=True, timeout=TIMEOUT)
    assert f"no database at {tmp_path}/invoicing.db" in refused(result)
    assert not (tmp_path / "invoicing.db").exists()


def test_demo_fails_when_the_server_serves_another_database(env, tmp_path, server):
    elsewhere = {**env, "INVOICING_DATABASE_URL": f"sqlite:///{tmp_path}/invoicing.db",
                 "INVOICING_DATA_DIR": str(tmp_path / "var")}
    subprocess.run([INVOICING, "db", "upgrade"], env=elsewhere, capture_output=True, timeout=TIMEOUT, check=True)
    result = subprocess.run([INVOICING, "demo", "--origin", server.removesuffix("/api/v1")], env=elsewhere,
                            capture_output=True, text=True, timeout=TIMEOUT)
    assert "answered 401 to the new key: it serves another database" in refused(result)


def test_demo_again_makes_a_new_key_but_no_second_account(cli):
    first = KEY.search(cli("demo").stdout).group()
    again = cli("demo")
    assert again.returncode == 0, again.stderr
    assert KEY.search(again.stdout).group() != first
    keys = json.loads(cli("keys", "list", "--email", "demo@example.com", "--json").stdout)
    assert {first[9:17], KEY.search(again.stdout).group()[9:17]} <= {k["key"][9:17] for k in keys}
    assert "already exists" in refused(cli("accounts", "create", "--email", "demo@example.com",
                                           "--password", "whatever123"))


def test_an_unusable_database_url_is_reported_without_a_traceback(env):
    result = subprocess.run([INVOICING, "db", "upgrade"], env={**env, "INVOICING_DATABASE_URL": "nonsense://"},
                            capture_output=True, text=True, timeout=TIMEOUT)
    assert refused(result).startswith("invoicing: INVOICING_DATABASE_URL")


class Running:
    """A started command whose output a thread reads line by line. (select() on the pipe with a
    buffered readline() misses lines already read into the buffer: it made startup look hung.)"""

    def __init__(self, env, *args: str) -> None:
        self.process = subprocess.Popen([INVOICING, *args], env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, text: str, timeout: float = 60.0) -> None:
        seen = ""
        deadline = time.monotonic() + timeout
        while text not in seen:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"did not print {text!r} within {timeout:g} s: {seen}") from None
            assert line is not None, f"exited before printing {text!r}: {seen}"
            seen += line

    def stop_and_read(self) -> str:
        """Sends SIGTERM, waits for a clean exit and answers what was printed since the last wait."""
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=TIMEOUT)
        self.reader.join(timeout=TIMEOUT)
        output = ""
        while (line := self.lines.get(timeout=TIMEOUT)) is not None:
            output += line
        assert self.process.returncode == 0, output
        return output


def test_worker_runs_the_cleanup_job_and_stops_on_sigterm(env):
    process = Running(env, "worker")
    process.wait_for("Background worker started: cleanup")
    assert "Background worker stopped." in process.stop_and_read()


def test_serve_runs_the_worker_in_process_and_stops_both_on_sigterm(env):
    port = free_port()
    process = Running(env, "serve", "--port", str(port))
    process.wait_for("Background worker started")
    process.wait_for(f"running on http://127.0.0.1:{port}")
    assert httpx.get(f"http://127.0.0.1:{port}/api/v1/openapi.json").status_code == 200
    output = process.stop_and_read()
    assert "Background worker stopped." in output


def test_serve_with_several_processes_answers(env):
    port = free_port()
    process = Running(env, "serve", "--port", str(port), "--workers", "2", "--no-worker")
    process.wait_for("Application startup complete")
    process.wait_for("Application startup complete")
    assert httpx.get(f"http://127.0.0.1:{port}/api/v1/openapi.json").status_code == 200
    assert "Background worker" not in process.stop_and_read()


def _register_from(port: int, address: str) -> int:
    body = {"client_name": "Spoofer", "redirect_uris": ["http://127.0.0.1:9/cb"], "token_endpoint_auth_method": "none"}
    return httpx.post(f"http://127.0.0.1:{port}/oauth/register", json=body,
                      headers={"X-Forwarded-For": address}).status_code


def test_serve_believes_no_forwarded_header_by_default(env):
    port = free_port()
    process = Running(env, "serve", "--port", str(port), "--no-worker")
    try:
        process.wait_for("Application startup complete")
        # The registration limit (30 an hour per client address) counts 127.0.0.1, whatever the header says.
        statuses = [_register_from(port, f"203.0.113.{n}") for n in range(31)]
    finally:
        process.stop_and_read()
    assert statuses[:30] == [201] * 30
    assert statuses[30] == 429


def test_serve_believes_forwarded_headers_from_configured_proxies(env):
    port = free_port()
    process = Running({**env, "INVOICING_FORWARDED_ALLOW_IPS": "127.0.0.1"}, "serve", "--port", str(port), "--no-worker")
    try:
        process.wait_for("Application startup complete")
        statuses = [_register_from(port, f"198.51.100.{n}") for n in range(31)]
    finally:
        process.stop_and_read()
    assert statuses == [201] * 31


def test_a_person_with_two_businesses_names_one_with_account(cli, env):
    email = new_email()
    assert cli("accounts", "create", "--email", email, "--password", "correct horse").returncode == 0
    import sqlalchemy as sa
    engine = sa.create_engine(env["INVOICING_DATABASE_URL"])
    with engine.begin() as conn:  # a second business of the same person, as the dashboard makes one
        user_id = conn.execute(sa.text("SELECT id FROM users WHERE email = :e"), {"e": email}).scalar_one()
        second = uuid.uuid4()
        conn.execute(sa.text("INSERT INTO accounts (id, owner_user_id, created_at) VALUES (:a, :u, CURRENT_TIMESTAMP)"),
                     {"a": second.hex, "u": user_id})
        conn.execute(sa.text("INSERT INTO memberships (id, account_id, user_id, role, created_at, updated_at) "
                             "VALUES (:m, :a, :u, 'owner', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"),
                     {"m": uuid.uuid4().hex, "a": second.hex, "u": user_id})
    engine.dispose()
    message = refused(cli("keys", "list", "--email", email))
    assert "2 businesses" in message and f"acct_{second.hex}" in message
    created = cli("keys", "create", "--email", email, "--account", f"acct_{second.hex}", "--name", "second",
                  "--preset", "read_only", "--json")
    assert created.returncode == 0, created.stderr
    listed = cli("keys", "list", "--email", email, "--account", f"acct_{second.hex}", "--json")
    assert [key["name"] for key in json.loads(listed.stdout)] == ["second"]
    assert "not a member" in refused(cli("keys", "list", "--email", email, "--account", "acct_" + "0" * 32))


def test_a_viewer_cannot_make_or_list_keys_of_the_business_from_the_command_line(cli, env):
    owner, viewer = new_email(), new_email()
    created = cli("accounts", "create", "--email", owner, "--password", "correct horse")
    assert cli("accounts", "create", "--email", viewer, "--password", "correct horse").returncode == 0
    account = uuid.UUID(created.stdout.strip())
    import sqlalchemy as sa
    engine = sa.create_engine(env["INVOICING_DATABASE_URL"])
    with engine.begin() as conn:
        user_id = conn.execute(sa.text("SELECT id FROM users WHERE email = :e"), {"e": viewer}).scalar_one()
        conn.execute(sa.text("INSERT INTO memberships (id, account_id, user_id, role, created_at, updated_at) "
                             "VALUES (:m, :a, :u, 'viewer', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"),
                     {"m": uuid.uuid4().hex, "a": account.hex, "u": user_id})
    engine.dispose()
    message = refused(cli("keys", "create", "--email", viewer, "--account", f"acct_{account.hex}", "--name", "x",
                          "--preset", "read_only"))
    assert "viewer" in message and "owners and admins" in message
    listed = refused(cli("keys", "list", "--email", viewer, "--account", f"acct_{account.hex}"))
    assert "viewer" in listed and "owners and admins" in listed
