"""`{data: …}` envelopes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core.pagination import Page


def one(data: Any) -> dict:
    return {"data": data}


def page(result: Page, render: Callable[[Any], dict]) -> dict:
    return {"data": [render(row) for row in result.rows], "next_cursor": result.next_cursor}
