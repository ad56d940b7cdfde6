"""The official MCP conformance suite's server scenarios and the MCP Inspector CLI against a live
server. The suite sends no Authorization header, so a small test-only proxy in front adds an API
key. Expected failures (capabilities this server does not offer) are in conformance-baseline.yml.
Needs node/npx and the npm registry (or a warm npx cache); skipped otherwise."""

from __future__ import annotations

import http.client
import json
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import make_tenant
from tests.e2e.conftest import LiveServers

CONFORMANCE = ["npx", "--yes", "-p", "node@22", "-p", "@modelcontextprotocol/conformance@0.2.0-alpha.12", "--", "conformance"]
INSPECTOR = ["npx", "--yes", "-p", "node@22", "-p", "@modelcontextprotocol/inspector@2.12.0", "--", "mcp-inspector"]
BASELINE = Path(__file__).with_name("conformance-baseline.yml")
TIMEOUT = 600
HOP_BY_HOP = {"content-length", "transfer-encoding", "connection", "content-encoding", "keep-alive"}

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("npx") is None, reason="node/npx is not installed"),
]


class AuthorizingProxy:
    """Forwards every request to `target`, adding `Authorization: Bearer <key>` (test only). Header
    values pass byte for byte (whitespace included: the suite checks the server trims it), and an
    event stream is relayed as it comes (a `subscriptions/listen` answer never ends by itself)."""

    def __init__(self, target: str, key: str) -> None:
        host, port = target.removeprefix("http://").split(":")

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def forward(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                upstream = http.client.HTTPConnection(host, int(port), timeout=60)
                upstream.putrequest(self.command, self.path, skip_accept_encoding=True)
                for name, value in self.headers.items():
                    if name.lower() not in HOP_BY_HOP and name.lower() != "host":
                        upstream.putheader(name, value)
                upstream.putheader("Host", f"{host}:{port}")
                upstream.putheader("Authorization", f"Bearer {key}")
                upstream.putheader("Content-Length", str(len(body)))
                upstream.endheaders(body)
                answer = upstream.getresponse()
                self.send_response(answer.status)
                for name, value in answer.getheaders():
                    if name.lower() not in HOP_BY_HOP:
                        self.send_header(name, value)
                if "text/event-stream" not in (answer.getheader("content-type") or ""):
                    content = answer.read()
                    self.send_header("Content-Length", str(len(content)))
                    self.end_headers()
                    self.wfile.write(content)
                    upstream.close()
                    return
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    while chunk := answer.read1(65536):
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError, TimeoutError):
                    pass  # the suite closed the stream, or the server ended it
                finally:
                    upstream.close()

            do_GET = do_POST = do_DELETE = forward

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/mcp"

    def close(self) -> None:
        self.server.shutdown()


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, cwd=cwd)
    if result.returncode != 0 and "npm error" in result.stderr + result.stdout:
        pytest.skip(f"npx could not install the tool:\n{(result.stderr + result.stdout)[-2000:]}")
    return result


# What a failing check of a not-applicable scenario says when it needed a fixture this server lacks.
NEEDS_A_FIXTURE = re.compile(r"Unknown (tool|prompt)|Not testable|not found\. Available tools|Prerequisite failed|"
                             r"fixture .*unavailable|Expected InputRequiredResult with inputRequests")


# Checks that fail for a reason other than a missing fixture, each not applicable to this server.
NOT_APPLICABLE = {
    "logging-set-level": "no logging capability (deprecated by 2026-07-28)",
    "tools-call-with-logging": "its first step sets a log level",
    "resources-subscribe": "handshake-era subscriptions are not offered (2026-07-28 subscriptions/listen is)",
    "resources-unsubscribe": "the same",
    "resources-read-text": "reads the reference server's test://static-text",
    "resources-read-binary": "reads the reference server's test://static-binary",
    "resources-templates-read": "reads the reference server's test://template/… resource",
    "sep-2663-server-returns-missing-capability-when-required": "no tool of this server requires a task (the "
                                                                "suite's failing_job does)",
}


def failing_checks(results: Path) -> list[tuple[str, str, str]]:
    """(scenario, check id, message) of every check the suite saved as failed."""
    failing = []
    for saved in results.glob("*/*.json"):
        checks = json.loads(saved.read_text())
        for check in checks if isinstance(checks, list) else checks.get("checks", []):
            if check.get("status") == "FAILURE":
                failing.append((saved.parent.name.split("-20")[0], check.get("id"), check.get("errorMessage") or ""))
    return failing


