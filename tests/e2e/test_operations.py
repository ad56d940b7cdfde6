"""Operating the service as an operator does: `invoicing serve --workers 2` with JSON logs and
metrics on. /metrics gives one view of both processes (requests, a tool call and a webhook delivery
with their labels), every log line is JSON, the request id joins the request and its webhook
delivery, no secret reaches the logs, /readyz waits for the in-process worker, and a backup made
with `invoicing db backup` is served by a new server."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy.engine import make_url

from tests.conftest import make_tenant
from tests.e2e.conftest import free_port, wait_for
from tests.oauth_flow import obtain, register, sign_in

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "correct horse battery"  # make_tenant's
REQUESTS = 30


def serve(settings, data_dir: Path, *args: str, **env: str) -> tuple[str, subprocess.Popen, Path]:
    """`invoicing serve` (the real command) on the test database; waits until /readyz is 200."""
    port = free_port()
    origin = f"http://127.0.0.1:{port}"
    data_dir.mkdir(parents=True, exist_ok=True)
    log = data_dir / f"serve-{port}.log"
    environment = {k: v for k, v in os.environ.items() if not k.startswith("INVOICING_")} | {
        "INVOICING_DATABASE_URL": settings.database_url, "INVOICING_ORIGIN": origin,
        "INVOICING_SECRET_KEY": settings.secret_key or "test-secret-key", "INVOICING_DATA_DIR": str(data_dir),
        "INVOICING_UNSAFE_WEBHOOK_ALLOW_HOSTS": "127.0.0.1", **env}
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "service.cli", "serve", "--port", str(port), *args],
                                   env=environment, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"serve exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{origin}/readyz", timeout=2).status_code == 200:
                return origin, process, log
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    process.terminate()
    raise RuntimeError(f"serve did not become ready:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def operated(test_settings, tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("operated")
    # rounds of requests go on until both processes answered (many on a loaded machine): far above the
    # default 120 a minute a key may make
    origin, process, log = serve(test_settings, data_dir, "--workers", "2", INVOICING_METRICS_ALLOW="127.0.0.1",
                                 INVOICING_LOG_FORMAT="json", INVOICING_RATE_LIMIT_REQUESTS="100000")
    # /readyz is answered by the first process up; on a loaded machine the second may still be starting.
    try:
        wait_for(lambda: len(started(log)) == 2, timeout=120)
    except AssertionError:
        raise AssertionError(f"the second server process did not start:\n{server_story(log)}") from None
    yield origin, log, data_dir
    process.terminate()
    process.wait(timeout=30)


def scrape(origin: str) -> dict[tuple[str, tuple], float]:
    response = httpx.get(f"{origin}/metrics", timeout=10)
    assert response.status_code == 200, response.text
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(response.text) for s in family.samples}


def value(samples, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def log_lines(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def started(log: Path) -> set:
    """The server processes that have completed their startup and not stopped since."""
    running = set()
    for line in log_lines(log):
        if line.get("message") == "Application startup complete.":
            running.add(line["pid"])
        elif line.get("message", "").startswith(("Shutting down", "Finished server process")):
            running.discard(line["pid"])
    return running


def server_story(log: Path) -> str:
    """uvicorn's own lines (processes started, found hung, killed, restarted): what a failure needs told."""
    return "\n".join(f"{line.get('pid')} {line.get('message')}" for line in log_lines(log)
                     if line.get("logger", "").startswith("uvicorn"))


