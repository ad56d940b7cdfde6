"""Every role × every operation of the REST API, from one declaration: `core.access.roles.ROLE_SCOPES`
and each operation's scope. A member's key holding every scope is refused exactly the operations whose
scope their role does not allow (403 `forbidden`, saying it is the role), and reaches the others (their
own checks answer: 200, 404 for a made-up id, 422 for an empty body…)."""

from __future__ import annotations

import re

import pytest

from core.access.roles import ROLE_SCOPES, ROLES
from rest.app import operations
from tests.mcp.jsonrpc import call, post
from tests.members import join

ENDPOINTS = [(op.method, op.path, op.scope, op.name) for op in operations()]
OWNER_ONLY = {"transfer_ownership"}  # beyond its scope: the owner's own act
MADE_UP = "in_" + "0" * 32


def _path(path: str) -> str:
    return re.sub(r"\{[^}]+\}", MADE_UP, path)


def test_the_table_covers_every_role_and_operation():
    assert set(ROLE_SCOPES) == set(ROLES)
    assert len(ENDPOINTS) > 50  # every endpoint module registered


@pytest.mark.parametrize("role", ROLES)
def test_a_role_bounds_every_operation_of_its_members_keys(tenant, role):
    member = join(tenant, role)
    wrong = []
    for method, path, scope, name in ENDPOINTS:
        response = member.request(method, _path(path), json={} if method in ("POST", "PATCH") else None)
        refused = response.status_code == 403 and response.json().get("code") == "forbidden"
        allowed = scope in ROLE_SCOPES[role] and (name not in OWNER_ONLY or role == "owner")
        if refused == allowed:
            wrong.append(f"{method} {path} ({scope}): {response.status_code}")
        if refused and role not in response.json()["detail"]:
            wrong.append(f"{method} {path}: the refusal does not name the role: {response.json()['detail']}")
    assert not wrong, "\n".join(wrong)


def test_a_role_refusal_over_rest_offers_no_step_up(tenant):
    response = join(tenant, "viewer").post("/customers", json={"name": "Globex"})
    assert response.status_code == 403 and "viewer" in response.json()["detail"]
    assert "WWW-Authenticate" not in response.headers


def test_a_role_refusal_names_the_scope_and_the_role(tenant):
    body = join(tenant, "viewer").post("/customers", json={"name": "Globex"}).json()
    assert (body["code"], body["required_scope"], body["role"]) == ("forbidden", "clients:write", "viewer")


def test_a_role_bounds_the_same_operations_over_mcp(tenant):
    viewer = join(tenant, "viewer")
    response = post(viewer.client, "tools/call", {"name": "create_customer", "arguments": {"name": "Globex"}},
                    key=viewer.key)
    assert response.status_code == 403 and "WWW-Authenticate" not in response.headers
    error = response.json()["error"]
    assert error["data"]["code"] == "forbidden" and "a viewer in this business" in error["message"]
    assert (error["data"]["required_scope"], error["data"]["role"]) == ("clients:write", "viewer")
    assert not call(viewer.client, viewer.key, "list_customers").get("isError")
