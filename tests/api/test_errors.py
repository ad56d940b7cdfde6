"""RFC 9457 problems: media type, type URIs, 404 for unknown paths, bad bodies, server faults."""

import pytest
from sqlalchemy.exc import IntegrityError, OperationalError

from core.base import errors
from rest import business as business_endpoints
from rest import customers as customer_endpoints

PROBLEM_FIELDS = {"type", "title", "status", "detail", "instance", "code"}


def operation(module, name):
    return next(op for op in module.api.operations if op.operation_id == name)


def assert_problem(response, status, code, slug):
    assert response.status_code == status
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert PROBLEM_FIELDS <= set(body)
    assert body["status"] == status
    assert body["code"] == code
    assert body["type"] == f"http://testserver/problems/{slug}"
    assert body["instance"] == response.headers["x-request-id"]
    assert ("errors" in body) == (status == 422)
    return body


def test_every_error_has_its_decided_slug():
    slugs = {e.code: e.slug for e in errors.ALL_ERRORS}
    assert slugs == {
        "validation": "validation", "idempotency_mismatch": "idempotency-mismatch",
        "unauthorized": "unauthorized", "forbidden": "forbidden", "not_found": "not-found",
        "invalid_state": "invalid-state", "conflict": "conflict",
        "idempotency_key_required": "idempotency-key-required", "rate_limited": "rate-limited",
        "internal_error": "internal-error", "upstream_failed": "upstream-failed",
        "payload_too_large": "payload-too-large", "grant_limit_exceeded": "grant-limit-exceeded",
    }
    statuses = {e.code: e.status for e in errors.ALL_ERRORS}
    assert statuses == {
        "validation": 422, "idempotency_mismatch": 422, "unauthorized": 401, "forbidden": 403,
        "not_found": 404, "invalid_state": 409, "conflict": 409, "idempotency_key_required": 428,
        "rate_limited": 429, "internal_error": 500, "upstream_failed": 502, "payload_too_large": 413,
        "grant_limit_exceeded": 403,
    }


def test_unknown_path_is_404_problem(tenant):
    assert_problem(tenant.get("/no-such-thing"), 404, "not_found", "not-found")


def test_unknown_path_without_credentials_is_404_problem(client):
    assert_problem(client.get("/api/v1/nothing/here"), 404, "not_found", "not-found")


def test_unknown_path_gets_a_fresh_request_id_or_the_clients(tenant):
    first = tenant.get("/no-such-thing").headers["x-request-id"]
    second = tenant.get("/no-such-thing").headers["x-request-id"]
    assert first != second
    echoed = tenant.get("/no-such-thing", headers={"X-Request-Id": "mine"})
    assert echoed.headers["x-request-id"] == "mine" == echoed.json()["instance"]


def test_wrong_method_on_known_path_is_a_problem(tenant):
    response = tenant.request("PUT", "/customers")
    assert response.status_code in (404, 405)
    assert response.headers["content-type"] == "application/problem+json"


def test_invalid_json_body_is_422_at_body(tenant):
    response = tenant.post("/customers", content=b'{"name": ', headers={"Content-Type": "application/json"})
    body = assert_problem(response, 422, "validation", "validation")
    assert [e["path"] for e in body["errors"]] == ["body"]


def test_non_utf8_body_is_422_at_body(tenant):
    response = tenant.post("/customers", content=b'{"name": "\xff"}', headers={"Content-Type": "application/json"})
    body = assert_problem(response, 422, "validation", "validation")
    assert [e["path"] for e in body["errors"]] == ["body"]


@pytest.mark.parametrize("raw", [b'[{"name": "A"}]', b'"A"', b"42", b"true"])
def test_body_that_is_not_an_object_is_422_at_body(tenant, raw):
    response = tenant.post("/customers", content=raw, headers={"Content-Type": "application/json"})
    body = assert_problem(response, 422, "validation", "validation")
    assert [e["path"] for e in body["errors"]] == ["body"]


def test_missing_required_body_is_422(tenant):
    response = tenant.post("/customers")
    body = assert_problem(response, 422, "validation", "validation")
    assert body["errors"][0]["path"] == "body"


def test_every_invalid_field_is_listed(tenant):
    response = tenant.post("/customers", json={"email": "nope", "phone": "x" * 51, "extra": 1})
    body = assert_problem(response, 422, "validation", "validation")
    assert {e["path"] for e in body["errors"]} == {"name", "email", "phone", "extra"}
    assert all(e["message"] for e in body["errors"])


def test_nan_and_huge_numbers_do_not_break_the_server(tenant):
    for raw in (b'{"name": NaN}', b'{"name": 1e999999}', b'{"name": "A", "address": {"city": 1e400}}'):
        response = tenant.post("/customers", content=raw, headers={"Content-Type": "application/json"})
        assert response.status_code == 422, raw


