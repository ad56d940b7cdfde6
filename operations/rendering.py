"""Result shapes every surface shares: a page of a list is `{data, next_cursor}`; a refusal outside
HTTP problem documents (MCP tool errors, the dashboard) is `{code, detail, errors}`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core.base.errors import DomainError, Forbidden, RoleForbids
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
    return payload | refusal_details(error)


def forbidden_data(error: Forbidden) -> dict:
    """The `data` of MCP's JSON-RPC error 403 (a refusal before any tool runs)."""
    return {"code": error.code, **refusal_details(error)}


def refusal_details(error: DomainError) -> dict:
    """What a 403 adds beside its code, on every surface: the scope refused and, when the person's role
    refused it, that role (null: no longer a member), so a client tells "ask for that permission"
    from "ask an owner"; where a person raises an app's limit."""
    details: dict[str, Any] = {}
    if isinstance(error, Forbidden):
        details["required_scope"] = error.missing_scope
        if isinstance(error, RoleForbids):
            details["role"] = error.role
    if remediation_url := getattr(error, "remediation_url", None):
        details["remediation_url"] = remediation_url
    return details
