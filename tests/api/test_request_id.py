"""X-Request-Id: generated `req_…` or the client's own (up to 200 characters), on every response."""

import re


def test_generated_request_id_on_success(tenant):
    response = tenant.get("/customers")
    assert response.status_code == 200
    assert re.fullmatch(r"req_[0-9a-f]{24}", response.headers["x-request-id"])


def test_each_request_gets_its_own_id(tenant):
    first = tenant.get("/customers").headers["x-request-id"]
    second = tenant.get("/customers").headers["x-request-id"]
    assert first != second


def test_error_instance_equals_request_id(tenant):
    response = tenant.get("/customers/cus_nope")
    assert response.status_code == 404
    assert response.headers["x-request-id"].startswith("req_")
    assert response.json()["instance"] == response.headers["x-request-id"]


def test_client_request_id_is_echoed(tenant):
    response = tenant.get("/customers", headers={"X-Request-Id": "my-trace-42"})
    assert response.headers["x-request-id"] == "my-trace-42"


def test_client_request_id_of_200_characters_is_echoed(tenant):
    supplied = "r" * 200
    response = tenant.get("/customers", headers={"X-Request-Id": supplied})
    assert response.status_code == 200
    assert response.headers["x-request-id"] == supplied


def test_client_request_id_is_the_problem_instance(tenant):
    response = tenant.get("/customers/cus_nope", headers={"X-Request-Id": "trace-7"})
    assert response.json()["instance"] == "trace-7"
    assert response.headers["x-request-id"] == "trace-7"


def test_client_request_id_of_201_characters_is_422(tenant):
    response = tenant.get("/customers", headers={"X-Request-Id": "r" * 201})
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "validation"
    assert [e["path"] for e in body["errors"]] == ["X-Request-Id"]
    assert response.headers["x-request-id"].startswith("req_")
    assert body["instance"] == response.headers["x-request-id"]


def test_request_id_on_401(client):
    response = client.get("/api/v1/customers", headers={"X-Request-Id": "anon-1"})
    assert response.status_code == 401
    assert response.headers["x-request-id"] == "anon-1"
    assert response.json()["instance"] == "anon-1"


def test_request_id_on_unknown_path(tenant):
    response = tenant.get("/no-such-thing")
    assert response.status_code == 404
    assert response.headers["x-request-id"].startswith("req_")
    assert response.json()["instance"] == response.headers["x-request-id"]


def test_request_id_on_replayed_response_is_the_new_one(tenant):
    first = tenant.post("/customers", json={"name": "A"}, idem="k-1")
    second = tenant.post("/customers", json={"name": "A"}, idem="k-1")
    assert second.headers["idempotent-replayed"] == "true"
    assert second.headers["x-request-id"] != first.headers["x-request-id"]
