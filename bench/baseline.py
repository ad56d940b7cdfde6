"""The limit of our stack: a bare Starlette app under the same uvicorn settings, answering every GET
with the bytes read from BENCH_BASELINE_BODY (a response of the real service, captured first)."""

from __future__ import annotations

import os
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

BODY = Path(os.environ["BENCH_BASELINE_BODY"]).read_bytes()


async def same_bytes(_request: Request) -> Response:
    return Response(BODY, media_type="application/json")


def create_app() -> Starlette:
    return Starlette(routes=[Route("/{path:path}", same_bytes, methods=["GET", "POST"])])
