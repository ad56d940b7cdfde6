"""Credit note numbers: a series of their own per account, gapless when issuing fails, unique under
concurrency (the guarantees of invoice numbers)."""

from __future__ import annotations

import pytest
from sqlmodel import select

from core.base import db
from core.billing import credit_notes
from core.billing.credit_note_inputs import CreditNoteCreate
from core.models import CreditNote
from tests.unit.test_numbering import (
    _concurrency,
    finalize_in_own_transaction,
    make_drafts,
    principal_of,
    run_concurrently,
)


def open_invoice(tenant) -> str:
    [draft] = make_drafts(tenant, 1)
    finalize_in_own_transaction(tenant, draft)
    return draft


def goodwill(invoice_id: str) -> CreditNoteCreate:
    return CreditNoteCreate.model_validate({"invoice": invoice_id, "lines": [{"description": "Goodwill", "amount": 1}]})


def issue_in_own_transaction(tenant, invoice_id: str) -> str:
    with db.transaction() as session:
        return credit_notes.create_credit_note(session, principal_of(tenant), goodwill(invoice_id))[0].number


def test_a_failed_issue_leaves_no_gap(tenant):
    invoice = open_invoice(tenant)
    with pytest.raises(RuntimeError):
        with db.transaction() as session:
            credit_notes.create_credit_note(session, principal_of(tenant), goodwill(invoice))
            raise RuntimeError("something after the number failed")
    assert issue_in_own_transaction(tenant, invoice) == "CN-0001"


def test_invoices_and_credit_notes_count_apart(tenant, other_tenant):
    invoice = open_invoice(tenant)
    assert [issue_in_own_transaction(tenant, invoice) for _ in range(2)] == ["CN-0001", "CN-0002"]
    assert finalize_in_own_transaction(tenant, make_drafts(tenant, 1)[0]) == "INV-0002"
    assert issue_in_own_transaction(other_tenant, open_invoice(other_tenant)) == "CN-0001"


def test_concurrent_issues_get_consecutive_unique_numbers(tenant):
    count = _concurrency(tenant)
    invoices = [open_invoice(tenant) for _ in range(count)]
    numbers, errors = run_concurrently(count, lambda i: issue_in_own_transaction(tenant, invoices[i]))
    assert errors == []
    assert sorted(numbers) == [f"CN-{n:04d}" for n in range(1, count + 1)]
    with db.transaction() as session:
        stored = session.exec(select(CreditNote.number).where(CreditNote.account_id == tenant.account_id)).all()
    assert sorted(stored) == sorted(numbers)


def test_concurrent_credits_of_one_invoice_never_credit_more_than_it_has(tenant):
    invoice = open_invoice(tenant)  # 1.00: a hundred credits of 0.01 at most
    whole = CreditNoteCreate.model_validate({"invoice": invoice, "lines": [{"description": "All", "amount": 60}]})

    def credit(_index: int) -> str:
        with db.transaction() as session:
            return credit_notes.create_credit_note(session, principal_of(tenant), whole)[0].number

    numbers, errors = run_concurrently(4, credit)
    assert numbers == ["CN-0001"] and len(errors) == 3
