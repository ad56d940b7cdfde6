"""Limits a person puts on what an app may do with money (RFC 9396 authorization details).

One type, `invoice_actions`:

    {"type": "invoice_actions", "actions": ["finalize", "send"],
     "max_amount": {"currency": "EUR", "amount": 100000}, "max_per_day": 5}

`actions` is a non-empty subset of finalize, send, pay, void and credit (issue or void a credit
note); `max_amount` (optional) is the largest invoice total (for credit, the credit note's total),
in minor units of one currency, the actions may touch (an invoice in another currency is outside it);
`max_per_day` (optional) is how many of these actions in any 24 hours. A
grant that carries authorization details may do only the actions they list, within their limits;
a grant without any (an older one, an API key) is bounded by its scopes alone. The limits are the
app's, for one person and business: every live grant of the app holds the same (`for_app`; for the
grants that stood side by side before, `limits_of_all`). A refresh may ask for details the grant's
cover (`covers`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace

from core.base.money import format_money, from_major, is_known_currency, to_major
from core.base.validation import MAX_SAFE_INTEGER

TYPE = "invoice_actions"
ACTIONS = ("finalize", "send", "pay", "void", "credit")
SCOPE_OF = {"finalize": "invoices:finalize", "void": "invoices:finalize", "send": "invoices:send",
            "pay": "payments:write", "credit": "credit_notes:write"}
ACTIONS_OF = {"invoices:finalize": ("finalize", "void"), "invoices:send": ("send",), "payments:write": ("pay",),
              "credit_notes:write": ("credit",)}
MAX_DETAILS = 10
MAX_PER_DAY = 100_000
VERBS = {"finalize": "finalize", "send": "send", "pay": "record payments of", "void": "void", "credit": "credit"}


class InvalidAuthorizationDetails(ValueError):
    """Not authorization details this server grants; the message says why (RFC 9396 §5)."""


@dataclass(frozen=True)
class InvoiceActions:
    actions: tuple[str, ...]
    max_amount: tuple[str, int] | None = None  # (currency, minor units)
    max_per_day: int | None = None

    @property
    def currency(self) -> str | None:
        """The currency of the amount limit; None without one."""
        return self.max_amount[0] if self.max_amount else None

    def to_json(self) -> dict:
        detail: dict = {"type": TYPE, "actions": list(self.actions)}
        if self.max_amount is not None:
            detail["max_amount"] = {"currency": self.max_amount[0], "amount": self.max_amount[1]}
        if self.max_per_day is not None:
            detail["max_per_day"] = self.max_per_day
        return detail

    def words(self) -> str:
        """'Finalize or void invoices up to 1,000.00 USD, at most 5 a day'."""
        verbs = [VERBS[action] for action in self.actions]
        phrase = (" or ".join(verbs) if len(verbs) < 3 else ", ".join(verbs[:-1]) + " or " + verbs[-1]) + " invoices"
        limits = []
        if self.max_amount is not None:
            limits.append(f"up to {format_money(self.max_amount[1], self.max_amount[0])}")
        if self.max_per_day is not None:
            limits.append(f"at most {self.max_per_day} a day")
        return (phrase[0].upper() + phrase[1:] + (" " + ", ".join(limits) if limits else " without limit"))

    def allows_no_more_than(self, other: InvoiceActions) -> bool:
        """Whether this detail is `other` or narrower: no action, amount or count it lacks."""
        if not set(self.actions) <= set(other.actions):
            return False
        if other.max_amount is not None and (self.max_amount is None or self.max_amount[0] != other.max_amount[0]
                                             or self.max_amount[1] > other.max_amount[1]):
            return False
        return other.max_per_day is None or (self.max_per_day is not None and self.max_per_day <= other.max_per_day)


def parse(value: object, *, most: int | None = MAX_DETAILS) -> tuple[InvoiceActions, ...]:
    """`authorization_details` as sent (a JSON string in a form, or already parsed); at most `most` of them."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            raise InvalidAuthorizationDetails("authorization_details must be a JSON array") from None
    if not isinstance(value, list) or not value:
        raise InvalidAuthorizationDetails("authorization_details must be a non-empty JSON array of objects")
    if most is not None and len(value) > most:
        raise InvalidAuthorizationDetails(f"at most {most} authorization details")
    return tuple(_one(item, index) for index, item in enumerate(value))


