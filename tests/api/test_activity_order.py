"""The activity's order and its pages: newest first by time, then source, then row id, so entries of
the same moment (from one source or several) straddle a page boundary without being skipped or shown
twice; the position a page ends at is written into the "Older" link and read back."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import update

from core.access import activity
from core.access.activity import Position
from core.base import db
from core.models import ActivityEntry, InvoiceEvent
from tests.api.invoicing import customer, draft

MOMENT = datetime(2026, 11, 28, 12, 0, 0, 123456, tzinfo=UTC)


def _all_at_one_moment(tenant) -> None:
    """Customers created (activity rows) and drafts made (invoice events), all stamped with one moment."""
    for name in ("Globex", "Initech", "Umbrella"):
        customer(tenant, name=name)
    draft(tenant)
    draft(tenant)
    with db.transaction() as session:
        for table in (ActivityEntry, InvoiceEvent):
            session.exec(update(table).where(table.account_id == tenant.account_id).values(created_at=MOMENT))


def _paged(account_id, size: int) -> list[activity.Entry]:
    seen, before = [], None
    with db.transaction() as session:
        while page := activity.entries(session, account_id, before=before, limit=size, managing=True):
            seen.extend(page)
            before = page[-1].position
    return seen


@pytest.mark.parametrize("size", [1, 2, 3])
def test_entries_of_one_moment_straddle_a_page_boundary_without_loss_or_repeat(tenant, size):
    _all_at_one_moment(tenant)
    with db.transaction() as session:
        whole = activity.entries(session, tenant.account_id, managing=True)
    assert len(whole) >= 5 and {entry.at for entry in whole} == {MOMENT}
    paged = _paged(tenant.account_id, size)
    assert [entry.position for entry in paged] == [entry.position for entry in whole]


def test_the_order_is_time_then_source_then_row_id_newest_first(tenant):
    _all_at_one_moment(tenant)
    with db.transaction() as session:
        whole = activity.entries(session, tenant.account_id, managing=True)
    keys = [(entry.at, entry.source, entry.row_id) for entry in whole]
    assert keys == sorted(keys, reverse=True)
    assert {entry.source for entry in whole} == {activity.OWN, activity.INVOICE_EVENTS}


def test_a_bare_time_shows_only_what_came_before_it(tenant):
    _all_at_one_moment(tenant)
    with db.transaction() as session:
        assert activity.entries(session, tenant.account_id, before=Position(MOMENT), managing=True) == []
        later = Position.parse("2026-11-28T12:00:00.123457+00:00")
        assert len(activity.entries(session, tenant.account_id, before=later, managing=True)) >= 5


def test_a_position_is_written_and_read_back():
    row = uuid.uuid4()
    assert Position.parse(Position(MOMENT, activity.DELEGATED, row).text()) == Position(MOMENT, activity.DELEGATED, row)
    assert Position.parse(MOMENT.isoformat()) == Position(MOMENT)
    assert Position.parse("2026-11-28T12:00:00") == Position(datetime(2026, 11, 28, 12, tzinfo=UTC))


@pytest.mark.parametrize("text", ["", "yesterday", "x" * 41, "0001-01-01T00:00:00+01:00",
                                  f"{MOMENT.isoformat()}~3~{'0' * 32}", f"{MOMENT.isoformat()}~1~{'0' * 31}",
                                  f"{MOMENT.isoformat()}~1~{'z' * 32}", f"{MOMENT.isoformat()}~~", f"{MOMENT.isoformat()}~1"])
def test_what_is_not_a_position_is_none(text):
    assert Position.parse(text) is None