@pytest.fixture(scope="module")
def origin(test_settings, tmp_path_factory) -> Iterator[str]:
    """One server for the module. The suite sends a few hundred requests a minute with one key: the
    request limit is raised, as to benchmark."""
    servers = LiveServers(test_settings, tmp_path_factory.mktemp("conformance-server"))
    try:
        yield servers(rate_limit_requests="100000")
    finally:
        servers.stop_all()


@pytest.mark.parametrize("requirements", ["2025-11-25", "2026-07-28"])
def test_conformance_server_scenarios(origin, tmp_path, requirements):
    tenant = make_tenant(None)
    proxy = AuthorizingProxy(origin, tenant.key)
    try:
        result = run([*CONFORMANCE, "server", "--url", proxy.url, "--requirements", requirements,
                      "--expected-failures", str(BASELINE), "--output-dir", str(tmp_path / "results")], tmp_path)
    finally:
        proxy.close()
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    for scenario in ("tools-list", "dns-rebinding-protection", "completion-complete", "resources-list"):
        assert f"✓ {scenario}" in output, output[-4000:]
    if requirements == "2026-07-28":
        for scenario in ("caching", "http-header-validation", "sep-2164-resource-not-found"):
            assert f"✓ {scenario}" in output, output[-4000:]
    applicable = [failure for failure in failing_checks(tmp_path / "results")
                  if not NEEDS_A_FIXTURE.search(failure[2]) and failure[1] not in NOT_APPLICABLE]
    assert applicable == [], applicable


def test_inspector_cli_lists_and_calls_tools(origin, tmp_path):
    tenant = make_tenant(None)
    base = [*INSPECTOR, "--cli", f"{origin}/mcp", "--transport", "http",
            "--header", f"Authorization: Bearer {tenant.key}"]
    listed = run([*base, "--method", "tools/list"], tmp_path)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert len(json.loads(listed.stdout)["tools"]) == 41
    called = run([*base, "--method", "tools/call", "--tool-name", "create_customer", "--tool-arg", "name=Inspector"],
                 tmp_path)
    assert called.returncode == 0, called.stderr[-2000:]
    result = json.loads(called.stdout)
    assert result["isError"] is False and result["structuredContent"]["name"] == "Inspector"


def test_inspector_reads_the_new_resources_prompts_and_app(origin, tmp_path):
    tenant = make_tenant(None)
    base = [*INSPECTOR, "--cli", f"{origin}/mcp", "--transport", "http",
            "--header", f"Authorization: Bearer {tenant.key}"]
    strict = run([*base, "--method", "tools/list", "--strict"], tmp_path)
    assert strict.returncode == 0, strict.stderr[-2000:]
    warnings = [line for line in strict.stderr.splitlines() if line.strip() and "npm warn" not in line]
    assert warnings == [], warnings  # no schema portability problem
    templates = json.loads(run([*base, "--method", "resources/templates/list"], tmp_path).stdout)
    assert [t["uriTemplate"] for t in templates["resourceTemplates"]] == [
            "invoice://{invoice_id}", "invoice://{invoice_id}/pdf", "credit-note://{credit_note_id}/pdf",
            "e-invoice-export://{export_id}"]
    prompts = json.loads(run([*base, "--method", "prompts/list"], tmp_path).stdout)
    assert {p["name"] for p in prompts["prompts"]} == {"draft_invoice_from_notes", "chase_overdue_invoices",
                                                       "month_end_summary"}
    view = json.loads(run([*base, "--method", "resources/read", "--uri", "ui://invoicing/invoice-view.html"],
                          tmp_path).stdout)
    assert view["contents"][0]["mimeType"] == "text/html;profile=mcp-app"
    app = run([*base, "--method", "tools/call", "--tool-name", "get_invoice", "--app-info", "--advertise-apps"], tmp_path)
    assert app.returncode == 0, app.stderr[-2000:]
    info = json.loads(app.stdout.strip().splitlines()[-1])
    assert info["hasApp"] is True and info["resourceUri"] == "ui://invoicing/invoice-view.html"
