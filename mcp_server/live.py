"""Live invoice status: `subscriptions/listen` (2026-07-28, SEP-2575), account-aware and across processes.

A listen request's response is its stream (the SDK answers it with server-sent events, even in JSON
mode). The stream first acknowledges the honored filter, then carries, stamped with the listen
request's id, only what concerns the caller's own account:

- `notifications/resources/updated` for each `invoice://{id}` the client subscribed to, whenever the
  invoice changes: every change recorded as an invoice event (edited, finalized, e-mailed, viewed,
  paid, a payment recorded or reversed, a credit note, voided, reopened…). A URI that is not one of
  the caller's own invoices (another account's, unknown, malformed, not an invoice) is left out of
  the honored list: nothing tells the caller whether another account's id exists. Subscribing to
  invoices needs `invoices:read`.
- `notifications/resources/list_changed` when the account gets an invoice (the list of
  `resources/list` changed), for a caller that may read invoices.
- `notifications/tasks` for each of the credential's tasks named in the filter's `taskIds` (the
  tasks extension, which the listen request must declare: else `-32021`), whenever its status
  changes, carrying the task as `tasks/get` shows it (the result inlined once it is done).
- `tools_list_changed` and `prompts_list_changed` are honored and never fire: both lists change only
  with a release.

Changes reach every process through the database (`core.mechanisms.change_feed`): each process runs
one follower for all its streams (`Hub`), started with the first stream and stopped after the last;
on PostgreSQL it is woken by NOTIFY at the change's commit, on SQLite it polls every 0.2 s.

At most `MAX_STREAMS` streams are open per credential across processes (`mcp_listen_streams`; the
process holding a stream refreshes it every `HEARTBEAT_SECONDS`, and one not refreshed for 30 s no
longer counts); one more is refused before the acknowledgement with the JSON-RPC error 429,
`data: {code: "rate_limited", limit: 5}`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import mcp.types as types
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import (
    SUBSCRIPTION_ID_META_KEY,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    event_to_notification,
)
from mcp_types.jsonrpc import INTERNAL_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel
from sqlalchemy import bindparam, select
from starlette.concurrency import run_in_threadpool

from core.access import resources as protected_resources
from core.access.principal import Principal
from core.base import executor, ids
from core.base.errors import Unauthorized
from core.mechanisms import change_feed
from core.models import Invoice
from mcp_server import tasks
from mcp_server.clients import binding
from mcp_server.codes import FORBIDDEN, RATE_LIMITED
from mcp_server.confirmations import principal_of
from mcp_server.resources import INVOICE_URI, READ_SCOPE
from operations.pipeline import identify
from operations.rendering import forbidden_data

log = logging.getLogger("invoicing.mcp.live")

MAX_STREAMS = 5  # open listen streams per credential, across processes
MAX_URIS = 100  # resources one stream may follow
HEARTBEAT_SECONDS = 10.0
BUFFER = 256  # events waiting for a slow client; at the cap its stream ends (it listens again and reads)
LINGER_SECONDS = 2.0  # the follower outlives the last stream briefly, for a client that listens again
RESTART_SECONDS = 1.0  # after the follower failed (the database away)
TASK_IDS = "taskIds"  # the listen filter's field naming the tasks to follow (SEP-2663)
# Changes that add an invoice to (or take one from) the account's resource list.
LIST_CHANGING = frozenset({"invoice.created", "invoice.deleted"})


def install(server: Server) -> None:
    """Serve `subscriptions/listen` on `server`."""
    server.add_request_handler("subscriptions/listen", types.SubscriptionsListenRequestParams, listen)


@contextlib.asynccontextmanager
async def running() -> AsyncIterator[None]:
    """The lifespan of this process's streams: they end gracefully, and the follower stops, with it.
    Nothing starts here: the follower starts with the first stream."""
    try:
        yield
    finally:
        hub = _hubs.pop(_loop(), None)
        if hub is not None:
            await hub.close()


# --- one stream ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskStatusChanged:
    """A followed task's status changed: the stream sends `notifications/tasks` with the task as it is."""

    task_id: str


