"""OpenTelemetry traces of requests (Starlette), database statements (SQLAlchemy) and outbound
HTTP (httpx: webhooks, client metadata documents). A no-op unless the standard variables name an
exporter: `OTEL_TRACES_EXPORTER` (`otlp`, `console`) or `OTEL_EXPORTER_OTLP_ENDPOINT` /
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`. The SDK reads the rest itself (`OTEL_SERVICE_NAME`,
`OTEL_RESOURCE_ATTRIBUTES`, `OTEL_EXPORTER_OTLP_HEADERS`, sampling…)."""

from __future__ import annotations

import logging
import os

from starlette.applications import Starlette

from core.base.db import get_engine

log = logging.getLogger("invoicing.tracing")
_configured = False


def requested() -> bool:
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporters == "none":
        return False
    return bool(exporters or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
                or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def configure(app: Starlette | None = None) -> None:
    """Set up the tracer provider and instrument the libraries once per process, and `app` if given."""
    global _configured
    if not requested():
        return
    if not _configured:
        _configured = True
        _set_provider()
        from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
        from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor

        # The instrumentation declares SQLAlchemy < 2.1 and works with 2.1 (tests/e2e/test_operations.py
        # sees its spans): skip its version check rather than pin SQLAlchemy back.
        SQLAlchemyInstrumentor().instrument(engine=get_engine(), skip_dep_check=True)
        HTTPXClientInstrumentor().instrument()
    if app is not None:
        from opentelemetry.instrumentation.starlette import StarletteInstrumentor

        StarletteInstrumentor.instrument_app(app)


def _set_provider() -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    if not os.environ.get("OTEL_SERVICE_NAME"):
        os.environ["OTEL_SERVICE_NAME"] = "invoicing"
    provider = TracerProvider(resource=Resource.create())
    for name in (os.environ.get("OTEL_TRACES_EXPORTER") or "otlp").lower().split(","):
        name = name.strip()
        if name == "console":
            provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
        elif name == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        elif name:
            log.warning("OTEL_TRACES_EXPORTER names %r, which this service does not ship: ignored", name)
    trace.set_tracer_provider(provider)
    log.info("Tracing on: %s", os.environ.get("OTEL_TRACES_EXPORTER") or "otlp")
