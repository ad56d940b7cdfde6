"""An app's limits made from more than one grant (`for_app`) are stored on its grants and load again."""

from core.access.authorization_details import InvoiceActions, for_app, from_stored, to_json


def test_an_apps_limits_load_even_beyond_the_ten_a_request_may_ask_for():
    newest = tuple(InvoiceActions(actions=("finalize",), max_per_day=n) for n in range(6))
    earlier = tuple(InvoiceActions(actions=("send",), max_per_day=n) for n in range(6))
    limits = for_app(newest, frozenset({"finalize", "void"}), earlier, frozenset({"send"}))
    assert len(limits) == 12
    assert from_stored(to_json(limits)) == limits
