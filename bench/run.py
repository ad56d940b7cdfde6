"""`make bench`: the service against the bare limit of its stack, written to docs/performance.md.

For each database (SQLite, and PostgreSQL when BENCH_POSTGRES_URL or INVOICING_TEST_POSTGRES_URL
names a server) it seeds one account in a fresh database, starts `invoicing serve` and, on the same
uvicorn settings, `bench/baseline.py` answering the same bytes from memory; then `wrk` (Debian's
package) loads each scenario at 1, 16 and 64 connections. Every figure is also given as a ratio to
the baseline at the same concurrency. Rate limits are raised (operator settings) so that one key can
be measured above 120 requests a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
HIGH = str(10**9)


@dataclass(frozen=True)
class Scenario:
    name: str
    method: str
    path: str  # may hold {invoice}, {customer_query}
    body: str | None = None  # may hold {customer}; POSTs get a fresh Idempotency-Key each
    mcp: bool = False


TEN_ITEMS = [{"description": f"Item {n}", "unit_amount": 1000 + n, "quantity": 2} for n in range(10)]
SCENARIOS = [
    Scenario("GET /invoices/{id} (10 lines)", "GET", "/api/v1/invoices/{invoice}"),
    Scenario("GET /invoices?limit=100", "GET", "/api/v1/invoices?limit=100"),
    Scenario("GET /customers?query=…", "GET", "/api/v1/customers?query={customer_query}"),
    Scenario("POST /invoices (10 items)", "POST", "/api/v1/invoices",
             json.dumps({"customer": "{customer}", "items": TEN_ITEMS})),
    Scenario("MCP get_invoice", "POST", "/mcp", json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "get_invoice", "arguments": {"invoice": "{invoice}"}}}), mcp=True),
]

# Each wrk thread has its own Lua state: the address of a fresh table tells them apart, so every
# POST carries an Idempotency-Key no other request uses.
LUA = """
local counter = 0
local thread_tag = string.gsub(tostring({}), "table: ", "") .. "-" .. tostring(os.time())
local method, path, body = %s, %s, %s
local headers = %s
request = function()
  counter = counter + 1
  if method == "POST" and not string.find(path, "/mcp") then
    headers["Idempotency-Key"] = "bench-" .. thread_tag .. "-" .. tostring(counter)
  end
  return wrk.format(method, path, headers, body)
end
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_up(url: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server exited early ({process.returncode})")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise SystemExit(f"{url} did not answer within 60 s")


def lua_string(text: str | None) -> str:
    return "nil" if text is None else json.dumps(text)  # a JSON string is a valid Lua string literal here


def run_wrk(url: str, scenario_path: str, method: str, body: str | None, headers: dict[str, str],
            connections: int, seconds: int, workdir: Path) -> dict:
    header_table = "{" + ", ".join(f"[{json.dumps(k)}] = {json.dumps(v)}" for k, v in headers.items()) + "}"
    script = workdir / f"wrk-{secrets.token_hex(4)}.lua"
    script.write_text(LUA % (lua_string(method), lua_string(scenario_path), lua_string(body), header_table))
    threads = min(connections, 2)
    out = subprocess.run(["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", str(script),
                          url], capture_output=True, text=True, check=True).stdout
    return parse_wrk(out)


def _ms(text: str) -> float:
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]


def parse_wrk(output: str) -> dict:
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    percentiles = dict(re.findall(r"^\s+(50|99)%\s+(\S+)", output, re.MULTILINE))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return {"rps": rate, "p50": _ms(percentiles["50"]), "p99": _ms(percentiles["99"]),
            "non_2xx": int(errors.group(1)) if errors else 0}


