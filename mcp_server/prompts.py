"""Prompts that lead an assistant through the tools in the right order (look up before creating,
preview, let the person confirm), and completion of their arguments and of the PDF's invoice id.

Completion values are ids the tools accept (`cus_…`, `in_…`), of the caller's own account only, and
take the scope of the read tool they stand for (the gate refuses without it). The protocol carries
no titles for completion values, so the ids come in the order of the names or numbers they match.
"""

from __future__ import annotations

import re

import mcp.types as types
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS
from starlette.concurrency import run_in_threadpool

from core.base.db import new_session
from core.billing import invoices
from core.catalog import customers
from mcp_server.confirmations import principal_of
from mcp_server.resources import PDF_TEMPLATE

COMPLETIONS_MAX = 100
NOTES_MAX = 5000
MONTH = re.compile(r"\d{4}-(0[1-9]|1[0-2])")

PROMPTS = (
    types.Prompt(name="draft_invoice_from_notes", title="Draft an invoice from notes",
                 description="Turn notes (what was done, for whom, how much) into a draft invoice the person reviews.",
                 arguments=[types.PromptArgument(name="notes", description="What to bill, in your own words",
                                                 required=True),
                            types.PromptArgument(name="customer", description="The customer (cus_…), if known",
                                                 required=False)]),
    types.Prompt(name="chase_overdue_invoices", title="Chase overdue invoices",
                 description="Find overdue invoices and prepare reminders for the person to approve."),
    types.Prompt(name="month_end_summary", title="Month-end summary",
                 description="What was invoiced, paid and is still due in a month.",
                 arguments=[types.PromptArgument(name="month", description="YYYY-MM; the current month if omitted",
                                                 required=False)]),
)
CUSTOMER_SCOPE, INVOICE_SCOPE = "clients:read", "invoices:read"


def completion_scope(ref: object, argument: object) -> str | None:
    """The scope a `completion/complete` request needs (checked by the gate), from its JSON params."""
    if not isinstance(ref, dict) or not isinstance(argument, dict):
        return None
    if ref.get("type") == "ref/prompt" and argument.get("name") == "customer":
        return CUSTOMER_SCOPE
    if ref.get("type") == "ref/resource" and ref.get("uri") == PDF_TEMPLATE and argument.get("name") == "invoice_id":
        return INVOICE_SCOPE
    return None


async def list_prompts(_ctx: ServerRequestContext, _params) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=list(PROMPTS))


async def get_prompt(_ctx: ServerRequestContext, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    arguments = params.arguments or {}
    if params.name == "draft_invoice_from_notes":
        text = _draft(arguments)
    elif params.name == "chase_overdue_invoices":
        text = _chase()
    elif params.name == "month_end_summary":
        text = _month_end(arguments)
    else:
        raise MCPError(INVALID_PARAMS, f"Unknown prompt: {params.name[:100]}")
    prompt = next(p for p in PROMPTS if p.name == params.name)
    return types.GetPromptResult(description=prompt.description, messages=[
        types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))])


def _draft(arguments: dict) -> str:
    notes = arguments.get("notes") or ""
    if not notes.strip():
        raise MCPError(INVALID_PARAMS, "The argument notes is required: what to bill.")
    if len(notes) > NOTES_MAX:
        raise MCPError(INVALID_PARAMS, f"The argument notes is longer than {NOTES_MAX} characters.")
    customer = arguments.get("customer")
    who = (f"The customer is {customer}: check it with get_customer." if customer else
           "Find the customer with list_customers (`query` with part of the name). Create one with create_customer "
           "only if none matches, and ask the person first.")
    return "\n".join([
        "Draft an invoice from these notes:", "", notes.strip(), "",
        "Steps:",
        f"1. {who}",
        "2. For catalog items, look up their prices with list_prices; bill anything else as an ad-hoc line "
        "(description and unit_amount in minor units: 250000 is 2,500.00 in a two-decimal currency).",
        "3. Call preview_invoice with the customer and the lines, and show the person the lines and the totals "
        "(use the `formatted` amounts). Ask what to change.",
        "4. When the person agrees, create the draft with create_invoice, passing an idempotency_key.",
        "5. Stop there. Finalize or send only when the person asks; they will be asked to confirm.",
    ])


