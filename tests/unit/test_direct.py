"""Which requests `service.direct` routes from the operation declarations, past Starlette's stacks:
REST's endpoints whose operation runs on the event loop, and MCP's POST; nothing else."""

from __future__ import annotations

import pytest

from rest.app import operations
from service.direct import Direct

MCP = object()


@pytest.fixture(scope="module")
def direct() -> Direct:
    return Direct(object(), "/api/v1", operations(), "/mcp", MCP, 4096)


def _scope(method: str, path: str, **extra) -> dict:
    return {"type": "http", "method": method, "path": path, "headers": [], **extra}


def _routed(direct: Direct, method: str, path: str, **extra) -> tuple[str, dict] | None:
    found = direct.target(_scope(method, path, **extra))
    return None if found is None else (found[0].route, found[1])


@pytest.mark.parametrize(("method", "path", "route", "params"), [
    ("GET", "/api/v1/invoices/in_abc", "/api/v1/invoices/{id}", {"id": "in_abc"}),
    ("GET", "/api/v1/invoices", "/api/v1/invoices", {}),
    ("POST", "/api/v1/invoices", "/api/v1/invoices", {}),
    ("POST", "/api/v1/invoices/in_abc/finalize", "/api/v1/invoices/{id}/finalize", {"id": "in_abc"}),
    ("POST", "/mcp", "/mcp", {}),
])
def test_an_operation_on_the_event_loop_is_routed_from_its_declaration(direct, method, path, route, params):
    assert _routed(direct, method, path) == (route, params)


@pytest.mark.parametrize(("method", "path"), [
    ("DELETE", "/api/v1/invoices/in_abc"),  # an operation on the ORM: the application's
    ("POST", "/api/v1/invoices/in_abc/void"),
    ("GET", "/api/v1/customers"),
    ("PUT", "/api/v1/invoices"),  # no such endpoint: the application's 404
    ("GET", "/api/v1/invoices/in_abc/finalize"),
    ("GET", "/mcp"),  # MCP's stream and session end: the application's
    ("DELETE", "/mcp"),
    ("GET", "/api/v1/invoices/"),
    ("GET", "/api/v1/invoices/a/b"),
])
def test_anything_else_is_the_applications(direct, method, path):
    assert _routed(direct, method, path) is None


def test_a_mounted_application_is_not_routed_directly(direct):
    assert _routed(direct, "GET", "/api/v1/invoices", root_path="/behind") is None


def test_a_websocket_is_not_routed_directly(direct):
    assert direct.target({"type": "websocket", "path": "/mcp"}) is None
