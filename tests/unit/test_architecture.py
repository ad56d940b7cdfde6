"""The layering of docs/architecture.md holds: `lint-imports` checks the contracts of pyproject.toml
(config ← core ← operations, asgi, pages ← surfaces, never each other ← service; core's groups downward;
no HTTP in config, core and operations)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def lint_imports() -> subprocess.CompletedProcess:
    command = [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_import_contracts_are_kept():
    result = lint_imports()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 kept, 0 broken" in result.stdout