def _one(item: object, index: int) -> InvoiceActions:
    where = f"authorization_details[{index}]"
    if not isinstance(item, dict):
        raise InvalidAuthorizationDetails(f"{where} must be an object")
    if item.get("type") != TYPE:
        raise InvalidAuthorizationDetails(f"{where}: the only type supported is {TYPE}")
    unknown = set(item) - {"type", "actions", "max_amount", "max_per_day"}
    if unknown:
        raise InvalidAuthorizationDetails(f"{where}: unknown field {sorted(unknown)[0][:40]}")
    actions = item.get("actions")
    if not isinstance(actions, list) or not actions or not all(isinstance(a, str) for a in actions):
        raise InvalidAuthorizationDetails(f"{where}.actions must be a non-empty array of {', '.join(ACTIONS)}")
    if unlisted := [a for a in actions if a not in ACTIONS]:
        raise InvalidAuthorizationDetails(f"{where}.actions: unknown action {unlisted[0][:40]}")
    return InvoiceActions(actions=tuple(a for a in ACTIONS if a in actions),
                          max_amount=_amount(item.get("max_amount"), where) if "max_amount" in item else None,
                          max_per_day=_count(item.get("max_per_day"), where) if "max_per_day" in item else None)


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _amount(value: object, where: str) -> tuple[str, int]:
    if not isinstance(value, dict) or set(value) != {"currency", "amount"}:
        raise InvalidAuthorizationDetails(f"{where}.max_amount must be an object with currency and amount")
    currency, amount = value["currency"], value["amount"]
    if not isinstance(currency, str) or not is_known_currency(currency.upper()):
        raise InvalidAuthorizationDetails(f"{where}.max_amount.currency must be an ISO 4217 code")
    if not _whole(amount) or not 0 <= amount <= MAX_SAFE_INTEGER:
        raise InvalidAuthorizationDetails(f"{where}.max_amount.amount must be a whole number of minor units, 0 or more")
    return currency.upper(), amount


def _count(value: object, where: str) -> int:
    if not _whole(value) or not 0 <= value <= MAX_PER_DAY:
        raise InvalidAuthorizationDetails(f"{where}.max_per_day must be a whole number, 0 or more")
    return value


def typed_amount(text: str, currency: str) -> tuple[str, int] | None:
    """A limit a person typed in major units of `currency` (the consent page, the dashboard), as
    (currency, minor units); None when it is not one `parse` would accept."""
    minor = from_major(text, currency) if is_known_currency(currency) else None
    return (currency, minor) if minor is not None and 0 <= minor <= MAX_SAFE_INTEGER else None


def typed_count(text: str) -> int | None:
    """A number of actions a day a person typed; None when it is not one `parse` would accept."""
    return int(text) if text.isdigit() and int(text) <= MAX_PER_DAY else None


def as_typed(detail: InvoiceActions) -> tuple[str, str]:
    """The limit's amount in major units and its daily count as a form shows them (empty for none):
    what `typed_amount` and `typed_count` read back."""
    amount = str(to_major(detail.max_amount[1], detail.max_amount[0])) if detail.max_amount else ""
    return amount, "" if detail.max_per_day is None else str(detail.max_per_day)


def to_json(details: tuple[InvoiceActions, ...] | None) -> list[dict] | None:
    return None if details is None else [detail.to_json() for detail in details]


def from_stored(value: object) -> tuple[InvoiceActions, ...] | None:
    """What a grant stores (validated when it was granted, or made by `for_app` from such, which may
    hold more than a request may ask for); None for a grant without any."""
    return None if value is None else parse(value, most=None)


def actions_of(scopes: Iterable[str]) -> frozenset[str]:
    """The consequential actions these scopes allow."""
    return frozenset(action for scope in scopes for action in ACTIONS_OF.get(scope, ()))


def for_app(newest: tuple[InvoiceActions, ...] | None, newest_may: frozenset[str],
            earlier: tuple[InvoiceActions, ...] | None, earlier_may: frozenset[str]) -> tuple[InvoiceActions, ...] | None:
    """An app's limits once the person grants it again: the new grant's (`newest`) decide the actions
    its scopes allow (`newest_may`); the app's `earlier` limits stay for the others, which its other
    live grants may take (`earlier_may`). So a grant that may only read, or only send, cannot drop a
    limit on finalizing. None (scopes alone decide) only when neither has any."""
    if newest is None and earlier is None:
        return None
    decided = newest if newest is not None else _unlimited(newest_may)
    if earlier is None:
        return decided + _unlimited(earlier_may - newest_may)
    kept = tuple(replace(detail, actions=rest) for detail in earlier
                 if (rest := tuple(action for action in detail.actions if action not in newest_may)))
    return decided + kept


def _unlimited(actions: frozenset[str]) -> tuple[InvoiceActions, ...]:
    """These actions allowed without a limit (a grant with details does only what they list)."""
    return (InvoiceActions(actions=tuple(a for a in ACTIONS if a in actions)),) if actions else ()


def covers(granted: tuple[InvoiceActions, ...], requested: tuple[InvoiceActions, ...]) -> bool:
    """Whether `requested` (a refresh's `authorization_details`, RFC 9396 §6) asks for nothing `granted`
    does not allow: the same details in any order, or narrower ones (fewer actions, a lower amount in
    the same currency, a lower daily count over at least the actions it counts)."""
    return all(any(_within(asked, action, held) for held in granted) for asked in requested for action in asked.actions)


