"""Running one tool for one caller: its flat arguments split into what its operation takes, through
the operation pipeline (or, for a bulk tool, its single tool once per invoice), with money formatted
as people write it. Shared by the tool calls (`server`), the resources read as a tool reads them
(`resources`) and the tasks that run a tool (`server`'s task work)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from core.access import resources as protected_resources
from core.access.principal import Principal
from core.base import context
from core.base.errors import DomainError, ValidationFailed
from core.base.jsonout import Encoded, dumps
from core.base.money import format_money
from core.billing.confirmations import Confirmed
from core.mechanisms.idempotency import check_key
from mcp_server import bulk
from mcp_server.tasks import TaskRun
from mcp_server.tools import BY_NAME, Tool
from operations.bulk import REPEATS
from operations.pipeline import Invocation, Outcome, Reply, execute, identify
from operations.rendering import error_payload

MONEY_FIELDS = ("subtotal", "discount", "taxable", "tax", "total", "amount_due", "unit_amount", "amount", "tax_amount",
                "amount_credited", "balance_applied", "credit_amount", "refund_amount", "balance_amount",
                "balance_remaining", "amount_paid", "amount_applied", "outstanding", "overdue")


class Presenter:
    """What is kept under an idempotency key: the tool's structured result, or its error."""

    def success(self, result: Any) -> Reply:
        return Reply(200, dumps(with_formatted_money(result)), {})

    def failure(self, error: DomainError) -> Reply:
        return Reply(error.status, json.dumps(error_payload(error)), {})


async def run_tool(tool: Tool, arguments: dict[str, Any], authorization: str | None,
             confirmed: Confirmed | None = None, caller: Principal | None = None) -> Outcome:
    """Split the flat arguments into what the operation takes and run it through the pipeline.
    An assistant may pass an idempotency key on any write, and need not (the REST API requires one
    on lifecycle actions: a header a person's client sets once, which a tool call has no place for).
    `confirmed`: what the person was asked about this call, checked by the action under its lock.
    `caller`: the credential's principal as the gate verified it for this request (which counted the
    request), or None to verify `authorization` again."""
    if tool.name in REPEATS:
        return await run_each(tool, arguments, authorization, confirmed, caller)
    operation = replace(tool.operation, idempotency="optional" if tool.writes else "none")
    key = arguments.pop("idempotency_key", None) if tool.writes else None
    error: DomainError | None = None
    ids: dict[str, str] = {}
    if tool.id_argument:
        value = arguments.pop(tool.id_argument, None)
        if isinstance(value, str) and value:
            ids["id"] = value
        else:
            error = ValidationFailed.at(tool.id_argument, "is required: an id string")
    query_names = _field_names(operation.query)
    query = {name: value for name, value in arguments.items() if name in query_names}
    rest = {name: value for name, value in arguments.items() if name not in query_names}
    if rest and operation.body is None and error is None:
        error = ValidationFailed.at(next(iter(rest)), "unknown field")
    if key is not None:
        try:
            check_key(key, path="idempotency_key")
        except ValidationFailed as refused:
            error = error or refused
    invocation = Invocation(
        credential=authorization, resource=protected_resources.mcp(), request_id=context.request_id(), params=ids,
        query=query, typed_query=True, query_items=sorted((name, json.dumps(value)) for name, value in query.items()),
        body=json.dumps(rest).encode() if operation.body is not None else b"",
        idempotency_key=key, idempotency_scope=("MCP", tool.name), body_error=error, counted=True, confirmed=confirmed,
        principal=caller)
    return await execute(operation, invocation, Presenter())


def _field_names(model) -> set[str]:
    if model is None:
        return set()
    return {field.alias or name for name, field in model.model_fields.items()} | set(model.model_fields)


def with_formatted_money(value: Any, currency: str | None = None) -> Any:
    """Each object with money gets `formatted`: its amounts as people write them (`"2,500.00 USD"`)."""
    if isinstance(value, Encoded):
        value = value.value()
    if isinstance(value, (list, tuple)):
        return [with_formatted_money(item, currency) for item in value]
    if not isinstance(value, dict):
        return value
    currency = value.get("currency") if isinstance(value.get("currency"), str) else currency
    result = {key: with_formatted_money(item, currency) for key, item in value.items()}
    if currency:
        formatted = {name: format_money(value[name], currency) for name in MONEY_FIELDS
                     if isinstance(value.get(name), int) and not isinstance(value.get(name), bool)}
        if formatted:
            result["formatted"] = formatted
    return result


async def run_each(tool: Tool, arguments: dict, authorization: str | None, confirmed: Confirmed | None,
                    caller: Principal | None, *, asked=None, run: TaskRun | None = None) -> Outcome:
    """A bulk tool (`bulk.run_each`): each invoice through its single tool, as a call of its own."""
    async def single(name: str, item_arguments: dict, item_confirmed: Confirmed | None) -> Outcome:
        return await run_tool(BY_NAME[name], item_arguments, authorization, item_confirmed, caller)

    def note(done: str) -> None:
        if run is not None:
            run.done_so_far = done

    try:
        principal = caller or (await identify(authorization, protected_resources.mcp(), count=False, peek=False))[0]
        body = await bulk.run_each(tool.name, arguments, principal, confirmed, single, asked=asked,
                                   between=run.between if run is not None else None, progress_note=note)
    except DomainError as error:
        return Outcome(error=error)
    return Outcome(reply=Presenter().success(body))
