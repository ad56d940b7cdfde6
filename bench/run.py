"""`make bench`: the service against the bare limit of its stack, written to docs/performance.md.

For each database (SQLite, and PostgreSQL when BENCH_POSTGRES_URL or INVOICING_TEST_POSTGRES_URL
names a server) it seeds one account in a fresh database, starts `invoicing serve` and, on the same
uvicorn settings, `bench/baseline.py` answering the same bytes from memory. `wrk` (Debian's package)
loads each scenario at 1, 16 and 64 connections (the OAuth refresh grant, whose tokens are
single-use, is loaded by `bench/refresh_load.py` instead); every cell is run `--repeats` times and
the median kept, and every figure is also a ratio to the baseline at the same concurrency. Then:
peak RSS, the numbering after the finalize load (no gap), `--workers 2` against one process, and
data growth (first page and search at 10 k, 100 k and 1 M rows, then among 1,000 accounts) with
the query plans, and receivables (`GET /receivables` with 10,000 open invoices, alone and among a
history of 990,000 paid and void ones; `--receivables-only` runs just that). Rate limits are
raised (operator settings) so one key can be measured above 120 requests a minute. Plots need
matplotlib (the `bench` extra).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx

from bench import plans, report
from bench.names import searched_word

ROOT = Path(__file__).resolve().parents[1]
HIGH = str(10**9)
SERVE = [sys.executable, "-m", "service.cli", "serve", "--no-worker"]


@dataclass(frozen=True)
class Scenario:
    name: str
    method: str
    path: str  # may hold {invoice}, {customer_query}; `{draft}` takes a new draft per request
    body: str | None = None  # may hold {customer}, {invoice}, {draft}; `{key}` a fresh idempotency key
    mcp: bool = False
    refresh: bool = False  # loaded by bench/refresh_load.py
    oauth: bool = False  # an assistant's OAuth access token (for the resource called) instead of the API key
    of_rest: str | None = None  # also compared with this scenario's throughput in the same run


def _tool_call(name: str, arguments: dict) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}})


TEN_ITEMS = [{"description": f"Item {n}", "unit_amount": 1000 + n, "quantity": 2} for n in range(10)]
GET_INVOICE = "GET /invoices/{id} (10 lines)"
CREATE, FINALIZE = "POST /invoices (10 items)", "POST /invoices/{id}/finalize"
SCENARIOS = [
    Scenario(GET_INVOICE, "GET", "/api/v1/invoices/{invoice}"),
    Scenario(GET_INVOICE + ", OAuth token", "GET", "/api/v1/invoices/{invoice}", oauth=True),
    Scenario("GET /invoices?limit=100", "GET", "/api/v1/invoices?limit=100"),
    Scenario("GET /customers?query=…", "GET", "/api/v1/customers?query={customer_query}"),
    Scenario(CREATE, "POST", "/api/v1/invoices", json.dumps({"customer": "{customer}", "items": TEN_ITEMS})),
    Scenario(CREATE + ", OAuth token", "POST", "/api/v1/invoices",
             json.dumps({"customer": "{customer}", "items": TEN_ITEMS}), oauth=True, of_rest=CREATE),
    Scenario(FINALIZE, "POST", "/api/v1/invoices/{draft}/finalize"),
    Scenario("POST /oauth/token (refresh grant)", "POST", "/oauth/token", refresh=True),
    Scenario("MCP get_invoice", "POST", "/mcp", _tool_call("get_invoice", {"invoice": "{invoice}"}), mcp=True),
    Scenario("MCP get_invoice, OAuth token", "POST", "/mcp", _tool_call("get_invoice", {"invoice": "{invoice}"}),
             mcp=True, oauth=True),
    Scenario("MCP create_invoice (10 items), OAuth token", "POST", "/mcp", _tool_call(
        "create_invoice", {"customer": "{customer}", "items": TEN_ITEMS, "idempotency_key": "{key}"}),
        mcp=True, oauth=True, of_rest=CREATE),
    # A client that declared no elicitation (the bench's calls carry no session): nothing is asked.
    Scenario("MCP finalize_invoice, OAuth token", "POST", "/mcp", _tool_call(
        "finalize_invoice", {"invoice": "{draft}", "idempotency_key": "{key}"}), mcp=True, oauth=True, of_rest=FINALIZE),
]

# Each wrk thread has its own Lua state, numbered by `setup`: every POST carries an Idempotency-Key
# no other request uses, and `{draft}` paths take the thread's next draft from the drafts file.
LUA = """
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("thread_number", threads)
end
local counter = 0
local drafts = {}
local method, path, body = %s, %s, %s
local headers = %s
local drafts_file, thread_count, run_tag = %s, %d, %s
function init(args)
  if drafts_file then
    for line in io.lines(drafts_file) do drafts[#drafts + 1] = line end
  end
end
request = function()
  counter = counter + 1
  local target, sent = path, body
  local key = "bench-" .. run_tag .. "-" .. thread_number .. "-" .. counter
  if drafts_file then
    local index = (counter - 1) * thread_count + thread_number
    local draft = drafts[index] or "in_00000000000000000000000000000000"
    target = string.gsub(path, "{draft}", draft)
    if sent then sent = string.gsub(sent, "{draft}", draft) end
  end
  if sent then sent = string.gsub(sent, "{key}", key) end
  if method == "POST" and not string.find(path, "/mcp") then
    headers["Idempotency-Key"] = key
  end
  return wrk.format(method, target, headers, sent)
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


def _of_rest(row: dict) -> str:
    return f"  {row['of_rest']:.0%} of REST" if "of_rest" in row else ""


def lua_string(text: str | None) -> str:
    return "nil" if text is None else json.dumps(text)  # a JSON string is a valid Lua string literal here


def run_wrk(url: str, path: str, method: str, body: str | None, headers: dict[str, str], connections: int,
            seconds: float, workdir: Path, drafts_file: Path | None = None) -> dict:
    header_table = "{" + ", ".join(f"[{json.dumps(k)}] = {json.dumps(v)}" for k, v in headers.items()) + "}"
    threads = min(connections, 2)
    script = workdir / f"wrk-{secrets.token_hex(4)}.lua"
    script.write_text(LUA % (lua_string(method), lua_string(path), lua_string(body), header_table,
                             lua_string(str(drafts_file) if drafts_file else None), threads,
                             lua_string(secrets.token_hex(4))))
    out = subprocess.run(["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--timeout", "10s", "--latency",
                          "-s", str(script),
                          url], capture_output=True, text=True, check=True).stdout
    return parse_wrk(out)


def _ms(text: str) -> float:
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]


