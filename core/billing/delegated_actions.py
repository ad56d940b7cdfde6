"""Consequential actions an app takes for a person, within the limits the person set.

Before an app (an OAuth token) finalizes, sends, marks paid or voids, `act_for` checks the app's
authorization details (every live grant of the app holds the same: `authz.connected_apps`): the
action must be listed, the invoice total within `max_amount` in that same currency, and the actions
of the last 24 hours under `max_per_day`. The day's count is the app's for that person and business,
over all its sign-ins (MCP and REST, a step-up, another device), disconnected ones included: signing
in again does not start a new day. The check runs in the action's own transaction, after the
account's row is locked, so concurrent requests (on any process, through any grant) cannot slip past
a daily count; the action is recorded there too, so a failed action is not counted. A
refusal is recorded after the action's transaction rolls back (the pipeline stores it) and raised as
`GrantLimitExceeded`, naming where the person can raise the limit or finish the action.
Every action of an app is recorded, limited or not: the connected-apps page shows them.
"""

from __future__ import annotations

import functools
import uuid
from datetime import timedelta
from urllib.parse import urlencode

from sqlalchemy import bindparam, func, insert
from sqlmodel import Session, select

from config.settings import get_settings
from core.access import resources
from core.access.authorization_details import VERBS, InvoiceActions
from core.access.principal import Principal
from core.base import ids
from core.base.clock import now
from core.base.errors import GrantLimitExceeded
from core.base.executor import Db
from core.base.money import format_money
from core.models import Account, Customer, DelegatedAction, Invoice, inserted_values

DAY = timedelta(hours=24)
RECENT = 50


def remediation_url(principal: Principal, action: str | None = None, invoice: Invoice | None = None) -> str:
    """The dashboard page where the person sees this app's limits, raises them, or finishes an action."""
    query = {"action": action, "invoice": ids.public_id("invoice", invoice.id)} if action and invoice else {}
    page = f"{get_settings().origin.rstrip('/')}/settings/apps/{principal.grant_id}"
    return page + (f"?{urlencode(query)}" if query else "")


async def act_for(db: Db, principal: Principal, action: str, invoice, *, customer_name: str | None = None,
                  amount: int | None = None) -> None:
    """Check and record an app's `action` on `invoice` (a row of `invoices`, ORM or Core); raise
    GrantLimitExceeded when beyond its limits. `customer_name`: the draft's customer's, when the
    caller read it already (a draft's record names it). `amount`: what `max_amount` is compared with
    and the record keeps, when not the invoice total (a credit note's total). A unit of `core.base.executor`, in the
    action's transaction (on the ORM: `executor.within(session, act_for, …)`)."""
    if principal.actor != "oauth_app" or principal.grant_id is None:
        return
    details = principal.authorization_details
    if details is not None:
        await db.execute(ACCOUNT_LOCK, {"account_id": principal.account_id})
        refusal = await _refusal(db, principal, action, invoice, details, amount)
        if refusal is not None:  # recorded once the action's own transaction has rolled back
            raise GrantLimitExceeded(refusal + " The person can raise the limit in the dashboard, or do it there "
                                     "themselves.", remediation_url=remediation_url(principal, action, invoice),
                                     record=await _record(db, principal, action, invoice, "refused", refusal,
                                                          customer_name, amount))
    await db.execute(INSERT_ACTION, inserted_values(await _record(db, principal, action, invoice, "done", None,
                                                                  customer_name, amount)))


async def _refusal(db: Db, principal: Principal, action: str, invoice, details: tuple[InvoiceActions, ...],
                   amount: int | None = None) -> str | None:
    listing = [detail for detail in details if action in detail.actions]
    if not listing:
        return f"The person did not allow this app to {VERBS[action]} invoices."
    reasons = []
    for detail in listing:
        reason = await _beyond(db, principal, action, invoice, detail, invoice.total if amount is None else amount)
        if reason is None:
            return None
        reasons.append(reason)
    return reasons[0]