def test_one_view_of_both_processes_in_metrics_and_logs(operated, hooks):
    origin, log, data_dir = operated
    tenant = make_tenant(None)
    auth = {"Authorization": f"Bearer {tenant.key}"}
    with httpx.Client(base_url=origin, headers=auth) as api:
        api.post("/api/v1/webhook-endpoints", json={"url": hooks.url}).raise_for_status()
        customer = api.post("/api/v1/customers", json={"name": "Ada"}).raise_for_status().json()["data"]
        api.post("/api/v1/invoices", json={"customer": customer["id"]},
                 headers={"Idempotency-Key": uuid.uuid4().hex, "X-Request-Id": "ops-trace-1"}).raise_for_status()

    def fresh_connection(_):  # a new connection each time, so both processes take some
        return httpx.get(f"{origin}/api/v1/business", headers=auth | {"Connection": "close"}).status_code

    def answering() -> set:
        return {line["pid"] for line in log_lines(log) if line.get("route") == "/api/v1/business"}
    sent, deadline = 0, time.monotonic() + 90
    # Which process accepts a connection is the kernel's choice: on a loaded machine one may take
    # several whole rounds, so rounds go on (for a minute and a half at most) until both have answered.
    while sent == 0 or (len(answering()) < 2 and time.monotonic() < deadline):
        with ThreadPoolExecutor(6) as pool:
            assert set(pool.map(fresh_connection, range(REQUESTS))) == {200}
        sent += REQUESTS
        time.sleep(0.2)  # a moment for the other process to be waiting on the socket
    tool = httpx.post(f"{origin}/mcp", headers=auth | {"Accept": "application/json, text/event-stream",
                                                       "MCP-Protocol-Version": "2025-11-25"},
                      json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": "get_business", "arguments": {}}})
    assert tool.status_code == 200 and not tool.json()["result"].get("isError")
    wait_for(lambda: hooks.types() == ["invoice.created"])
    # The worker counts the delivery once the receiver has answered: wait for the count, not the receipt.
    wait_for(lambda: value(scrape(origin), "invoicing_webhook_delivery_attempts_total", outcome="succeeded") == 1)

    business = {"route": "/api/v1/business", "method": "GET", "status": "200"}
    for _ in range(4):  # each scrape is answered by either process, and sees both
        samples = scrape(origin)
        assert value(samples, "invoicing_http_requests_total", **business) == sent
        assert value(samples, "invoicing_mcp_tool_calls_total", tool="get_business", outcome="ok") == 1
        assert value(samples, "invoicing_webhook_delivery_attempts_total", outcome="succeeded") == 1
        assert value(samples, "invoicing_webhook_backlog") == 0

    lines = wait_for(lambda: [line for line in log_lines(log) if line.get("event_id")] and log_lines(log))
    answered_by = {line["pid"] for line in lines if line.get("route") == "/api/v1/business"}
    assert len(answered_by) == 2, f"both server processes answered ({sent} requests):\n{server_story(log)}"
    delivered = next(line for line in lines if line.get("event_id"))
    assert delivered["request_id"] == "ops-trace-1" and delivered["outcome"] == "succeeded"
    created = next(line for line in lines if line.get("request_id") == "ops-trace-1" and line.get("route"))
    assert created["account_id"] == str(tenant.account_id) and created["credential_id"].startswith("api_key:")


def test_no_key_token_or_password_reaches_the_logs(operated):
    origin, log, _ = operated
    tenant = make_tenant(None)
    with httpx.Client(base_url=origin, follow_redirects=False) as browser:
        page = browser.get("/login")
        csrf = page.text.split('name="csrf_token" value="')[1].split('"')[0]
        signed_in = browser.post("/login", data={"csrf_token": csrf, "email": tenant.user_email, "password": PASSWORD})
        assert signed_in.status_code == 303
        httpx.get(f"{origin}/api/v1/customers?api_key={tenant.key}", headers={"Authorization": f"Bearer {tenant.key}"})
        app = register(browser, token_endpoint_auth_method="none")
        sign_in(browser, tenant.user_email)
        tokens = obtain(browser, app)
    used = httpx.post(f"{origin}/mcp", headers={"Authorization": f"Bearer {tokens['access_token']}",
                                                "Accept": "application/json, text/event-stream"},
                      json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert used.status_code == 200  # the token reached the server, and was used
    text = log.read_text()
    for secret in (tenant.key, PASSWORD, tokens["access_token"], tokens["refresh_token"]):
        assert secret not in text


def test_readiness_waits_for_the_in_process_worker(operated):
    origin, _, _ = operated
    # The tests empty every table after each test: the worker's next heartbeat (within 10 s) restores it.
    ready = wait_for(lambda: (answer := httpx.get(f"{origin}/readyz")).status_code == 200 and answer.json())
    assert ready == {"status": "ready", "checks": {"database": "ok", "migrations": "ok", "schedules": "ok", "worker": "ok"}}


def test_a_backup_is_served_by_a_new_server(test_settings, tmp_path):
    source = tmp_path / "live.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("INVOICING_")} | {
        "INVOICING_DATABASE_URL": f"sqlite:///{source}", "INVOICING_DATA_DIR": str(tmp_path / "var")}
    subprocess.run([sys.executable, "-m", "service.cli", "db", "upgrade"], env=env, cwd=ROOT, check=True,
                   capture_output=True)
    created = subprocess.run([sys.executable, "-m", "service.cli", "demo", "--origin", "http://127.0.0.1:1"],
                             env=env, cwd=ROOT, capture_output=True, text=True)
    assert created.returncode == 0, created.stderr
    key = created.stdout.split("API_KEY=")[1].split()[0]
    copy = tmp_path / "backup" / "copy.db"
    backed_up = subprocess.run([sys.executable, "-m", "service.cli", "db", "backup", str(copy)], env=env, cwd=ROOT,
                               capture_output=True, text=True)
    assert backed_up.returncode == 0, backed_up.stderr
    source.unlink()
    settings = test_settings.model_copy(update={"database_url": f"sqlite:///{copy}"})
    origin, process, _ = serve(settings, tmp_path / "restored")
    try:
        business = httpx.get(f"{origin}/api/v1/business", headers={"Authorization": f"Bearer {key}"})
        assert business.status_code == 200 and business.json()["data"]["legal_name"]
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_traces_are_exported_when_otel_names_an_exporter(test_settings, tmp_path):
    origin, process, log = serve(test_settings, tmp_path, "--no-worker", OTEL_TRACES_EXPORTER="console",
                                 OTEL_BSP_SCHEDULE_DELAY="100", OTEL_SERVICE_NAME="invoicing-under-test")
    try:
        tenant = make_tenant(None)
        assert httpx.get(f"{origin}/api/v1/business", headers={"Authorization": f"Bearer {tenant.key}"}).is_success
        def both_spans() -> str | None:
            text = log.read_text()
            return text if '"db.system' in text and '"name": "GET /api/v1/business"' in text else None
        text = wait_for(both_spans)
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert '"service.name": "invoicing-under-test"' in text
    assert '"name": "GET /api/v1/business"' in text and '"http.route": "/api/v1/business"' in text


class TcpForwarder:
    """A TCP relay to the database that the test can cut and restore (the database 'unreachable')."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = free_port()
        self.sockets: list[socket.socket] = []
        self.listener: socket.socket | None = None

    def start(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", self.port), reuse_port=False)
        threading.Thread(target=self._accept, args=(self.listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self.sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        """Refuse new connections and break the open ones."""
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
        self.listener.close()
        for end in self.sockets:
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            end.close()
        self.sockets.clear()


def test_readiness_follows_the_database_going_away_and_coming_back(test_settings, tmp_path):
    url = make_url(test_settings.database_url)
    if url.get_backend_name() != "postgresql":
        pytest.skip("needs a database reached over the network (the PostgreSQL pass)")
    relay = TcpForwarder((url.host or "127.0.0.1", url.port or 5432))
    relay.start()
    through_relay = url.set(host="127.0.0.1", port=relay.port).render_as_string(hide_password=False)
    settings = test_settings.model_copy(update={"database_url": through_relay})
    origin, process, _ = serve(settings, tmp_path, "--no-worker")
    try:
        relay.cut()
        gone = wait_for(lambda: (answer := httpx.get(f"{origin}/readyz", timeout=10)).status_code == 503 and answer)
        assert gone.json()["checks"]["database"].startswith("unavailable")
        assert httpx.get(f"{origin}/healthz").status_code == 200  # alive, only not ready
        relay.start()
        wait_for(lambda: httpx.get(f"{origin}/readyz", timeout=10).status_code == 200)
    finally:
        process.terminate()
        process.wait(timeout=30)