class TaskNotification(BaseModel):
    """`notifications/tasks` (SEP-2663): the task as `tasks/get` shows it, on the listen stream."""

    method: Literal["notifications/tasks"] = "notifications/tasks"
    params: dict[str, Any]


@dataclass(eq=False)
class _Stream:
    account_id: uuid.UUID
    invoices: dict[uuid.UUID, tuple[str, ...]]  # each followed invoice: the URIs the client named it by
    list_changed: bool
    row: str  # its row in mcp_listen_streams
    send: MemoryObjectSendStream[ServerEvent | TaskStatusChanged] = field(repr=False)
    tasks: frozenset[str] = frozenset()  # the credential's tasks it follows (`taskIds`)
    authorization: str | None = field(default=None, repr=False)  # verified again at each beat

    def offer(self, events: dict[ServerEvent | TaskStatusChanged, None]) -> bool:
        """Queue `events`; False when the client stopped reading (the stream is then ended)."""
        for event in events:
            try:
                self.send.send_nowait(event)
            except anyio.WouldBlock:
                log.warning("a listen stream's backlog is full; ending it")
                self.send.close()
                return False
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return False
        return True


async def listen(ctx: ServerRequestContext[Any, Any],
                 params: types.SubscriptionsListenRequestParams) -> types.SubscriptionsListenResult:
    """Serve one listen stream: acknowledge the honored filter, then forward the account's changes
    until the client leaves (which cancels this) or the server stops (a graceful end)."""
    subscription_id = ctx.request_id
    if subscription_id is None:
        raise MCPError(INVALID_REQUEST, "subscriptions/listen requires a request id")
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        raise MCPError(METHOD_NOT_FOUND, "subscriptions/listen needs protocol 2026-07-28")
    principal = principal_of(ctx)
    if principal is None:  # the gate authenticated every request
        raise MCPError(INVALID_REQUEST, "Not authenticated")
    requested = params.notifications
    may_read = READ_SCOPE in principal.scopes
    if requested.resource_subscriptions and (refused := principal.refusal(READ_SCOPE, "Following invoices")):
        raise MCPError(FORBIDDEN, refused.detail, data=forbidden_data(refused))
    followed = await _own_invoices(principal, list(requested.resource_subscriptions or ())[:MAX_URIS])
    asked_tasks = (requested.model_extra or {}).get(TASK_IDS)
    if asked_tasks and not tasks.negotiated(ctx):
        tasks.require_negotiated(ctx)
    own_tasks = (await run_in_threadpool(tasks.own_tasks, [str(task) for task in asked_tasks][:MAX_URIS],
                                         binding(principal)) if isinstance(asked_tasks, list) and asked_tasks else [])
    honored = types.SubscriptionFilter(
        tools_list_changed=True if requested.tools_list_changed else None,
        prompts_list_changed=True if requested.prompts_list_changed else None,
        resources_list_changed=True if requested.resources_list_changed else None,
        resource_subscriptions=[uri for uris in followed.values() for uri in uris] or None,
        **({TASK_IDS: own_tasks} if own_tasks else {}))
    row = await executor.run(change_feed.open_stream, binding(principal), MAX_STREAMS)
    if row is None:
        raise MCPError(RATE_LIMITED, f"At most {MAX_STREAMS} listen streams may be open at once per credential: "
                                     "close one first.", data={"code": "rate_limited", "limit": MAX_STREAMS})
    meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: subscription_id}
    send, receive = anyio.create_memory_object_stream[ServerEvent | TaskStatusChanged](BUFFER)
    authorization = ctx.request.headers.get("authorization") if ctx.request is not None else None
    stream = _Stream(principal.account_id, followed, bool(requested.resources_list_changed) and may_read, row, send,
                     frozenset(own_tasks), authorization)
    hub = _hub()
    try:
        await hub.join(stream)  # following before the acknowledgement: nothing after it is missed
        await ctx.session.send_notification(types.SubscriptionsAcknowledgedNotification(
            params=types.SubscriptionsAcknowledgedNotificationParams(notifications=honored, _meta=meta)),
            related_request_id=subscription_id)
        async for event in receive:
            if isinstance(event, TaskStatusChanged):
                task = await run_in_threadpool(tasks.state_of, event.task_id)
                if task is not None:
                    await ctx.session.send_notification(TaskNotification(params={**task, "_meta": meta}),
                                                        related_request_id=subscription_id)
                continue
            await ctx.session.send_notification(event_to_notification(event, meta), related_request_id=subscription_id)
    finally:
        hub.leave(stream)
        send.close()
        receive.close()
        with anyio.CancelScope(shield=True):
            try:
                await executor.run(change_feed.close_stream, row, repeatable=True)
            except Exception:  # its heartbeat stops: it stops counting within 30 s
                log.warning("a closed listen stream's row stays until it is stale", exc_info=True)
    return types.SubscriptionsListenResult(_meta=meta)


