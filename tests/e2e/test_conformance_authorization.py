"""The official MCP conformance suite's authorization-server scenarios against `invoicing serve`.

    npx -p node@22 -p @modelcontextprotocol/conformance@0.2.0-alpha.11 -- \\
        conformance authorization --url <origin> --client-id <id> --port <p>

runs `authorization-server-metadata-endpoint` and `authorization-code-grant`. The second prints
an authorization URL and waits for a browser to come back to http://127.0.0.1:<p>/callback; this
test plays the browser: a signed-in session cookie, the consent page's Allow button, then the
redirect to the suite's callback server. The suite then exchanges the code (as a public client,
client authentication "none", PKCE S256) and checks the token response. Needs node/npx and network access to the npm registry
(or a warm npx cache); skipped otherwise.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from core.access import accounts
from core.base import db
from tests.e2e.conftest import free_port
from tests.oauth_flow import sign_in, submit_consent

SUITE = ["npx", "--yes", "-p", "node@22", "-p", "@modelcontextprotocol/conformance@0.2.0-alpha.11", "--",
         "conformance", "authorization"]
SUITE_TIMEOUT = 300
AUTHORIZE_URL = re.compile(r"(http://127\.0\.0\.1:\d+/oauth/authorize\?\S+)")


NO_NODE = shutil.which("npx") is None or shutil.which("node") is None

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(NO_NODE, reason="node/npx is not installed: the MCP conformance suite runs on Node.js"),
]


@pytest.fixture
def served_origin(test_settings, tmp_path):
    """`invoicing serve` on a free port, on the test database."""
    port = free_port()
    origin = f"http://127.0.0.1:{port}"
    environment = {k: v for k, v in os.environ.items() if not k.startswith("INVOICING_")}
    environment.update({
        "INVOICING_DATABASE_URL": test_settings.database_url,
        "INVOICING_SECRET_KEY": test_settings.secret_key,
        "INVOICING_DATA_DIR": str(test_settings.data_dir),
    })
    log = tmp_path / "serve.log"
    command = [str(Path(sys.executable).with_name("invoicing")), "serve", "--port", str(port), "--no-worker"]
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=environment, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_until_up(origin, process, log)
        yield origin
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def _wait_until_up(origin: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"invoicing serve exited:\n{log.read_text(errors='replace')}")
        try:
            if httpx.get(f"{origin}/.well-known/oauth-authorization-server", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    pytest.fail(f"invoicing serve did not start:\n{log.read_text(errors='replace')}")


def test_conformance_authorization_scenarios(served_origin, tmp_path):
    email = "conformance@example.com"
    with db.transaction() as session:
        accounts.create_account(session, email=email, password="correct horse battery")
    callback_port = free_port()
    registration = httpx.post(f"{served_origin}/oauth/register", json={
        # The suite authenticates with "none" whenever the server supports it, so it is a public client.
        "client_name": "MCP conformance suite", "token_endpoint_auth_method": "none",
        "redirect_uris": [f"http://127.0.0.1:{callback_port}/callback"]}).json()

    suite = subprocess.Popen(
        [*SUITE, "--url", served_origin, "--client-id", registration["client_id"], "--port", str(callback_port),
         "--output-dir", str(tmp_path / "results")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
    )
    output: list[str] = []
    authorize_url = threading.Event()
    found: list[str] = []

    def read() -> None:
        for line in suite.stdout:
            output.append(line)
            if not found and (match := AUTHORIZE_URL.search(line)):
                found.append(match.group(1))
                authorize_url.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if authorize_url.wait(timeout=SUITE_TIMEOUT):
            with httpx.Client(base_url=served_origin) as browser:
                sign_in(browser, email)
                consent = submit_consent(browser, found[0])
                assert consent.status_code == 302, consent.text
                # The browser follows the redirect to the suite's callback server.
                assert httpx.get(consent.headers["location"], timeout=30).status_code == 200
        suite.wait(timeout=SUITE_TIMEOUT)
    finally:
        if suite.poll() is None:
            suite.kill()
        reader.join(timeout=10)
    text = "".join(output)
    if "npm error" in text and "Total:" not in text:
        pytest.skip(f"the conformance suite could not be installed by npx:\n{text[-2000:]}")
    assert found, f"the suite printed no authorization URL:\n{text}"
    assert "✓ authorization-server-metadata-endpoint" in text, text
    assert "✓ authorization-code-grant" in text, text
    assert re.search(r"Total: \d+ passed, 0 failed", text), text
    assert suite.returncode == 0, text
