"""Idempotency-Key: replay, mismatch, in-flight conflict, 5xx not stored, scoping, 428, concurrency."""

import contextlib
import threading
import time
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import func, select
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.testclient import TestClient

from core.base import db, errors, executor
from core.base.clock import now
from core.mechanisms import idempotency
from core.models import Customer, IdempotencyRecord
from rest import customers as customer_endpoints
from rest.framework import Api, Call
from tests.units import run_unit


def customer_count(account_id=None) -> int:
    with db.transaction() as session:
        query = select(func.count()).select_from(Customer)
        if account_id is not None:
            query = query.where(Customer.account_id == account_id)
        return session.execute(query).scalar_one()


def fingerprint(body):
    return idempotency.request_fingerprint({"body": body, "query": []})


def operation(handler_name: str):
    return next(op for op in customer_endpoints.api.operations if op.operation_id == handler_name)


def test_replay_returns_the_first_response(tenant):
    first = tenant.post("/customers", json={"name": "A"}, idem="key-1")
    second = tenant.post("/customers", json={"name": "A"}, idem="key-1")
    assert first.status_code == second.status_code == 201
    assert second.json() == first.json()
    assert second.headers["idempotent-replayed"] == "true"
    assert second.headers["content-type"] == "application/json"
    assert "idempotent-replayed" not in first.headers
    assert customer_count() == 1


def test_replay_carries_fresh_rate_limit_headers(tenant):
    first = tenant.post("/customers", json={"name": "A"}, idem="key-1")
    second = tenant.post("/customers", json={"name": "A"}, idem="key-1")
    assert int(second.headers["ratelimit-remaining"]) == int(first.headers["ratelimit-remaining"]) - 1


def test_same_body_with_other_key_order_is_a_replay(tenant):
    tenant.post("/customers", json={"name": "A", "phone": "1"}, idem="key-1")
    second = tenant.post("/customers", content=b'{"phone": "1", "name": "A"}', idem="key-1",
                         headers={"Content-Type": "application/json"})
    assert second.headers.get("idempotent-replayed") == "true"


def test_same_key_with_other_body_is_422_mismatch(tenant):
    tenant.post("/customers", json={"name": "A"}, idem="key-1")
    response = tenant.post("/customers", json={"name": "B"}, idem="key-1")
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "idempotency_mismatch"
    assert body["type"] == "http://testserver/problems/idempotency-mismatch"
    assert [e["path"] for e in body["errors"]] == ["Idempotency-Key"]
    assert customer_count() == 1


def test_same_key_while_first_runs_is_409_conflict(tenant):
    claim = run_unit(idempotency.begin, tenant.account_id, "POST", "/api/v1/customers", "key-1", fingerprint({"name": "A"}))
    assert isinstance(claim, idempotency.Claim)
    response = tenant.post("/customers", json={"name": "A"}, idem="key-1")
    assert response.status_code == 409
    assert response.json()["code"] == "conflict"
    assert response.json()["type"] == "http://testserver/problems/conflict"
    assert customer_count() == 0


def test_a_claim_whose_lease_lapsed_is_taken_over(tenant):
    run_unit(idempotency.begin, tenant.account_id, "POST", "/api/v1/customers", "key-1", fingerprint({"name": "A"}))
    with db.transaction() as session:
        session.execute(IdempotencyRecord.__table__.update().values(locked_until=now() - timedelta(seconds=1)))
    assert tenant.post("/customers", json={"name": "A"}, idem="key-1").status_code == 201


def test_a_claim_lease_is_well_under_five_minutes(tenant):
    run_unit(idempotency.begin, tenant.account_id, "POST", "/x", "k", "f")
    with db.transaction() as session:
        record = session.execute(select(IdempotencyRecord)).scalar_one()
    assert record.locked_until - record.created_at == idempotency.LEASE <= timedelta(seconds=30)


def test_a_live_request_renews_its_lease_so_no_retry_takes_over(tenant, monkeypatch):
    monkeypatch.setattr(idempotency, "LEASE", timedelta(milliseconds=600))
    started, release = threading.Event(), threading.Event()
    create = operation("create_customer").handler

    def slow(call):
        started.set()
        release.wait(10)
        return create(call)
    monkeypatch.setattr(operation("create_customer"), "handler", slow)
    first = []
    thread = threading.Thread(target=lambda: first.append(tenant.post("/customers", json={"name": "A"}, idem="k")))
    thread.start()
    started.wait(10)
    retries = []
    for _ in range(4):  # 1.6 s: well past two leases
        time.sleep(0.4)
        retries.append(tenant.post("/customers", json={"name": "A"}, idem="k").status_code)
    release.set()
    thread.join(10)
    assert retries == [409] * 4
    assert first[0].status_code == 201
    assert customer_count() == 1


