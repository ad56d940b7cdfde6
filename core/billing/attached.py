"""What is attached to invoices (credit notes, payments): the account's list of them, newest first,
optionally of one invoice or one customer of the account (404 for any other)."""

from __future__ import annotations

import uuid

from sqlmodel import Session, select

from core.base.lookup import owned
from core.base.validation import PageQuery
from core.mechanisms.pagination import Page, paginate
from core.models import Customer, Invoice


def list_attached(session: Session, model, kind: str, account_id: uuid.UUID, q: PageQuery) -> Page:
    """A page of `model`'s rows (with `invoice_id` and `customer_id`) of the account, filtered by the
    query's `invoice` and `customer`; `kind` names the list its cursors belong to."""
    query = select(model).where(model.account_id == account_id)
    filters: dict = {}
    if q.invoice is not None:
        invoice = owned(session, Invoice, "invoice", account_id, q.invoice, noun="invoice")
        query, filters["invoice"] = query.where(model.invoice_id == invoice.id), str(invoice.id)
    if q.customer is not None:
        customer = owned(session, Customer, "customer", account_id, q.customer, noun="customer")
        query, filters["customer"] = query.where(model.customer_id == customer.id), str(customer.id)
    return paginate(session, query, model, kind=kind, account_id=account_id, filters=filters, cursor=q.cursor,
                    limit=q.limit)
