"""Health, readiness, metrics and the request id, in-process (tests/e2e/test_operations.py runs
them across real processes)."""

from __future__ import annotations

import contextvars
import json
import logging
from datetime import timedelta

import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import create_engine, text

from config.settings import get_settings
from core.base import context, ids, metrics
from core.base.clock import now
from core.base.db import transaction
from core.models import InvoiceSchedule, WorkerHeartbeat
from service import health, observability, worker
from tests.api.invoicing import add_webhook_endpoint, customer, draft, stored_events
from tests.mcp import jsonrpc
from tests.oauth_flow import obtain, refresh, register
from tests.web.conftest import Browser

SCRAPE_TOKEN = "scrape-token-for-tests"


@pytest.fixture
def metrics_on(monkeypatch):
    monkeypatch.setattr(get_settings(), "metrics_token", SCRAPE_TOKEN)


def scrape(client) -> dict[tuple[str, tuple], float]:
    """Every sample of /metrics as {(name, sorted labels): value}, read by prometheus_client's parser."""
    response = client.get("/metrics", headers={"Authorization": f"Bearer {SCRAPE_TOKEN}"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(response.text) for sample in family.samples}


def value(samples, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


# --- health and readiness ------------------------------------------------------------------------

def test_healthz_answers_without_a_credential_and_is_never_cached(client):
    response = client.get("/healthz")
    assert (response.status_code, response.json()) == (200, {"status": "ok"})
    assert response.headers["cache-control"] == "no-store"


def test_readyz_checks_the_database_and_its_schema(client):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ready", "checks": {"database": "ok", "migrations": "ok", "schedules": "ok"}}
    assert response.headers["cache-control"] == "no-store"


def _schedule_due_since(tenant, minutes: int):
    body = {"customer": customer(tenant)["id"], "invoice": {"items": [{"description": "Retainer", "unit_amount": 100}]},
            "recurrence": {"interval": "month", "start_date": "2030-01-01"}}
    created = tenant.post("/invoice-schedules", json=body, idem=True).json()["data"]
    with transaction() as session:
        schedule = session.get(InvoiceSchedule, ids.parse("invoice_schedule", created["id"]))
        schedule.next_run_at = now() - timedelta(minutes=minutes)
        session.add(schedule)


def test_readyz_is_not_ready_when_schedule_runs_fall_behind_and_no_worker_runs(client, tenant):
    _schedule_due_since(tenant, 2)
    assert client.get("/readyz").status_code == 200  # due, a worker's next pass makes it
    _schedule_due_since(tenant, 11)
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["schedules"].startswith("1 schedule run(s) behind")
    worker.beat("elsewhere:1")  # a worker working through a backlog (a schedule resumed after a year)
    assert client.get("/readyz").status_code == 200


def test_schedule_runs_due_are_read_from_the_database(client, tenant, metrics_on):
    _schedule_due_since(tenant, 3)
    samples = scrape(client)
    assert value(samples, "invoicing_schedules_due") == 1
    assert value(samples, "invoicing_schedule_lag_seconds") >= 180
    assert value(samples, "invoicing_schedule_emails_waiting") == 0


def test_readyz_is_not_ready_while_the_database_is_unreachable_and_ready_after(client, monkeypatch):
    unreachable = create_engine("postgresql+psycopg://nobody@127.0.0.1:9/none", connect_args={"connect_timeout": 2})
    real = health.get_engine
    monkeypatch.setattr(health, "get_engine", lambda: unreachable)
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["database"].startswith("unavailable")
    monkeypatch.setattr(health, "get_engine", real)
    assert client.get("/readyz").status_code == 200


def _head_and_previous() -> tuple[str, str]:
    head = health._known_revisions()[0]
    return head, f"{int(head) - 1:04d}"


@pytest.mark.parametrize(("revision", "ready"), [("head", True), ("9999", True), ("previous", False), (None, False)])
def test_the_schema_must_be_this_codes_or_newer(revision, ready):
    head, previous = _head_and_previous()
    revision = {"head": head, "previous": previous}.get(revision, revision)
    assert (health.check_schema(revision) is None) is ready


def test_readyz_waits_for_the_in_process_workers_first_success(client, monkeypatch):
    monkeypatch.setenv(health.IN_PROCESS_WORKER, "host-a:123")
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["worker"] == "no successful run yet"
    worker.beat("host-a:123")
    assert client.get("/readyz").json()["checks"]["worker"] == "ok"


def test_readyz_is_not_ready_when_the_worker_stopped_succeeding(client, monkeypatch):
    monkeypatch.setenv(health.IN_PROCESS_WORKER, "host-b:456")
    with transaction() as session:
        session.add(WorkerHeartbeat(worker_id="host-b:456", last_success_at=now() - timedelta(minutes=5)))
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["worker"].startswith("no successful run since")


def test_probes_are_outside_the_rate_limit(client, monkeypatch):
    monkeypatch.setattr(get_settings(), "rate_limit_requests", 1)
    assert all(client.get("/readyz").status_code == 200 for _ in range(5))


# --- metrics ----------------------------------------------------------------------------------------

def test_metrics_are_off_by_default(client):
    assert client.get("/metrics").status_code == 404


def test_metrics_need_the_token(client, metrics_on):
    refused = client.get("/metrics")
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == 'Bearer realm="metrics"'
    assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401


def test_metrics_refuse_an_address_not_listed(client, monkeypatch):
    monkeypatch.setattr(get_settings(), "metrics_allow", "10.0.0.0/8")
    assert client.get("/metrics").status_code == 403


def test_a_request_is_counted_by_route_template(client, tenant, metrics_on):
    invoice = draft(tenant)
    before = scrape(client)
    assert tenant.get(f"/invoices/{invoice['id']}").status_code == 200
    assert tenant.get("/invoices/in_nope").status_code == 404
    after = scrape(client)
    labels = {"route": "/api/v1/invoices/{id}", "method": "GET"}
    assert value(after, "invoicing_http_requests_total", **labels, status="200") - \
        value(before, "invoicing_http_requests_total", **labels, status="200") == 1
    assert value(after, "invoicing_http_requests_total", **labels, status="404") - \
        value(before, "invoicing_http_requests_total", **labels, status="404") == 1
    assert value(after, "invoicing_http_request_duration_seconds_count", **labels) - \
        value(before, "invoicing_http_request_duration_seconds_count", **labels) == 2


def test_an_unknown_path_is_one_label_not_one_per_path(client, metrics_on):
    before = scrape(client)
    client.get("/no/such/page-1")
    client.get("/no/such/page-2")
    after = scrape(client)
    labels = {"route": "unmatched", "method": "GET", "status": "404"}
    assert value(after, "invoicing_http_requests_total", **labels) - \
        value(before, "invoicing_http_requests_total", **labels) == 2


def test_static_files_are_one_label(client, metrics_on):
    before = scrape(client)
    client.get("/static/app.css")
    client.get("/static/pico.min.css")
    after = scrape(client)
    labels = {"route": "/static/{path}", "method": "GET", "status": "200"}
    assert value(after, "invoicing_http_requests_total", **labels) - \
        value(before, "invoicing_http_requests_total", **labels) == 2


def test_a_tool_call_is_counted_by_tool_and_outcome(client, tenant, metrics_on):
    before = scrape(client)
    jsonrpc.structured(client, tenant.key, "get_business")
    jsonrpc.call(client, tenant.key, "get_invoice", invoice="in_nope")
    after = scrape(client)
    for tool, outcome in (("get_business", "ok"), ("get_invoice", "not_found")):
        assert value(after, "invoicing_mcp_tool_calls_total", tool=tool, outcome=outcome) - \
            value(before, "invoicing_mcp_tool_calls_total", tool=tool, outcome=outcome) == 1


def test_the_webhook_backlog_is_read_from_the_database(client, tenant, metrics_on):
    add_webhook_endpoint(tenant.account_id)
    draft(tenant)
    samples = scrape(client)
    assert value(samples, "invoicing_webhook_backlog") == 1
    assert value(samples, "invoicing_webhook_oldest_pending_age_seconds") >= 0
    assert value(samples, "invoicing_database_up") == 1


def test_rate_limit_refusals_and_e_mails_are_counted(client, tenant, metrics_on, monkeypatch):
    invoice = draft(tenant)
    before = scrape(client)
    tenant.post(f"/invoices/{invoice['id']}/send", idem=True)
    monkeypatch.setattr(get_settings(), "rate_limit_requests", 1)
    tenant.get("/customers")
    tenant.get("/customers")
    after = scrape(client)
    assert value(after, "invoicing_emails_total", kind="invoice", outcome="sent") - \
        value(before, "invoicing_emails_total", kind="invoice", outcome="sent") == 1
    assert value(after, "invoicing_rate_limit_refusals_total", limit="api") > \
        value(before, "invoicing_rate_limit_refusals_total", limit="api")


def delta(before, after, name: str, **labels) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def test_oauth_grants_refusals_and_consents_are_counted(client, browser, metrics_on):
    before = scrape(client)
    app = register(client, token_endpoint_auth_method="none")
    obtain(client, app)
    assert refresh(client, app["client_id"], "not-a-refresh-token").json()["error"] == "invalid_grant"
    after = scrape(client)
    tokens = "invoicing_oauth_token_requests_total"
    assert delta(before, after, tokens, grant_type="authorization_code", outcome="issued") == 1
    assert delta(before, after, tokens, grant_type="refresh_token", outcome="invalid_grant") == 1
    assert delta(before, after, "invoicing_oauth_consent_decisions_total", decision="allowed") == 1


def test_throttled_sign_ins_are_counted(client, metrics_on, monkeypatch):
    monkeypatch.setattr(get_settings(), "rate_limit_sign_in", 1)  # an account's budget 1, an address's 5
    before = scrape(client)
    for _ in range(6):
        Browser(client).sign_in("nobody@example.com", "wrong password")
    after = scrape(client)
    assert delta(before, after, "invoicing_rate_limit_refusals_total", limit="sign_in_code") == 4
    assert delta(before, after, "invoicing_rate_limit_refusals_total", limit="sign_in") == 1


def test_connections_in_use_are_counted(metrics_on):
    def in_use() -> float:
        return REGISTRY.get_sample_value("invoicing_db_connections_in_use") or 0.0
    metrics.instruments()
    before = in_use()
    with transaction() as session:
        session.execute(text("SELECT 1"))
        assert in_use() == before + 1
    assert in_use() == before


# --- the request id joins the logs ----------------------------------------------------------------

def test_every_response_carries_a_request_id(client):
    for path in ("/healthz", "/login", "/.well-known/oauth-authorization-server", "/no/such/page"):
        assert client.get(path).headers["x-request-id"].startswith("req_"), path


def test_the_events_of_a_request_carry_its_id(tenant):
    response = tenant.post("/customers", json={"name": "Ada"})
    invoice = tenant.post("/invoices", json={"customer": response.json()["data"]["id"]}, idem=True,
                          headers={"X-Request-Id": "trace-from-client-7"})
    assert invoice.headers["x-request-id"] == "trace-from-client-7"
    (created,) = stored_events(tenant.account_id)
    assert created.meta["request_id"] == "trace-from-client-7"


def test_a_tool_calls_events_carry_the_http_requests_id(client, tenant):
    customer = jsonrpc.structured(client, tenant.key, "create_customer", name="Ada")
    response = jsonrpc.post(client, "tools/call", {"name": "create_invoice", "arguments": {"customer": customer["id"]}},
                            key=tenant.key)
    (created,) = stored_events(tenant.account_id)
    assert created.meta["request_id"] == response.headers["x-request-id"]


def test_json_log_lines_carry_the_request_and_the_caller():
    contextvars.copy_context().run(_log_a_line_in_a_request)  # leaves this thread's context as it was


def test_a_json_log_line_keeps_text_orjson_refuses():
    record = logging.LogRecord("invoicing", logging.WARNING, __file__, 1, "odd %s", ("\ud800",), None)
    assert json.loads(observability.JsonLines().format(record))["message"] == "odd \ud800"


def _log_a_line_in_a_request():
    request = context.begin("req_abc")
    context.note_caller("acc-1", "api_key:key-1")
    record = logging.LogRecord("invoicing.access", logging.INFO, __file__, 1, "GET %s", ("/x",), None)
    record.status = 200
    line = json.loads(observability.JsonLines().format(record))
    assert line["message"] == "GET /x" and line["status"] == 200 and line["level"] == "info"
    assert (line["request_id"], line["account_id"], line["credential_id"]) == ("req_abc", "acc-1", "api_key:key-1")
    assert request.account_id == "acc-1"


def test_a_stateless_mcp_call_logs_its_access_line_and_not_the_sdks_session_lines():
    from service.observability import log_config
    loggers = log_config("INFO")["loggers"]
    assert loggers["mcp.server.streamable_http"]["level"] == "WARNING"  # "Terminating session" on every call
    assert "invoicing" not in loggers  # our access lines keep the root's level
    assert "mcp.server.streamable_http" not in log_config("DEBUG")["loggers"]  # while debugging, everything
