"""The service's Prometheus metrics, recorded only while metrics are on.

Metrics are off unless `INVOICING_METRICS_ALLOW` or `INVOICING_METRICS_TOKEN` names who may read
them; off, every function here returns at once and `prometheus_client` is never imported.
`prometheus_client` chooses between in-memory and multi-process values when it is first imported
(from `PROMETHEUS_MULTIPROC_DIR`): `invoicing serve` and `invoicing worker` set that directory
before anything is recorded (`service.observability.prepare_metrics_dir`), so the processes of one
host write to shared files and any of them answers `/metrics` for all.
"""

from __future__ import annotations

import threading
from functools import cache
from types import SimpleNamespace

from config.settings import get_settings

# Request durations from 5 ms (a cached read) to 10 s (a slow mail server on send).
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_lock = threading.Lock()


def enabled() -> bool:
    return get_settings().metrics_enabled


@cache
def instruments() -> SimpleNamespace:
    """Every metric, created once (on first use: see the module's docstring)."""
    from prometheus_client import Counter, Gauge, Histogram

    return SimpleNamespace(
        http_requests=Counter("invoicing_http_requests", "HTTP requests answered, by route template, method and "
                              "status", ["route", "method", "status"]),
        http_duration=Histogram("invoicing_http_request_duration_seconds", "Time to answer an HTTP request, by "
                                "route template and method", ["route", "method"], buckets=DURATION_BUCKETS),
        tool_calls=Counter("invoicing_mcp_tool_calls", "MCP tool calls, by tool and outcome (ok, or the error "
                           "code)", ["tool", "outcome"]),
        oauth_tokens=Counter("invoicing_oauth_token_requests", "Token endpoint requests, by grant type and "
                             "outcome (issued, or the OAuth error)", ["grant_type", "outcome"]),
        oauth_consents=Counter("invoicing_oauth_consent_decisions", "Consent page answers, by decision",
                               ["decision"]),
        webhook_attempts=Counter("invoicing_webhook_delivery_attempts", "Webhook delivery attempts, by outcome "
                                 "(succeeded, retrying, failed: no retry left)", ["outcome"]),
        emails=Counter("invoicing_emails", "E-mails handed to the mail server, by kind and outcome",
                       ["kind", "outcome"]),
        rate_limited=Counter("invoicing_rate_limit_refusals", "Requests refused by a rate limit, by limit",
                             ["limit"]),
        schedule_runs=Counter("invoicing_schedule_runs", "Periods of invoice schedules run, by outcome (made, "
                              "failed)", ["outcome"]),
        schedule_lag=Histogram("invoicing_schedule_run_lag_seconds", "How late a schedule's period was made after "
                               "its run time", buckets=(1, 5, 15, 60, 300, 900, 3600, 21600, 86400)),
        schedule_emails=Counter("invoicing_schedule_emails", "E-mails of schedule runs, by outcome (sent, pending: "
                                "deferred by a cap or retried, failed)", ["outcome"]),
        db_in_use=Gauge("invoicing_db_connections_in_use", "Database connections checked out of the pools",
                        multiprocess_mode="livesum"),
    )


def _record(action) -> None:
    if not enabled():
        return
    with _lock:  # the first use creates the instruments; prometheus_client is thread-safe after
        metrics = instruments()
    action(metrics)


def http_request(route: str, method: str, status: int, seconds: float) -> None:
    def action(m):
        m.http_requests.labels(route, method, str(status)).inc()
        m.http_duration.labels(route, method).observe(seconds)
    _record(action)


def tool_call(tool: str, outcome: str) -> None:
    _record(lambda m: m.tool_calls.labels(tool, outcome).inc())


def oauth_token(grant_type: str, outcome: str) -> None:
    _record(lambda m: m.oauth_tokens.labels(grant_type, outcome).inc())


def oauth_consent(decision: str) -> None:
    _record(lambda m: m.oauth_consents.labels(decision).inc())


def webhook_attempt(outcome: str) -> None:
    _record(lambda m: m.webhook_attempts.labels(outcome).inc())


def email(kind: str, outcome: str) -> None:
    _record(lambda m: m.emails.labels(kind, outcome).inc())


def rate_limited(limit: str) -> None:
    _record(lambda m: m.rate_limited.labels(limit).inc())


def db_connection(change: int) -> None:
    _record(lambda m: m.db_in_use.inc(change))


def schedule_run(outcome: str, lag_seconds: float | None) -> None:
    def action(m):
        m.schedule_runs.labels(outcome).inc()
        if lag_seconds is not None:
            m.schedule_lag.observe(max(0.0, lag_seconds))
    _record(action)


def schedule_email(outcome: str) -> None:
    _record(lambda m: m.schedule_emails.labels(outcome).inc())
