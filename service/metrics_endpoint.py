"""`/metrics` in Prometheus's text format, for the readers INVOICING_METRICS_ALLOW (addresses or
networks) and INVOICING_METRICS_TOKEN (a bearer token) name; 404 while metrics are off.

It shows what every process of this host recorded (core.base.metrics, multi-process mode when
`invoicing serve` or `worker` prepared the directory), and what the database says at the moment of
the scrape: the webhook backlog, its oldest pending delivery, each worker's last success, and the
schedules' runs due, their lag and the e-mails waiting.
"""

from __future__ import annotations

import ipaddress
import logging
import os

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from sqlalchemy import func
from sqlmodel import Session, select
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from config.settings import get_settings
from core.base import crypto, metrics
from core.base.clock import now
from core.base.db import get_engine
from core.models import InvoiceSchedule, ScheduleRun, WebhookDelivery, WebhookEndpoint, WorkerHeartbeat

log = logging.getLogger("invoicing.metrics")


def allowed(request: Request) -> bool:
    settings = get_settings()
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if settings.metrics_token and scheme.lower() == "bearer" and crypto.same(token.strip(), settings.metrics_token):
        return True
    client = request.client.host if request.client else ""
    try:
        address = ipaddress.ip_address(client)
    except ValueError:
        return False
    return any(address in ipaddress.ip_network(network.strip(), strict=False)
               for network in settings.metrics_allow.split(",") if network.strip())


class DatabaseNow:
    """Gauges read from the database at each scrape (shared by every process and host)."""

    def collect(self):
        up = GaugeMetricFamily("invoicing_database_up", "1 when the database answered this scrape")
        try:
            with Session(get_engine()) as session:
                pending = (select(func.count(), func.min(WebhookDelivery.created_at))
                           .join(WebhookEndpoint, WebhookEndpoint.id == WebhookDelivery.endpoint_id)
                           .where(WebhookDelivery.status == "pending", WebhookEndpoint.active.is_(True)))
                count, oldest = session.exec(pending).one()
                beats = session.exec(select(WorkerHeartbeat)).all()
                due, oldest_due = session.exec(select(func.count(), func.min(InvoiceSchedule.next_run_at)).where(
                    InvoiceSchedule.status == "active", InvoiceSchedule.next_run_at <= now())).one()
                emails_waiting = session.exec(select(func.count()).select_from(ScheduleRun).where(
                    ScheduleRun.email_status == "pending")).one()
        except Exception as exc:  # a scrape never fails because the database does
            log.warning("metrics: database unavailable: %s", exc.__class__.__name__)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        moment = now()
        yield GaugeMetricFamily("invoicing_webhook_backlog", "Webhook deliveries waiting (pending, to active "
                                "endpoints)", value=count)
        yield GaugeMetricFamily("invoicing_webhook_oldest_pending_age_seconds", "Age of the oldest pending "
                                "webhook delivery (0 when none)",
                                value=(moment - oldest).total_seconds() if oldest else 0)
        yield GaugeMetricFamily("invoicing_schedules_due", "Schedules whose next run's time has come (made within "
                                "seconds by a running worker)", value=due)
        yield GaugeMetricFamily("invoicing_schedule_lag_seconds", "How long the longest-waiting due schedule run has "
                                "waited (0 when none)", value=(moment - oldest_due).total_seconds() if oldest_due else 0)
        yield GaugeMetricFamily("invoicing_schedule_emails_waiting", "Schedule runs' e-mails waiting to go (pending, "
                                "also deferred by an hourly cap)", value=emails_waiting)
        ages = GaugeMetricFamily("invoicing_worker_last_success_age_seconds", "Seconds since each background "
                                 "worker last ran its jobs without a failure", labels=["worker"])
        for beat in beats:
            ages.add_metric([beat.worker_id], (moment - beat.last_success_at).total_seconds())
        yield ages


def exposition() -> bytes:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        recorded = CollectorRegistry()
        MultiProcessCollector(recorded)
    else:
        metrics.instruments()  # listed from the first scrape, before anything is counted
        recorded = REGISTRY
    database = CollectorRegistry()
    database.register(DatabaseNow())
    return generate_latest(recorded) + generate_latest(database)


async def metrics_page(request: Request) -> Response:
    settings = get_settings()
    if not settings.metrics_enabled:
        return PlainTextResponse("Not Found", status_code=404)
    if not allowed(request):
        headers = {"WWW-Authenticate": 'Bearer realm="metrics"'} if settings.metrics_token else {}
        return PlainTextResponse("Metrics are not open to this client.", status_code=401 if headers else 403,
                                 headers=headers)
    body = await run_in_threadpool(exposition)
    return Response(body, media_type=CONTENT_TYPE_LATEST, headers={"Cache-Control": "no-store"})


def routes() -> list[Route]:
    return [Route("/metrics", metrics_page, methods=["GET"])]
