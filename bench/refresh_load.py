"""Load for the OAuth refresh grant, which `wrk` cannot give: a refresh token is single-use, so each
connection follows its own chain (each answer's refresh token is the next request's). HTTP/1.1 is
written by hand on asyncio streams: httpx's client spent ~1.5 ms of CPU per request, more than the
server, on the same two cores.

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
from urllib.parse import urlencode, urlsplit


async def _chain(origin: str, client_id: str, tokens: list[str], index: int, until: float, latencies: list[float],
                 failures: list[int]) -> None:
    url = urlsplit(origin)
    reader, writer = await asyncio.open_connection(url.hostname, url.port or 80)
    head = (f"POST /oauth/token HTTP/1.1\r\nHost: {url.netloc}\r\n"
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n")
    try:
        while time.monotonic() < until:
            body = urlencode({"grant_type": "refresh_token", "refresh_token": tokens[index], "client_id": client_id})
            started = time.perf_counter()
            writer.write((head.format(len(body)) + body).encode())
            status, payload = await _response(reader)
            latencies.append(time.perf_counter() - started)
            if status != 200:
                failures.append(status)
                return  # the chain is broken: going on would only repeat the refusal
            tokens[index] = json.loads(payload)["refresh_token"]
    finally:
        writer.close()


async def _response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """The status and body of one HTTP/1.1 answer (uvicorn's: a Content-Length, no chunks)."""
    lines = (await reader.readuntil(b"\r\n\r\n")).split(b"\r\n")
    length = next(int(line.split(b":", 1)[1]) for line in lines[1:] if line.lower().startswith(b"content-length:"))
    return int(lines[0].split()[1]), await reader.readexactly(length)


async def run(origin: str, chains_file: Path, connections: int, seconds: float) -> dict:
    chains = json.loads(chains_file.read_text())
    tokens = chains["refresh_tokens"]
    if len(tokens) < connections:
        raise SystemExit(f"{chains_file} holds {len(tokens)} chains, {connections} are needed")
    latencies: list[float] = []
    failures: list[int] = []
    started = time.monotonic()
    until = started + seconds
    await asyncio.gather(*(_chain(origin, chains["client_id"], tokens, n, until, latencies, failures)
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
