"""Every runnable example of the user guide (docs/guide/*.md) and of the README's tour runs against a
live server, so they cannot go stale.

A fenced block whose info string starts with `bash` or `python` is an example; other blocks (`json`,
`text`, `mermaid`, `console`) are only shown. The blocks of one page run in order, as a reader would
run them, with the two variables the guide tells the reader to set (`INVOICING_URL`, `API_KEY`):
`export`s of a bash block carry over to the next blocks. A block marked `python background` (a
webhook receiver) runs beside the ones after it and must print a line before the page ends. One
test per page: the records a page creates are removed after it, like every test's.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import make_tenant
from tests.e2e.conftest import LiveServers, free_port

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guide"
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
TIMEOUT = 60
BACKGROUND_OUTPUT_SECONDS = 30


@dataclass(frozen=True)
class Example:
    page: str
    line: int
    language: str
    background: bool
    code: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line} ({self.language})"


def examples_of(page: Path) -> list[Example]:
    text = page.read_text()
    return [Example(str(page.relative_to(ROOT)), text.count("\n", 0, match.start()) + 1, match.group(1),
                    "background" in match.group(2), match.group(3))
            for match in FENCE.finditer(text) if match.group(1) in ("bash", "python")]


# The README's tour too: a new user follows it first.
PAGES = [ROOT / "README.md", *sorted(path for path in GUIDE.glob("*.md") if examples_of(path))]


def test_the_guide_has_runnable_examples():
    assert {page.name for page in PAGES} >= {"README.md", "getting-started.md", "invoices.md", "webhooks.md",
                                              "errors-and-limits.md", "oauth.md"}
    assert all(examples_of(page) for page in PAGES)


@pytest.fixture(scope="module")
def servers(test_settings, tmp_path_factory):
    servers = LiveServers(test_settings, tmp_path_factory.mktemp("guide"))
    servers.origin = servers()
    servers.start_worker()  # webhook deliveries
    yield servers
    servers.stop_all()


def _run_bash(example: Example, env: dict[str, str], cwd: Path) -> dict[str, str]:
    state = cwd / ".env-after"
    script = f"{example.code}\nenv -0 > {state}\n"
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], env=env, cwd=cwd, capture_output=True,
                            text=True, timeout=TIMEOUT)
    assert result.returncode == 0, f"{example} failed:\n{result.stdout}\n{result.stderr}"
    return dict(item.split("=", 1) for item in state.read_text().split("\0") if "=" in item)


def _run_python(example: Example, env: dict[str, str], cwd: Path) -> None:
    result = subprocess.run([sys.executable, "-c", example.code], env=env, cwd=cwd, capture_output=True, text=True,
                            timeout=TIMEOUT)
    assert result.returncode == 0, f"{example} failed:\n{result.stdout}\n{result.stderr}"


def _start_background(example: Example, env: dict[str, str], cwd: Path) -> tuple[Example, subprocess.Popen, Path]:
    output = cwd / f"background-{example.line}.log"
    with output.open("w") as out:
        process = subprocess.Popen([sys.executable, "-c", example.code], env=env, cwd=cwd, stdout=out,
                                   stderr=subprocess.STDOUT, text=True)
    time.sleep(1)  # let it bind its port before the next block talks to it
    assert process.poll() is None, f"{example} exited at once:\n{output.read_text()}"
    return example, process, output


def _finish_background(example: Example, process: subprocess.Popen, output: Path) -> str:
    deadline = time.monotonic() + BACKGROUND_OUTPUT_SECONDS
    while not output.read_text().strip() and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.2)
    process.terminate()
    process.wait(timeout=10)
    printed = output.read_text()
    assert printed.strip(), f"{example} printed nothing within {BACKGROUND_OUTPUT_SECONDS} s"
    assert "Traceback" not in printed, f"{example} failed:\n{printed}"
    return printed


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_example_of_the_page_runs(servers, page, tmp_path):
    tenant = make_tenant(None)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("INVOICING_")},
           "INVOICING_URL": servers.origin, "API_KEY": tenant.key, "WEBHOOK_PORT": str(free_port()),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    background = []
    try:
        for example in examples_of(page):
            if example.background:
                background.append(_start_background(example, env, tmp_path))
            elif example.language == "bash":
                env = _run_bash(example, env, tmp_path)
            else:
                _run_python(example, env, tmp_path)
        for running in background:
            _finish_background(*running)
    finally:
        for _, process, _ in background:
            if process.poll() is None:
                process.kill()
