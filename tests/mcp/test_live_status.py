"""Live invoice status over MCP, in process: the resource `invoice://{id}` (as `get_invoice` shows it),
the account's invoices in `resources/list`, `subscriptions/listen` (the honored filter, updates and list
changes of the caller's own account only, five streams per credential), the change feed under it, and
the cache hints of every list and resource. Through the official SDK client (2026-07-28) over a
transport that streams the app's answer as it comes. (Across live processes: tests/e2e/test_mcp_live.py.)"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from datetime import timedelta

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated
from sqlalchemy import func, select, update
from sqlmodel import Session

from core.base import db
from core.base.clock import now
from core.mechanisms import change_feed
from core.models import ChangeFeedEntry, McpListenStream
from mcp_server import caching, live
from mcp_server import resources as mcp_resources
from tests.api.invoicing import adhoc, customer, draft, finalize, open_invoice, pay
from tests.conftest import TEST_ORIGIN
from tests.mcp.jsonrpc import post, structured

VIEW = "ui://invoicing/invoice-view.html"
READ_ONLY_OF_CUSTOMERS = ["business:read", "clients:read"]


# --- the SDK's client over the in-process app, streaming ---------------------------------------------

class StreamingTransport(httpx2.AsyncBaseTransport):
    """httpx2's ASGITransport answers once the app has finished, and a listen stream never finishes:
    this one answers at the response's start, streams its body, and tells the app that the client
    left when the response is closed."""

    def __init__(self, app) -> None:
        self.app = app

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = b"".join([chunk async for chunk in request.stream])
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": request.method,
                 "headers": [(name.lower(), value) for name, value in request.headers.raw],
                 "scheme": request.url.scheme, "path": request.url.path,
                 "raw_path": request.url.raw_path.split(b"?")[0], "query_string": request.url.query,
                 "server": (request.url.host, request.url.port), "client": ("127.0.0.1", 123), "root_path": ""}
        chunks_in, chunks = anyio.create_memory_object_stream[bytes](1000)
        started: asyncio.Future = asyncio.get_running_loop().create_future()
        left = anyio.Event()
        delivered = False

        async def receive() -> dict:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await left.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            if message["type"] == "http.response.start":
                started.set_result((message["status"], message.get("headers", [])))
            elif message["type"] == "http.response.body":
                if message.get("body"):
                    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                        await chunks_in.send(message["body"])
                if not message.get("more_body", False):
                    chunks_in.close()

        async def run() -> None:
            try:
                await self.app(scope, receive, send)
            except BaseException as failure:
                if not started.done():
                    started.set_exception(failure)
            finally:
                chunks_in.close()

        task = asyncio.get_running_loop().create_task(run())
        status, headers = await started
        return httpx2.Response(status, headers=headers, stream=_Body(chunks, left, task))


class _Body(httpx2.AsyncByteStream):
    def __init__(self, chunks, left: anyio.Event, task: asyncio.Task) -> None:
        self.chunks, self.left, self.task = chunks, left, task

    async def __aiter__(self):
        async for chunk in self.chunks:
            yield chunk

    async def aclose(self) -> None:
        self.left.set()
        self.chunks.close()
        with anyio.move_on_after(5), contextlib.suppress(Exception):
            await asyncio.shield(self.task)


@contextlib.asynccontextmanager
async def connected(app, key: str, *, cache: bool = False):
    """The SDK's client (2026-07-28) with `key`, over the in-process app; its response cache off unless `cache`."""
    options = {} if cache else {"cache": None}
    async with httpx2.AsyncClient(transport=StreamingTransport(app), base_url=TEST_ORIGIN,
                                  headers={"Authorization": f"Bearer {key}"}) as http:
        async with Client(streamable_http_client(f"{TEST_ORIGIN}/mcp", http_client=http), mode="2026-07-28",
                          **options) as session:
            yield session


def run(client, work):
    """`work()` on the in-process app's event loop (where its lifespan, and the streams' follower, run)."""
    return client.portal.call(work)


async def in_thread(function, *arguments):
    """A blocking call (the REST test client) while the loop keeps serving."""
    return await anyio.to_thread.run_sync(function, *arguments)


async def next_event(subscription, seconds: float = 3.0):
    with anyio.fail_after(seconds):
        return await subscription.__anext__()


async def nothing_within(subscription, seconds: float) -> bool:
    with anyio.move_on_after(seconds):
        await subscription.__anext__()
        return False
    return True


def uri(invoice: dict) -> str:
    return f"invoice://{invoice['id']}"


# --- the resource invoice://{id} ----------------------------------------------------------------------