def test_a_request_that_lost_its_claim_saves_nothing(tenant, monkeypatch):
    """Its lease lapsed without renewal (a stalled process) and a retry took the key over and
    finished: the first request's own work is rolled back, so the key acts once."""
    monkeypatch.setattr(idempotency, "keep", lambda claim: contextlib.nullcontext())
    started, release = threading.Event(), threading.Event()
    create = operation("create_customer").handler

    def stalled_once(call):
        if not started.is_set():
            started.set()
            release.wait(10)
        return create(call)
    monkeypatch.setattr(operation("create_customer"), "handler", stalled_once)
    first = []
    thread = threading.Thread(target=lambda: first.append(tenant.post("/customers", json={"name": "A"}, idem="k")))
    thread.start()
    started.wait(10)
    with db.transaction() as session:
        session.execute(IdempotencyRecord.__table__.update().values(locked_until=now() - timedelta(seconds=1)))
    retry = tenant.post("/customers", json={"name": "A"}, idem="k")
    release.set()
    thread.join(10)
    assert retry.status_code == 201
    assert first[0].status_code == 409 and "took it over" in first[0].json()["detail"]
    assert customer_count() == 1
    replay = tenant.post("/customers", json={"name": "A"}, idem="k")
    assert replay.headers["idempotent-replayed"] == "true" and replay.json() == retry.json()


def test_a_holder_that_lost_its_claim_cannot_release_the_new_one(tenant):
    first = run_unit(idempotency.begin, tenant.account_id, "POST", "/x", "k", "f")
    with db.transaction() as session:
        session.execute(IdempotencyRecord.__table__.update().values(locked_until=now() - timedelta(seconds=1)))
    second = run_unit(idempotency.begin, tenant.account_id, "POST", "/x", "k", "f")
    run_unit(idempotency.release, first)
    assert not idempotency.renew(first) and idempotency.renew(second)
    with pytest.raises(errors.Conflict):
        run_unit(idempotency.begin, tenant.account_id, "POST", "/x", "k", "f")


def test_server_fault_is_not_stored_and_a_retry_runs_again(tenant, monkeypatch):
    def broken(call):
        raise RuntimeError("boom")
    monkeypatch.setattr(operation("create_customer"), "handler", broken)
    failed = tenant.post("/customers", json={"name": "A"}, idem="key-1")
    assert failed.status_code == 500
    monkeypatch.undo()
    retried = tenant.post("/customers", json={"name": "A"}, idem="key-1")
    assert retried.status_code == 201
    assert "idempotent-replayed" not in retried.headers
    assert customer_count() == 1


def test_client_error_from_the_handler_is_replayed(tenant):
    first = tenant.post("/customers/cus_nope/restore", idem="key-1")
    second = tenant.post("/customers/cus_nope/restore", idem="key-1")
    assert first.status_code == second.status_code == 404
    assert second.headers["idempotent-replayed"] == "true"
    assert second.headers["content-type"] == "application/problem+json"


def test_invalid_body_is_not_stored_under_the_key(tenant):
    assert tenant.post("/customers", json={}, idem="key-1").status_code == 422
    response = tenant.post("/customers", json={"name": "A"}, idem="key-1")
    assert response.status_code == 201


def test_key_of_255_characters_is_accepted(tenant):
    assert tenant.post("/customers", json={"name": "A"}, idem="k" * 255).status_code == 201


def test_key_over_255_characters_is_422(tenant):
    response = tenant.post("/customers", json={"name": "A"}, idem="k" * 256)
    assert response.status_code == 422
    assert [e["path"] for e in response.json()["errors"]] == ["Idempotency-Key"]
    assert customer_count() == 0


def test_empty_key_is_422(tenant):
    response = tenant.post("/customers", json={"name": "A"}, headers={"Idempotency-Key": ""})
    assert response.status_code == 422
    assert [e["path"] for e in response.json()["errors"]] == ["Idempotency-Key"]


def test_keys_are_scoped_per_account(tenant, other_tenant):
    mine = tenant.post("/customers", json={"name": "A"}, idem="shared")
    theirs = other_tenant.post("/customers", json={"name": "A"}, idem="shared")
    assert theirs.status_code == 201
    assert "idempotent-replayed" not in theirs.headers
    assert theirs.json()["data"]["id"] != mine.json()["data"]["id"]


def test_keys_are_scoped_per_method_and_path(tenant):
    customer = tenant.post("/customers", json={"name": "A"}, idem="shared").json()["data"]
    response = tenant.delete(f"/customers/{customer['id']}", idem="shared")
    assert response.status_code == 200
    assert "idempotent-replayed" not in response.headers
    assert response.json()["data"]["deleted"] is True
    restored = tenant.post(f"/customers/{customer['id']}/restore", idem="shared")
    assert restored.json()["data"]["deleted"] is False


