"""docs/performance.md and its plots from one `make bench` run (the hand-kept history is appended)."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def write(benches, args, started: datetime, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    plots = _plots(benches, path.parent)
    rows = [row for bench in benches for row in bench.rows]
    minutes = (datetime.now(UTC) - started).total_seconds() / 60
    lines = [
        "# Performance",
        "",
        f"Written by `make bench` on {started:%Y-%m-%d %H:%M} UTC in {minutes:.0f} minutes, on a machine with "
        f"{os.cpu_count()} cores: one `invoicing serve` process (no worker) per database, the load generator on "
        f"loopback (`wrk`; the refresh grant by `bench/refresh_load.py`), {args.seconds:g} s per run, the median "
        f"of {args.repeats} runs per cell. **Ratio** is the throughput against the baseline at the same number of "
        "connections: a bare Starlette app on the same uvicorn settings answering the same bytes from memory, "
        "the limit of our stack; **of REST** compares an assistant's MCP write with the same write over REST with "
        "an API key, in the same run. The machine is shared and noisy: the same cell can move by a third between "
        "runs.",
        "",
        *[f"![{title}]({name})" for title, name in plots],
        "",
        "## Throughput and latency",
        "",
        "| database | scenario | connections | requests/s | ratio | of REST | p50 ms | p99 ms | runs (req/s) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        errors = f" ({row['non_2xx']} failed or unanswered)" if row["non_2xx"] else ""
        lines.append(f"| {row['database']} | {row['scenario']}{errors} | {row['connections']} | {row['rps']:.0f} | "
                     f"{row['ratio']:.1%} | {_of_rest(row)} | {row['p50']:.2f} | {row['p99']:.2f} | "
                     f"{', '.join(str(r) for r in row.get('runs', []))} |")
    lines += ["", "## One process, two processes, memory and numbering", ""]
    for bench in benches:
        facts = bench.facts
        lines.append(f"- **{bench.database}**: peak RSS of the server process under the load above "
                     f"{facts.get('peak_rss_mb', 0):.0f} MB.")
        if numbering := facts.get("numbering"):
            lines.append(f"  After the finalize load {numbering['finalized']} invoices carry numbers, "
                         f"{'with no gap and no repeat' if numbering['gapless'] else '**with a gap or a repeat**'}.")
        if workers := facts.get("workers"):
            one, two = workers[1], workers[2]
            lines.append(f"  `GET /invoices/{{id}}` at 16 connections: one process {one['rps']:.0f}/s "
                         f"(p99 {one['p99']:.0f} ms), `--workers 2` {two['rps']:.0f}/s (p99 {two['p99']:.0f} ms), "
                         f"**{two['rps'] / one['rps']:.2f}×**; peak RSS per worker "
                         f"{', '.join(f'{mb:.0f}' for mb in two['rss_mb'])} MB (the first is uvicorn's supervisor).")
    lines += ["", "## Data growth", "",
              "First page of invoices (`limit=10`) and a customer search matching one row, one connection, p50 "
              "(median of the runs). Rows are customers and invoices of the measured account each; the last step "
              f"adds {args.tenants - 1 if args.tenants else 0} accounts of {args.tenant_rows} rows each.", "",
              "| database | data | list p50 ms | search p50 ms | seeding s |", "|---|---|---:|---:|---:|"]
    for bench in benches:
        for step in bench.facts.get("growth", []):
            lines.append(f"| {bench.database} | {step['label']} | {step['list']['p50']:.2f} | "
                         f"{step['search']['p50']:.2f} | {step['seeded_s']:.0f} |")
    for bench in benches:
        for label, plan in bench.facts.get("plans", {}).items():
            lines += ["", f"**{bench.database}, {label}**, at the largest size:", "", "```sql",
                      plan["statement"].strip(), "```", "", "```", *plan["plan"], "```"]
    if any(bench.facts.get("receivables") for bench in benches):
        lines += ["", *receivables_section(benches, args)]
    lines.append("")
    path.write_text("\n".join(lines) + "\n" + (ROOT / "bench" / "history.md").read_text())


def receivables_section(benches, args) -> list[str]:
    """`GET /receivables` as the account's history grows, its open invoices the same, and the plans."""
    lines = ["## Receivables", "",
             f"`GET /receivables` (both statements, the first page of 25 customers), one connection, p50 and p99 "
             f"(median of {args.repeats} runs of {args.seconds:g} s). The account has {args.receivables_open:,} open "
             "invoices among 1,000 customers in three currencies, aged from 30 days ahead to 150 days past due (one "
             "in 20 without a due date), part credited or paid; the larger step adds paid and void invoices only "
             "(history), which the partial index `ix_invoices_open_receivable` leaves out. Seeded by `INSERT … "
             "SELECT` over a series.", "",
             "| database | invoices (open) | p50 ms | p99 ms | requests/s | seeding s |", "|---|---|---:|---:|---:|---:|"]
    for bench in benches:
        steps = bench.facts.get("receivables", [])
        for step in steps:
            lines.append(f"| {bench.database} | {step['invoices']:,} ({step['open']:,}) | {step['p50']:.2f} | "
                         f"{step['p99']:.2f} | {step['rps']:.0f} | {step['seeded_s']:.0f} |")
        if len(steps) > 1:
            ratio = steps[-1]["p50"] / steps[0]["p50"]
            lines.append(f"| {bench.database} | largest ÷ smallest | **{ratio:.2f}×** (target ≤ 2×) | | | |")
    for bench in benches:
        for label, plan in bench.facts.get("receivables_plans", {}).items():
            lines += ["", f"**{bench.database}, {label}**, at the largest size:", "", "```sql",
                      plan["statement"].strip(), "```", "", "```", *plan["plan"], "```"]
    return lines