async def _beyond(db: Db, principal: Principal, action: str, invoice, detail: InvoiceActions,
                  amount_acted: int) -> str | None:
    total = format_money(amount_acted, invoice.currency)
    if detail.max_amount is not None:
        currency, amount = detail.max_amount
        limit = format_money(amount, currency)
        if currency != invoice.currency:
            return (f"This app may {VERBS[action]} invoices of up to {limit}; this invoice is in {invoice.currency} "
                    f"({total}), outside that limit.")
        if amount_acted > amount:
            return f"This app may {VERBS[action]} invoices of up to {limit}; this one totals {total}."
    if detail.max_per_day is not None and await done_today(db, principal.account_id, principal.client_id,
                                                           principal.user_id, detail.actions) >= detail.max_per_day:
        return (f"This app may {VERBS[action]} at most {detail.max_per_day} invoice"
                f"{'' if detail.max_per_day == 1 else 's'} in 24 hours, and it has.")
    return None


def _of_app(account_id, client_id, user_id) -> tuple:
    """An app's actions for a person and business: its grants always name both (a bound parameter
    compared to NULL would match nothing)."""
    return (ACTIONS.c.account_id == account_id, ACTIONS.c.user_id == user_id, ACTIONS.c.client_id == client_id)


async def done_today(db: Db, account_id: uuid.UUID, client_id: str | None, user_id: uuid.UUID | None,
                     actions: tuple[str, ...]) -> int:
    """How many of `actions` the app did for this person and business in the last 24 hours, through
    any of its sign-ins: what `max_per_day` counts."""
    found = await db.first(_done_today(len(actions)), {
        "account_id": account_id, "client_id": client_id, "user_id": user_id, "since": now() - DAY,
        **{f"action_{at}": action for at, action in enumerate(actions)}})
    return found[0]


async def _label(db: Db, invoice, customer_name: str | None) -> str:
    if invoice.number:
        return invoice.number
    if customer_name is None:
        customer = await db.first(CUSTOMER_NAME, {"customer_id": invoice.customer_id})
        customer_name = customer.name if customer else None
    return f"draft for {customer_name or 'a customer'}"[:300]


async def _record(db: Db, principal: Principal, action: str, invoice, outcome: str,
                  detail: str | None, customer_name: str | None = None, amount: int | None = None) -> DelegatedAction:
    via = resources.label(principal.resource or "")
    return DelegatedAction(account_id=principal.account_id, grant_id=principal.grant_id, client_id=principal.client_id,
                           user_id=principal.user_id, client_name=principal.client_name,
                           action=action, via=via, invoice_id=invoice.id, invoice_label=await _label(db, invoice, customer_name),
                           amount=invoice.total if amount is None else amount, currency=invoice.currency,
                           outcome=outcome,
                           detail=(detail or None) and detail[:1000])


ACTIONS = DelegatedAction.__table__
# FOR NO KEY UPDATE (PostgreSQL): it serializes an app's actions as FOR UPDATE would, without waiting on
# (or holding up) the key-share locks every insert that points at the account takes (an event, a credit note).
ACCOUNT_LOCK = (select(Account.__table__.c.id).where(Account.__table__.c.id == bindparam("account_id"))
                .with_for_update(key_share=True))
INSERT_ACTION = insert(ACTIONS)


@functools.cache
def _done_today(actions: int):
    """The count of `done_today` for so many actions (`:action_0`, …: a statement per number of them)."""
    return (select(func.count()).select_from(ACTIONS)
            .where(*_of_app(bindparam("account_id", type_=ACTIONS.c.account_id.type), bindparam("client_id"),
                            bindparam("user_id", type_=ACTIONS.c.user_id.type)),
                   ACTIONS.c.outcome == "done", ACTIONS.c.action.in_([bindparam(f"action_{at}") for at in range(actions)]),
                   ACTIONS.c.created_at > bindparam("since", type_=ACTIONS.c.created_at.type)))


CUSTOMER_NAME = select(Customer.__table__.c.name).where(
    Customer.__table__.c.id == bindparam("customer_id", type_=Customer.__table__.c.id.type))


def recent(session: Session, account_id: uuid.UUID, client_id: str, user_id: uuid.UUID) -> list[DelegatedAction]:
    """The app's latest actions for this person and business, through any of its sign-ins, newest first."""
    return list(session.exec(select(DelegatedAction).where(*_of_app(account_id, client_id, user_id))
                             .order_by(ACTIONS.c.created_at.desc()).limit(RECENT)))


async def would_refuse(db: Db, principal: Principal, action: str, invoice, amount: int | None = None) -> bool:
    """Whether `act_for` would refuse (without recording): the confirmation question is not even asked."""
    if principal.actor != "oauth_app" or principal.authorization_details is None:
        return False
    return await _refusal(db, principal, action, invoice, principal.authorization_details, amount) is not None
