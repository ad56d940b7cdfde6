"""The MCP server: lists the tools and runs a call through the operation pipeline."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS

from core.access import resources
from core.base import context, metrics
from core.base.errors import DomainError, ValidationFailed
from core.base.jsonout import dumps
from core.base.money import format_money
from core.mechanisms.idempotency import check_key
from mcp_server.tools import BY_NAME, TOOLS, Tool
from operations.pipeline import Invocation, Outcome, Reply, execute
from operations.rendering import error_payload

INSTRUCTIONS = """\
This server keeps a business's invoices: customers, a catalog of products and prices, invoices and their lines.

Workflow: find the customer (list_customers with `query`) or create it; look up prices (list_prices) when the user \
names catalog items; draft the invoice (create_invoice, then update_invoice / add_invoice_item); show the user the \
lines and totals and let them review the draft. Finalize, send, void or mark paid only when the user asks for that \
step: these act for real (a finalized invoice gets a permanent number; sending e-mails the customer).

Money is an integer in the currency's minor unit (250000 = 2,500.00 USD; JPY has no decimals; BHD has three); \
results also carry `formatted` strings to show the user. Ids are prefixed (cus_, prod_, price_, in_, ii_). Pass an \
`idempotency_key` on writes so a retry never acts twice. Errors carry a `code` (validation, not_found, \
invalid_state, forbidden, rate_limited, …) and, for validation, the failing `errors[].path`.
"""

MONEY_FIELDS = ("subtotal", "discount", "taxable", "tax", "total", "amount_due", "unit_amount", "amount", "tax_amount")


def build_server() -> Server:
    return Server("invoicing", version="1", title="Invoicing", instructions=INSTRUCTIONS,
                  on_list_tools=_list_tools, on_call_tool=_call_tool)


def _descriptor(tool: Tool) -> types.Tool:
    return types.Tool(
        name=tool.name, title=tool.title, description=f"{tool.description} Needs the scope {tool.scope}.",
        input_schema=tool.input_schema(), output_schema=tool.output_schema(),
        annotations=types.ToolAnnotations(title=tool.title, read_only_hint=tool.read_only,
                                          destructive_hint=tool.destructive, idempotent_hint=tool.idempotent,
                                          open_world_hint=tool.open_world))


async def _list_tools(_ctx: ServerRequestContext, _params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[_descriptor(tool) for tool in TOOLS])


async def _call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
    tool = BY_NAME.get(params.name)
    if tool is None:
        raise MCPError(INVALID_PARAMS, f"Unknown tool: {params.name}")
    authorization = ctx.request.headers.get("authorization") if ctx.request is not None else None
    outcome = await anyio.to_thread.run_sync(run_tool, tool, dict(params.arguments or {}), authorization)
    if outcome.error is not None:
        metrics.tool_call(tool.name, outcome.error.code)
        return _error_result(error_payload(outcome.error))
    body = json.loads(outcome.reply.body)
    if outcome.reply.status >= 400:  # a client error kept under the idempotency key, replayed
        metrics.tool_call(tool.name, str(body.get("code", "error")))
        return _error_result(body)
    metrics.tool_call(tool.name, "ok")
    return types.CallToolResult(content=[types.TextContent(type="text", text=outcome.reply.body)],
                                structured_content=body)


def _error_result(payload: dict) -> types.CallToolResult:
    # No structured content: strict clients check it against the output schema, which errors do not match.
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(payload))], is_error=True)


class _Presenter:
    """What is kept under an idempotency key: the tool's structured result, or its error."""

    def success(self, result: Any) -> Reply:
        return Reply(200, dumps(with_formatted_money(json.loads(dumps(result)))), {})

    def failure(self, error: DomainError) -> Reply:
        return Reply(error.status, json.dumps(error_payload(error)), {})


def run_tool(tool: Tool, arguments: dict[str, Any], authorization: str | None) -> Outcome:
    """Split the flat arguments into what the operation takes and run it through the pipeline.
    An assistant may pass an idempotency key on any write, and need not (the REST API requires one
    on lifecycle actions: a header a person's client sets once, which a tool call has no place for)."""
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
        credential=authorization, resource=resources.mcp(), request_id=context.request_id(), params=ids,
        query=query, typed_query=True, query_items=sorted((name, json.dumps(value)) for name, value in query.items()),
        body=json.dumps(rest).encode() if operation.body is not None else b"",
        idempotency_key=key, idempotency_scope=("MCP", tool.name), body_error=error, counted=True)
    return execute(operation, invocation, _Presenter())


def _field_names(model) -> set[str]:
    if model is None:
        return set()
    return {field.alias or name for name, field in model.model_fields.items()} | set(model.model_fields)


def with_formatted_money(value: Any, currency: str | None = None) -> Any:
    """Each object with money gets `formatted`: its amounts as people write them (`"2,500.00 USD"`)."""
    if isinstance(value, list):
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