def _of_rest(row: dict) -> str:
    return f"{row['of_rest']:.0%}" if "of_rest" in row else ""


def _plots(benches, directory: Path) -> list[tuple[str, str]]:
    """Three PNGs beside the report; none (and a note) without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is missing (pip install -e '.[bench]'): no plots")
        return []
    made = []
    scenarios = [row["scenario"] for row in benches[0].rows if not row["scenario"].startswith("baseline")]
    scenarios = list(dict.fromkeys(scenarios))
    figure, axes = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / max(1, len(benches))
    for offset, bench in enumerate(benches):
        ratios = {row["scenario"]: row["ratio"] for row in bench.rows if row["connections"] == 16}
        axes.bar([n + offset * width for n in range(len(scenarios))], [100 * ratios.get(s, 0) for s in scenarios],
                 width, label=bench.database)
    axes.set_xticks([n + width * (len(benches) - 1) / 2 for n in range(len(scenarios))], scenarios, rotation=20,
                    ha="right", fontsize=8)
    axes.set_ylabel("% of the bare baseline (16 connections)")
    axes.axhline(25, color="grey", linestyle="--", linewidth=0.8)
    axes.legend()
    figure.tight_layout()
    figure.savefig(directory / "performance-ratio.png", dpi=110)
    plt.close(figure)
    made.append(("Throughput as a share of the bare baseline", "performance-ratio.png"))

    figure, panels = plt.subplots(1, len(benches), figsize=(11, 4.2), sharey=True, squeeze=False)
    for panel, bench in zip(panels[0], benches, strict=True):
        for scenario in ["baseline (same bytes, bare Starlette)", *scenarios]:
            points = [(row["connections"], row["p99"]) for row in bench.rows if row["scenario"] == scenario]
            panel.plot([c for c, _ in points], [p for _, p in points], marker="o", label=scenario)
        panel.set_xscale("log")
        panel.set_yscale("log")
        panel.set_title(bench.database)
        panel.set_xlabel("connections")
    panels[0][0].set_ylabel("p99 latency, ms")
    panels[0][-1].legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(directory / "performance-latency.png", dpi=110)
    plt.close(figure)
    made.append(("p99 latency by connections", "performance-latency.png"))

    if any(bench.facts.get("growth") for bench in benches):
        figure, axes = plt.subplots(figsize=(8, 4.2))
        for bench in benches:
            steps = [s for s in bench.facts.get("growth", []) if "accounts" not in s["label"]]
            for read in ("list", "search"):
                axes.plot([s["rows"] for s in steps], [s[read]["p50"] for s in steps], marker="o",
                          label=f"{bench.database} {read}")
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlabel("customers and invoices in the account")
        axes.set_ylabel("p50 latency, ms (1 connection)")
        axes.legend()
        figure.tight_layout()
        figure.savefig(directory / "performance-growth.png", dpi=110)
        plt.close(figure)
        made.append(("Latency as the account grows", "performance-growth.png"))
    return made