CHUNK = 10  # ids looked up per statement (a fixed statement: the executor compiles each statement once)
_INVOICES = Invoice.__table__
OWN_INVOICES = select(_INVOICES.c.id).where(
    _INVOICES.c.account_id == bindparam("account_id"),
    _INVOICES.c.id.in_([bindparam(f"id{n}", type_=_INVOICES.c.id.type) for n in range(CHUNK)]))


async def _own_invoices(principal: Principal, uris: list[str]) -> dict[uuid.UUID, tuple[str, ...]]:
    """Of `uris`, those naming an invoice of the caller's account, by invoice (in the order given;
    a URI named twice once)."""
    named: dict[uuid.UUID, list[str]] = {}
    for uri in dict.fromkeys(uris):
        match = INVOICE_URI.fullmatch(uri)
        invoice_id = ids.try_parse("invoice", match.group(1)) if match else None
        if invoice_id is not None:
            named.setdefault(invoice_id, []).append(uri)
    if not named:
        return {}
    own = set(await executor.run(_existing, principal.account_id, list(named), repeatable=True))
    return {invoice_id: tuple(uris) for invoice_id, uris in named.items() if invoice_id in own}


async def _existing(db, account_id: uuid.UUID, invoice_ids: list[uuid.UUID]) -> list[uuid.UUID]:
    found: list[uuid.UUID] = []
    for start in range(0, len(invoice_ids), CHUNK):
        chunk = invoice_ids[start:start + CHUNK]
        chunk += [chunk[0]] * (CHUNK - len(chunk))
        found += [row.id for row in await db.rows(OWN_INVOICES, {
            "account_id": account_id, **{f"id{n}": invoice_id for n, invoice_id in enumerate(chunk)}})]
    return found


# --- the process's follower ----------------------------------------------------------------------


