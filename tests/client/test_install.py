"""`pip install clients/python` in a fresh virtual environment: the client and its command line,
and none of the server's packages."""

from __future__ import annotations

import os
import subprocess
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "python"
SERVER_PACKAGES = {"starlette", "sqlmodel", "sqlalchemy", "authlib", "mcp", "fpdf2", "uvicorn", "alembic", "psycopg",
                   "jinja2", "babel", "joserfc", "argon2-cffi", "invoicing"}


@pytest.mark.skipif(bool(os.environ.get("INVOICING_TEST_DATABASE_URL")),
                    reason="no database involved: run once, in the SQLite pass")
def test_a_fresh_install_has_the_client_and_no_server_package(tmp_path):
    venv.create(tmp_path / "env", with_pip=True)
    python = tmp_path / "env" / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "--quiet", str(PACKAGE)], check=True, timeout=600,
                   env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    listed = subprocess.run([python, "-m", "pip", "list", "--format=freeze"], check=True, capture_output=True,
                            text=True).stdout
    installed = {line.split("==")[0].lower().replace("_", "-") for line in listed.split()}
    assert "invoicing-client" in installed and not installed & SERVER_PACKAGES
    shown = subprocess.run([tmp_path / "env" / "bin" / "invoicing-cli", "--version"], capture_output=True, text=True)
    assert shown.returncode == 0 and shown.stdout.startswith("invoicing-cli 0.")
