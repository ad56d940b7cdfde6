"""Finalizing a draft: it gets the account's next number, its public link's token, and the customer
and issuer (the business profile) frozen into it as they are now; from then on it can no longer be
edited.

One unit of `core.base.executor` (`finalize`), whoever asks: the pipeline runs it on the event loop
for REST, MCP and the dashboard; code on the ORM (a send finalizes a draft first) runs it inside its
session with `finalize_in`. In one transaction, in this order, so that each refusal is the same
whatever the path:

1. the draft is read under its row lock, with its customer, the business profile, whether it has a
   line and the time of its latest event (one statement);
2. it must be a draft (`invalid_state`), with a line (`validation_error` at `lines`), and the account
   needs a business profile (`invalid_state`);
3. an app's limits (`delegated_actions.act_for`), then what the person confirmed, when a surface
   asked (`confirmations.check`, against the invoice as read in 1: what is frozen is what was shown);
4. the endpoints its event goes to are read (`outbox.subscribers`), and, when the customer has a
   credit balance in its currency, those credits under their row locks (`customer_balance`), before
   the number: the account's numbering stays locked from the number's taking to the commit, so only
   writes follow it;
5. the number is taken (`numbering.take_next`: a rollback gives it back, so numbers have no gaps),
   the invoice written with the balance applied to it, and its `invoice.finalized` event with its
   outbox rows (and `invoice.paid`, when the balance covers it whole).
"""

from __future__ import annotations

import functools
import secrets

from pydantic import BaseModel
from sqlalchemy import bindparam, update
from sqlmodel import Session

from core.access.principal import Principal
from core.base import executor, ids
from core.base.clock import now
from core.base.errors import InvalidState, NotFound, ValidationFailed
from core.base.executor import Db
from core.base.jsonout import jsonable
from core.base.lookup import locked_rows
from core.billing import confirmations, customer_balance, delegated_actions, events, invoice_reads, numbering
from core.billing.business import business_to_api
from core.billing.confirmations import Confirmed
from core.billing.invoice_render import assembled, customer_details, invoice_fields, status_of
from core.models import Invoice, plain
from core.webhooks import outbox

INVOICES = invoice_reads.INVOICES
# What finalizing changes on a draft (`opened`), and so what a writer of a finalization writes.
FINALIZED_COLUMNS = ("number", "customer_snapshot", "issuer_snapshot", "public_url_token", "status", "finalized_at",
                     "updated", "balance_applied", "amount_paid", "paid_at")
_ROW = plain(Invoice)


def has_a_line(invoice_id):
    """Whether the invoice `invoice_id` (a value or a column) has a line, as SQL."""
    from sqlalchemy import exists
    return exists().where(invoice_reads.LINES.c.invoice_id == invoice_id)


def require_draft(invoice, action: str) -> None:
    if invoice.status != "draft":
        raise InvalidState(f"Invoice {ids.public_id('invoice', invoice.id)} is {status_of(invoice)}: "
                           f"only a draft can be {action}.")


