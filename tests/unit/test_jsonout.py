"""`dumps` (orjson) writes exactly what the json module wrote: the API's bytes did not change."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, date, datetime
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from core.base.jsonout import dumps, jsonable


def _reference(value) -> str:
    return json.dumps(jsonable(value), separators=(",", ":"), ensure_ascii=False)


decimals = st.decimals(min_value=Decimal("0.000001"), max_value=Decimal("999999999.999999"), places=6,
                       allow_nan=False, allow_infinity=False)
texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)))
leaves = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**53, max_value=2**53), decimals, texts,
                   st.uuids(), st.dates(), st.datetimes(timezones=st.just(UTC)),
                   st.floats(allow_nan=False, allow_infinity=False))
values = st.recursive(leaves, lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children,
                                                                                               max_size=4), max_leaves=20)


@given(values)
def test_the_same_bytes_as_the_json_module(value):
    assert dumps(value) == _reference(value)


def test_the_numbers_that_differ_between_the_two_encoders():
    assert dumps({"q": Decimal("0.000001"), "n": Decimal("2.000"), "f": 1e-7}) == '{"q":1e-06,"n":2,"f":1e-07}'


def test_ids_and_moments():
    moment = datetime(2026, 11, 25, 10, 0, 0, 123456, tzinfo=UTC)
    assert dumps([uuid.UUID(int=1), moment, date(2026, 1, 2)]) == \
        '["00000000-0000-0000-0000-000000000001","2026-11-25T10:00:00.123Z","2026-01-02"]'
