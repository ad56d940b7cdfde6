"""Tool calls run as tasks: the MCP extension `io.modelcontextprotocol/tasks` (SEP-2663, 2026-07-28).

A client that declares the extension on a `tools/call` of a tool whose work can be long
(`TASK_TOOLS`) gets a task handle at once (`resultType: "task"`) and follows it with `tasks/get`
(the result inlined once done), answers its questions with `tasks/update`, and stops it with
`tasks/cancel`. Any other client gets the tool's result in the call's own answer, as before.

The task's state is a row (`mcp_tasks`), written before the handle is answered, so whichever process
a later request reaches answers it. The process that accepted the call runs it on its event loop and
beats (`heartbeat_at`) while it does; a task whose runner stopped beating (the process died) is
failed by whoever reads it next, saying so. A task belongs to the credential that created it: any
other asks about an unknown task. Tasks are kept for `TTL` from their creation.

A question inside a task (the person confirming a bulk send) is an `elicitation/create` input
request under `inputRequests`, each key used once in the task's life; `tasks/update` delivers the
answer, which the runner reads from the row. Cancelling is cooperative: the runner looks between
items, stops there, and the task's `statusMessage` says what was done.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import func
from sqlmodel import select
from starlette.concurrency import run_in_threadpool

from core.access.principal import Principal
from core.base import executor
from core.base.clock import now
from core.base.db import new_session, transaction
from core.mechanisms import change_feed, progress
from core.models import McpTask
from mcp_server.clients import binding
from mcp_server.codes import RATE_LIMITED
from mcp_server.confirmations import is_modern, principal_of
from operations.confirmations import Question, confirmed

log = logging.getLogger("invoicing.mcp.tasks")

EXTENSION = "io.modelcontextprotocol/tasks"
TASK_TOOLS = ("export_e_invoices", "send_invoices", "send_reminders")
TTL = timedelta(hours=24)
POLL_INTERVAL_MS = 3000  # each tasks/get counts against the credential's request limit (120 a minute)
BEAT_EVERY = timedelta(seconds=5)
RUNNER_GONE_AFTER = timedelta(seconds=30)
ANSWER_POLL_SECONDS = 0.5
ANSWER_WAIT = timedelta(minutes=10)  # as long as a single tool's question: then the person did not answer
MAX_UNFINISHED = 5  # tasks working or waiting per credential
MESSAGE_MAX = 2000  # the status message column
TERMINAL = ("completed", "failed", "cancelled")
RUNNER_GONE = ("The server process running this task stopped before it finished; what was done before is kept "
               "(look at the invoices' history before running it again).")
_running: set[asyncio.Task] = set()  # strong references to this process's runners
_running_ids: set[str] = set()  # the tasks this process is running now (never settled as abandoned here)


class Cancelled(progress.Stopped):
    """The task was cancelled: raised at the next check between items."""


def negotiated(ctx: ServerRequestContext) -> bool:
    """Whether this request declares the extension (per request: the 2026-07-28 envelope)."""
    if not is_modern(ctx):
        return False
    capabilities = ctx.session.client_capabilities
    extensions = getattr(capabilities, "extensions", None) if capabilities is not None else None
    return isinstance(extensions, dict) and EXTENSION in extensions


def require_negotiated(ctx: ServerRequestContext) -> None:
    if not negotiated(ctx):
        raise MCPError(MISSING_REQUIRED_CLIENT_CAPABILITY, f"This method needs the client capability {EXTENSION}.",
                       data={"requiredCapabilities": {"extensions": {EXTENSION: {}}}})


# --- what a client sees ----------------------------------------------------------------------------

def _stamp(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _envelope(row: McpTask) -> dict[str, Any]:
    task: dict[str, Any] = {"taskId": row.id, "status": row.status, "createdAt": _stamp(row.created_at),
                            "lastUpdatedAt": _stamp(row.updated_at), "ttlMs": int(TTL.total_seconds() * 1000),
                            "pollIntervalMs": POLL_INTERVAL_MS}
    if row.status_message:
        task["statusMessage"] = row.status_message
    return task


def detailed(row: McpTask) -> dict[str, Any]:
    """The task as `tasks/get` answers it: its status with what goes with it."""
    task = _envelope(row)
    if row.status == "input_required":
        task["inputRequests"] = row.input_requests or {}
    elif row.status == "completed":
        task["result"] = row.result or {}
    elif row.status == "failed":
        task["error"] = row.error or {"code": INTERNAL_ERROR, "message": "Internal error"}
    return task


# --- the rows --------------------------------------------------------------------------------------

def _this_process() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _create(principal: Principal, tool: str, arguments: dict) -> McpTask:
    owner = binding(principal)
    with transaction() as session:
        moment = now()
        unfinished = session.exec(select(func.count()).select_from(McpTask).where(
            McpTask.binding == owner, McpTask.status.in_(("working", "input_required")),
            McpTask.expires_at > moment, McpTask.heartbeat_at > moment - RUNNER_GONE_AFTER)).one()
        if unfinished >= MAX_UNFINISHED:
            raise MCPError(RATE_LIMITED, f"At most {MAX_UNFINISHED} tasks may run at once per credential: wait for one "
                                         "to finish, or cancel one.", data={"code": "rate_limited",
                                                                            "limit": MAX_UNFINISHED})
        row = McpTask(id=f"task_{secrets.token_urlsafe(24)}", account_id=principal.account_id,
                      binding=owner, tool=tool, arguments=arguments, status="working",
                      status_message="Starting.", runner=_this_process(), heartbeat_at=moment, created_at=moment,
                      updated_at=moment, expires_at=moment + TTL)
        session.add(row)
    return row


def _find(session, task_id: str, owner: str, *, lock: bool = False) -> McpTask:
    """The live task `task_id` of the credential `owner`; an unknown, foreign or expired one is -32602."""
    row = session.get(McpTask, task_id, with_for_update=lock) if isinstance(task_id, str) and len(task_id) <= 64 else None
    if row is None or row.binding != owner or row.expires_at <= now():
        raise MCPError(INVALID_PARAMS, "Unknown task: no task of this connection has that id.",
                       data={"taskId": str(task_id)[:100]})
    return row


URI_SCHEME = "task"


def uri(task_id: str) -> str:
    """How the change feed names a task (its status notifications follow it)."""
    return f"{URI_SCHEME}://{task_id}"


def _announce(session, row: McpTask) -> None:
    """Tell the listen streams following `row` that its status changed (at the transaction's commit)."""
    executor.within(session, change_feed.note, row.account_id, uri(row.id), "task.status")


def _abandoned(row: McpTask) -> bool:
    """Whether the runner of the unfinished `row` stopped beating (never one this process runs now)."""
    if row.status in TERMINAL or row.heartbeat_at is None or now() - row.heartbeat_at < RUNNER_GONE_AFTER:
        return False
    return not (row.runner == _this_process() and row.id in _running_ids)


def _settle_if_abandoned(row: McpTask) -> None:
    """A task whose runner stopped beating is failed (or, when cancelling, cancelled) now."""
    if not _abandoned(row):
        return
    if row.cancel_requested:
        row.status, row.status_message = "cancelled", f"Cancelled. {row.status_message or ''}".strip()
    else:
        row.status, row.status_message = "failed", RUNNER_GONE
        row.error = {"code": INTERNAL_ERROR, "message": RUNNER_GONE}
    row.input_requests, row.updated_at = None, now()


def read(task_id: str, owner: str) -> dict[str, Any]:
    """The task as `tasks/get` answers it: read without a lock, unless it must be settled as abandoned."""
    session = new_session(read_only=True)
    try:
        row = _find(session, task_id, owner)
        if not _abandoned(row):
            return detailed(row)
    finally:
        session.close()
    with transaction() as session:
        row = _find(session, task_id, owner, lock=True)
        before = row.status
        _settle_if_abandoned(row)
        if row.status != before:
            _announce(session, row)
        session.add(row)
        return detailed(row)


def own_tasks(task_ids: list[str], owner: str) -> list[str]:
    """Of `task_ids`, those of the credential `owner` still kept (a listen stream may follow them)."""
    session = new_session(read_only=True)
    try:
        own = []
        for task_id in dict.fromkeys(task_ids):
            row = session.get(McpTask, task_id) if isinstance(task_id, str) and len(task_id) <= 64 else None
            if row is not None and row.binding == owner and row.expires_at > now():
                own.append(task_id)
        return own
    finally:
        session.close()


def state_of(task_id: str) -> dict[str, Any] | None:
    """The task as `tasks/get` shows it, for a status notification (the stream checked whose it is)."""
    session = new_session(read_only=True)
    try:
        row = session.get(McpTask, task_id)
        return detailed(row) if row is not None else None
    finally:
        session.close()


def deliver(task_id: str, owner: str, responses: dict) -> None:
    """Keep the answers to outstanding input requests (others are ignored); the task works again once
    none is outstanding."""
    with transaction() as session:
        row = _find(session, task_id, owner, lock=True)
        outstanding = dict(row.input_requests or {})
        answered = {key: value for key, value in responses.items() if key in outstanding and isinstance(value, dict)}
        if not answered or row.status != "input_required":
            return
        for key in answered:
            outstanding.pop(key)
        row.input_responses = {**(row.input_responses or {}), **answered}
        row.input_requests = outstanding or None
        if not outstanding:
            row.status, row.status_message = "working", "Answer received."
            _announce(session, row)
        row.updated_at = now()
        session.add(row)


def request_cancel(task_id: str, owner: str) -> None:
    with transaction() as session:
        row = _find(session, task_id, owner, lock=True)
        if row.status in TERMINAL:
            return
        row.cancel_requested, row.updated_at = True, now()
        before = row.status
        _settle_if_abandoned(row)
        if row.status != before:
            _announce(session, row)
        session.add(row)


def _update(task_id: str, **fields: Any) -> McpTask | None:
    """Write the runner's news (and its heartbeat); the row as it is now (None: purged)."""
    if isinstance(fields.get("status_message"), str):
        fields["status_message"] = fields["status_message"][:MESSAGE_MAX]
    with transaction() as session:
        row = session.get(McpTask, task_id, with_for_update=True)
        if row is None:
            return None
        if row.status not in TERMINAL:
            before = row.status
            for name, value in fields.items():
                setattr(row, name, value)
            row.heartbeat_at = row.updated_at = now()
            if row.status != before:
                _announce(session, row)
            session.add(row)
        session.flush()
        session.expunge(row)
        return row


# --- running one -----------------------------------------------------------------------------------

class TaskRun:
    """What a task's work uses: say how far it got (and stop there when cancelled), and ask the person."""

    def __init__(self, task_id: str, can_ask: bool) -> None:
        self.task_id, self.can_ask = task_id, can_ask
        self.done_so_far = ""  # what was done, for the status message of a task cancelled midway
        self._questions = 0

    def checkpoint(self, done: int, total: int, message: str) -> None:
        """Between items (in a worker thread): beat, report, and raise Cancelled when asked to stop."""
        row = _update(self.task_id, status_message=f"{done} of {total}: {message}")
        if _stopping(row):
            raise Cancelled(self.done_so_far)

    async def between(self, done: int, total: int, message: str) -> None:
        await run_in_threadpool(self.checkpoint, done, total, message)

    async def ask(self, question: Question) -> tuple[bool, str]:
        """Put `question` to the person through the task and wait for the answer: (approved, action)."""
        self._questions += 1
        key = f"confirm-{self._questions}"
        request = {"method": "elicitation/create", "params": {
            "mode": "form", "message": question.message, "requestedSchema": question.requested_schema}}
        await run_in_threadpool(_update, self.task_id, status="input_required", input_requests={key: request},
                                status_message="Waiting for the person to confirm.")
        deadline = anyio.current_time() + ANSWER_WAIT.total_seconds()
        while anyio.current_time() < deadline:
            row = await run_in_threadpool(_read_own, self.task_id)
            if _stopping(row):
                raise Cancelled(self.done_so_far)
            answer = (row.input_responses or {}).get(key)
            if answer is not None:
                action = answer.get("action") if answer.get("action") in ("accept", "decline", "cancel") else "cancel"
                content = answer.get("content") if isinstance(answer.get("content"), dict) else None
                return confirmed(action, content), action
            await anyio.sleep(ANSWER_POLL_SECONDS)
        await run_in_threadpool(_update, self.task_id, input_requests=None)
        return False, "timeout"


def _beat(task_id: str) -> None:
    """The runner is alive: `heartbeat_at` (what a task shows, `lastUpdatedAt`, moves only with news)."""
    with transaction() as session:
        row = session.get(McpTask, task_id, with_for_update=True)
        if row is not None and row.status not in TERMINAL:
            row.heartbeat_at = now()
            session.add(row)


async def _beating(task_id: str) -> None:
    """Beat for as long as the task runs, whatever its work is doing (a slow send, a long read)."""
    while True:
        await anyio.sleep(BEAT_EVERY.total_seconds())
        try:
            await run_in_threadpool(_beat, task_id)
        except Exception:  # the database away a moment: the next beat tries again
            log.warning("a task's heartbeat failed", exc_info=True)


def _read_own(task_id: str) -> McpTask | None:
    session = new_session(read_only=True)
    try:
        row = session.get(McpTask, task_id)
        if row is not None:
            session.expunge(row)
        return row
    finally:
        session.close()


def _stopping(row: McpTask | None) -> bool:
    """Whether the runner should stop here: cancelled, settled by another process, or purged."""
    return row is None or row.cancel_requested or row.status in TERMINAL


Work = Callable[[TaskRun], Awaitable[types.CallToolResult]]


async def start(ctx: ServerRequestContext, tool: str, arguments: dict, work: Work, *, can_ask: bool) -> dict:
    """Create the task (durably, before answering) and run `work` on this process's loop."""
    principal = principal_of(ctx)
    row = await run_in_threadpool(_create, principal, tool, arguments)
    runner = asyncio.get_running_loop().create_task(_run(row.id, work, TaskRun(row.id, can_ask)))
    _running.add(runner)
    runner.add_done_callback(_running.discard)
    return {"resultType": "task", **_envelope(row)}


async def _run(task_id: str, work: Work, run: TaskRun) -> None:
    _running_ids.add(task_id)
    beating = asyncio.get_running_loop().create_task(_beating(task_id))
    try:
        await _run_work(task_id, work, run)
    finally:
        beating.cancel()
        _running_ids.discard(task_id)


async def _run_work(task_id: str, work: Work, run: TaskRun) -> None:
    try:
        with progress.watching(run.checkpoint):
            result = await work(run)
    except Cancelled as stopped:
        done = str(stopped) or "Nothing was done."
        await run_in_threadpool(_update, task_id, status="cancelled", status_message=f"Cancelled. {done}",
                                input_requests=None)
        return
    except Exception:
        log.exception("task %s failed", task_id[:12])
        await run_in_threadpool(_update, task_id, status="failed", status_message="Internal error.",
                                error={"code": INTERNAL_ERROR, "message": "Internal error"}, input_requests=None)
        return
    wire = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    summary = (result.structured_content or {}).get("summary") if isinstance(result.structured_content, dict) else None
    await run_in_threadpool(_update, task_id, status="completed", result=wire, input_requests=None,
                            status_message=summary or ("Failed: see the result." if result.is_error else "Done."))


# --- the methods -----------------------------------------------------------------------------------

class TaskParams(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    task_id: str = Field(alias="taskId", max_length=200)
    meta: dict | None = Field(default=None, alias="_meta")


class UpdateParams(TaskParams):
    input_responses: dict[str, Any] = Field(alias="inputResponses")


def _owner(ctx: ServerRequestContext) -> str:
    principal = principal_of(ctx)
    if principal is None:
        raise MCPError(INVALID_PARAMS, "Unknown task: no task of this connection has that id.")
    return binding(principal)


async def _get(ctx: ServerRequestContext, params: TaskParams) -> dict:
    require_negotiated(ctx)
    return await run_in_threadpool(read, params.task_id, _owner(ctx))


async def _update_method(ctx: ServerRequestContext, params: UpdateParams) -> dict:
    require_negotiated(ctx)
    await run_in_threadpool(deliver, params.task_id, _owner(ctx), params.input_responses)
    return {}


async def _cancel(ctx: ServerRequestContext, params: TaskParams) -> dict:
    require_negotiated(ctx)
    await run_in_threadpool(request_cancel, params.task_id, _owner(ctx))
    return {}


def install(server: Server) -> None:
    """Serve the extension's methods and advertise it (`server/discover`)."""
    server.add_request_handler("tasks/get", TaskParams, _get)
    server.add_request_handler("tasks/update", UpdateParams, _update_method)
    server.add_request_handler("tasks/cancel", TaskParams, _cancel)
    server.extensions[EXTENSION] = {}
