"""Several invoices e-mailed, or reminded of, in one call: what an assistant gives and gets back.

A bulk call is the single action repeated, one invoice after the other, each through its own
operation (`invoices.send_invoice`, `reminders.remind_invoice`): the same checks, limits, events and
errors as that many separate calls, under idempotency keys derived from the call's own. The person
confirms the list once (`operations.confirmations`), and each send still checks, under its own lock,
that its invoice is what the list showed. The run stops at the first e-mail limit reached and says
what was and was not sent.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, field_validator

from core.base import ids
from core.base.validation import MULTI_LINE, Input, parse
from core.billing.sending import MESSAGE_MAX
from core.mechanisms.idempotency import check_key
from operations.pipeline import Call, Operation

MAX_INVOICES = 50
# Each bulk tool: the single tool it repeats, and what the items' results call the invoice.
REPEATS = {"send_invoices": "send_invoice", "send_reminders": "send_reminder"}


class BulkInput(Input):
    invoices: list[Annotated[str, Field(min_length=1, max_length=100)]] = Field(
        min_length=1, max_length=MAX_INVOICES,
        description=f"The invoices' ids (in_… or UUID), 1 to {MAX_INVOICES}, each once, in the order to send them")
    message: Annotated[str | None, MULTI_LINE] = Field(default=None, max_length=MESSAGE_MAX,
                                                       description="A note put in every e-mail")

    @field_validator("invoices")
    @classmethod
    def _each_once(cls, value: list[str]) -> list[str]:
        named = [parsed.hex if (parsed := ids.try_parse("invoice", invoice)) else invoice for invoice in value]
        if len(set(named)) != len(named):
            raise ValueError("names an invoice more than once (an in_… id and its UUID are the same invoice)")
        return value


class BulkSendInput(BulkInput):
    """E-mail each invoice to its customer's address, with its PDF (a draft is finalized first)."""


class BulkRemindInput(BulkInput):
    """E-mail a payment reminder of each open or overdue invoice to the address it was issued to."""


class ItemSent(BaseModel):
    invoice: str = Field(description="The invoice's id")
    number: str | None = Field(description="Its number")
    emailed_to: str = Field(description="The primary recipient")
    amount: int = Field(description="What the e-mail shows: the total of a sent invoice, what is due of a reminder")
    currency: str


class ItemNotSent(BaseModel):
    invoice: str = Field(description="The invoice's id, as given")
    code: str = Field(description="Why: the error code the single tool answers (not_found, invalid_state, "
                                  "confirmation_stale, rate_limited…), or not_attempted after a stop")
    detail: str


class BulkOut(BaseModel):
    """What was sent and what was not, in the order given."""

    sent: list[ItemSent]
    not_sent: list[ItemNotSent]
    stopped: str | None = Field(description="Why the run stopped before the end (an e-mail limit reached), or null")
    summary: str = Field(description="The outcome in a sentence")


def inputs_of(tool: str, arguments: dict) -> BulkInput:
    """A bulk tool's flat arguments checked (ValidationFailed at the field): the list, the note, and the
    idempotency key given to the list."""
    if "idempotency_key" in arguments:
        check_key(arguments["idempotency_key"], path="idempotency_key")
    return parse(BulkSendInput if tool == "send_invoices" else BulkRemindInput,
                 {name: value for name, value in arguments.items() if name != "idempotency_key"})


def label(outcome: Literal["sent", "reminded"], sent: int, total: int, stopped: str | None) -> str:
    verb = "Sent" if outcome == "sent" else "Reminded of"
    summary = f"{verb} {sent} of {total} invoice{'s' if total != 1 else ''}."
    return f"{summary} {stopped}" if stopped else summary


def _one_by_one(_call: Call) -> None:
    raise NotImplementedError("a bulk call runs its single operation for each invoice (mcp_server.bulk)")


# What the bulk tools are, for their scope and their input and output schemas; each invoice runs the single
# operation (`invoices.send_invoice`, `reminders.remind_invoice`), never this handler.
send_invoices = Operation("send_invoices", _one_by_one, scope="invoices:send", body=BulkSendInput,
                          body_required=True, response=BulkOut)
send_reminders = Operation("send_reminders", _one_by_one, scope="invoices:send", body=BulkRemindInput,
                           body_required=True, response=BulkOut)