def limits_of_all(grants: Iterable[tuple[frozenset[str], tuple[InvoiceActions, ...] | None]]
                  ) -> tuple[InvoiceActions, ...] | None:
    """One set of limits for grants that stood side by side, each given as (the actions its scopes
    allow, its details), that widens none of them (migration 0008). Per action, only the grants whose
    scopes allow it bound it: one without details allowed it without limit, one with details only as
    they list it. So an action keeps every limit any of them set on it (the lowest amount, the lowest
    count, and a count over at least the actions each counted together); one that a limited grant
    could not take, or that no invoice could meet (amounts in two currencies), or whose counts could
    only be kept by also allowing such an action, is listed with at most 0 a day, which the person sees
    and may change in the dashboard. None (scopes alone decide) when none of them has details."""
    grants = list(grants)
    bounded = [(may, details) for may, details in grants if details is not None]
    may_any = frozenset().union(*(may for may, _ in grants))
    if not bounded or not may_any:
        return None
    candidates = []
    for action in (a for a in ACTIONS if a in may_any):
        bounds = [details for may, details in bounded if action in may]
        if not bounds:
            candidates.append(InvoiceActions(actions=(action,)))
            continue
        terms = [_counted(action, detail) for detail in bounds[0] if action in detail.actions]
        for details in bounds[1:]:
            terms = _fewest([both for term in terms for detail in details if action in detail.actions
                             if (both := _both(action, term, detail)) is not None], action)
        candidates += [term for term in terms
                       if all(any(_within(term, other, detail) for detail in details)
                              for other in term.actions for may, details in bounded if other in may)]
    allowed = {action for candidate in candidates for action in candidate.actions}
    refused = [InvoiceActions(actions=tuple(a for a in actions if a in may_any and a not in allowed), max_per_day=0)
               for actions in ACTIONS_OF.values()]
    return _tidy(candidates + [detail for detail in refused if detail.actions])


def _within(narrow: InvoiceActions, action: str, wide: InvoiceActions) -> bool:
    """Whether `narrow` allows `action` only where `wide` does: `wide` lists it, its amount is within
    wide's (the same currency, no higher) and its daily count no higher over at least the actions wide
    counts (a count over more actions reaches the limit no later). At most 0 a day allows nothing."""
    if action not in wide.actions:
        return False
    if narrow.max_per_day == 0:
        return True
    if wide.max_amount is not None and (narrow.max_amount is None or narrow.max_amount[0] != wide.max_amount[0]
                                        or narrow.max_amount[1] > wide.max_amount[1]):
        return False
    return wide.max_per_day is None or (narrow.max_per_day is not None and narrow.max_per_day <= wide.max_per_day
                                        and set(wide.actions) <= set(narrow.actions))


def _counted(action: str, detail: InvoiceActions) -> InvoiceActions:
    """What `detail` allows of `action`: listing the actions it counts with it (none without a count)."""
    counted = {action, *detail.actions} if detail.max_per_day is not None else {action}
    return InvoiceActions(actions=tuple(a for a in ACTIONS if a in counted), max_amount=detail.max_amount,
                          max_per_day=detail.max_per_day)


def _both(action: str, one: InvoiceActions, other: InvoiceActions) -> InvoiceActions | None:
    """`action` within both (no wider than either; None when no invoice meets both amounts)."""
    amount = one.max_amount or other.max_amount
    if one.max_amount and other.max_amount:
        if one.max_amount[0] != other.max_amount[0]:
            return None
        amount = (one.max_amount[0], min(one.max_amount[1], other.max_amount[1]))
    counts = [detail for detail in (one, other) if detail.max_per_day is not None]
    counted = {action}.union(*(detail.actions for detail in counts))
    return InvoiceActions(actions=tuple(a for a in ACTIONS if a in counted), max_amount=amount,
                          max_per_day=min((detail.max_per_day for detail in counts), default=None))


def _fewest(terms: list[InvoiceActions], action: str) -> list[InvoiceActions]:
    """`terms` without those another allows `action` beyond (and without repeats)."""
    return _widest(terms, lambda narrow, wide: _within(narrow, action, wide))


def _widest(items: list[InvoiceActions], within) -> list[InvoiceActions]:
    """`items` without any that `within` puts inside another (of two inside each other, the first stays)."""
    return [item for index, item in enumerate(items)
            if not any(within(item, other) and (not within(other, item) or position < index)
                       for position, other in enumerate(items) if position != index)]


def _tidy(candidates: list[InvoiceActions]) -> tuple[InvoiceActions, ...]:
    """The details to store: no repeats, none another allows more than; those without a count joined
    per scope when their amounts agree (as the consent page makes them); in the order of ACTIONS."""
    joined: dict[tuple, set[str]] = {}
    counted = []
    for candidate in candidates:
        if candidate.max_per_day is None:
            for action in candidate.actions:
                scope = SCOPE_OF[action]
                joined.setdefault((scope, candidate.max_amount), set()).add(action)
        elif candidate not in counted:
            counted.append(candidate)
    details = [InvoiceActions(actions=tuple(a for a in ACTIONS if a in actions), max_amount=amount)
               for (_, amount), actions in joined.items()] + counted
    kept = _widest(details, lambda narrow, wide: all(_within(narrow, action, wide) for action in narrow.actions))
    return tuple(sorted(kept, key=lambda d: ([ACTIONS.index(a) for a in d.actions], d.max_per_day is None,
                                             d.max_per_day or 0, d.max_amount or ("", 0))))