def parse_wrk(output: str) -> dict:
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    percentiles = dict(re.findall(r"^\s+(50|99)%\s+(\S+)", output, re.MULTILINE))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    timeouts = re.search(r"Socket errors: .*timeout (\d+)", output)  # no answer within --timeout
    return {"rps": rate, "p50": _ms(percentiles["50"]), "p99": _ms(percentiles["99"]),
            "non_2xx": (int(errors.group(1)) if errors else 0) + (int(timeouts.group(1)) if timeouts else 0),
            "requests": int(re.search(r"(\d+) requests in", output).group(1))}


def median_of(runs: list[dict]) -> dict:
    return {"rps": statistics.median(r["rps"] for r in runs), "p50": statistics.median(r["p50"] for r in runs),
            "p99": statistics.median(r["p99"] for r in runs), "non_2xx": sum(r["non_2xx"] for r in runs),
            "runs": [round(r["rps"]) for r in runs]}


def seed(env: dict[str, str], *args: str) -> dict:
    """One `bench/seed.py` command against the database of `env`."""
    out = subprocess.run([sys.executable, "-m", "bench.seed", *args], env=env, cwd=ROOT, capture_output=True,
                         text=True)
    if out.returncode:
        raise SystemExit(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


class Server:
    """`invoicing serve` (or the baseline) in a process group of its own, with its peak RSS."""

    def __init__(self, command: list[str], env: dict[str, str], health: str) -> None:
        self.process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True)
        wait_until_up(health, self.process)

    def peak_rss_mb(self) -> list[float]:
        """VmHWM of the process and each of its children (uvicorn's workers), in MB."""
        pids = [self.process.pid]
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        if children.exists():
            pids += [int(pid) for pid in children.read_text().split()]
        sizes = []
        for pid in pids:
            status = Path(f"/proc/{pid}/status")
            if status.exists() and (match := re.search(r"VmHWM:\s+(\d+) kB", status.read_text())):
                sizes.append(int(match.group(1)) / 1024)
        return sizes

    def stop(self) -> None:
        os.killpg(self.process.pid, 15)
        self.process.wait(timeout=30)