def test_an_invoice_reads_as_get_invoice_shows_it_live_and_private(client, app, tenant):
    invoice = open_invoice(tenant, items=[adhoc("Design", 250000)])

    async def work():
        async with connected(app, tenant.key) as session:
            return await session.read_resource(uri(invoice))

    result = run(client, work)
    (content,) = result.contents
    assert content.uri == uri(invoice) and content.mime_type == "application/json"
    assert json.loads(content.text) == structured(client, tenant.key, "get_invoice", invoice=invoice["id"])
    assert json.loads(content.text)["formatted"]["total"] == "2,500.00 USD"
    assert (result.ttl_ms, result.cache_scope) == (0, "private")


def test_another_accounts_unknown_or_malformed_invoice_is_not_found_alike(client, app, tenant, other_tenant):
    foreign = draft(other_tenant)

    async def work():
        errors = []
        async with connected(app, tenant.key) as session:
            for address in (uri(foreign), "invoice://in_" + "0" * 32, "invoice://nope", "invoice://"):
                with pytest.raises(MCPError) as refused:
                    await session.read_resource(address)
                errors.append(refused.value.error)
        return errors

    for error in run(client, work):
        assert (error.code, error.message) == (-32602, "Resource not found")  # SEP-2164, 2026-07-28
        assert foreign["id"] not in json.dumps(error.model_dump()) or error.data == {"uri": uri(foreign)}


def test_reading_an_invoice_needs_invoices_read(client, tenant):
    invoice = draft(tenant)
    key = tenant.key_with(READ_ONLY_OF_CUSTOMERS)
    response = post(client, "resources/read", {"uri": uri(invoice)}, key=key)
    assert response.status_code == 403 and "invoices:read" in response.headers["www-authenticate"]


def test_the_invoice_template_is_listed_and_templates_are_public(client, app, tenant):
    async def work():
        async with connected(app, tenant.key) as session:
            return await session.list_resource_templates()

    result = run(client, work)
    templates = {template.uri_template: template for template in result.resource_templates}
    assert set(templates) == {"invoice://{invoice_id}", "invoice://{invoice_id}/pdf",
                              "credit-note://{credit_note_id}/pdf", "e-invoice-export://{export_id}"}
    assert templates["invoice://{invoice_id}"].mime_type == "application/json"
    assert "invoices:read" in templates["invoice://{invoice_id}"].description
    assert (result.ttl_ms, result.cache_scope) == (caching.HOUR_MS, "public")


# --- resources/list -----------------------------------------------------------------------------------

def test_the_list_names_the_accounts_invoices_newest_first_a_page_at_a_time(client, app, tenant, other_tenant,
                                                                           monkeypatch):
    monkeypatch.setattr(mcp_resources, "LIST_PAGE", 2)
    jane = customer(tenant)["id"]
    first = open_invoice(tenant, customer_id=jane, items=[adhoc("Design", 250000)])
    second, third = draft(tenant, customer_id=jane), draft(tenant, customer_id=jane)
    draft(other_tenant)

    async def work():
        pages = []
        async with connected(app, tenant.key) as session:
            page = await session.list_resources()
            pages.append(page)
            while page.next_cursor:
                page = await session.list_resources(cursor=page.next_cursor)
                pages.append(page)
        return pages

    pages = run(client, work)
    listed = [resource for page in pages for resource in page.resources]
    assert [resource.uri for resource in listed] == [VIEW, uri(third), uri(second), uri(first)]
    assert len(pages) == 2 and pages[-1].next_cursor is None
    shown = listed[-1]
    assert (shown.name, shown.title, shown.mime_type) == ("INV-0001", "Invoice INV-0001", "application/json")
    assert shown.description == "Jane Doe, open, 2,500.00 USD"
    assert (listed[1].name, listed[1].title) == (third["id"], "Draft invoice")
    for page in pages:
        assert (page.ttl_ms, page.cache_scope) == (caching.RESOURCE_LIST.ttl_ms, "private")


def test_without_invoices_read_the_list_is_the_view_alone(client, app, tenant):
    draft(tenant)
    key = tenant.key_with(READ_ONLY_OF_CUSTOMERS)

    async def work():
        async with connected(app, key) as session:
            return await session.list_resources()

    result = run(client, work)
    assert [resource.uri for resource in result.resources] == [VIEW] and result.next_cursor is None


def test_a_forged_cursor_is_refused(client, app, tenant):
    async def work():
        async with connected(app, tenant.key) as session:
            with pytest.raises(MCPError) as refused:
                await session.list_resources(cursor="forged")
            return refused.value.error

    assert run(client, work).code == -32602


# --- subscriptions/listen -------------------------------------------------------------------------------

