"""Result shapes every surface shares: a page of a list is `{data, next_cursor}`; a refusal outside
HTTP problem documents (MCP tool errors, the dashboard) is `{code, detail, errors}`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core.base.errors import DomainError
from core.mechanisms.pagination import Page


def page(result: Page, render: Callable[[Any], dict]) -> dict:
    return {"data": [render(row) for row in result.rows], "next_cursor": result.next_cursor}


def error_payload(error: DomainError) -> dict:
    """A domain error as data: its code and detail, the field errors, and when to retry."""
    payload: dict[str, Any] = {"code": error.code, "detail": error.detail}
    if error.errors:
        payload["errors"] = [{"path": e.path, "message": e.message} for e in error.errors]
    if retry_after := getattr(error, "retry_after", None):
        payload["retry_after_seconds"] = retry_after
    if remediation_url := getattr(error, "remediation_url", None):
        payload["remediation_url"] = remediation_url
    return payload
