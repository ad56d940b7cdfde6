"""The MCP server: lists the tools and runs a call through the operation pipeline."""

from __future__ import annotations

import functools
import hashlib
import hmac
import json

import mcp.types as types
import orjson
from mcp.server import Server, ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS
from starlette.concurrency import run_in_threadpool

from config.settings import get_settings
from core.access.principal import Principal
from core.base import metrics
from core.base.errors import ConfirmationStale, ValidationFailed
from core.billing.confirmations import NOTHING_ASKED, Confirmed
from mcp_server import bulk, caching, calls, confirmations, icons, live, prompts, resources, tasks
from mcp_server.clients import APPS_EXTENSION
from mcp_server.confirmations import CONFIRM_TOOL
from mcp_server.resources import VIEW_URI
from mcp_server.tools import BY_NAME, TOOLS, Tool
from operations.bulk import REPEATS, inputs_of
from operations.confirmations import ACTIONS, question_for
from operations.pipeline import Outcome
from operations.rendering import error_payload

INSTRUCTIONS = """\
This server keeps a business's invoices: customers, a catalog of products and prices, invoices and their lines.

Workflow: find the customer (list_customers with `query`) or create it; look up prices (list_prices) when the user \
names catalog items; show the user the lines and totals with preview_invoice (nothing is saved) before drafting; \
draft the invoice (create_invoice, then update_invoice / add_invoice_item) and let them review the draft. Finalize, \
send, void, mark paid, record or reverse a payment only when the user asks for that step: these act for real (a \
finalized invoice gets a permanent number; sending e-mails the customer), and the person is asked to confirm where \
your client can ask. \
A declined confirmation answers {"declined": true}: nothing changed. An issued invoice is never edited: correct it \
with a credit note (preview_credit_note, then create_credit_note when the user asks), which credits part or all of \
it, off what is due, refunded, or to the customer's balance. Money received is recorded with record_payment (part \
or all of what is due; reverse_payment undoes one, reopening a paid invoice); what customers owe, overdue and by \
age, is get_receivables: use it rather than adding up invoices. send_reminder e-mails a customer a payment \
reminder of one open or overdue invoice, when the user asks (the person is asked to confirm). Recurring invoices are \
invoice schedules (create_invoice_schedule, when the user asks: show the first invoice with preview_invoice first; \
list_invoice_schedules; pause, resume or cancel one). The PDF of an invoice is the resource \
invoice://{id}/pdf, of a credit note credit-note://{id}/pdf; the prompts draft_invoice_from_notes, \
chase_overdue_invoices and month_end_summary guide common tasks.

Money is an integer in the currency's minor unit (250000 = 2,500.00 USD; JPY has no decimals; BHD has three); \
results also carry `formatted` strings to show the user. Ids are prefixed (cus_, prod_, price_, in_, ii_, cn_, \
py_, sched_). Pass an `idempotency_key` on writes so a retry never acts twice. Errors carry a `code` (validation, not_found, \
invalid_state, forbidden, rate_limited, …) and, for validation, the failing `errors[].path`.
"""



# Tools whose results the invoice view shows (MCP Apps hosts render it beside the text).
VIEWED = ("get_invoice", "create_invoice", "preview_invoice", *ACTIONS)
LINKED = ("get_invoice", "create_invoice", "finalize_invoice", "send_invoice")  # results link the PDF
CREDIT_NOTE_LINKED = ("get_credit_note", "create_credit_note", "send_credit_note")
CONFIRM_TOOL_DESCRIPTOR = types.Tool(
    name=CONFIRM_TOOL, title="Confirm or cancel an action",
    description="Used by the invoice view's Confirm and Cancel buttons: runs, or drops, exactly the action the "
                "person was asked about, with the token the view was given. Not for the assistant.",
    input_schema={"type": "object", "required": ["token", "decision"], "additionalProperties": False, "properties": {
        "token": {"type": "string", "minLength": 1, "description": "The confirmation token the view was given"},
        "decision": {"type": "string", "enum": ["confirm", "cancel"], "description": "The person's answer"}}},
    output_schema={"type": "object", "description": "The confirmed tool's result, or {declined: true, …}"},
    icons=icons.tool_icons(CONFIRM_TOOL),
    annotations=types.ToolAnnotations(title="Confirm or cancel an action", read_only_hint=False,
                                      destructive_hint=True, idempotent_hint=False, open_world_hint=True),
    meta={"ui": {"resourceUri": VIEW_URI, "visibility": ["app"]}})