def test_two_keys_of_one_account_share_the_key_space(tenant):
    tenant.post("/customers", json={"name": "A"}, idem="shared")
    second_key = tenant.as_key(tenant.key_with(["clients:write"]))
    assert second_key.post("/customers", json={"name": "A"}, idem="shared").headers["idempotent-replayed"] == "true"


def test_without_a_key_calls_are_not_deduplicated(tenant):
    tenant.post("/customers", json={"name": "A"})
    tenant.post("/customers", json={"name": "A"})
    assert customer_count() == 2


def test_expired_record_runs_again(tenant):
    tenant.post("/customers", json={"name": "A"}, idem="key-1")
    with db.transaction() as session:
        session.execute(IdempotencyRecord.__table__.update().values(
            created_at=now() - idempotency.RETENTION - timedelta(seconds=1)))
    response = tenant.post("/customers", json={"name": "B"}, idem="key-1")
    assert response.status_code == 201
    assert "idempotent-replayed" not in response.headers
    assert customer_count() == 2


# --- an endpoint that requires a key (test-only, on a throwaway app) --------------------------

required_api = Api()


@required_api.operation("POST", "/needs-key", scope="clients:write", tag="Test", idempotency="required",
                        status=201, summary="Test-only endpoint requiring an idempotency key")
def needs_key(call: Call) -> dict:
    return {"ok": True, "n": uuid.uuid4().hex}


@pytest.fixture
def required_client(test_settings):
    app = Starlette(routes=[Mount("/api/v1", routes=required_api.routes())])
    with TestClient(app, base_url="http://testserver") as client:
        yield client


def test_required_key_missing_is_428(tenant, required_client):
    response = required_client.post("/api/v1/needs-key", headers=tenant.headers)
    assert response.status_code == 428
    body = response.json()
    assert body["code"] == "idempotency_key_required"
    assert body["type"] == "http://testserver/problems/idempotency-key-required"
    assert response.headers["content-type"] == "application/problem+json"


def test_required_key_present_runs_and_replays(tenant, required_client):
    headers = {**tenant.headers, "Idempotency-Key": "k"}
    first = required_client.post("/api/v1/needs-key", headers=headers)
    second = required_client.post("/api/v1/needs-key", headers=headers)
    assert first.status_code == 201
    assert second.json() == first.json()
    assert second.headers["idempotent-replayed"] == "true"


def test_core_begin_finish_and_replay(tenant):
    claim = run_unit(idempotency.begin, tenant.account_id, "POST", "/x", "k", "f1")
    with db.transaction() as session:
        executor.within(session, idempotency.finish, claim,
                        idempotency.StoredResponse(201, '{"data":1}', {"content-type": "application/json"}))
    stored = run_unit(idempotency.begin, tenant.account_id, "POST", "/x", "k", "f1")
    assert stored == idempotency.StoredResponse(201, '{"data":1}', {"content-type": "application/json"})


def test_core_release_frees_the_key(tenant):
    claim = run_unit(idempotency.begin, tenant.account_id, "POST", "/x", "k", "f1")
    run_unit(idempotency.release, claim)
    assert isinstance(run_unit(idempotency.begin, tenant.account_id, "POST", "/x", "k", "f1"), idempotency.Claim)


# --- concurrency ------------------------------------------------------------------------------

def test_concurrent_same_key_creates_exactly_one_customer(tenant):
    barrier = threading.Barrier(8)
    statuses = []

    def send():
        barrier.wait()
        statuses.append(tenant.post("/customers", json={"name": "Same"}, idem="concurrent").status_code)

    threads = [threading.Thread(target=send) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert customer_count() == 1
    assert statuses.count(201) >= 1
    assert set(statuses) <= {201, 409}
    final = tenant.post("/customers", json={"name": "Same"}, idem="concurrent")
    assert final.status_code == 201 and final.headers["idempotent-replayed"] == "true"


def test_purge_removes_only_records_past_retention(tenant):
    old = run_unit(idempotency.begin, tenant.account_id, "POST", "/x", "old", "f")
    run_unit(idempotency.begin, tenant.account_id, "POST", "/x", "new", "f")
    with db.transaction() as session:
        session.execute(IdempotencyRecord.__table__.update().where(IdempotencyRecord.id == old.record_id)
                        .values(created_at=now() - idempotency.RETENTION - timedelta(seconds=1)))
    with db.transaction() as session:
        idempotency.purge_expired(session)
    with db.transaction() as session:
        keys = session.execute(select(IdempotencyRecord.key)).scalars().all()
    assert keys == ["new"]
