"""`send_invoices` and `send_reminders`: the single tool run for each invoice of a list, in order.

Each invoice goes through the single tool's own operation (`operations.bulk` says why), with an
idempotency key derived from the call's (`<key>:<invoice>`), so retrying the list never sends one
twice. What the person confirmed for the list gives each send the confirmation of its own invoice,
which the send checks under its lock. The first e-mail limit reached stops the run there: the rest
are reported as not attempted.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable

from starlette.concurrency import run_in_threadpool

from core.access.principal import Principal
from core.base import ids
from core.base.errors import ConfirmationStale, DomainError, GrantLimitExceeded, InvalidState, RateLimited
from core.billing.confirmations import Confirmed
from operations.bulk import REPEATS, BulkOut, ItemNotSent, ItemSent, inputs_of, label
from operations.confirmations import Question, question_for
from operations.pipeline import Outcome

RunSingle = Callable[[str, dict, Confirmed | None], Awaitable[Outcome]]
Between = Callable[[int, int, str], Awaitable[None]]


async def run_each(tool: str, arguments: dict, principal: Principal, confirmed: Confirmed | None,
                   run_single: RunSingle, *, asked: Question | None = None, between: Between | None = None,
                   progress_note: Callable[[str], None] | None = None) -> dict:
    """Run the single tool `tool` repeats for each invoice of `arguments`; the outcome (`BulkOut`).
    `confirmed`: what the person said yes to, for the list (ConfirmationStale when the list would now
    be another); `asked`: the question already put (and answered yes) in this process, whose items
    are used as they are. `between` runs before each invoice (a task reports, and stops there when
    cancelled); `progress_note` hears what was done so far."""
    inputs = inputs_of(tool, arguments)
    if asked is None and confirmed is not None and confirmed.digest is not None:
        asked = await run_in_threadpool(question_for, tool, principal, arguments)
        if asked is None or asked.confirmed.digest != confirmed.digest:
            raise ConfirmationStale("One of the invoices (or what goes with it) changed after the person was asked: "
                                    "nothing was sent. The person must be asked again about the list as it is now.")
    key = arguments.get("idempotency_key")
    extra = {"message": inputs.message} if inputs.message is not None else {}
    sent: list[ItemSent] = []
    not_sent: list[ItemNotSent] = []
    stopped: str | None = None
    total = len(inputs.invoices)
    for index, invoice in enumerate(inputs.invoices):
        if stopped is not None:
            not_sent.append(ItemNotSent(invoice=invoice, code="not_attempted", detail=stopped))
            continue
        if between is not None:
            await between(index, total, invoice)
        item_key = {"idempotency_key": item_key_of(key, invoice)} if key is not None else {}
        item_confirmed = asked.confirmation_of(invoice) if asked is not None else confirmed
        outcome = await run_single(REPEATS[tool], {"invoice": invoice, **extra, **item_key}, item_confirmed)
        error = _error_of(outcome)
        if error is None:
            sent.append(_sent(invoice, json.loads(outcome.reply.body), due=tool == "send_reminders"))
        else:
            not_sent.append(ItemNotSent(invoice=invoice, code=error["code"], detail=error["detail"]))
            if error["code"] in STOPPING:
                stopped = f"Stopped at {STOPPING[error['code']]}: {error['detail']}"
        if progress_note is not None:
            progress_note(_so_far(sent, not_sent, total))
    outcome_word = "reminded" if tool == "send_reminders" else "sent"
    return BulkOut(sent=sent, not_sent=not_sent, stopped=stopped,
                   summary=label(outcome_word, len(sent), total, stopped)).model_dump()


# Refusals that every invoice after would meet too: the run stops there.
STOPPING = {RateLimited.code: "an e-mail limit", GrantLimitExceeded.code: "a limit the person set for this app"}


def item_key_of(key: str, invoice: str) -> str:
    """The idempotency key of one invoice's send: the list's key and the invoice (however it was named),
    hashed, so that no key length can make two invoices share one."""
    parsed = ids.try_parse("invoice", invoice)
    named = parsed.hex if parsed is not None else invoice
    return "list:" + hashlib.sha256(f"{key}\x00{named}".encode()).hexdigest()


def _error_of(outcome: Outcome) -> dict | None:
    if outcome.error is not None:
        return {"code": outcome.error.code, "detail": outcome.error.detail}
    if outcome.reply is not None and outcome.reply.status >= 400:  # a refusal kept under the key, replayed
        body = json.loads(outcome.reply.body)
        return {"code": str(body.get("code", "error")), "detail": str(body.get("detail", ""))}
    return None


def _sent(invoice: str, body: dict, *, due: bool) -> ItemSent:
    """An item sent, from the single tool's result (`SendOut`, `RemindOut`): a reminder shows what is due."""
    view = body["data"]
    return ItemSent(invoice=view["id"], number=view.get("number"), emailed_to=body["emailed_to"],
                    amount=view["amount_due" if due else "total"], currency=view["currency"])


def _so_far(sent: list[ItemSent], not_sent: list[ItemNotSent], total: int) -> str:
    done = f"Sent {len(sent)} of {total}"
    if sent:
        done += f" ({', '.join(item.number or item.invoice for item in sent)})"
    if not_sent:
        done += f"; not sent: {', '.join(f'{item.invoice} ({item.code})' for item in not_sent)}"
    return done + "."


def refused_without_elicitation() -> DomainError:
    return InvalidState("Sending a list needs a client that can ask the person (elicitation): send each invoice "
                        "with its single tool, which the invoice view can confirm.")