class Bench:
    def __init__(self, database: str, database_url: str, args, workdir: Path) -> None:
        self.database, self.args, self.workdir = database, args, workdir
        self.port = free_port()
        self.origin = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "INVOICING_DATABASE_URL": database_url, "INVOICING_SECRET_KEY": "bench-secret",
                    "INVOICING_DATA_DIR": str(workdir / "var"), "INVOICING_RATE_LIMIT_REQUESTS": HIGH,
                    "INVOICING_RATE_LIMIT_SENDS": HIGH, "INVOICING_RATE_LIMIT_EMAILS": HIGH,
                    "INVOICING_ORIGIN": self.origin, "PYTHONPATH": str(ROOT)}
        self.rows: list[dict] = []
        self.facts: dict = {}

    def serve(self, workers: int = 1) -> Server:
        return Server([*SERVE, "--port", str(self.port), "--workers", str(workers)], self.env,
                      f"{self.origin}/api/v1/openapi.json")

    def log(self, row: dict) -> None:
        print(f"{self.database:10} {row['scenario']:34} c={row['connections']:<3} {row['rps']:8.0f}/s "
              f"p50 {row['p50']:7.2f} ms p99 {row['p99']:7.2f} ms  {row['ratio']:6.1%}"
              f"{_of_rest(row)}"
              f"{'  non-2xx: ' + str(row['non_2xx']) if row['non_2xx'] else ''}", flush=True)

    def run(self) -> None:
        if self.args.receivables_only:
            self.receivables()
            return
        seeded = seed(self.env, "account")
        chains_file = self.workdir / f"chains-{self.database}.json"
        chains = seed(self.env, "refresh", seeded["account"], str(max(self.args.connections)),
                      f"{self.origin}/api/v1")
        chains_file.write_text(json.dumps(chains))
        server = self.serve()
        baseline = None
        try:
            auth = {"Authorization": f"Bearer {seeded['key']}"}
            assistant = seed(self.env, "oauth", seeded["account"], f"{self.origin}/api/v1", f"{self.origin}/mcp")
            self.oauth = {path: {"Authorization": f"Bearer {token}"}
                          for path, token in (("/api/v1", assistant["access_tokens"][f"{self.origin}/api/v1"]),
                                              ("/mcp", assistant["access_tokens"][f"{self.origin}/mcp"]))}
            with httpx.Client(base_url=self.origin, headers=auth, timeout=30) as client:
                body = {"customer": seeded["customer"], "items": TEN_ITEMS}
                invoice = client.post("/api/v1/invoices", json=body, headers={"Idempotency-Key": "seed"}).json()["data"]
                invoice_bytes = client.get(f"/api/v1/invoices/{invoice['id']}").content
            (self.workdir / "baseline.json").write_bytes(invoice_bytes)
            base_port = free_port()
            baseline = Server([sys.executable, "-m", "uvicorn", "--factory", "bench.baseline:create_app", "--host",
                               "127.0.0.1", "--port", str(base_port), "--log-level", "info"],
                              {**self.env, "BENCH_BASELINE_BODY": str(self.workdir / "baseline.json")},
                              f"http://127.0.0.1:{base_port}/")
            values = {"invoice": invoice["id"], "customer": seeded["customer"], "customer_query": "Customer%2001"}
            for connections in self.args.connections:
                limit = median_of([run_wrk(f"http://127.0.0.1:{base_port}", "/", "GET", None, {}, connections,
                                           self.args.seconds, self.workdir) for _ in range(self.args.repeats)])
                self.add("baseline (same bytes, bare Starlette)", connections, limit, limit)
                for scenario in self.scenarios():
                    runs = []
                    for _ in range(self.args.repeats):
                        if scenario.refresh:
                            runs.append(self.refresh_load(chains_file, connections))
                            continue
                        file = None
                        if "{draft}" in scenario.path + (scenario.body or ""):  # fresh drafts for every run, one per request
                            file = self.workdir / f"drafts-{secrets.token_hex(3)}.txt"
                            drafts = seed(self.env, "drafts", seeded["account"], str(self.args.drafts))["drafts"]
                            file.write_text("\n".join(drafts) + "\n")
                        runs.append(self.wrk(scenario, values, auth, connections, file))
                    self.add(scenario.name, connections, median_of(runs), limit, scenario.of_rest)
            self.facts["peak_rss_mb"] = max(server.peak_rss_mb())
            self.facts["numbering"] = plans.numbering(self.env["INVOICING_DATABASE_URL"], seeded["account"])
        finally:
            server.stop()
            if baseline is not None:
                baseline.stop()
        if self.args.only:
            return  # a look at a few scenarios: no other figures
        if self.database == "PostgreSQL":
            self.workers(values, auth)
        self.growth(seeded)
        if self.args.receivables:
            self.receivables()

    def scenarios(self) -> list[Scenario]:
        """Every scenario, or those `--only` names (and the REST rows they are compared with)."""
        if not self.args.only:
            return SCENARIOS
        chosen = {s.name for s in SCENARIOS if any(part.lower() in s.name.lower() for part in self.args.only)}
        chosen |= {s.of_rest for s in SCENARIOS if s.name in chosen and s.of_rest}
        return [s for s in SCENARIOS if s.name in chosen]

    def wrk(self, scenario: Scenario, values: dict, auth: dict, connections: int, drafts_file: Path | None) -> dict:
        if scenario.oauth:
            auth = self.oauth["/mcp" if scenario.mcp else "/api/v1"]
        headers = {**auth, "Content-Type": "application/json"}
        if scenario.mcp:
            headers.update({"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"})
        path = scenario.path.format(draft="{draft}", **values)
        body = scenario.body.replace("{customer}", values["customer"]).replace("{invoice}", values["invoice"]) \
            if scenario.body else None
        return run_wrk(self.origin, path, scenario.method, body, headers, connections, self.args.seconds,
                       self.workdir, drafts_file)

    def refresh_load(self, chains_file: Path, connections: int) -> dict:
        out = subprocess.run([sys.executable, "-m", "bench.refresh_load", self.origin, str(chains_file),
                              str(connections), str(self.args.seconds)], cwd=ROOT, capture_output=True, text=True,
                             check=True)
        return json.loads(out.stdout)

    def add(self, name: str, connections: int, result: dict, limit: dict, of_rest: str | None = None) -> None:
        row = {"database": self.database, "scenario": name, "connections": connections, **result,
               "ratio": result["rps"] / limit["rps"]}
        if of_rest is not None:
            rest = next(row for row in self.rows if row["scenario"] == of_rest and row["connections"] == connections)
            row["of_rest"] = result["rps"] / rest["rps"]
        self.rows.append(row)
        self.log(row)

    def workers(self, values: dict, auth: dict) -> None:
        """GET /invoices/{id} at 16 connections: two server processes against one."""
        scenario = SCENARIOS[0]
        figures = {}
        for workers in (1, 2):
            server = self.serve(workers)
            try:
                time.sleep(1)  # every worker up
                figures[workers] = median_of([self.wrk(scenario, values, auth, 16, None)
                                              for _ in range(self.args.repeats)])
                figures[workers]["rss_mb"] = server.peak_rss_mb()
            finally:
                server.stop()
            print(f"{self.database:10} --workers {workers}: {figures[workers]['rps']:.0f}/s", flush=True)
        self.facts["workers"] = figures

    def growth(self, seeded: dict) -> None:
        """First page and search latency (p50 at one connection) as the account grows, then among
        many accounts; the query plans at the largest size."""
        auth = {"Authorization": f"Bearer {seeded['key']}"}
        steps = []
        for size in self.args.growth:
            started = time.monotonic()
            seed(self.env, "grow", seeded["account"], str(size))
            seeded_in = time.monotonic() - started
            steps.append(self.growth_step(f"{size:,} rows", auth, size, seeded_in))
        if self.args.tenants:
            started = time.monotonic()
            seed(self.env, "tenants", str(self.args.tenants - 1), str(self.args.tenant_rows))
            steps.append(self.growth_step(f"{self.args.growth[-1]:,} rows, {self.args.tenants:,} accounts", auth,
                                          self.args.growth[-1], time.monotonic() - started))
        self.facts["growth"] = steps
        self.facts["plans"] = plans.explain(self.env["INVOICING_DATABASE_URL"], seeded["account"],
                                            _search_name(self.args.growth[-1]))

    def growth_step(self, label: str, auth: dict, size: int, seeded_in: float) -> dict:
        server = self.serve()
        try:
            query = _search_name(size)
            figures = {"label": label, "rows": size, "seeded_s": seeded_in}
            for name, path in (("list", "/api/v1/invoices?limit=10"), ("search", f"/api/v1/customers?query={query}")):
                result = median_of([run_wrk(self.origin, path, "GET", None, auth, 1, self.args.seconds, self.workdir)
                                    for _ in range(self.args.repeats)])
                figures[name] = result
            print(f"{self.database:10} growth {label}: list p50 {figures['list']['p50']:.2f} ms, "
                  f"search p50 {figures['search']['p50']:.2f} ms", flush=True)
            return figures
        finally:
            server.stop()


    def receivables(self) -> None:
        """`GET /receivables` p50 at one connection for an account of its own with `--receivables-open`
        open invoices among 1,000 customers, as the account's invoices grow to each `--receivables`
        total with paid and void ones (the open ones stay the same); the statements' plans at the largest."""
        seeded = seed(self.env, "account")
        auth = {"Authorization": f"Bearer {seeded['key']}"}
        steps = []
        for total in self.args.receivables:
            started = time.monotonic()
            counts = seed(self.env, "receivables", seeded["account"], str(self.args.receivables_open), str(total))
            seeded_in = time.monotonic() - started
            server = self.serve()
            try:
                answer = httpx.get(f"{self.origin}/api/v1/receivables", headers=auth, timeout=30)
                answer.raise_for_status()
                result = median_of([run_wrk(self.origin, "/api/v1/receivables", "GET", None, auth, 1, self.args.seconds,
                                            self.workdir) for _ in range(self.args.repeats)])
            finally:
                server.stop()
            data = answer.json()["data"]
            steps.append({"invoices": counts["invoices"], "open": counts.get("open", 0), "seeded_s": seeded_in,
                          "currencies": len(data["currencies"]), **result})
            print(f"{self.database:10} receivables, {counts['invoices']:,} invoices ({counts.get('open', 0):,} open): "
                  f"p50 {result['p50']:.2f} ms, p99 {result['p99']:.2f} ms, {result['rps']:.0f}/s", flush=True)
        self.facts["receivables"] = steps
        self.facts["receivables_plans"] = plans.explain_receivables(self.env["INVOICING_DATABASE_URL"],
                                                                    seeded["account"])


