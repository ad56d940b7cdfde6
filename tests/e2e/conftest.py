"""Live servers: the real application under uvicorn, in its own process, on the test database.

`live_server` is one running server (its origin, `http://127.0.0.1:<port>`). `live_server_factory`
starts more on the same database: `live_server_factory()` gives one origin,
`live_server_factory.start_many(2)` starts two in parallel, `live_server_factory.kill(origin)`
crashes one (SIGKILL), `live_server_factory.start_worker()` starts an `invoicing worker`. Every
process is stopped after the test; if one dies early, its log is in the error. Starting takes
seconds, so `live_server_pair` keeps two processes running for a whole test module (tables are
still emptied after each test). `hooks` is a webhook receiver on loopback for a module, `mailbox`
an SMTP server; `wait_for` polls a condition.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from config.settings import Settings
from tests.oauth_flow import DocumentServer
from tests.smtp import smtp_server

STARTUP_TIMEOUT = 30.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else ""


class LiveServers:
    """Starts uvicorn processes serving `service.app:create_app` on the test database."""

    def __init__(self, settings: Settings, log_dir: Path):
        self.settings = settings
        self.log_dir = log_dir
        self.processes: list[tuple[subprocess.Popen, Path]] = []
        self.by_origin: dict[str, subprocess.Popen] = {}

    def __call__(self, **env: str) -> str:
        return self.start_many(1, **env)[0]

    def start_many(self, count: int, **env: str) -> list[str]:
        """Start `count` processes at once and return their origins once every one answers."""
        launched = [self._launch(env) for _ in range(count)]
        for origin, process, log in launched:
            self._wait_until_ready(origin, process, log)
        return [origin for origin, _, _ in launched]

    def _environment(self, origin: str, extra: dict[str, str]) -> dict[str, str]:
        environment = {k: v for k, v in os.environ.items() if not k.startswith("INVOICING_")}
        environment.update({
            "INVOICING_DATABASE_URL": self.settings.database_url,
            "INVOICING_ORIGIN": origin,
            "INVOICING_SECRET_KEY": self.settings.secret_key or "test-secret-key",
            "INVOICING_DATA_DIR": str(self.settings.data_dir),
            "INVOICING_UNSAFE_WEBHOOK_ALLOW_HOSTS": self.settings.unsafe_webhook_allow_hosts,
        })
        environment.update({k if k.startswith("INVOICING_") else f"INVOICING_{k.upper()}": v
                            for k, v in extra.items()})
        return environment

    def _launch(self, env: dict[str, str]) -> tuple[str, subprocess.Popen, Path]:
        port = free_port()
        origin = f"http://127.0.0.1:{port}"
        log = self.log_dir / f"server-{port}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "uvicorn", "--factory", "service.app:create_app",
                 "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning", "--no-access-log"],
                env=self._environment(origin, env), stdout=out, stderr=subprocess.STDOUT,
                cwd=Path(__file__).resolve().parents[2],
            )
        self.processes.append((process, log))
        self.by_origin[origin] = process
        return origin, process, log

    @staticmethod
    def _wait_until_ready(origin: str, process: subprocess.Popen, log: Path) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"server {origin} exited with {process.returncode}:\n{_tail(log)}")
            try:
                if httpx.get(f"{origin}/api/v1/openapi.json", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"server {origin} did not answer within {STARTUP_TIMEOUT} s:\n{_tail(log)}")

    def start_worker(self, **env: str) -> None:
        """Start an `invoicing worker` process (webhook delivery, clean-up) on the test database."""
        log = self.log_dir / f"worker-{len(self.processes)}.log"
        with log.open("wb") as out:
            process = subprocess.Popen([sys.executable, "-m", "service.cli", "worker"],
                                       env=self._environment(self.settings.origin, env), stdout=out,
                                       stderr=subprocess.STDOUT, cwd=Path(__file__).resolve().parents[2])
        self.processes.append((process, log))

    def kill(self, origin: str) -> None:
        """Crash the server at `origin`: SIGKILL, no graceful shutdown, then reap the process."""
        process = self.by_origin[origin]
        process.kill()
        process.wait(timeout=10)

    def stop_all(self) -> None:
        for process, _ in self.processes:
            if process.poll() is None:
                process.terminate()
        for process, _ in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.clear()
        self.by_origin.clear()


@pytest.fixture
def live_server_factory(test_settings, tmp_path) -> Iterator[LiveServers]:
    servers = LiveServers(test_settings, tmp_path)
    try:
        yield servers
    finally:
        servers.stop_all()


@pytest.fixture
def live_server(live_server_factory) -> str:
    """The origin of one running server, for example `http://127.0.0.1:54321`."""
    return live_server_factory()


@pytest.fixture(scope="module")
def live_server_pair(test_settings, tmp_path_factory) -> Iterator[list[str]]:
    """Two processes on the test database, shared by the tests of one module."""
    servers = LiveServers(test_settings, tmp_path_factory.mktemp("live-servers"))
    try:
        yield servers.start_many(2)
    finally:
        servers.stop_all()


@pytest.fixture(scope="module")
def documents() -> Iterator[DocumentServer]:
    """An https server of client metadata documents, with a certificate of a test authority."""
    server = DocumentServer()
    yield server
    server.close()


@pytest.fixture(scope="module")
def documents_origin(test_settings, tmp_path_factory, documents) -> Iterator[str]:
    """One server for a module that trusts the test authority of `documents`
    (INVOICING_UNSAFE_TEST_CA_FILE), so https client_id documents can be fetched from loopback."""
    directory = tmp_path_factory.mktemp("documents-origin")
    servers = LiveServers(test_settings, directory)
    try:
        yield servers(UNSAFE_TEST_CA_FILE=documents.write_ca_file(directory / "test-ca.pem"))
    finally:
        servers.stop_all()


@dataclass
class Hooks:
    """A webhook receiver on loopback that keeps every request's headers and body."""

    url: str = ""
    received: list[tuple[dict, bytes]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def types(self) -> list[str]:
        with self.lock:
            return [json.loads(body)["type"] for _, body in self.received]


@pytest.fixture(scope="module")
def hooks():
    state = Hooks()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's naming)
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            with state.lock:
                state.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def mailbox():
    """A real SMTP server on loopback for a module: (handler with `received`, its smtp:// URL)."""
    with smtp_server() as (handler, url):
        yield handler, url


def wait_for(condition, timeout: float = 30.0):
    """Poll `condition` until it returns something true (returned), or fail after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := condition():
            return result
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:g} s waiting")