def seed(env: dict[str, str]) -> dict[str, str]:
    """The benchmark's account, seeded straight in the database by `bench/seed.py`."""
    out = subprocess.run([sys.executable, "-m", "bench.seed"], env=env, cwd=ROOT, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(database: str, database_url: str, args, workdir: Path) -> list[dict]:
    env = {**os.environ, "INVOICING_DATABASE_URL": database_url, "INVOICING_SECRET_KEY": "bench-secret",
           "INVOICING_DATA_DIR": str(workdir / "var"), "INVOICING_RATE_LIMIT_REQUESTS": HIGH,
           "INVOICING_RATE_LIMIT_SENDS": HIGH, "INVOICING_RATE_LIMIT_EMAILS": HIGH}
    seeded = seed(env)
    port, base_port = free_port(), free_port()
    origin = f"http://127.0.0.1:{port}"
    env["INVOICING_ORIGIN"] = origin
    serve = subprocess.Popen([str(ROOT / ".venv/bin/invoicing"), "serve", "--no-worker", "--port", str(port)],
                             env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    baseline = None
    try:
        wait_until_up(f"{origin}/api/v1/openapi.json", serve)
        auth = {"Authorization": f"Bearer {seeded['key']}"}
        with httpx.Client(base_url=origin, headers=auth, timeout=30) as client:
            body = {"customer": seeded["customer"], "items": TEN_ITEMS}
            invoice = client.post("/api/v1/invoices", json=body, headers={"Idempotency-Key": "seed"}).json()["data"]
            invoice_bytes = client.get(f"/api/v1/invoices/{invoice['id']}").content
        (workdir / "baseline.json").write_bytes(invoice_bytes)
        baseline = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--factory", "bench.baseline:create_app", "--host", "127.0.0.1",
             "--port", str(base_port), "--log-level", "info"],
            env={**env, "BENCH_BASELINE_BODY": str(workdir / "baseline.json")}, cwd=ROOT,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until_up(f"http://127.0.0.1:{base_port}/", baseline)
        values = {"invoice": invoice["id"], "customer": seeded["customer"], "customer_query": "Customer%2001"}
        rows = []
        for connections in args.connections:
            limit = run_wrk(f"http://127.0.0.1:{base_port}", "/", "GET", None, {}, connections, args.seconds, workdir)
            rows.append({"database": database, "scenario": "baseline (same bytes, bare Starlette)",
                         "connections": connections, **limit, "ratio": 1.0})
            for scenario in SCENARIOS:
                headers = {**auth, "Content-Type": "application/json"}
                if scenario.mcp:
                    headers.update({"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"})
                path = scenario.path.format(**values)
                body = scenario.body.replace("{customer}", values["customer"]).replace("{invoice}", values["invoice"]) \
                    if scenario.body else None
                result = run_wrk(origin, path, scenario.method, body, headers, connections, args.seconds, workdir)
                rows.append({"database": database, "scenario": scenario.name, "connections": connections, **result,
                             "ratio": result["rps"] / limit["rps"]})
                print(f"{database:10} {scenario.name:34} c={connections:<3} {result['rps']:8.0f}/s "
                      f"p50 {result['p50']:7.2f} ms p99 {result['p99']:7.2f} ms  {result['rps'] / limit['rps']:6.1%}"
                      f"{'  non-2xx: ' + str(result['non_2xx']) if result['non_2xx'] else ''}", flush=True)
        return rows
    finally:
        for process in (serve, baseline):
            if process is not None:
                process.terminate()
                process.wait(timeout=30)


def fresh_postgres(server_url: str) -> tuple[str, callable]:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    server = make_url(server_url)
    name = f"invoicing_bench_{secrets.token_hex(4)}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))

    def drop() -> None:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    return server.set(database=name).render_as_string(hide_password=False), drop


def write_report(rows: list[dict], args, path: Path) -> None:
    lines = [
        "# Performance",
        "",
        f"Written by `make bench` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC: one `invoicing serve` process "
        f"(no worker) per database, `wrk` on loopback for {args.seconds} s per cell, on a machine with "
        f"{os.cpu_count()} cores. **Ratio** is the throughput against the baseline at the same number of "
        "connections: a bare Starlette app on the same uvicorn settings answering the same bytes from memory.",
        "",
        "| database | scenario | connections | requests/s | ratio | p50 ms | p99 ms |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(f"| {row['database']} | {row['scenario']} | {row['connections']} | {row['rps']:.0f} | "
                     f"{row['ratio']:.1%} | {row['p50']:.2f} | {row['p99']:.2f} |")
    lines += ["", "Not measured yet: finalize, the OAuth refresh grant, data growth (10 k to 1 M rows), "
              "peak RSS and `--workers 2` (issue 11 is under way).", ""]
    path.write_text("\n".join(lines) + "\n" + (ROOT / "bench" / "history.md").read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=lambda text: [int(n) for n in text.split(",")], default=[1, 16, 64])
    parser.add_argument("--databases", default="sqlite,postgresql")
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "performance.md")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("bench needs wrk: apt-get install wrk")
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="invoicing-bench-") as directory:
        workdir = Path(directory)
        if "sqlite" in args.databases:
            rows += measure("SQLite", f"sqlite:///{workdir}/bench.db", args, workdir)
        postgres = os.environ.get("BENCH_POSTGRES_URL") or os.environ.get("INVOICING_TEST_POSTGRES_URL")
        if "postgresql" in args.databases and postgres:
            url, drop = fresh_postgres(postgres)
            try:
                rows += measure("PostgreSQL", url, args, workdir)
            finally:
                drop()
    write_report(rows, args, args.output)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