def test_the_acknowledgement_honors_only_the_callers_own_invoices(client, app, tenant, other_tenant):
    own = draft(tenant)
    foreign = draft(other_tenant)
    bare = "invoice://" + own["id"].removeprefix("in_")  # a bare UUID names the invoice too
    asked = [uri(own), uri(foreign), "invoice://in_" + "0" * 32, "invoice://nope", f"{uri(own)}/pdf", VIEW, bare,
             uri(own)]

    async def work():
        async with connected(app, tenant.key) as session:
            async with session.listen(resource_subscriptions=asked, resources_list_changed=True,
                                      tools_list_changed=True) as subscription:
                return subscription.honored, subscription.subscription_id

    honored, subscription_id = run(client, work)
    assert honored.resource_subscriptions == [uri(own), bare]
    assert honored.resources_list_changed is True and honored.tools_list_changed is True
    assert honored.prompts_list_changed is None
    assert foreign["id"] not in honored.model_dump_json() and subscription_id


def test_an_invoice_followed_is_announced_at_each_change_and_the_list_when_one_is_created(client, app, tenant):
    invoice = open_invoice(tenant, items=[adhoc("Design", 250000)])

    async def work():
        heard = []
        async with connected(app, tenant.key) as session:
            async with session.listen(resource_subscriptions=[uri(invoice)],
                                      resources_list_changed=True) as subscription:
                await in_thread(lambda: pay(tenant, invoice["id"]))
                heard.append(await next_event(subscription))
                assert (await session.read_resource(uri(invoice))).contents[0].text.count('"status":"paid"') == 1
                await in_thread(lambda: draft(tenant))
                heard.append(await next_event(subscription))
                assert await nothing_within(subscription, 0.5)
        return heard

    assert run(client, work) == [ResourceUpdated(uri=uri(invoice)), ResourcesListChanged()]


def test_nothing_of_another_account_reaches_a_stream(client, app, tenant, other_tenant):
    own = open_invoice(tenant)
    theirs = open_invoice(other_tenant)

    async def work():
        async with connected(app, tenant.key) as session:
            async with session.listen(resource_subscriptions=[uri(own), uri(theirs)],
                                      resources_list_changed=True) as subscription:
                await in_thread(lambda: pay(other_tenant, theirs["id"]))
                await in_thread(lambda: draft(other_tenant))
                assert await nothing_within(subscription, 0.6)
                await in_thread(lambda: pay(tenant, own["id"]))
                return await next_event(subscription)

    assert run(client, work) == ResourceUpdated(uri=uri(own))


def test_following_invoices_needs_invoices_read(client, app, tenant):
    invoice = draft(tenant)
    key = tenant.key_with(READ_ONLY_OF_CUSTOMERS)

    async def work():
        async with connected(app, key) as session:
            with pytest.raises(MCPError) as refused:
                async with session.listen(resource_subscriptions=[uri(invoice)]):
                    pass
            # The list's changes alone: honored, but the caller's list (the view) never changes.
            async with session.listen(resources_list_changed=True) as subscription:
                await in_thread(lambda: draft(tenant))
                quiet = await nothing_within(subscription, 0.6)
        return refused.value.error, quiet

    error, quiet = run(client, work)
    assert (error.code, error.data) == (403, {"code": "forbidden", "required_scope": "invoices:read"})
    assert quiet


def test_a_sixth_stream_of_one_credential_is_refused_and_stale_ones_do_not_count(client, app, tenant):
    invoice = draft(tenant)

    async def work():
        async with connected(app, tenant.key) as session, contextlib.AsyncExitStack() as streams:
            for _ in range(live.MAX_STREAMS):
                await streams.enter_async_context(session.listen(resource_subscriptions=[uri(invoice)]))
            with pytest.raises(MCPError) as refused:
                async with session.listen(resources_list_changed=True):
                    pass
            # Another credential of the account has streams of its own.
            async with connected(app, tenant.key_with(["invoices:read"])) as other, \
                    other.listen(resources_list_changed=True) as subscription:
                assert subscription.honored.resources_list_changed is True
            # Streams whose process stopped refreshing them (gone for 30 s) no longer count.
            await in_thread(_age_streams, timedelta(seconds=31))
            async with session.listen(resources_list_changed=True) as subscription:
                assert subscription.honored.resources_list_changed is True
        return refused.value.error

    error = run(client, work)
    assert (error.code, error.data) == (429, {"code": "rate_limited", "limit": 5})
    assert _eventually_no_streams()  # each stream's row went with it


def _age_streams(by: timedelta) -> None:
    with db.transaction() as session:
        session.execute(update(McpListenStream).values(heartbeat_at=now() - by))


