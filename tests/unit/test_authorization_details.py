"""An app's limits made from more than one grant (`for_app`) are stored on its grants and load again;
the limits of grants that stood side by side before (`limits_of_all`, migration 0008) widen none of
them; what a refresh may ask for (`covers`)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.access.authorization_details import (
    ACTIONS,
    InvoiceActions,
    actions_of,
    covers,
    for_app,
    from_stored,
    limits_of_all,
    parse,
    to_json,
)


def test_an_apps_limits_load_even_beyond_the_ten_a_request_may_ask_for():
    newest = tuple(InvoiceActions(actions=("finalize",), max_per_day=n) for n in range(6))
    earlier = tuple(InvoiceActions(actions=("send",), max_per_day=n) for n in range(6))
    limits = for_app(newest, frozenset({"finalize", "void"}), earlier, frozenset({"send"}))
    assert len(limits) == 12
    assert from_stored(to_json(limits)) == limits


# --- grants that stood side by side before issue 33 (migration 0008) ------------------------------

FINALIZING, SENDING = actions_of(["invoices:finalize"]), actions_of(["invoices:send"])
EVERY = frozenset(ACTIONS)


def detail(*actions, amount=None, per_day=None) -> InvoiceActions:
    return InvoiceActions(actions=tuple(a for a in ACTIONS if a in actions), max_amount=amount, max_per_day=per_day)


def allows(details, may, action: str, currency: str, total: int, done: dict) -> bool:
    """What enforcement decides (`core.billing.delegated_actions`), for a grant whose scopes allow `may`:
    `done` is how many of each action the app took in the last 24 hours."""
    if action not in may:
        return False
    if details is None:
        return True
    return any(action in d.actions and (d.max_amount is None or (d.max_amount[0] == currency and total <= d.max_amount[1]))
               and (d.max_per_day is None or sum(done.get(a, 0) for a in d.actions) < d.max_per_day) for d in details)


def test_a_grant_without_limits_beside_a_limited_one_keeps_the_limit():
    mcp = (FINALIZING, (detail("finalize", "void", amount=("USD", 100000)),))
    rest = (FINALIZING | SENDING, None)  # made later, from a consent page that did not start from the MCP grant's
    assert limits_of_all([mcp, rest]) == (detail("finalize", "void", amount=("USD", 100000)), detail("send"))


def test_each_action_keeps_the_lowest_amount_and_the_lowest_count():
    grants = [(FINALIZING | SENDING, (detail("finalize", "void", amount=("USD", 100000), per_day=5), detail("send"))),
              (FINALIZING, (detail("finalize", "void", amount=("USD", 50000)),)),
              (FINALIZING | SENDING, (detail("finalize", "void", per_day=3), detail("send", amount=("EUR", 2000))))]
    assert limits_of_all(grants) == (detail("finalize", "void", amount=("USD", 50000), per_day=3),
                                     detail("send", amount=("EUR", 2000)))


def test_amounts_in_two_currencies_leave_no_invoice_both_allow():
    grants = [(FINALIZING, (detail("finalize", "void", amount=("USD", 100000)),)),
              (FINALIZING, (detail("finalize", "void", amount=("EUR", 90000)),))]
    assert limits_of_all(grants) == (detail("finalize", "void", per_day=0),)  # shown: at most 0 a day


def test_an_action_a_limited_grant_could_not_take_stays_refused():
    grants = [(FINALIZING | SENDING, (detail("send", per_day=1),)),  # finalizing not listed: not allowed
              (FINALIZING | SENDING, None)]
    assert limits_of_all(grants) == (detail("finalize", "void", per_day=0), detail("send", per_day=1))


def test_a_grant_that_may_not_take_an_action_does_not_limit_it():
    grants = [(FINALIZING, (detail("finalize", "void", amount=("USD", 100000)),)),
              (frozenset(), None),  # reading only
              (SENDING, (detail("send", per_day=1),))]
    assert limits_of_all(grants) == (detail("finalize", "void", amount=("USD", 100000)), detail("send", per_day=1))


def test_a_count_over_several_actions_stays_over_them():
    grants = [(FINALIZING | SENDING, (detail("finalize", "void", "send", per_day=4),)),
              (FINALIZING | SENDING, (detail("finalize", "void", per_day=3), detail("send")))]
    assert limits_of_all(grants) == (detail("finalize", "void", "send", per_day=3),)


def test_a_count_that_would_need_an_action_no_longer_allowed_refuses_what_it_counted():
    grants = [(FINALIZING, (detail("finalize", amount=("USD", 100000)),)),  # could not void
              (FINALIZING, (detail("finalize", "void", per_day=2),))]  # counted voids with finalizing
    assert limits_of_all(grants) == (detail("finalize", "void", per_day=0),)


def test_no_limits_anywhere_stay_none():
    assert limits_of_all([(FINALIZING, None), (SENDING, None)]) is None


@pytest.mark.parametrize("scopes, details", [
    (["invoices:finalize", "invoices:send", "payments:write"],
     (detail("finalize", "void", amount=("USD", 100000), per_day=5), detail("send"), detail("pay", per_day=2))),
    (["invoices:finalize"],
     (detail("finalize", amount=("USD", 100000)), detail("finalize", amount=("EUR", 90000)), detail("void"))),
])
def test_grants_holding_the_same_limits_keep_them(scopes, details):
    may = actions_of(scopes)
    assert set(limits_of_all([(may, details), (may, details)])) == set(details)


amounts = st.none() | st.tuples(st.sampled_from(["USD", "EUR"]), st.sampled_from([0, 500, 1000]))
details_st = st.builds(lambda actions, amount, per_day: detail(*actions, amount=amount, per_day=per_day),
                       st.sets(st.sampled_from(ACTIONS), min_size=1), amounts, st.sampled_from([None, 0, 1, 2, 3]))
grants_st = st.tuples(st.sets(st.sampled_from(["invoices:finalize", "invoices:send", "payments:write"])).map(actions_of),
                      st.none() | st.lists(details_st, min_size=1, max_size=3).map(tuple))
uses = st.tuples(st.sampled_from(ACTIONS), st.sampled_from(["USD", "EUR", "GBP"]), st.sampled_from([0, 500, 800, 1000, 2000]),
                 st.dictionaries(st.sampled_from(ACTIONS), st.integers(0, 3)))


@settings(max_examples=400, deadline=None)
@given(st.lists(grants_st, min_size=1, max_size=3), uses)
def test_the_apps_limits_widen_no_grant(grants, use):
    merged = limits_of_all(grants)
    for may, details in grants:
        if allows(merged, may, *use):
            assert allows(details, may, *use)


@settings(max_examples=200, deadline=None)
@given(grants_st, st.integers(1, 3), uses)
def test_grants_holding_the_same_limits_allow_what_they_allowed(grant, copies, use):
    may, details = grant
    assert allows(limits_of_all([grant] * copies), may, *use) == allows(details, may, *use)


@settings(max_examples=400, deadline=None)
@given(st.lists(details_st, min_size=1, max_size=3).map(tuple), st.lists(details_st, min_size=1, max_size=3).map(tuple),
       uses)
def test_details_covered_ask_for_nothing_more(granted, requested, use):
    if covers(granted, requested):
        assert not allows(requested, EVERY, *use) or allows(granted, EVERY, *use)


def test_a_refresh_may_ask_for_the_same_details_in_another_order_or_fewer_or_lower():
    granted = parse([{"type": "invoice_actions", "actions": ["send"], "max_per_day": 1},
                     {"type": "invoice_actions", "actions": ["finalize"], "max_amount": {"currency": "USD", "amount": 100000},
                      "max_per_day": 5}])
    assert covers(granted, tuple(reversed(granted)))
    assert covers(granted, (detail("finalize", amount=("USD", 25000), per_day=5),))
    assert covers(granted, (detail("finalize", "send", amount=("USD", 100), per_day=1),))  # counted over both: fewer
    assert not covers(granted, (detail("finalize", amount=("USD", 100000)),))  # no daily count
    assert not covers(granted, (detail("finalize", amount=("EUR", 100), per_day=1),))
    assert not covers(granted, (detail("void", per_day=0),))  # not granted at all
    assert not covers(granted, (detail("send", per_day=2),))