class Hub:
    """This process's (and event loop's) streams and the one follower of the change feed they share,
    running while there are streams; it also keeps their rows in `mcp_listen_streams` alive."""

    def __init__(self) -> None:
        self.streams: dict[uuid.UUID, set[_Stream]] = {}
        self.task: asyncio.Task | None = None
        self.started: asyncio.Future | None = None

    async def join(self, stream: _Stream) -> None:
        """Deliver the account's changes to `stream` from now on (once the follower has its place)."""
        self.streams.setdefault(stream.account_id, set()).add(stream)
        if self.task is None:
            loop = asyncio.get_running_loop()
            self.started = loop.create_future()
            self.task = loop.create_task(self._follow(self.started), name="mcp-live-follower")
        try:
            await asyncio.shield(self.started)
        except BaseException:
            self.leave(stream)
            raise

    def leave(self, stream: _Stream) -> None:
        streams = self.streams.get(stream.account_id)
        if streams is not None:
            streams.discard(stream)
            if not streams:
                del self.streams[stream.account_id]

    def all_streams(self) -> list[_Stream]:
        return [stream for streams in self.streams.values() for stream in streams]

    async def _follow(self, started: asyncio.Future) -> None:
        follower = change_feed.follower()
        try:
            try:
                await follower.start()
            except Exception:
                log.exception("the change feed cannot be followed")
                self._end_with(started)
                return
            started.set_result(None)
            await self._deliver_while_needed(follower)
        finally:
            if self.task is asyncio.current_task():
                self.task = None
            with anyio.CancelScope(shield=True):
                await follower.close()

    def _end_with(self, started: asyncio.Future) -> None:
        self.task = None
        started.set_exception(MCPError(INTERNAL_ERROR, "Live changes are unavailable right now: listen again later.",
                                       data={"code": "upstream_failed"}))
        started.exception()  # retrieved: no "never retrieved" warning when no stream awaits it any more

    async def _deliver_while_needed(self, follower: change_feed.Follower) -> None:
        loop = asyncio.get_running_loop()
        beat_at = loop.time() + HEARTBEAT_SECONDS
        idle_since: float | None = None
        while True:
            if self.streams:
                idle_since = None
            elif idle_since is None:
                idle_since = loop.time()
            elif loop.time() - idle_since >= LINGER_SECONDS:
                self.task = None  # decided before any await: a stream joining now starts another follower
                return
            try:
                changes = await follower.changes(timeout=min(1.0, max(0.0, beat_at - loop.time())))
                self.deliver(changes)
                if loop.time() >= beat_at:
                    beat_at = loop.time() + HEARTBEAT_SECONDS
                    await self.end_revoked()
                    await executor.run(change_feed.refresh_streams, [stream.row for stream in self.all_streams()],
                                       repeatable=True)
            except Exception:
                log.warning("following the change feed failed; trying again", exc_info=True)
                await asyncio.sleep(RESTART_SECONDS)

    def deliver(self, changes: list[change_feed.Change]) -> None:
        """Each change to the streams of its account that follow it (an update of the same invoice
        once per batch)."""
        due: dict[_Stream, dict[ServerEvent | TaskStatusChanged, None]] = {}
        for change in changes:
            streams = self.streams.get(change.account_id)
            if not streams:
                continue
            task_id = change.uri.removeprefix(f"{tasks.URI_SCHEME}://") if change.uri.startswith(
                f"{tasks.URI_SCHEME}://") else None
            if task_id is not None:
                for stream in streams:
                    if task_id in stream.tasks:
                        due.setdefault(stream, {})[TaskStatusChanged(task_id)] = None
                continue
            match = INVOICE_URI.fullmatch(change.uri)
            invoice_id = ids.try_parse("invoice", match.group(1)) if match else None
            for stream in streams:
                events = due.setdefault(stream, {})
                for uri in stream.invoices.get(invoice_id, ()) if invoice_id is not None else ():
                    events[ResourceUpdated(uri=uri)] = None
                if stream.list_changed and change.kind in LIST_CHANGING:
                    events[ResourcesListChanged()] = None
        for stream, events in due.items():
            if events and not stream.offer(events):
                self.leave(stream)

    async def end_revoked(self) -> None:
        """End the streams whose credential no longer verifies (a key revoked, a token expired or its app
        disconnected): a stream lives only as long as the credential that opened it."""
        verdicts: dict[str | None, bool] = {}
        for stream in self.all_streams():
            if stream.authorization not in verdicts:
                try:
                    await identify(stream.authorization, protected_resources.mcp(), count=False, peek=False)
                    verdicts[stream.authorization] = True
                except Unauthorized:
                    verdicts[stream.authorization] = False
            if not verdicts[stream.authorization]:
                stream.send.close()
                self.leave(stream)

    async def close(self) -> None:
        """End every stream gracefully (each answers its listen request) and stop following."""
        for stream in self.all_streams():
            stream.send.close()
        self.streams.clear()
        task, self.task = self.task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


_hubs: dict[asyncio.AbstractEventLoop, Hub] = {}


def _loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


def _hub() -> Hub:
    """This event loop's hub (a process serves on one loop; a test's clients may run several in turn)."""
    loop = _loop()
    for other in [other for other in _hubs if other.is_closed()]:
        del _hubs[other]
    hub = _hubs.get(loop)
    if hub is None:
        hub = _hubs[loop] = Hub()
    return hub
