"""Invoice numbers: consecutive per account, gapless on rollback, unique under concurrency."""

import threading

import pytest
from sqlmodel import select

from core.access.principal import Principal
from core.access.scopes import ALL_SCOPES
from core.base import db, executor
from core.base.errors import InvalidState
from core.billing import finalization, invoices, numbering
from core.billing.invoice_inputs import InvoiceCreate
from core.models import Customer, Invoice


def principal_of(tenant) -> Principal:
    return Principal(account_id=tenant.account_id, granted_scopes=frozenset(ALL_SCOPES), actor="api_key", role="owner",
                     api_key_id=tenant.key_id, request_id="req_test", credential_id="test")


def make_drafts(tenant, count: int) -> list[str]:
    who = principal_of(tenant)
    with db.transaction() as session:
        customer = Customer(account_id=tenant.account_id, name="Buyer")
        session.add(customer)
        session.flush()
        body = {"customer": str(customer.id), "items": [{"description": "Work", "unit_amount": 100}]}
        return [str(executor.within(session, invoices.create_invoice, who, InvoiceCreate.model_validate(body)).id)
                for _ in range(count)]


def finalize_in_own_transaction(tenant, invoice_id: str) -> str:
    with db.transaction() as session:
        invoice = invoices.get_invoice(session, tenant.account_id, invoice_id, lock=True)
        return finalization.finalize_in(session, principal_of(tenant), invoice).number


def run_concurrently(count: int, work) -> tuple[list, list]:
    barrier = threading.Barrier(count)
    results, errors = [], []

    def worker(index: int) -> None:
        barrier.wait()
        try:
            results.append(work(index))
        except Exception as exc:  # collected and asserted on by the test
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results, errors


def test_format_pads_to_four_digits_and_grows_beyond():
    assert numbering.format_number("INV", 1) == "INV-0001"
    assert numbering.format_number("INV", 12345) == "INV-12345"


def test_numbers_start_at_one_and_are_consecutive_per_account(tenant, other_tenant):
    with db.transaction() as session:
        taken = [executor.within(session, numbering.take_next, tenant.account_id, "INV") for _ in range(3)]
        other = executor.within(session, numbering.take_next, other_tenant.account_id, "X")
    assert taken == ["INV-0001", "INV-0002", "INV-0003"]
    assert other == "X-0001"


def test_a_rolled_back_transaction_returns_its_number(tenant):
    with pytest.raises(RuntimeError):
        with db.transaction() as session:
            assert executor.within(session, numbering.take_next, tenant.account_id, "INV") == "INV-0001"
            raise RuntimeError("finalize failed later")
    with db.transaction() as session:
        assert executor.within(session, numbering.take_next, tenant.account_id, "INV") == "INV-0001"


def test_a_failed_finalize_leaves_no_gap(tenant):
    [first, second] = make_drafts(tenant, 2)
    with pytest.raises(RuntimeError):
        with db.transaction() as session:
            invoice = invoices.get_invoice(session, tenant.account_id, first, lock=True)
            finalization.finalize_in(session, principal_of(tenant), invoice)
            raise RuntimeError("something after the number failed")
    assert finalize_in_own_transaction(tenant, second) == "INV-0001"
    assert finalize_in_own_transaction(tenant, first) == "INV-0002"


def _concurrency(tenant) -> int:
    return 50 if db.get_engine().dialect.name == "postgresql" else 10


def test_concurrent_finalizations_get_consecutive_unique_numbers(tenant):
    count = _concurrency(tenant)
    drafts = make_drafts(tenant, count)
    numbers, errors = run_concurrently(count, lambda i: finalize_in_own_transaction(tenant, drafts[i]))
    assert errors == []
    assert sorted(numbers) == [f"INV-{n:04d}" for n in range(1, count + 1)]
    with db.transaction() as session:
        stored = session.exec(select(Invoice.number).where(Invoice.account_id == tenant.account_id)).all()
    assert sorted(stored) == sorted(numbers)


def test_concurrent_finalizations_of_one_invoice_number_it_once(tenant):
    [only] = make_drafts(tenant, 1)
    numbers, errors = run_concurrently(5, lambda i: finalize_in_own_transaction(tenant, only))
    assert numbers == ["INV-0001"]
    assert len(errors) == 4 and all(isinstance(e, InvalidState) for e in errors)
    with db.transaction() as session:
        assert executor.within(session, numbering.take_next, tenant.account_id, "INV") == "INV-0002"