async def finalize(db: Db, principal: Principal, id_text: str, *, as_action: str | None = "finalize",
                   confirmed: Confirmed | None = None,
                   asked_about: tuple[str, BaseModel | None] = ("finalize", None)) -> dict:
    """Draft to open (see the module); the invoice as the API shows it without lines. `as_action`:
    what an app's limits check it as (None when a send, checked as a send already, finalizes first).
    `confirmed`: what the person was asked about the action `asked_about` (its name and input), when
    a surface asked. Bills the amounts the draft shows (prices are re-read when a draft is saved)."""
    invoice_id = ids.parse("invoice", id_text, what="invoice")
    async with db.transaction() as tx:
        found = await tx.first(LOCKED, {"invoice_id": invoice_id, "account_id": principal.account_id})
        if found is None:
            raise NotFound(f"No such invoice: {id_text}")
        values = tuple(found)
        parts = LOCKED_LAYOUT.parts
        read, customer, profile = parts[""].view(values), parts["c_"].view(values), parts["b_"].view(values)
        invoice = _ROW(**{name: getattr(read, name) for name in INVOICES.c.keys()})
        require_draft(invoice, "finalized")
        if not read.has_line:
            raise ValidationFailed.at("lines", "a draft needs at least one line to be finalized")
        if profile.id is None:
            raise InvalidState("The business profile is missing: finish onboarding before finalizing.")
        if as_action:
            await delegated_actions.act_for(tx, principal, as_action, invoice, customer_name=customer.name)
        if confirmed is not None:
            lines = await tx.rows(invoice_reads.VIEW_LINES_STATEMENT, {"invoice_id": invoice_id})
            confirmations.check(confirmed, invoice_reads.render(values, LOCKED_LAYOUT, lines), *asked_about)
        subscribers = await outbox.subscribers(tx, invoice.account_id, "invoice.finalized")
        available, paid_subscribers = [], []
        if read.has_credit:
            available = await customer_balance.available(tx, invoice.customer_id, invoice.currency)
            if customer_balance.allocate(available, invoice.total)[0] == invoice.total:  # paid at once
                paid_subscribers = await outbox.subscribers(tx, invoice.account_id, "invoice.paid")
        opened(invoice, await numbering.take_next(tx, invoice.account_id, profile.invoice_prefix), customer, profile)
        invoice.balance_applied, spent = customer_balance.allocate(available, invoice.total)
        invoice.amount_paid = invoice.balance_applied
        if invoice.balance_applied and invoice.balance_applied == invoice.total:
            invoice.status, invoice.paid_at = "paid", invoice.finalized_at
        await tx.execute(FINALIZED, {"invoice_id": invoice.id,
                                     **{name: getattr(invoice, name) for name in FINALIZED_COLUMNS}})
        await customer_balance.spend(tx, spent)
        finalized = assembled(invoice_fields(_as_open(invoice)), invoice.customer_snapshot, invoice.issuer_snapshot,
                              None)
        event = events.new_event(invoice, "invoice.finalized", principal.event_meta(), finalized, read.latest_event)
        await events.write(tx, event, subscribers)
        shown = finalized
        if invoice.status == "paid":  # the customer's balance paid it whole
            shown = assembled(invoice_fields(invoice), invoice.customer_snapshot, invoice.issuer_snapshot, None)
            await events.write(tx, events.new_event(invoice, "invoice.paid", {**principal.event_meta(),
                                                                              "by": "customer_balance"},
                                                    shown, event.created_at), paid_subscribers)
    return shown


def _as_open(invoice):
    """`invoice` as it stood when it was finalized, before the balance paid it (for its finalized event)."""
    if invoice.status != "paid":
        return invoice
    opened_row = _ROW(**{name: getattr(invoice, name) for name in INVOICES.c.keys()})
    opened_row.status, opened_row.paid_at = "open", None
    return opened_row


def finalize_in(session: Session, principal: Principal, invoice: Invoice, **options) -> Invoice:
    """`finalize` inside an ORM session's transaction, for code on the ORM: `invoice` as it is then."""
    session.flush()
    executor.within(session, functools.partial(finalize, **options), principal, ids.public_id("invoice", invoice.id))
    locked_rows(session).add(invoice.id)
    session.refresh(invoice)
    return invoice


def opened(invoice, number: str, customer, profile) -> None:
    """The draft `invoice` made open, in memory (its FINALIZED_COLUMNS): its number, the customer and
    the issuer (the business profile) frozen into it as they are now, its public link's token, the
    moment. `invoice`, `customer` and `profile` are rows of their tables, ORM objects or Core rows."""
    invoice.number = number
    invoice.customer_snapshot = customer_details(customer)
    invoice.issuer_snapshot = jsonable(business_to_api(profile))
    invoice.public_url_token = secrets.token_urlsafe(32)
    invoice.status = "open"
    invoice.finalized_at = invoice.updated = now()


# The invoice `:invoice_id` of `:account_id` under its row lock, with what a draft shows of its customer
# and business profile (`c_…`, `b_…`, as `invoice_reads.view_invoice` reads them), whether it has a
# line (`has_line`), the time of its latest event (`latest_event`) and whether its customer has credit
# in its currency (`has_credit`). SQLite takes no row lock: its
# write transaction holds the whole database.
LOCKED = (invoice_reads.invoice_statement(lines_in_row=False)
          .add_columns(has_a_line(INVOICES.c.id).label("has_line"),
                       events.latest_time(INVOICES.c.id).label("latest_event"),
                       customer_balance.has_credit(INVOICES.c.customer_id, INVOICES.c.currency).label("has_credit"))
          .with_for_update(of=INVOICES))
LOCKED_LAYOUT = invoice_reads.Layout.of(LOCKED)
FINALIZED = update(INVOICES).where(INVOICES.c.id == bindparam("invoice_id", type_=INVOICES.c.id.type)).values(
    {name: bindparam(name, type_=INVOICES.c[name].type) for name in FINALIZED_COLUMNS})
