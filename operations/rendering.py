"""Result shapes every surface shares: a page of a list is `{data, next_cursor}`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core.mechanisms.pagination import Page


def page(result: Page, render: Callable[[Any], dict]) -> dict:
    return {"data": [render(row) for row in result.rows], "next_cursor": result.next_cursor}
