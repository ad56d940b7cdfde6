"""Two server processes on one database act as one service: shared data, rate limit, idempotency."""

from __future__ import annotations

import os
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
    """Whether the suite runs on PostgreSQL: read from the URL, not the engine, which may not exist yet
    when a mark is evaluated (a module run alone)."""
    return (os.environ.get("INVOICING_TEST_DATABASE_URL") or "").startswith("postgresql")


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


def _finalize_all(origins: list[str], key: str, invoice_ids: list[str]) -> list[httpx.Response]:
    responses: list[httpx.Response] = []
    barrier = threading.Barrier(len(invoice_ids))

    def finalize(index: int, invoice_id: str) -> None:
        with api(origins[index % len(origins)], key) as client:
            barrier.wait()
            responses.append(client.post(f"/invoices/{invoice_id}/finalize", headers={"Idempotency-Key": invoice_id}))

    threads = [threading.Thread(target=finalize, args=pair) for pair in enumerate(invoice_ids)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return responses


def _drafts(client: httpx.Client, count: int) -> list[str]:
    customer = client.post("/customers", json={"name": "Scale"}).json()["data"]
    body = {"customer": customer["id"], "items": [{"description": "Work", "unit_amount": 1000}]}
    return [client.post("/invoices", json=body, headers={"Idempotency-Key": f"draft-{n}"}).json()["data"]["id"]
            for n in range(count)]


@postgresql_only
def test_numbers_stay_gapless_when_two_processes_finalize_at_once(live_server_pair):
    tenant = make_tenant(None)
    with api(live_server_pair[0], tenant.key) as client:
        drafts = _drafts(client, 20)
    responses = _finalize_all(live_server_pair, tenant.key, drafts)
    assert [r.status_code for r in responses] == [200] * 20
    assert sorted(r.json()["data"]["number"] for r in responses) == [f"INV-{n:04d}" for n in range(1, 21)]


def _mcp(origin: str, key: str, tool: str, **arguments) -> dict:
    from tests.mcp.jsonrpc import HEADERS
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    response = httpx.post(f"{origin}/mcp", json=body, headers={**HEADERS, "Authorization": f"Bearer {key}"}, timeout=15)
    assert response.status_code == 200, response.text
    return response.json()["result"]


def test_an_mcp_retry_on_the_other_process_replays_the_first_answer(live_server_pair):
    first, second = live_server_pair
    tenant = make_tenant(None)
    customer = _mcp(first, tenant.key, "create_customer", name="Via MCP", idempotency_key="c-1")["structuredContent"]
    again = _mcp(second, tenant.key, "create_customer", name="Via MCP", idempotency_key="c-1")["structuredContent"]
    assert again == customer
    assert _mcp(second, tenant.key, "get_customer", customer=customer["id"])["structuredContent"]["name"] == "Via MCP"
    with db.transaction() as session:
        assert session.execute(select(func.count()).select_from(Customer)
                               .where(Customer.account_id == tenant.account_id)).scalar_one() == 1


class _Receiver:
    """A webhook receiver on loopback that records every delivery's `webhook-id`."""

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        received = self.ids = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                received.append(self.headers["webhook-id"])
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()


@postgresql_only
def test_two_workers_deliver_every_webhook_exactly_once(live_server_factory):
    origins = live_server_factory.start_many(2)
    receiver = _Receiver()
    try:
        tenant = make_tenant(None)
        with api(origins[0], tenant.key) as client:
            assert client.post("/webhook-endpoints", json={"url": receiver.url}).status_code == 201
            drafts = _drafts(client, 10)
        live_server_factory.start_worker()
        live_server_factory.start_worker()
        _finalize_all(origins, tenant.key, drafts)
        expected = 20  # invoice.created and invoice.finalized for each of 10 invoices
        deadline = time.monotonic() + 60
        while len(receiver.ids) < expected and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2)  # anything sent twice would arrive by now
        assert len(receiver.ids) == expected
        assert len(set(receiver.ids)) == expected
    finally:
        receiver.close()


@postgresql_only
def test_credit_note_numbers_stay_gapless_when_two_processes_issue_at_once(live_server_pair):
    tenant = make_tenant(None)
    with api(live_server_pair[0], tenant.key) as client:
        [invoice] = _drafts(client, 1)
        assert client.post(f"/invoices/{invoice}/finalize", headers={"Idempotency-Key": "f"}).status_code == 200
    responses: list[httpx.Response] = []
    barrier = threading.Barrier(20)

    def issue(index: int) -> None:
        with api(live_server_pair[index % 2], tenant.key) as client:
            barrier.wait()
            responses.append(client.post("/credit-notes", json={"invoice": invoice, "lines": [
                {"description": f"Goodwill {index}", "amount": 1}]}, headers={"Idempotency-Key": f"cn-{index}"}))

    threads = [threading.Thread(target=issue, args=(index,)) for index in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.status_code for r in responses] == [201] * 20
    assert sorted(r.json()["data"]["number"] for r in responses) == [f"CN-{n:04d}" for n in range(1, 21)]