def build_server() -> Server:
    server = Server("invoicing", version="1", title="Invoicing", instructions=INSTRUCTIONS, icons=icons.server_icons(),
                    cache_hints=caching.HINTS,
                    on_list_tools=_list_tools, on_call_tool=_call_tool,
                    on_list_resources=resources.list_resources,
                    on_list_resource_templates=resources.list_resource_templates,
                    on_read_resource=resources.read_resource,
                    on_list_prompts=prompts.list_prompts, on_get_prompt=prompts.get_prompt,
                    on_completion=prompts.complete, get_tool_input_schema=_input_schema)
    server.extensions[APPS_EXTENSION] = {}
    live.install(server)  # subscriptions/listen: live invoice status
    tasks.install(server)
    server.middleware.append(_advertise_extensions_on_initialize)
    # `requestState` of confirmations, sealed with a key of ours so any process opens it, bound to the credential.
    server.middleware.append(RequestStateBoundary(RequestStateSecurity(
        keys=[_state_key()], ttl=confirmations.LIFETIME.total_seconds(), bind_principal=confirmations.bind_principal),
        default_audience="invoicing"))
    return server


def _state_key() -> bytes:
    return hmac.new(get_settings().signing_key, b"mcp/request-state/v1", hashlib.sha256).digest()


async def _advertise_extensions_on_initialize(ctx, call_next):
    """The SDK leaves `extensions` out of a handshake-era `initialize` result; hosts look there for MCP Apps."""
    result = await call_next(ctx)
    if ctx.method == "initialize" and isinstance(result, dict):
        capabilities = {**(result.get("capabilities") or {}), "extensions": {APPS_EXTENSION: {}}}
        result = {**result, "capabilities": capabilities}
    return result


def _input_schema(name: str) -> dict | None:
    """A tool's input schema as listed (the SDK checks `Mcp-Param-*` headers against it on each call)."""
    listed = _listed_by_name().get(name) if isinstance(name, str) else None
    return listed.input_schema if listed is not None else None


@functools.cache
def _listed_by_name() -> dict[str, types.Tool]:
    return {tool.name: tool for tool in _descriptors()}


def _descriptor(tool: Tool) -> types.Tool:
    return types.Tool(
        name=tool.name, title=tool.title, description=f"{tool.description} Needs the scope {tool.scope}.",
        input_schema=tool.input_schema(), output_schema=tool.output_schema(), icons=icons.tool_icons(tool.name),
        annotations=types.ToolAnnotations(title=tool.title, read_only_hint=tool.read_only,
                                          destructive_hint=tool.destructive, idempotent_hint=tool.idempotent,
                                          open_world_hint=tool.open_world),
        meta={"ui": {"resourceUri": VIEW_URI}} if tool.name in VIEWED else None)


@functools.cache
def _descriptors() -> tuple[types.Tool, ...]:
    """Every tool as listed: the same for every caller and for the process's life (schemas and icons
    are built once: a listing is half a megabyte)."""
    return (*(_descriptor(tool) for tool in TOOLS), CONFIRM_TOOL_DESCRIPTOR)


async def _list_tools(_ctx: ServerRequestContext, _params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=list(_descriptors()))


async def _call_tool(ctx: ServerRequestContext,
                     params: types.CallToolRequestParams) -> types.CallToolResult | types.InputRequiredResult:
    authorization = ctx.request.headers.get("authorization") if ctx.request is not None else None
    arguments = dict(params.arguments or {})
    if params.name == CONFIRM_TOOL:
        async def act_in_view(name: str, confirmed_arguments: dict, confirmed: Confirmed):
            return await _act_as_confirmed(ctx, BY_NAME[name], confirmed_arguments, authorization, confirmed,
                                           in_view=True)
        return await confirmations.from_app(ctx, arguments, act_in_view)
    tool = BY_NAME.get(params.name)
    if tool is None:
        raise MCPError(INVALID_PARAMS, f"Unknown tool: {params.name}")
    if tool.name in REPEATS:
        traits = confirmations.traits_for(ctx)
        if traits.apps and not traits.elicitation:
            return _error_result(error_payload(bulk.refused_without_elicitation()))
        try:
            inputs_of(tool.name, arguments)  # refused before a task is made for it
        except ValidationFailed as refused:
            return _error_result(error_payload(refused))
    if tool.name in tasks.TASK_TOOLS and tasks.negotiated(ctx):
        return await _as_task(ctx, tool, arguments, authorization)
    if tool.name not in ACTIONS:
        return await _act(tool, arguments, authorization, confirmations.caller_as_authenticated(ctx))
    decision = await confirmations.before_acting(ctx, tool.name, arguments, params, calls.with_formatted_money)
    if not isinstance(decision, confirmations.Proceed):
        return decision
    return await _act_as_confirmed(ctx, tool, arguments, authorization, decision.confirmed)