def _search_name(size: int) -> str:
    """The word of one customer's name the growth seeding made, in the middle of the account's rows."""
    return searched_word(size // 2)


def fresh_postgres(server_url: str, *, jit: str = "default") -> tuple[str, callable]:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    server = make_url(server_url)
    name = f"invoicing_bench_{secrets.token_hex(4)}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
        if jit != "default":  # the server's JIT for this database's sessions
            connection.execute(text(f'ALTER DATABASE "{name}" SET jit = {jit}'))

    def drop() -> None:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    return server.set(database=name).render_as_string(hide_password=False), drop


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3, help="runs per cell; the median is kept")
    numbers = lambda text: [int(n) for n in text.split(",")]  # noqa: E731
    parser.add_argument("--connections", type=numbers, default=[1, 16, 64])
    parser.add_argument("--growth", type=numbers, default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--tenants", type=int, default=1000, help="accounts in the last growth step (0: skip)")
    parser.add_argument("--tenant-rows", type=int, default=100, help="customers and invoices of each other account")
    parser.add_argument("--drafts", type=int, default=8000, help="drafts seeded for each run of the finalize scenario")
    parser.add_argument("--databases", default="sqlite,postgresql")
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "performance.md")
    parser.add_argument("--only", type=lambda text: text.split(","), default=[],
                        help="scenarios whose name holds one of these (comma-separated); no growth or workers runs")
    parser.add_argument("--receivables", type=lambda text: [n for n in numbers(text) if n],
                        default=[10_000, 1_000_000],
                        help="invoices of the receivables account at each step (0: skip the receivables)")
    parser.add_argument("--receivables-open", type=int, default=10_000, help="of them open, at every step")
    parser.add_argument("--receivables-only", action="store_true",
                        help="only the receivables steps; their section is printed, docs/performance.md left alone")
    parser.add_argument("--postgres-jit", choices=["default", "on", "off"], default="default",
                        help="PostgreSQL's JIT for the bench database (default: the server's setting)")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("bench needs wrk: apt-get install wrk")
    benches: list[Bench] = []
    started = datetime.now(UTC)
    with tempfile.TemporaryDirectory(prefix="invoicing-bench-") as directory:
        workdir = Path(directory)
        if "sqlite" in args.databases:
            benches.append(Bench("SQLite", f"sqlite:///{workdir}/bench.db", args, workdir))
            benches[-1].run()
        postgres = os.environ.get("BENCH_POSTGRES_URL") or os.environ.get("INVOICING_TEST_POSTGRES_URL")
        if "postgresql" in args.databases and postgres:
            url, drop = fresh_postgres(postgres, jit=args.postgres_jit)
            try:
                benches.append(Bench("PostgreSQL", url, args, workdir))
                benches[-1].run()
            finally:
                drop()
    if args.receivables_only:
        print("\n".join(report.receivables_section(benches, args)))
        return 0
    report.write(benches, args, started, args.output)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
