"""Load for the OAuth refresh grant, which `wrk` cannot give: a refresh token is single-use, so each
connection follows its own chain (each answer's refresh token is the next request's).

    python -m bench.refresh_load ORIGIN CHAINS_FILE CONNECTIONS SECONDS

CHAINS_FILE holds `{"client_id": …, "refresh_tokens": [...]}` (bench.seed refresh); the chains'
latest tokens are written back, so the next run goes on from them. Prints the figures as JSON.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

import httpx


async def _chain(client: httpx.AsyncClient, client_id: str, tokens: list[str], index: int, until: float,
                 latencies: list[float], failures: list[int]) -> None:
    while time.monotonic() < until:
        started = time.perf_counter()
        response = await client.post("/oauth/token", data={
            "grant_type": "refresh_token", "refresh_token": tokens[index], "client_id": client_id})
        latencies.append(time.perf_counter() - started)
        if response.status_code != 200:
            failures.append(response.status_code)
            return  # the chain is broken: going on would only repeat the refusal
        tokens[index] = response.json()["refresh_token"]


async def run(origin: str, chains_file: Path, connections: int, seconds: float) -> dict:
    chains = json.loads(chains_file.read_text())
    tokens = chains["refresh_tokens"]
    if len(tokens) < connections:
        raise SystemExit(f"{chains_file} holds {len(tokens)} chains, {connections} are needed")
    latencies: list[float] = []
    failures: list[int] = []
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    async with httpx.AsyncClient(base_url=origin, limits=limits, timeout=30) as client:
        started = time.monotonic()
        until = started + seconds
        await asyncio.gather(*(_chain(client, chains["client_id"], tokens, n, until, latencies, failures)
                               for n in range(connections)))
        elapsed = time.monotonic() - started
    chains_file.write_text(json.dumps(chains))
    ordered = sorted(latencies) or [0.0]
    return {"rps": len(latencies) / elapsed, "p50": 1000 * statistics.median(ordered),
            "p99": 1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], "non_2xx": len(failures)}


def main() -> None:
    origin, chains_file, connections, seconds = sys.argv[1:5]
    print(json.dumps(asyncio.run(run(origin, Path(chains_file), int(connections), float(seconds)))))


if __name__ == "__main__":
    main()
