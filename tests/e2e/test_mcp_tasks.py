"""Tasks across server processes, through the official SDK client: a small client extension for
`io.modelcontextprotocol/tasks` (the SDK has the extension points, not the extension) starts an
`export_e_invoices` task on one process and follows it to completion on another, reads the ZIP there,
and cancels another task through the second process while the first runs it."""

from __future__ import annotations

import base64
import io
import zipfile
from datetime import date
from typing import Any, ClassVar, Literal

import anyio
import httpx
import mcp.types as types
import pytest
from mcp import Client
from mcp.client.extension import ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from pydantic import ConfigDict, Field

from tests.conftest import make_tenant

pytestmark = pytest.mark.e2e

EXTENSION = "io.modelcontextprotocol/tasks"


class TaskParams(types.RequestParams):
    task_id: str = Field(alias="taskId")


class GetTask(types.Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param: ClassVar[str] = "taskId"


class CancelTask(types.Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    name_param: ClassVar[str] = "taskId"


class CreateTaskResult(types.Result):
    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str


class TaskState(types.Result):
    model_config = ConfigDict(extra="allow")
    status: str
    status_message: str | None = Field(default=None, alias="statusMessage")
    result: dict[str, Any] | None = None


class Tasks(ClientExtension):
    """Declares the extension; a task handle is left to the test (`allow_claimed`)."""

    identifier = EXTENSION

    def claims(self):
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=self._unused)]

    @staticmethod
    async def _unused(claimed, _context):
        raise AssertionError("the test follows its tasks itself")


def connected(origin: str, key: str):
    async def run(work):
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http:
            async with Client(streamable_http_client(f"{origin}/mcp", http_client=http), mode="2026-07-28",
                              extensions=[Tasks()]) as client:
                return await work(client)
    return run


async def state(client: Client, task_id: str) -> TaskState:
    return await client.session.send_request(GetTask(params=TaskParams(taskId=task_id)), TaskState)


async def until_done(client: Client, task_id: str, seconds: float = 60) -> TaskState:
    with anyio.fail_after(seconds):
        while (current := await state(client, task_id)).status not in ("completed", "failed", "cancelled"):
            await anyio.sleep(0.2)
    return current


def issued_invoices(origin: str, key: str, count: int) -> list[str]:
    """`count` invoices issued today to a German customer, through the REST API; their numbers."""
    with httpx.Client(base_url=f"{origin}/api/v1", headers={"Authorization": f"Bearer {key}"}, timeout=30) as rest:
        customer = rest.post("/customers", json={"name": "Globex Corp", "email": "ap@globex.example", "address": {
            "line1": "1 Main St", "city": "Berlin", "postal_code": "10115", "country": "DE"}}).json()["data"]
        numbers = []
        for n in range(count):
            invoice = rest.post("/invoices", headers={"Idempotency-Key": f"d-{n}"}, json={
                "customer": customer["id"], "currency": "EUR",
                "items": [{"description": "Design", "unit_amount": 10000 + n, "tax_rate": "19"}]}).json()["data"]
            finalized = rest.post(f"/invoices/{invoice['id']}/finalize", headers={"Idempotency-Key": f"f-{n}"})
            numbers.append(finalized.json()["data"]["number"])
    return numbers


def test_an_export_task_started_on_one_process_completes_on_the_other(live_server_pair):
    first, second = live_server_pair
    tenant = make_tenant(None)
    numbers = issued_invoices(first, tenant.key, 3)
    today = date.today().isoformat()
    arguments = {"period_start": today, "period_end": today, "format": "cii"}

    async def start(client: Client) -> CreateTaskResult:
        return await client.session.call_tool("export_e_invoices", arguments, allow_claimed=True)

    async def follow(client: Client) -> tuple[TaskState, bytes]:
        done = await until_done(client, created.task_id)
        link = next(block for block in done.result["content"] if block["type"] == "resource_link")
        read = await client.read_resource(link["uri"])
        return done, base64.b64decode(read.contents[0].blob)

    created = anyio.run(connected(first, tenant.key), start)
    assert isinstance(created, CreateTaskResult) and created.task_id.startswith("task_")
    done, archive = anyio.run(connected(second, tenant.key), follow)
    assert done.status == "completed", done
    assert done.result["structuredContent"]["documents"] == 3
    names = zipfile.ZipFile(io.BytesIO(archive)).namelist()
    assert sorted(name for name in names if name.endswith(".xml")) == sorted(f"{n}-cii.xml" for n in numbers)


def test_a_task_is_cancelled_through_another_process_between_documents(live_server_pair):
    first, second = live_server_pair
    tenant = make_tenant(None)
    issued_invoices(first, tenant.key, 25)
    today = date.today().isoformat()
    arguments = {"period_start": today, "period_end": today, "format": "facturx"}  # a PDF each: seconds

    async def start(client: Client) -> CreateTaskResult:
        return await client.session.call_tool("export_e_invoices", arguments, allow_claimed=True)

    async def cancel(client: Client) -> TaskState:
        await client.session.send_request(CancelTask(params=TaskParams(taskId=created.task_id)), types.EmptyResult)
        return await until_done(client, created.task_id)

    created = anyio.run(connected(first, tenant.key), start)
    stopped = anyio.run(connected(second, tenant.key), cancel)
    assert stopped.status == "cancelled", stopped
    assert stopped.status_message.startswith("Cancelled. Nothing was exported.")
    assert stopped.result is None
