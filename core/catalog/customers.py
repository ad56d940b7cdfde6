"""Customers: created, edited, archived (`deleted: true`) and restored; never removed."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, Field, field_validator
from sqlalchemy import func
from sqlmodel import Session, select

from core.base import ids
from core.base.api_types import EmailText, Timestamp
from core.base.clock import iso, now
from core.base.electronic_addresses import PEPPOL_ID_MAX, normalized_peppol_id
from core.base.lookup import owned
from core.base.validation import (
    EMAIL_MAX,
    NAME_MAX,
    PHONE_MAX,
    TAX_ID_MAX,
    Input,
    PageQuery,
    email_or_error,
    literal_true,
    not_null,
)
from core.catalog import name_search
from core.mechanisms.pagination import Page, paginate
from core.models import Customer

ADDRESS_KEYS = ("line1", "line2", "city", "state", "postal_code", "country")


class CustomerAddress(Input):
    """A billing address; every member optional, null clears it."""

    line1: str | None = Field(default=None, max_length=256, description="Street and number")
    line2: str | None = Field(default=None, max_length=256, description="Apartment, suite, building")
    city: str | None = Field(default=None, max_length=256, description="City or town")
    state: str | None = Field(default=None, max_length=256, description="State, county or region")
    postal_code: str | None = Field(default=None, max_length=32, description="Postal or ZIP code")
    country: str | None = Field(default=None, max_length=256, description="Country name or code")


def _email(value: str | None) -> str | None:
    # The empty string clears the e-mail.
    return email_or_error(value) if value else None


class CustomerFields(Input):
    email: str | None = Field(default=None, max_length=EMAIL_MAX, description="Billing e-mail; the empty string clears it")
    phone: str | None = Field(default=None, max_length=PHONE_MAX, description="Phone number, free text")
    tax_id: str | None = Field(default=None, max_length=TAX_ID_MAX, description="Tax or VAT id, free text")
    address: CustomerAddress | None = Field(default=None, description="Billing address; every member optional")
    peppol_id: str | None = Field(default=None, max_length=PEPPOL_ID_MAX, examples=["0208:0123456789"],
                                  description="Electronic address for e-invoices (Peppol participant id), "
                                              "`scheme:identifier`; null or the empty string clears it. Without one, "
                                              "e-invoices derive it from an EU VAT number in `tax_id`")

    _peppol_id = field_validator("peppol_id")(normalized_peppol_id)

    @field_validator("email")
    @classmethod
    def _check_email(cls, value: str | None) -> str | None:
        return _email(value)


class CustomerCreate(CustomerFields):
    """A new customer; only the name is required."""

    name: str = Field(min_length=1, max_length=NAME_MAX, description="Full or legal name")


class CustomerUpdate(CustomerFields):
    """Only the fields sent change; null or the empty string clears an optional field."""

    name: str | None = Field(default=None, min_length=1, max_length=NAME_MAX, description="Full or legal name")

    _name_not_null = field_validator("name")(not_null)


class CustomerListQuery(PageQuery):
    query: str | None = Field(default=None, max_length=NAME_MAX, description="Case-insensitive substring of the name")
    include_deleted: Annotated[bool, BeforeValidator(literal_true)] = Field(
        default=False, description="`true` lists archived customers too")


class AddressOut(BaseModel):
    """A customer's billing address; every member may be null."""

    line1: str | None = Field(description="Street and number")
    line2: str | None = Field(description="Apartment, suite, building")
    city: str | None = Field(description="City or town")
    state: str | None = Field(description="State, county or region")
    postal_code: str | None = Field(description="Postal or ZIP code")
    country: str | None = Field(description="Country name or ISO 3166-1 alpha-2 code, as entered")


class CustomerOut(BaseModel):
    """Someone the business invoices. Archived customers show `deleted: true` and can be restored."""

    id: str = Field(description="Unique identifier, `cus_…`")
    object: Literal["customer"] = Field("customer", description="Always `customer`")
    name: str = Field(description="Full or legal name, printed on invoices")
    email: EmailText | None = Field(description="Billing e-mail; `send` delivers here unless `to` is given")
    phone: str | None = Field(description="Phone number, free text")
    tax_id: str | None = Field(description="Tax or VAT id, free text")
    address: AddressOut = Field(description="Billing address")
    peppol_id: str | None = Field(default=None, description="Electronic address for e-invoices, `scheme:identifier`")
    deleted: bool = Field(description="True when archived")
    created: Timestamp = Field(description="When the customer was created")


def customer_to_api(row: Customer) -> dict:
    address = row.address or {}
    return CustomerOut(
        id=ids.public_id("customer", row.id), name=row.name, email=row.email, phone=row.phone,
        tax_id=row.tax_id, address=AddressOut(**{k: address.get(k) for k in ADDRESS_KEYS}), peppol_id=row.peppol_id,
        deleted=row.archived_at is not None, created=iso(row.created),
    ).model_dump()


def get_customer(session: Session, account_id: uuid.UUID, customer_id: str, *, lock: bool = False) -> Customer:
    return owned(session, Customer, "customer", account_id, customer_id, noun="customer", lock=lock)


def names_starting_with(session: Session, account_id: uuid.UUID, typed: str, limit: int) -> list[tuple[str, str]]:
    """(id, name) of the account's active customers whose name starts with `typed`, any case, by name."""
    query = select(Customer.id, Customer.name).where(Customer.account_id == account_id, Customer.archived_at.is_(None),
                                                     func.lower(Customer.name).startswith(typed.lower(), autoescape=True))
    return [(ids.public_id("customer", row_id), name)
            for row_id, name in session.exec(query.order_by(func.lower(Customer.name), Customer.id).limit(limit))]


def list_customers(session: Session, account_id: uuid.UUID, q: CustomerListQuery) -> Page:
    query = name_search.of_account(session, Customer, account_id, q.query)
    if not q.include_deleted:
        query = query.where(Customer.archived_at.is_(None))
    filters = {"query": q.query, "include_deleted": q.include_deleted}
    return paginate(session, query, Customer, kind="customers", account_id=account_id, filters=filters,
                    cursor=q.cursor, limit=q.limit)


def _apply(row: Customer, data: CustomerFields) -> None:
    sent = data.sent()
    for key in ("name", "email", "phone", "tax_id", "peppol_id"):
        if key in sent:
            setattr(row, key, getattr(data, key))
    if "address" in sent:
        if data.address is None:
            row.address = None
        else:
            merged = dict(row.address or {})
            merged.update(data.address.model_dump(include=data.address.sent()))
            row.address = merged


def create_customer(session: Session, account_id: uuid.UUID, data: CustomerCreate) -> Customer:
    row = Customer(account_id=account_id, name=data.name)
    _apply(row, data)
    session.add(row)
    session.flush()
    return row


def update_customer(session: Session, account_id: uuid.UUID, customer_id: str, data: CustomerUpdate) -> Customer:
    row = get_customer(session, account_id, customer_id, lock=True)
    _apply(row, data)
    row.updated = now()
    session.add(row)
    session.flush()
    return row


def set_archived(session: Session, account_id: uuid.UUID, customer_id: str, archived: bool) -> Customer:
    row = get_customer(session, account_id, customer_id, lock=True)
    if archived and row.archived_at is None:
        row.archived_at = now()
    elif not archived:
        row.archived_at = None
    row.updated = now()
    session.add(row)
    session.flush()
    return row
