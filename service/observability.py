"""What an operator sees of each process: log lines (text or JSON), one access line and the HTTP
metrics per request, and the request id that joins REST, MCP and webhook logs.

`RequestObservation` wraps the whole application: it gives every request an id (the client's
`X-Request-Id` when acceptable, else a new one, returned in `X-Request-Id`), opens the request
context the surfaces and the pipeline fill in (core.base.context), and when the answer is sent
records the route template, status and duration. It logs the route template, never the path or
the query string, which may hold a public link's token or an OAuth code.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import orjson
from starlette.routing import Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from config.settings import get_settings
from core.base import context, metrics

access_log = logging.getLogger("invoicing.access")
# Probes and scrapes come every few seconds: counted in the metrics, not logged.
UNLOGGED_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
# Fields a log record may carry (`extra=`) that JSON lines keep; anything else stays out.
REQUEST_ID = "invoicing.request_id"  # in a request's scope: the id it was given
FIELDS = ("route", "method", "status", "duration_ms", "event_id", "endpoint_id", "attempt", "outcome", "job")


def route_template(scope: Scope) -> str:
    """The matched route with its parameters as names (`/api/v1/invoices/{id}`), or `unmatched`."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if path is None:
        return "unmatched"
    prefix = scope.get("root_path", "")[len(scope.get("app_root_path", "")):]
    if isinstance(route, Mount):  # matched no deeper: its own path is in the prefix already
        return prefix + "/{path}"
    return prefix + path


class RequestObservation:
    """`name_spans`: when tracing is on, the request's span is named after the route template
    (the Starlette instrumentation names it after the outermost mount, `GET /api/v1`)."""

    def __init__(self, app: ASGIApp, *, name_spans: bool = False) -> None:
        self.app = app
        self.name_spans = name_spans

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = begin(scope)
        started = time.perf_counter()
        status, route = 500, ""  # if the application fails before answering

        async def send_with_id(message: Message) -> None:
            nonlocal status, route
            if message["type"] == "http.response.start":
                status, route = message["status"], route_template(scope)  # routed by now
                if self.name_spans:  # before the body: the tracing middleware ends the span with it
                    _name_span(f"{scope['method']} {route}", route)
                message = with_request_id(message, request.request_id)
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            finish(scope, route or route_template(scope), status, started)


def with_request_id(start: Message, request_id: str) -> Message:
    """A response's start with the request's id among its headers, unless the answer gave one."""
    headers = list(start.get("headers", []))
    if not any(name.lower() == b"x-request-id" for name, _ in headers):
        headers.append((b"x-request-id", request_id.encode()))
    return {**start, "headers": headers}


def begin(scope: Scope) -> context.RequestContext:
    """Open the request's context with its id: the client's X-Request-Id when acceptable, else a new one;
    the id it was given already when `service.direct` had the request before the stack."""
    if REQUEST_ID not in scope:
        supplied = _header(scope, b"x-request-id")
        scope[REQUEST_ID] = supplied if context.acceptable_request_id(supplied) else context.new_request_id()
    return context.begin(scope[REQUEST_ID])


def finish(scope: Scope, route: str, status: int, started: float) -> None:
    """The request's metrics and its access line (by route template, never the path)."""
    seconds = time.perf_counter() - started
    metrics.http_request(route, scope["method"], status, seconds)
    if scope["path"] not in UNLOGGED_PATHS and access_log.isEnabledFor(logging.INFO):
        # Made and handled as `Logger.info` would, without its look-up of the calling frame: one
        # line per request, whose caller is always this one.
        method, milliseconds = scope["method"], seconds * 1000
        access_log.handle(access_log.makeRecord(
            access_log.name, logging.INFO, __file__, 0, "%s %s %d %.1f ms", (method, route, status, milliseconds),
            None, "finish", {"route": route, "method": method, "status": status,
                             "duration_ms": round(milliseconds, 1)}))


def _name_span(name: str, route: str) -> None:
    from opentelemetry import trace

    span = trace.get_current_span()
    if span.is_recording():
        span.update_name(name)
        span.set_attribute("http.route", route)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


# --- log lines ----------------------------------------------------------------------------------


class JsonLines(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the request's id and caller, and the
    known fields a record carries."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(), "logger": record.name, "message": record.getMessage(),
            "pid": record.process,
        }
        request = context.current()
        request_id = getattr(record, "request_id", None) or (request.request_id if request else None)
        if request_id:
            line["request_id"] = request_id
        if request is not None and request.account_id:
            line["account_id"], line["credential_id"] = request.account_id, request.credential_id
        attributes = record.__dict__
        line.update({name: attributes[name] for name in FIELDS if name in attributes})
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        try:
            return orjson.dumps(line, default=str).decode()
        except orjson.JSONEncodeError:  # text orjson refuses (a lone surrogate): the json module escapes it
            return json.dumps(line, default=str)


class TextLines(logging.Formatter):
    """Lines for people, with the request id when there is one."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        request = context.current()
        request_id = getattr(record, "request_id", None) or (request.request_id if request else None)
        return f"{text} [{request_id}]" if request_id else text


def chosen_formatter() -> logging.Formatter:
    """The format INVOICING_LOG_FORMAT asks for: `auto` is text on a terminal, JSON otherwise."""
    chosen = get_settings().log_format
    as_json = chosen == "json" or (chosen == "auto" and not sys.stderr.isatty())
    return JsonLines() if as_json else TextLines()


def log_config(level: str, *, quiet_migrations: bool = True) -> dict:
    """A logging configuration (dictConfig) for a command; uvicorn applies it in each of its
    processes, so every process writes the same lines to stderr. uvicorn's own access lines are
    replaced by `invoicing.access`."""
    return {
        "version": 1, "disable_existing_loggers": False,
        "formatters": {"invoicing": {"()": "service.observability.chosen_formatter"}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "invoicing",
                                "stream": "ext://sys.stderr"}},
        "root": {"handlers": ["stderr"], "level": level},
        "loggers": {
            "uvicorn": {"handlers": [], "propagate": True, "level": level},
            "uvicorn.error": {"handlers": [], "propagate": True, "level": level},
            "uvicorn.access": {"handlers": [], "propagate": False, "level": "WARNING"},
            **({"alembic": {"level": "WARNING"}} if quiet_migrations else {}),
            # The SDK's transport says "Terminating session" at INFO for every stateless MCP request:
            # a line per call beside our access line (kept while debugging).
            **({"mcp.server.streamable_http": {"level": "WARNING"}} if level.upper() != "DEBUG" else {}),
        },
    }


# --- metrics across processes ---------------------------------------------------------------------


def prepare_metrics_dir() -> None:
    """Before anything is recorded: the directory where this host's processes share their metrics
    (prometheus_client's multi-process mode), without the files of processes that have ended."""
    if not get_settings().metrics_enabled:
        return
    directory = get_settings().metrics_directory
    directory.mkdir(parents=True, exist_ok=True)
    for file in directory.glob("*.db"):
        pid = file.stem.rsplit("_", 1)[-1]
        if pid.isdigit() and not _alive(int(pid)):
            file.unlink(missing_ok=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(directory)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def forget_this_process() -> None:
    """At exit: this process's live gauges (connections in use) stop counting."""
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory and Path(directory).is_dir():
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(os.getpid(), directory)