def _open_streams() -> int:
    with Session(db.get_engine()) as session:
        return session.execute(select(func.count()).select_from(McpListenStream)).scalar_one()


def _eventually_no_streams(seconds: float = 3.0) -> bool:
    """The server ends a stream once it notices the client left: shortly after the client's close."""
    deadline = time.monotonic() + seconds
    while _open_streams() and time.monotonic() < deadline:
        time.sleep(0.05)
    return _open_streams() == 0


def test_a_closed_stream_frees_its_place(client, app, tenant):
    async def work():
        async with connected(app, tenant.key) as session:
            for _ in range(live.MAX_STREAMS + 2):
                async with session.listen(resources_list_changed=True):
                    pass
        return True

    assert run(client, work) and _eventually_no_streams()


# --- the change feed ------------------------------------------------------------------------------------

def _feed() -> list[tuple[str, str]]:
    with Session(db.get_engine()) as session:
        return [(row.uri, row.kind) for row in session.execute(
            select(ChangeFeedEntry).order_by(ChangeFeedEntry.id)).scalars()]


def test_every_invoice_event_notes_a_change_in_its_transaction(tenant):
    invoice = draft(tenant)
    assert finalize(tenant, invoice["id"]).status_code == 200
    assert pay(tenant, invoice["id"]).status_code == 200
    assert pay(tenant, invoice["id"]).status_code == 409  # refused: nothing happened, nothing noted
    assert _feed() == [(uri(invoice), "invoice.created"), (uri(invoice), "invoice.finalized"),
                       (uri(invoice), "payment.recorded"), (uri(invoice), "invoice.paid")]


def test_the_worker_forgets_old_changes_but_the_newest_and_stale_streams(tenant):
    for _ in range(3):
        draft(tenant)
    with db.transaction() as session:
        session.execute(update(ChangeFeedEntry).values(created_at=now() - change_feed.KEEP - timedelta(seconds=1)))
        session.add(McpListenStream(id="gone", binding="b", heartbeat_at=now() - timedelta(seconds=31)))
        session.add(McpListenStream(id="alive", binding="b", heartbeat_at=now()))
    from service.worker import cleanup
    cleanup()
    with Session(db.get_engine()) as session:
        assert session.execute(select(func.count()).select_from(ChangeFeedEntry)).scalar_one() == 1
        assert list(session.execute(select(McpListenStream.id)).scalars()) == ["alive"]


# --- cache hints ----------------------------------------------------------------------------------------

def test_the_hints_of_the_resources_read(client, app, tenant):
    invoice = draft(tenant)

    async def work():
        async with connected(app, tenant.key) as session:
            return {"view": await session.read_resource(VIEW),
                    "pdf": await session.read_resource(f"{uri(invoice)}/pdf")}

    results = run(client, work)
    hints = {name: (result.ttl_ms, result.cache_scope) for name, result in results.items()}
    assert hints == {"view": (caching.DAY_MS, "public"), "pdf": (60_000, "private")}


def test_the_tools_and_prompts_are_the_same_for_everyone_for_an_hour(client, app, tenant):
    async def work():
        async with connected(app, tenant.key) as session:
            return await session.list_tools(), await session.list_prompts()

    for result in run(client, work):
        assert (result.ttl_ms, result.cache_scope) == (caching.HOUR_MS, "public")


def test_a_stream_ends_once_its_key_is_revoked(client, app, tenant, monkeypatch):
    monkeypatch.setattr(live, "HEARTBEAT_SECONDS", 0.3)
    from core.access import accounts, apikeys
    with db.transaction() as session:
        created = apikeys.create_key(session, tenant.account_id, created_by=accounts.owner_of(session, tenant.account_id).id,
                                     name="listening", scopes=["invoices:read"])
        key_id = str(created.row.id)
    invoice = draft(tenant)

    async def work():
        async with connected(app, created.key) as session:
            async with session.listen(resource_subscriptions=[uri(invoice)]) as subscription:
                def revoke():
                    with db.transaction() as writing:
                        apikeys.revoke_key(writing, tenant.account_id, key_id)
                await in_thread(revoke)
                with anyio.fail_after(5):
                    async for _event in subscription:
                        pass  # the server ends the stream: the loop ends
                await in_thread(lambda: pay_later(tenant, invoice))
        return True

    assert run(client, work) is True
    assert _eventually_no_streams()


def pay_later(tenant, invoice: dict) -> None:
    """A change after the stream ended: nothing is left to hear it."""
    tenant.patch(f"/invoices/{invoice['id']}", json={"memo": "after"})
