"""The executor (core.base.executor): a unit of Core statements, run on the database's own driver or
inside an ORM session, with the blocks it offers."""

import asyncio
import uuid
from datetime import UTC

import pytest
from sqlalchemy import insert, select

from core.base import db, executor
from core.base.clock import now
from core.base.errors import NotFound
from core.models import IdempotencyRecord, RateLimitWindow
from tests.conftest import make_tenant
from tests.units import run_unit

WINDOWS = RateLimitWindow.__table__


def _bucket(bucket: str) -> dict:
    return {"bucket": bucket, "window_start": 0, "count": 1, "allowed": True}


def test_a_domain_error_rolls_the_transaction_back_and_comes_out_as_itself():
    bucket = f"executor-{uuid.uuid4().hex}"

    async def refused(unit_db):
        async with unit_db.transaction() as tx:
            await tx.execute(insert(WINDOWS), _bucket(bucket))
            raise NotFound("No such thing.")
    with pytest.raises(NotFound, match="No such thing"):
        run_unit(refused)

    async def count(unit_db):
        return await unit_db.rows(select(WINDOWS.c.count).where(WINDOWS.c.bucket == bucket), {})
    assert run_unit(count) == []


def test_a_transaction_that_ends_is_committed():
    bucket = f"executor-{uuid.uuid4().hex}"

    async def written(unit_db):
        async with unit_db.transaction() as tx:
            await tx.execute(insert(WINDOWS), _bucket(bucket))
    run_unit(written)
    with db.transaction() as session:
        assert session.execute(select(WINDOWS.c.count).where(WINDOWS.c.bucket == bucket)).scalar_one() == 1


def test_within_a_session_a_unit_sees_what_the_session_wrote_and_not_yet_committed():
    bucket = f"executor-{uuid.uuid4().hex}"

    async def count(unit_db):
        return await unit_db.first(select(WINDOWS.c.count).where(WINDOWS.c.bucket == bucket), {})
    with db.transaction() as session:
        session.add(RateLimitWindow(**_bucket(bucket)))
        session.flush()
        assert executor.within(session, count).count == 1
        session.rollback()


def test_a_unit_that_awaits_anything_but_its_database_is_refused():
    async def sleeps(_db):
        await asyncio.sleep(0)  # suspends: only an event loop could go on with it
    with db.transaction() as session, pytest.raises(RuntimeError, match="awaited something else"):
        executor.within(session, sleeps)


def test_rows_come_back_with_the_values_the_orm_reads():
    account = make_tenant(None).account_id
    moment = now()
    record = {"id": uuid.uuid4(), "account_id": account, "method": "POST", "path": "/x", "key": uuid.uuid4().hex,
              "request_hash": "h", "state": "done", "locked_until": moment, "claim_token": "t", "created_at": moment,
              "response_status": 201, "response_body": "{}", "response_headers": {"content-type": "application/json"}}
    table = IdempotencyRecord.__table__

    async def write_and_read(unit_db):
        async with unit_db.transaction() as tx:
            await tx.execute(insert(table), record)
        return await unit_db.first(select(table).where(table.c.id == record["id"]), {})
    row = run_unit(write_and_read)
    assert row.response_headers == {"content-type": "application/json"}  # JSON parsed, not text
    assert isinstance(row.id, uuid.UUID) and row.id == record["id"]
    assert row.created_at == moment and row.created_at.tzinfo is not None
    assert row.created_at.astimezone(UTC) == moment