def _chase() -> str:
    return "\n".join([
        "Chase overdue invoices:",
        "1. Call get_receivables: per currency, what is `overdue` and how old (its `buckets`: days_1_30, "
        "days_31_60, days_61_90, days_over_90 past due), and per customer the same, largest first (follow "
        "next_cursor for more customers). Do not add up invoices yourself: these figures are the service's.",
        "2. For each customer with something overdue, list their overdue invoices with list_invoices (`status` "
        "overdue, `customer`): number, amount_due (the `formatted` amount), due date. A part-paid invoice "
        "(amount_paid above 0) is owed only its amount_due.",
        "3. Show the person, per customer, what is overdue and its oldest bucket, and propose a short polite "
        "reminder for each, firmer for the older buckets.",
        "4. For each reminder the person approves, call send_reminder with the invoice and your words as "
        "`message` (put before the reminder's own text). The person is asked to confirm each e-mail; never send "
        "without their approval.",
        "5. If the person says an invoice was paid meanwhile, do not remind: record what arrived with "
        "record_payment (they are asked to confirm it) and leave it out.",
    ])


def _month_end(arguments: dict) -> str:
    month = arguments.get("month")
    if month and not MONTH.fullmatch(month):
        raise MCPError(INVALID_PARAMS, "The argument month must be YYYY-MM, for example 2026-11.")
    period = f"the month {month}" if month else "the current month"
    bounds = (f"`from` {month}-01 and `to` the last day of {month}" if month else
              "`from` the first and `to` the last day of the current month")
    return "\n".join([
        f"Summarize invoicing for {period}:",
        f"1. Invoiced: list the invoices issued in it with list_invoices, {bounds} (follow next_cursor), and "
        "give how many and their totals per currency, with the drafts still waiting for review apart.",
        "2. Paid: list_payments (newest first; follow next_cursor until they were `created` before the month) and "
        "count the payments with `status` recorded whose `paid_on` falls in the month, per currency and method; "
        "say which ones were reversed.",
        "3. Still due: call get_receivables for what customers owe on open invoices per currency, `outstanding` "
        "and `overdue` with the aging `buckets`, and the largest customers; use its figures as they are "
        "rather than adding up invoices. They are as of today (`as_of`), not the month's last day: say so.",
        "4. Present the summary in a short table per currency (the `formatted` amounts); never add amounts of "
        "different currencies. Do not change anything.",
    ])


async def complete(ctx: ServerRequestContext, params: types.CompleteRequestParams) -> types.CompleteResult:
    principal = principal_of(ctx)
    ref, argument = params.ref, params.argument
    typed = (argument.value or "")[:200]
    values: list[str] = []
    if principal is not None and isinstance(ref, types.PromptReference) and argument.name == "customer" \
            and ref.name == "draft_invoice_from_notes":
        values = [customer_id for customer_id, _ in await run_in_threadpool(
            _matching, customers.names_starting_with, principal.account_id, typed)]
    elif principal is not None and isinstance(ref, types.ResourceTemplateReference) and ref.uri == PDF_TEMPLATE \
            and argument.name == "invoice_id":
        values = [invoice_id for invoice_id, _ in await run_in_threadpool(
            _matching, invoices.numbers_starting_with, principal.account_id, typed)]
    return types.CompleteResult(completion=types.Completion(values=values, has_more=len(values) == COMPLETIONS_MAX))


def _matching(finder, account_id, typed: str) -> list[tuple[str, str]]:
    session = new_session(read_only=True)
    try:
        return finder(session, account_id, typed, COMPLETIONS_MAX)
    finally:
        session.close()
