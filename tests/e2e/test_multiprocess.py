"""Two server processes on one database act as one service: shared data, rate limit, idempotency."""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from sqlalchemy import func, select

from core.base import db
from core.models import Customer
from tests.conftest import make_tenant

pytestmark = pytest.mark.e2e

WINDOW = 60


def on_postgresql() -> bool:
    return db.get_engine().dialect.name == "postgresql"


postgresql_only = pytest.mark.skipif("not on_postgresql()", reason="needs PostgreSQL (several writers)")


def wait_for_a_fresh_window(margin: float = 6.0) -> None:
    """Fixed windows: make sure the whole test fits in one window."""
    left = WINDOW - time.time() % WINDOW
    if left < margin:
        time.sleep(left + 0.1)


def api(origin: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=f"{origin}/api/v1", headers={"Authorization": f"Bearer {key}"}, timeout=15)


def test_live_server_answers_with_the_platform_headers(live_server):
    """The single-server fixture others reuse."""
    tenant = make_tenant(None)
    with api(live_server, tenant.key) as client:
        response = client.get("/customers", headers={"X-Request-Id": "live-1"})
        assert response.status_code == 200
        assert response.headers["x-request-id"] == "live-1"
        assert response.headers["ratelimit-limit"] == "120"
        document = client.get("/openapi.json").json()
        assert document["servers"] == [{"url": f"{live_server}/api/v1"}]
        problem = client.get("/customers/cus_nope").json()
        assert problem["type"] == f"{live_server}/problems/not-found"


def test_two_processes_share_one_database(live_server_pair):
    first, second = live_server_pair
    tenant = make_tenant(None)
    with api(first, tenant.key) as a, api(second, tenant.key) as b:
        created = a.post("/customers", json={"name": "Shared"}).json()["data"]
        assert b.get(f"/customers/{created['id']}").json()["data"] == created
        replay = b.post("/customers", json={"name": "Once"}, headers={"Idempotency-Key": "k"})
        again = a.post("/customers", json={"name": "Once"}, headers={"Idempotency-Key": "k"})
        assert again.headers["idempotent-replayed"] == "true"
        assert again.json() == replay.json()


@postgresql_only
def test_rate_limit_holds_across_two_processes(live_server_pair):
    first, second = live_server_pair
    tenant = make_tenant(None)
    wait_for_a_fresh_window()
    with api(first, tenant.key) as a, api(second, tenant.key) as b:
        assert [a.get("/customers").status_code for _ in range(60)] == [200] * 60
        from_b = [b.get("/customers") for _ in range(60)]
        assert [r.status_code for r in from_b] == [200] * 60
        assert from_b[-1].headers["ratelimit-remaining"] == "0"
        refused = b.get("/customers")
        assert refused.status_code == 429
        assert refused.json()["code"] == "rate_limited"
        assert 1 <= int(refused.headers["retry-after"]) <= WINDOW
        assert a.get("/customers").status_code == 429


@postgresql_only
def test_concurrent_retries_across_processes_create_one_customer(live_server_pair):
    origins = live_server_pair
    tenant = make_tenant(None)
    barrier = threading.Barrier(10)
    statuses: list[int] = []

    def send(origin: str) -> None:
        with api(origin, tenant.key) as client:
            barrier.wait()
            response = client.post("/customers", json={"name": "Once"}, headers={"Idempotency-Key": "same"})
            statuses.append(response.status_code)

    threads = [threading.Thread(target=send, args=(origins[i % 2],)) for i in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with db.transaction() as session:
        count = session.execute(select(func.count()).select_from(Customer)
                                .where(Customer.account_id == tenant.account_id)).scalar_one()
    assert count == 1
    assert set(statuses) <= {201, 409} and 201 in statuses