async def _act_as_confirmed(ctx: ServerRequestContext, tool: Tool, arguments: dict, authorization: str | None,
                            confirmed: Confirmed | None, *,
                            in_view: bool = False) -> types.CallToolResult | types.InputRequiredResult:
    """Run a consequential tool; when it no longer does what the person confirmed (or a question is
    due that was not asked), nothing happened: ask about the invoice as it is now."""
    outcome = await calls.run_tool(tool, dict(arguments), authorization, confirmed, confirmations.caller_as_authenticated(ctx))
    if outcome.error is not None and outcome.error.code == ConfirmationStale.code:
        metrics.tool_call(tool.name, outcome.error.code)
        asked = await confirmations.ask_again(ctx, tool.name, arguments, calls.with_formatted_money, in_view=in_view,
                                              first=confirmed is None or confirmed.digest is None)
        return asked or confirmations.changed(tool.name)
    return _result(tool, outcome)


async def _act(tool: Tool, arguments: dict, authorization: str | None,
               caller: Principal | None) -> types.CallToolResult:
    return _result(tool, await calls.run_tool(tool, dict(arguments), authorization, None, caller))


async def _as_task(ctx: ServerRequestContext, tool: Tool, arguments: dict, authorization: str | None) -> dict:
    """Start the call as a task (`tasks`): the handle now, the work on this process's loop. A bulk send
    asks the person through the task when the client can be asked (the client's scopes decide
    otherwise); each invoice's send verifies the credential again, as the person may answer minutes later."""
    principal = confirmations.principal_of(ctx)
    can_ask = confirmations.traits_for(ctx).elicitation

    async def send_each(run: tasks.TaskRun) -> types.CallToolResult:
        asked = await run_in_threadpool(question_for, tool.name, principal, arguments) if can_ask else None
        if asked is not None:
            approved, answer = await run.ask(asked)
            if not approved:
                return confirmations.declined(tool.name, arguments, answer)
        confirmed = asked.confirmed if asked is not None else (NOTHING_ASKED if can_ask else None)
        return _result(tool, await calls.run_each(tool, dict(arguments), authorization, confirmed, None, asked=asked,
                                             run=run))

    async def export(run: tasks.TaskRun) -> types.CallToolResult:
        run.done_so_far = "Nothing was exported."
        return _result(tool, await calls.run_tool(tool, dict(arguments), authorization, None, principal))

    return await tasks.start(ctx, tool.name, arguments, send_each if tool.name in REPEATS else export,
                             can_ask=can_ask)


def _result(tool: Tool, outcome: Outcome) -> types.CallToolResult:
    if outcome.error is not None:
        metrics.tool_call(tool.name, outcome.error.code)
        return _error_result(error_payload(outcome.error))
    body = orjson.loads(outcome.reply.body)
    if outcome.reply.status >= 400:  # a client error kept under the idempotency key, replayed
        metrics.tool_call(tool.name, str(body.get("code", "error")))
        return _error_result(body)
    metrics.tool_call(tool.name, "ok")
    return types.CallToolResult(content=result_content(tool.name, outcome.reply.body, body), structured_content=body)


def result_content(tool_name: str, text: str, body: dict) -> list:
    """A successful call's content: its result as text and, for a tool about one invoice, links to
    the invoice's PDF and public page (about a credit note, to its PDF)."""
    content: list = [types.TextContent(type="text", text=text)]
    if tool_name in LINKED:
        invoice = body.get("data", body)
        content += [link for link in (resources.pdf_link(invoice), resources.public_link(invoice)) if link]
    elif tool_name in CREDIT_NOTE_LINKED:
        content.append(resources.credit_note_pdf_link(body.get("data", body)))
    elif tool_name == "export_e_invoices":
        content.append(types.ResourceLink(type="resource_link", uri=body["uri"], name=body["filename"],
                                          title=f"E-invoices, {body['documents']} documents (ZIP, kept 24 hours)",
                                          mime_type="application/zip", size=body["size"]))
    return content


AUTHORIZATION_DENIAL = "io.modelcontextprotocol/authorization"  # the draft extension SEP-2643


def _error_result(payload: dict) -> types.CallToolResult:
    # No structured content: strict clients check it against the output schema, which errors do not match.
    meta = None
    if payload.get("code") == "grant_limit_exceeded":  # a structured denial: what the person can do, and where
        meta = {AUTHORIZATION_DENIAL: {"reason": "insufficient_authorization", "remediation": "available",
                                       "url": payload.get("remediation_url"), "message": payload.get("detail")}}
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(payload))], is_error=True,
                                meta=meta)