def test_deeply_nested_body_is_422_not_500(tenant):
    raw = b'{"name": "A", "address": ' + b"[" * 100000 + b"]" * 100000 + b"}"
    response = tenant.post("/customers", content=raw, headers={"Content-Type": "application/json"})
    assert response.status_code == 422


def test_body_over_the_size_limit_is_413(tenant):
    from rest import framework
    response = tenant.post("/customers", content=b'{"name": "' + b"x" * framework.MAX_BODY_BYTES + b'"}',
                           headers={"Content-Type": "application/json"})
    body = assert_problem(response, 413, "payload_too_large", "payload-too-large")
    assert "8 MiB" in body["detail"]
    assert tenant.post("/customers", json={"name": "A"}).status_code == 201


def test_database_fault_is_502_with_generic_detail(tenant, monkeypatch):
    def broken(call):
        raise OperationalError("SELECT secret_stuff FROM x", {}, Exception("connection refused to db-host:5432"))
    monkeypatch.setattr(operation(customer_endpoints, "list_customers"), "handler", broken)
    response = tenant.get("/customers")
    body = assert_problem(response, 502, "upstream_failed", "upstream-failed")
    assert "secret_stuff" not in response.text and "db-host" not in response.text
    assert "database" in body["detail"].lower()
    assert "ratelimit-limit" in response.headers


def test_integrity_error_is_409_conflict(tenant, monkeypatch):
    def clash(call):
        raise IntegrityError("INSERT", {}, Exception("duplicate key value violates unique constraint"))
    monkeypatch.setattr(operation(customer_endpoints, "create_customer"), "handler", clash)
    response = tenant.post("/customers", json={"name": "A"})
    assert_problem(response, 409, "conflict", "conflict")
    assert "duplicate" not in response.text


def test_unexpected_exception_is_500_without_details(tenant, monkeypatch):
    def broken(call):
        raise KeyError("very-internal-detail")
    monkeypatch.setattr(operation(business_endpoints, "get_business"), "handler", broken)
    response = tenant.get("/business")
    body = assert_problem(response, 500, "internal_error", "internal-error")
    assert "very-internal-detail" not in response.text
    assert "KeyError" not in response.text
    assert body["title"] == "Internal error"


def test_domain_error_from_handler_keeps_its_code(tenant, monkeypatch):
    def invalid(call):
        raise errors.InvalidState("The invoice is not a draft.")
    monkeypatch.setattr(operation(business_endpoints, "get_business"), "handler", invalid)
    body = assert_problem(tenant.get("/business"), 409, "invalid_state", "invalid-state")
    assert body["detail"] == "The invoice is not a draft."


def test_success_is_wrapped_in_data(tenant):
    response = tenant.get("/business")
    assert response.headers["content-type"] == "application/json"
    assert set(response.json()) == {"data"}
    assert set(tenant.get("/customers").json()) == {"data", "next_cursor"}


def test_unknown_query_parameters_are_ignored(tenant):
    assert tenant.get("/customers", params={"colour": "blue"}).status_code == 200


def test_invalid_query_parameter_is_422_at_its_name(tenant):
    body = assert_problem(tenant.get("/customers", params={"query": "x" * 300}), 422, "validation", "validation")
    assert [e["path"] for e in body["errors"]] == ["query"]


@pytest.mark.parametrize("path", ["/prices/a%0Ab", "/customers/%0A/restore", "/no-such-thing%0A"])
def test_a_path_with_a_line_break_is_a_404_problem(tenant, path):
    assert_problem(tenant.get(path), 404, "not_found", "not-found")


def test_an_unknown_page_outside_the_api_is_an_html_404(client):
    response = client.get("/no/such/page%0A")
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("text/html")


def _raise(exc):
    def broken(*_args, **_kwargs):
        raise exc
    return broken


def test_an_unreachable_database_on_a_page_is_a_502_page(client, monkeypatch):
    from pages import routing
    monkeypatch.setattr(routing, "current_user", _raise(OperationalError("SELECT", {}, Exception("refused"))))
    response = client.get("/login")
    assert response.status_code == 502
    assert response.headers["content-type"].startswith("text/html") and "refused" not in response.text


def test_a_value_the_database_refuses_on_a_page_is_a_400_page(client, monkeypatch):
    from sqlalchemy.exc import DataError

    from pages import routing
    monkeypatch.setattr(routing, "current_user", _raise(DataError("SELECT", {}, Exception("NUL"))))
    assert client.get("/login").status_code == 400


def test_an_unreachable_database_at_the_token_endpoint_is_temporarily_unavailable(client, monkeypatch):
    from authz import app as authz_app
    monkeypatch.setattr(authz_app, "_prefetch_documents", _raise(OperationalError("SELECT", {}, Exception("x"))))
    response = client.post("/oauth/token", data={"grant_type": "refresh_token", "refresh_token": "r"})
    assert response.status_code == 502
    assert response.json()["error"] == "temporarily_unavailable"
