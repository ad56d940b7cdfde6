"""Limits on the consent page: what a person allows an app to do with money, next to the scope it narrows.

Each consequential scope the app asks for (finalize, send, mark paid, credit) gets a row: "up to [amount]"
and "at most [n] a day". A limit the app asked for (RFC 9396 `authorization_details`) is shown in
words and filled in; the person may lower it, never raise or drop it. A person may set limits where
the app asked for none. When any limit is set (or asked for), the grant carries authorization details
for every consequential scope ticked, those without a limit as plain lists of actions, since a grant
with details may only do what they list (`core.access.authorization_details`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from core.access.authorization_details import (
    ACTIONS,
    ACTIONS_OF,
    SCOPE_OF,
    InvoiceActions,
    as_typed,
    typed_amount,
    typed_count,
)
from core.base.money import is_known_currency

CONSEQUENTIAL = tuple(ACTIONS_OF)


@dataclass(frozen=True)
class LimitRow:
    key: str  # the form fields' prefix
    scope: str  # the checkbox it sits under
    actions: tuple[str, ...]
    requested: InvoiceActions | None  # what the app asked for: the ceiling
    currency: str
    amount: str = ""  # major units, as typed or filled in
    per_day: str = ""
    kept: bool = False  # filled in from the app's limits

    @property
    def words(self) -> str | None:
        return self.requested.words() if self.requested else None


class LimitsRefused(ValueError):
    """The person's limits cannot be granted; the message says why."""


def rows(requested_scopes: list[str], requested: tuple[InvoiceActions, ...] | None, currency: str,
         form=None, earlier: tuple[InvoiceActions, ...] | None = None) -> list[LimitRow]:
    """The rows of the page, filled with what the app asked for, narrowed by the limits the person set
    for the app (`earlier`: asking again, for more scopes or the other resource, keeps them), or from
    `form` when it was sent back."""
    result = []
    for index, detail in enumerate(requested or ()):
        scope = SCOPE_OF[detail.actions[0]]
        kept = _earlier_for(detail.actions, earlier)
        shown = _narrower(detail, kept)
        shown_currency = shown.currency or currency
        result.append(LimitRow(f"detail{index}", scope, detail.actions, detail, shown_currency, *as_typed(shown),
                               kept=shown != detail))
    covered = {SCOPE_OF[action] for detail in requested or () for action in detail.actions}
    for scope in CONSEQUENTIAL:
        if scope in requested_scopes and scope not in covered:
            kept = _earlier_for(ACTIONS_OF[scope], earlier)
            shown_currency = (kept.currency if kept else None) or currency
            texts = as_typed(kept) if kept else ("", "")
            result.append(LimitRow(scope.replace(":", "-"), scope, ACTIONS_OF[scope], None, shown_currency, *texts,
                                   kept=any(texts)))
    if form is not None:
        result = [replace(row, amount=_field(form, row, "amount", row.amount), per_day=_field(form, row, "per_day", row.per_day),
                          currency=_field(form, row, "currency", row.currency).upper() if not _fixed_currency(row)
                          else row.currency) for row in result]
    return result


def _earlier_for(actions: tuple[str, ...], earlier: tuple[InvoiceActions, ...] | None) -> InvoiceActions | None:
    return next((detail for detail in earlier or () if set(actions) & set(detail.actions)), None)


def _narrower(asked: InvoiceActions, kept: InvoiceActions | None) -> InvoiceActions:
    """What the app asked for, with the person's earlier limit where that is lower."""
    if kept is None:
        return asked
    amount = asked.max_amount
    if kept.max_amount and (amount is None or (kept.max_amount[0] == amount[0] and kept.max_amount[1] < amount[1])):
        amount = kept.max_amount
    per_day = min((n for n in (asked.max_per_day, kept.max_per_day) if n is not None), default=None)
    return replace(asked, max_amount=amount, max_per_day=per_day)


def _fixed_currency(row: LimitRow) -> bool:
    return row.requested is not None and row.requested.max_amount is not None


def _field(form, row: LimitRow, name: str, default: str) -> str:
    value = form.get(f"{row.key}.{name}")
    return value.strip()[:40] if isinstance(value, str) else default


def granted(page_rows: list[LimitRow], ticked: set[str]) -> tuple[InvoiceActions, ...] | None:
    """The authorization details the person grants, or None (no limits anywhere: scopes decide)."""
    details = []
    for row in page_rows:
        actions = tuple(action for action in row.actions if SCOPE_OF[action] in ticked)
        if actions:
            details.append(_limited(row, actions))
    if not any(d.max_amount or d.max_per_day is not None for d in details) and not any(r.requested for r in page_rows):
        return None
    return tuple(details) or None


def _limited(row: LimitRow, actions: tuple[str, ...]) -> InvoiceActions:
    ceiling = row.requested
    amount = None
    if row.amount:
        if not is_known_currency(row.currency):
            raise LimitsRefused(f"{row.currency or 'The currency'} is not a currency code (such as USD or EUR).")
        amount = typed_amount(row.amount, row.currency)
        if amount is None:
            raise LimitsRefused(f"“{row.amount}” is not an amount in {row.currency}.")
    elif ceiling and ceiling.max_amount:
        amount = ceiling.max_amount
    per_day = None
    if row.per_day:
        per_day = typed_count(row.per_day)
        if per_day is None:
            raise LimitsRefused(f"“{row.per_day}” is not a number of actions a day.")
    elif ceiling and ceiling.max_per_day is not None:
        per_day = ceiling.max_per_day
    detail = InvoiceActions(actions=tuple(a for a in ACTIONS if a in actions), max_amount=amount, max_per_day=per_day)
    if ceiling is not None and not detail.allows_no_more_than(ceiling):
        raise LimitsRefused(f"The app asked for “{ceiling.words()}”: you can lower that, not raise it.")
    return detail
