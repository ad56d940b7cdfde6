"""Database tables of the invoicing library (SQLModel on SQLAlchemy 2).

Money columns are integers in the currency's minor unit; percentages and quantities are exact
decimals stored as text. Every account-owned row carries `account_id` so that every lookup is
scoped to the caller's account.
"""

from __future__ import annotations

import functools
import uuid
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Literal

from pydantic_core import PydanticUndefined
from sqlalchemy import JSON, BigInteger, Index, Integer, LargeBinary, Text, UniqueConstraint, event, func
from sqlalchemy import false as sa_false
from sqlalchemy import text as sa_text
from sqlalchemy import true as sa_true
from sqlmodel import Field, SQLModel

from core.base.clock import now
from core.base.db import DecimalText, UTCDateTime


def _id() -> uuid.UUID:
    return uuid.uuid4()


def _ts(**kw: Any) -> Any:
    return Field(default_factory=now, sa_type=UTCDateTime, **kw)


def _ts_null(**kw: Any) -> Any:
    return Field(default=None, sa_type=UTCDateTime, **kw)


def _money(**kw: Any) -> Any:
    return Field(default=0, sa_type=BigInteger, **kw)


@event.listens_for(SQLModel, "before_insert", propagate=True)
def _updated_equals_created_on_insert(_mapper, _connection, row) -> None:
    """A new row was last updated when it was created (the two defaults are taken apart)."""
    for created, updated in (("created", "updated"), ("created_at", "updated_at")):
        if hasattr(row, created) and hasattr(row, updated):
            setattr(row, updated, getattr(row, created))


# --- people and accounts -------------------------------------------------------------------


class User(SQLModel, table=True):
    __tablename__ = "users"
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    email: str = Field(max_length=254, unique=True, index=True)  # stored lowercased
    name: str | None = Field(default=None, max_length=256)
    password_hash: str = Field(max_length=255)
    email_verified_at: datetime | None = _ts_null()
    created_at: datetime = _ts()


class SignInChallenge(SQLModel, table=True):
    """A sign-in from a browser new to an account whose budget of failed sign-ins is spent: it
    needs the one-time code e-mailed to the account. One is made whether or not the password was
    right (`user_id` is then None and no code works), so the answer tells a guesser nothing."""

    __tablename__ = "sign_in_challenges"
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    token_hash: str = Field(max_length=64, unique=True)  # the browser's handle, kept only hashed
    user_id: uuid.UUID | None = Field(default=None, foreign_key="users.id", index=True)
    account_subject: str = Field(max_length=64)  # the keyed hash the account's limits count under
    code_hash: str = Field(max_length=64)  # HMAC of the code under a key derived from the secret key
    email_hint: str = Field(max_length=300)  # the address as typed, masked, for the page
    next_path: str = Field(default="/", max_length=2000)
    attempts: int = 0
    expires_at: datetime = Field(sa_type=UTCDateTime, index=True)
    created_at: datetime = _ts()


class Account(SQLModel, table=True):
    """The tenant, a business: owns the business profile, keys, customers, catalog and invoices. Who
    may act in it is its memberships' business (`core.access.memberships`)."""

    __tablename__ = "accounts"
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    owner_user_id: uuid.UUID = Field(foreign_key="users.id", index=True)  # who created it; owners are memberships
    created_at: datetime = _ts()


class Membership(SQLModel, table=True):
    """A person's place in a business: their role bounds the scopes of everything they act with there
    (the dashboard, their API keys, the apps they connected), on every request."""

    __tablename__ = "memberships"
    __table_args__ = (UniqueConstraint("account_id", "user_id"),)  # also the index of a business's members
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    account_id: uuid.UUID = Field(foreign_key="accounts.id")
    user_id: uuid.UUID = Field(foreign_key="users.id", index=True)
    role: str = Field(max_length=16)  # owner, admin, accountant, sales, viewer
    created_at: datetime = _ts()
    updated_at: datetime = _ts()


class Invitation(SQLModel, table=True):
    """An e-mailed invitation to join a business with a role: single use, for one address, expiring."""

    __tablename__ = "invitations"
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    account_id: uuid.UUID = Field(foreign_key="accounts.id", index=True)
    email: str = Field(max_length=254)  # stored lowercased
    role: str = Field(max_length=16)
    token_hash: str = Field(max_length=64, unique=True)  # the link's secret, kept only hashed
    invited_by_user_id: uuid.UUID = Field(foreign_key="users.id")
    sent_count: int = 1
    created_at: datetime = _ts()
    sent_at: datetime = _ts()
    expires_at: datetime = Field(sa_type=UTCDateTime)
    accepted_at: datetime | None = _ts_null()
    accepted_by_user_id: uuid.UUID | None = Field(default=None, foreign_key="users.id")
    revoked_at: datetime | None = _ts_null()


class ActivityEntry(SQLModel, table=True):
    """Something done to a business itself (members, invitations, keys, webhooks, the profile), by whom:
    the activity page shows these beside invoice events and apps' delegated actions."""

    __tablename__ = "activity"
    __table_args__ = (Index("ix_activity_account_created", "account_id", "created_at"),)
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    account_id: uuid.UUID = Field(foreign_key="accounts.id")
    user_id: uuid.UUID | None = None  # the person who did it (for a key: who created the key)
    actor: str = Field(max_length=16)  # user, api_key, oauth_app
    api_key_id: uuid.UUID | None = None
    client_id: str | None = Field(default=None, max_length=2048)
    client_name: str | None = Field(default=None, max_length=256)
    action: str = Field(max_length=64)  # such as member.invited
    summary: str = Field(max_length=1000)
    created_at: datetime = _ts()


class BusinessProfile(SQLModel, table=True):
    __tablename__ = "business_profiles"
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    account_id: uuid.UUID = Field(foreign_key="accounts.id", unique=True)
    legal_name: str = Field(max_length=256)
    trade_name: str | None = Field(default=None, max_length=256)
    country_code: str = Field(max_length=2)
    currency: str = Field(max_length=3)
    tax_id: str | None = Field(default=None, max_length=64)
    address: dict | None = Field(default=None, sa_type=JSON)
    email: str | None = Field(default=None, max_length=254)
    phone: str | None = Field(default=None, max_length=50)
    bank: dict | None = Field(default=None, sa_type=JSON)
    invoice_prefix: str = Field(default="INV", max_length=20)
    credit_note_prefix: str = Field(default="CN", max_length=20, sa_column_kwargs={"server_default": "CN"})
    peppol_id: str | None = Field(default=None, max_length=100)  # e-invoicing address, `scheme:identifier`
    created_at: datetime = _ts()
    updated_at: datetime = _ts()


class ApiKey(SQLModel, table=True):
    __tablename__ = "api_keys"
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    account_id: uuid.UUID = Field(foreign_key="accounts.id", index=True)
    name: str = Field(max_length=256)
    # The person who created it: the key acts as them, bounded by their role in the business.
    created_by_user_id: uuid.UUID = Field(foreign_key="users.id", index=True)
    lookup_id: str = Field(max_length=8, unique=True)  # the 8-character part of the key
    secret_hash: str = Field(max_length=128)  # sha256 of the 32-character secret part
    scopes: list = Field(sa_type=JSON)
    created_at: datetime = _ts()
    expires_at: datetime | None = _ts_null()
    revoked_at: datetime | None = _ts_null()
    last_used_at: datetime | None = _ts_null()


# --- customers and catalog -----------------------------------------------------------------


class Customer(SQLModel, table=True):
    __tablename__ = "customers"
    __table_args__ = (Index("ix_customers_account_created", "account_id", "created", "id"),)
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    account_id: uuid.UUID = Field(foreign_key="accounts.id")
    name: str = Field(max_length=256)
    email: str | None = Field(default=None, max_length=254)
    phone: str | None = Field(default=None, max_length=50)
    tax_id: str | None = Field(default=None, max_length=64)
    address: dict | None = Field(default=None, sa_type=JSON)
    peppol_id: str | None = Field(default=None, max_length=100)  # e-invoicing address, `scheme:identifier`
    archived_at: datetime | None = _ts_null()
    created: datetime = _ts()
    updated: datetime = _ts()


class Product(SQLModel, table=True):
    __tablename__ = "products"
    __table_args__ = (Index("ix_products_account_created", "account_id", "created", "id"),)
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    account_id: uuid.UUID = Field(foreign_key="accounts.id")
    name: str = Field(max_length=256)
    description: str | None = Field(default=None, max_length=5000)
    active: bool = True
    created: datetime = _ts()
    updated: datetime = _ts()


def _name_trigrams(table) -> Index:
    """PostgreSQL: a trigram index on the lowercased name, which serves the case-insensitive
    substring search (`lower(name) LIKE '%…%'`) without reading every row of the account."""
    expression = func.lower(table.c.name).label("name_lower")
    return Index(f"ix_{table.name}_name_trigrams", expression, postgresql_using="gin",
                 postgresql_ops={"name_lower": "gin_trgm_ops"}).ddl_if(dialect="postgresql")


_name_trigrams(Customer.__table__)
_name_trigrams(Product.__table__)


class Price(SQLModel, table=True):
    __tablename__ = "prices"
    __table_args__ = (Index("ix_prices_account_created", "account_id", "created", "id"),)
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    account_id: uuid.UUID = Field(foreign_key="accounts.id")
    product_id: uuid.UUID = Field(foreign_key="products.id", index=True)
    nickname: str | None = Field(default=None, max_length=256)
    unit_amount: int = _money()
    currency: str = Field(max_length=3)
    type: str = Field(default="one_time", max_length=16)
    recurring_interval: str | None = Field(default=None, max_length=8)
    recurring_interval_count: int | None = None
    tax_rate: Decimal = Field(default=Decimal(0), sa_type=DecimalText)
    active: bool = True
    created: datetime = _ts()
    updated: datetime = _ts()


# --- invoices ------------------------------------------------------------------------------


class InvoiceCounter(SQLModel, table=True):
    """Next invoice number per account; row-locked while a number is taken."""

    __tablename__ = "invoice_counters"
    account_id: uuid.UUID = Field(foreign_key="accounts.id", primary_key=True)
    last_number: int = 0


class CreditNoteCounter(SQLModel, table=True):
    """Next credit note number per account, a series of its own; row-locked while a number is taken."""

    __tablename__ = "credit_note_counters"
    account_id: uuid.UUID = Field(foreign_key="accounts.id", primary_key=True)
    last_number: int = 0


RECEIVABLE_COLUMNS = ("account_id", "currency", "customer_id", "due_date", "total", "amount_credited", "amount_paid")


class Invoice(SQLModel, table=True):
    __tablename__ = "invoices"
    __table_args__ = (
        Index("ix_invoices_account_created", "account_id", "created", "id"),
        UniqueConstraint("account_id", "number", name="uq_invoices_account_number"),
        # Receivables (core.billing.receivables) read only open invoices, whatever the history beside them.
        Index("ix_invoices_open_receivable", *RECEIVABLE_COLUMNS, postgresql_where=sa_text("status = 'open'"),
              sqlite_where=sa_text("status = 'open'")),
    )
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    account_id: uuid.UUID = Field(foreign_key="accounts.id")
    customer_id: uuid.UUID = Field(foreign_key="customers.id", index=True)
    number: str | None = Field(default=None, max_length=64)
    status: str = Field(default="draft", max_length=16)  # draft, open, paid, void
    currency: str = Field(max_length=3)
    collection_method: str = Field(default="send_invoice", max_length=32)
    issue_date: date
    due_date: date | None = None
    description: str | None = Field(default=None, max_length=5000)
    footer: str | None = Field(default=None, max_length=5000)
    buyer_reference: str | None = Field(default=None, max_length=200)  # the customer's reference (EN 16931 BT-10)
    order_reference: str | None = Field(default=None, max_length=200)  # their purchase order (BT-13)
    subtotal: int = _money()
    discount: int = _money()
    taxable: int = _money()
    tax: int = _money()
    total: int = _money()
    # Credit notes' `credit_amount` taken off what is due, and the customer's credit balance applied
    # when it was finalized (EN 16931 BT-113, paid in advance).
    amount_credited: int = _money(sa_column_kwargs={"server_default": "0"})
    balance_applied: int = _money(sa_column_kwargs={"server_default": "0"})
    # What has been paid: the balance applied and the payments not reversed (core.billing.payments);
    # amount_due = total - amount_credited - amount_paid while open.
    amount_paid: int = _money(sa_column_kwargs={"server_default": "0"})
    amount_in_words: str | None = Field(default=None, max_length=1000)
    public_url_token: str | None = Field(default=None, max_length=64, unique=True)
    customer_snapshot: dict | None = Field(default=None, sa_type=JSON)
    issuer_snapshot: dict | None = Field(default=None, sa_type=JSON)
    finalized_at: datetime | None = _ts_null()
    paid_at: datetime | None = _ts_null()
    payment_reference: str | None = Field(default=None, max_length=200)  # unused since payments (0011 moved it there)
    voided_at: datetime | None = _ts_null()
    void_reason: str | None = Field(default=None, max_length=5000)
    last_viewed_event_at: datetime | None = _ts_null()
    last_downloaded_event_at: datetime | None = _ts_null()
    # Made by a schedule (core.schedules) for the period from `period_start` to `period_end`.
    schedule_id: uuid.UUID | None = Field(default=None, foreign_key="invoice_schedules.id", index=True)
    period_start: date | None = None
    period_end: date | None = None
    # Payment reminders (core.schedules.reminders): paused for this invoice; and, on a late fee's invoice,
    # the overdue invoice it charges for.
    reminders_paused: bool = Field(default=False, sa_column_kwargs={"server_default": sa_false()})
    late_fee_for_id: uuid.UUID | None = Field(default=None, foreign_key="invoices.id")
    created: datetime = _ts()
    updated: datetime = _ts()


class InvoiceLine(SQLModel, table=True):
    __tablename__ = "invoice_lines"
    __table_args__ = (Index("ix_invoice_lines_invoice_position", "invoice_id", "position"),)
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    account_id: uuid.UUID = Field(foreign_key="accounts.id", index=True)
    invoice_id: uuid.UUID = Field(foreign_key="invoices.id", ondelete="CASCADE")
    position: int = 0
    price_id: uuid.UUID | None = Field(default=None, foreign_key="prices.id")
    product_id: uuid.UUID | None = Field(default=None, foreign_key="products.id")
    # What the caller set explicitly; None means "inherit from the price" on priced lines.
    description_override: str | None = Field(default=None, max_length=5000)
    unit_amount_override: int | None = Field(default=None, sa_type=BigInteger)
    tax_rate_override: Decimal | None = Field(default=None, sa_type=DecimalText)
    # Effective values, recomputed whenever the draft is saved.
    description: str = Field(default="", max_length=5000)
    quantity: Decimal = Field(default=Decimal(1), sa_type=DecimalText)
    unit: str = Field(default="NOS", max_length=3)
    unit_amount: int = _money()
    discount_percent: Decimal = Field(default=Decimal(0), sa_type=DecimalText)
    tax_rate: Decimal = Field(default=Decimal(0), sa_type=DecimalText)
    # The VAT category (EN 16931 BT-151) when the caller chose one, and why a 0 % line is exempt.
    tax_category: str | None = Field(default=None, max_length=2)
    tax_exemption_reason: str | None = Field(default=None, max_length=1000)
    amount: int = _money()
    tax_amount: int = _money()
    created: datetime = _ts()


EventType = Literal[
    "invoice.created", "invoice.updated", "invoice.finalized", "invoice.emailed", "invoice.email_failed",
    "invoice.viewed", "invoice.downloaded", "invoice.paid", "invoice.voided", "invoice.reopened",
    "credit_note.created", "credit_note.voided", "credit_note.emailed", "credit_note.email_failed",
    "payment.recorded", "payment.reversed",
    "invoice_schedule.created", "invoice_schedule.paused", "invoice_schedule.resumed", "invoice_schedule.cancelled",
    "invoice_schedule.completed", "invoice_schedule.run_failed", "invoice.reminder_sent",
]
# The kinds of invoice history, which are also the webhook event kinds.
EVENT_TYPES: tuple[str, ...] = EventType.__args__


class InvoiceEvent(SQLModel, table=True):
    """An invoice's history; the same id is the webhook event id."""

    __tablename__ = "invoice_events"
    __table_args__ = (Index("ix_invoice_events_invoice_created", "invoice_id", "created_at", "id"),
                      Index("ix_invoice_events_account_user", "account_id", "user_id", "created_at"))
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    account_id: uuid.UUID = Field(foreign_key="accounts.id", index=True)
    # No foreign key: the history of a deleted draft may still be delivered to webhooks.
    invoice_id: uuid.UUID
    type: str = Field(max_length=64)
    meta: dict | None = Field(default=None, sa_type=JSON)
    user_id: uuid.UUID | None = None  # the person behind `meta` (a key's creator), for the activity page
    payload: dict = Field(sa_type=JSON)  # the webhook body: id, type, created_at, data.object
    created_at: datetime = _ts()


# --- credit notes --------------------------------------------------------------------------


class CreditNote(SQLModel, table=True):
    """A document of its own correcting an issued invoice (core.billing.credit_notes): numbered in a
    series of its own, its lines and amounts fixed when it is issued."""

    __tablename__ = "credit_notes"
    __table_args__ = (UniqueConstraint("account_id", "number", name="uq_credit_notes_account_number"),
                      Index("ix_credit_notes_account_created", "account_id", "created", "id"),
                      Index("ix_credit_notes_invoice", "invoice_id"),
                      Index("ix_credit_notes_customer_balance", "customer_id", "currency", "balance_remaining"))
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    account_id: uuid.UUID = Field(foreign_key="accounts.id")
    invoice_id: uuid.UUID = Field(foreign_key="invoices.id")
    customer_id: uuid.UUID = Field(foreign_key="customers.id")
    number: str = Field(max_length=64)
    status: str = Field(default="issued", max_length=16)  # issued, void
    currency: str = Field(max_length=3)
    reason: str | None = Field(default=None, max_length=32)
    memo: str | None = Field(default=None, max_length=5000)
    issue_date: date
    subtotal: int = _money()  # the lines' amounts, before tax
    tax: int = _money()
    total: int = _money()
    credit_amount: int = _money()  # taken off what is due on the invoice
    refund_amount: int = _money()  # refunded outside the service
    refund_reference: str | None = Field(default=None, max_length=200)
    refunded_on: date | None = None
    balance_amount: int = _money()  # credited to the customer's balance in `currency`
    balance_remaining: int = _money()  # of balance_amount, not yet applied to a later invoice
    amount_in_words: str | None = Field(default=None, max_length=1000)
    invoice_number: str = Field(max_length=64)  # the invoice it corrects, as issued (BT-25, BT-26)
    invoice_issue_date: date
    customer_snapshot: dict = Field(sa_type=JSON)  # as on the invoice
    issuer_snapshot: dict | None = Field(default=None, sa_type=JSON)
    public_url_token: str = Field(max_length=64, unique=True)
    voided_at: datetime | None = _ts_null()
    created: datetime = _ts()
    updated: datetime = _ts()


class CreditNoteLine(SQLModel, table=True):
    """A line of a credit note: part of an invoice line (by quantity or amount) or a line of its own."""

    __tablename__ = "credit_note_lines"
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    account_id: uuid.UUID = Field(foreign_key="accounts.id")
    credit_note_id: uuid.UUID = Field(foreign_key="credit_notes.id", index=True, ondelete="CASCADE")
    position: int = 0
    type: str = Field(max_length=16)  # invoice_line or custom
    invoice_line_id: uuid.UUID | None = Field(default=None, foreign_key="invoice_lines.id", index=True)
    description: str = Field(default="", max_length=5000)
    quantity: Decimal | None = Field(default=None, sa_type=DecimalText)  # credited by quantity
    unit: str = Field(default="NOS", max_length=3)
    unit_amount: int | None = Field(default=None, sa_type=BigInteger)
    discount_percent: Decimal = Field(default=Decimal(0), sa_type=DecimalText)
    amount: int = _money()  # before tax
    tax_rate: Decimal = Field(default=Decimal(0), sa_type=DecimalText)
    tax_category: str | None = Field(default=None, max_length=2)
    tax_exemption_reason: str | None = Field(default=None, max_length=1000)
    tax_amount: int = _money()


# --- payments ------------------------------------------------------------------------------


class Payment(SQLModel, table=True):
    """Money received for an invoice outside the service (core.billing.payments): part or all of what
    is due, any excess put on the customer's balance; reversed (a bounced transfer), it stays here."""

    __tablename__ = "payments"
    __table_args__ = (Index("ix_payments_account_created", "account_id", "created", "id"),
                      Index("ix_payments_invoice", "invoice_id"),
                      Index("ix_payments_customer_balance", "customer_id", "currency", "balance_remaining"))
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    account_id: uuid.UUID = Field(foreign_key="accounts.id")
    invoice_id: uuid.UUID = Field(foreign_key="invoices.id")
    customer_id: uuid.UUID = Field(foreign_key="customers.id")
    invoice_number: str = Field(max_length=64)  # the invoice's, as issued
    status: str = Field(default="recorded", max_length=16)  # recorded, reversed
    currency: str = Field(max_length=3)
    amount: int = _money()  # received
    amount_applied: int = _money()  # of amount, taken off what the invoice had due
    balance_amount: int = _money()  # of amount, the excess put on the customer's balance
    balance_remaining: int = _money()  # of balance_amount, not yet applied to a later invoice
    paid_at: datetime = Field(sa_type=UTCDateTime)  # when it was received, as given
    method: str = Field(max_length=16)
    reference: str | None = Field(default=None, max_length=200)
    note: str | None = Field(default=None, max_length=5000)
    reversed_at: datetime | None = _ts_null()
    reversal_reason: str | None = Field(default=None, max_length=1000)
    created: datetime = _ts()
    updated: datetime = _ts()


# --- schedules -----------------------------------------------------------------------------


class InvoiceSchedule(SQLModel, table=True):
    """A recurring invoice (core.schedules): the invoice `template` made for a customer once per period
    of the `recurrence`, in `mode`, acting as the credential that created it (`created_by_*`)."""

    __tablename__ = "invoice_schedules"
    __table_args__ = (Index("ix_invoice_schedules_account_created", "account_id", "created", "id"),
                      Index("ix_invoice_schedules_due", "status", "next_run_at"))
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    account_id: uuid.UUID = Field(foreign_key="accounts.id")
    customer_id: uuid.UUID = Field(foreign_key="customers.id", index=True)
    status: str = Field(default="active", max_length=16)  # active, paused, cancelled, completed
    mode: str = Field(max_length=24)  # draft, finalize, finalize_and_send
    template: dict = Field(sa_type=JSON)  # the invoice as `InvoiceCreate` takes it, without customer and dates
    recurrence: dict = Field(sa_type=JSON)  # core.schedules.recurrence.Recurrence
    time_zone: str = Field(max_length=64)
    catch_up: str = Field(default="all", max_length=16)  # all, latest
    max_attempts: int = 3  # of one period, before the schedule pauses
    next_index: int = 0  # the period the next run makes (0: the first)
    next_run_at: datetime | None = _ts_null()  # None once cancelled or completed
    attempts: int = 0  # failed attempts of the next period so far
    last_error: str | None = Field(default=None, max_length=1000)
    last_error_at: datetime | None = _ts_null()
    pause_reason: str | None = Field(default=None, max_length=1000)
    paused_at: datetime | None = _ts_null()
    cancelled_at: datetime | None = _ts_null()
    # Who it acts as: the credential that created it (its scopes and limits apply at every run).
    created_by_actor: str = Field(max_length=16)  # api_key, oauth_app, user
    created_by_api_key_id: uuid.UUID | None = None
    created_by_client_id: str | None = Field(default=None, max_length=200)
    created_by_grant_id: uuid.UUID | None = None
    created_by_user_id: uuid.UUID | None = None
    created: datetime = _ts()
    updated: datetime = _ts()


class ScheduleRun(SQLModel, table=True):
    """One period of a schedule: made once (`period_index` is unique per schedule), or skipped."""

    __tablename__ = "schedule_runs"
    __table_args__ = (UniqueConstraint("schedule_id", "period_index", name="uq_schedule_runs_period"),
                      Index("ix_schedule_runs_email", "email_status", "email_next_at"))
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    account_id: uuid.UUID = Field(foreign_key="accounts.id")
    schedule_id: uuid.UUID = Field(foreign_key="invoice_schedules.id")
    period_index: int
    period_start: date
    period_end: date
    scheduled_for: datetime = Field(sa_type=UTCDateTime)
    status: str = Field(max_length=16)  # invoiced, skipped
    invoice_id: uuid.UUID | None = Field(default=None, foreign_key="invoices.id")
    # The e-mail of a `finalize_and_send` run: pending, sending, sent, failed, unknown (a process
    # stopped while sending: never sent again, so never twice); None for the other modes.
    email_status: str | None = Field(default=None, max_length=16)
    email_next_at: datetime | None = _ts_null()
    email_attempts: int = 0
    email_error: str | None = Field(default=None, max_length=1000)
    created_at: datetime = _ts()


class ReminderPolicy(SQLModel, table=True):
    """An account's payment reminders: the steps (days from the due date, each with its e-mail) and an
    optional late fee (core.schedules.reminders)."""

    __tablename__ = "reminder_policies"
    account_id: uuid.UUID = Field(foreign_key="accounts.id", primary_key=True)
    active: bool = False
    steps: list = Field(default_factory=list, sa_type=JSON)
    late_fee: dict | None = Field(default=None, sa_type=JSON)
    reference_rate: Decimal | None = Field(default=None, sa_type=DecimalText)  # percent a year, as entered
    updated: datetime = _ts()


class InvoiceReminder(SQLModel, table=True):
    """One step of the reminders of one invoice: sent once (unique per invoice and step), or waiting for
    the account's e-mail cap, or skipped."""

    __tablename__ = "invoice_reminders"
    __table_args__ = (Index("uq_invoice_reminders_step", "invoice_id", "step_days", unique=True,
                            postgresql_where=sa_text("NOT manual"), sqlite_where=sa_text("NOT manual")),
                      Index("ix_invoice_reminders_due", "status", "next_attempt_at"))
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    account_id: uuid.UUID = Field(foreign_key="accounts.id")
    invoice_id: uuid.UUID = Field(foreign_key="invoices.id")
    step_days: int  # days after the due date (negative: before); a manual reminder is its own row (`manual`)
    manual: bool = False
    status: str = Field(max_length=16)  # pending, sending, sent, skipped, failed, unknown
    next_attempt_at: datetime | None = _ts_null()
    sent_to: str | None = Field(default=None, max_length=254)
    late_fee_invoice_id: uuid.UUID | None = Field(default=None, foreign_key="invoices.id")
    error: str | None = Field(default=None, max_length=1000)
    sent_at: datetime | None = _ts_null()
    created_at: datetime = _ts()


# --- webhooks ------------------------------------------------------------------------------


class WebhookEndpoint(SQLModel, table=True):
    __tablename__ = "webhook_endpoints"
    __table_args__ = (Index("ix_webhook_endpoints_account_created", "account_id", "created_at", "id"),)
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    account_id: uuid.UUID = Field(foreign_key="accounts.id")
    url: str = Field(max_length=2048)
    events: list | None = Field(default=None, sa_type=JSON)  # None: every kind, future ones too
    secret: str = Field(max_length=128)  # `whsec_…`; kept because it signs every delivery
    active: bool = True
    disabled_at: datetime | None = _ts_null()
    failure_count: int = 0
    first_failure_at: datetime | None = _ts_null()  # start of the current failure streak
    # Not before this instant is another of its rows claimed: one attempt in flight (its lease), or
    # a back-off after an attempt that timed out or could not connect. None: available.
    available_at: datetime | None = _ts_null()
    created_at: datetime = _ts()


class WebhookDelivery(SQLModel, table=True):
    """Outbox row: one event for one endpoint, written in the transaction of the change."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        UniqueConstraint("event_id", "endpoint_id", name="uq_webhook_deliveries_event_endpoint"),
        Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
    )
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    account_id: uuid.UUID = Field(foreign_key="accounts.id", index=True)
    event_id: uuid.UUID = Field(foreign_key="invoice_events.id")
    endpoint_id: uuid.UUID = Field(foreign_key="webhook_endpoints.id", ondelete="CASCADE", index=True)
    status: str = Field(default="pending", max_length=16)  # pending, succeeded, failed
    attempts: int = 0
    next_attempt_at: datetime = _ts()
    last_attempt_at: datetime | None = _ts_null()
    last_status_code: int | None = None
    last_error: str | None = Field(default=None, max_length=1000)
    created_at: datetime = _ts()


# --- platform: idempotency, rate limits, sessions ------------------------------------------


class IdempotencyRecord(SQLModel, table=True):
    __tablename__ = "idempotency_records"
    __table_args__ = (
        UniqueConstraint("account_id", "method", "path", "key", name="uq_idempotency_scope"),
    )
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    account_id: uuid.UUID = Field(foreign_key="accounts.id")
    method: str = Field(max_length=8)
    path: str = Field(max_length=512)
    key: str = Field(max_length=255)
    request_hash: str = Field(max_length=64)
    state: str = Field(default="running", max_length=16)  # running, done
    locked_until: datetime = _ts()  # the running claim's lease
    claim_token: str = Field(default="", max_length=32)  # the running claim's holder
    response_status: int | None = None
    response_body: str | None = None
    response_headers: dict | None = Field(default=None, sa_type=JSON)
    created_at: datetime = _ts(index=True)


class RateLimitWindow(SQLModel, table=True):
    """Requests counted per bucket and clock-aligned window (a sliding-window counter reads the
    current and the previous one), shared by every server process."""

    __tablename__ = "rate_limit_windows"
    bucket: str = Field(max_length=200, primary_key=True)
    window_start: int = Field(primary_key=True, sa_type=BigInteger)  # Unix seconds
    count: int = 0  # requests allowed in this window
    allowed: bool = Field(default=True, sa_column_kwargs={"server_default": sa_true()})  # the last request's fate


class RateLimitLog(SQLModel, table=True):
    """The times of the last requests a limit counted (a sliding log, `core.mechanisms.ratelimit`)."""

    __tablename__ = "rate_limit_logs"
    bucket: str = Field(max_length=200, primary_key=True)
    stamps: str = Field(sa_type=Text)  # a ring of 13-digit Unix milliseconds, one per request of the limit
    head: int = 0  # where the next stamp goes; the stamp there is the oldest
    allowed: bool = True  # the last request's fate
    expires_at: int = Field(default=0, sa_type=BigInteger, index=True)  # Unix ms when every stamp has left


class InvoiceDocument(SQLModel, table=True):
    """A finalized invoice's rendered document (the PDF), kept once made: a finalized invoice
    never changes, so no one who opens its link makes the service render it again. `variant`
    names what the bytes depend on besides the invoice (its status as shown, the layout's version)."""

    __tablename__ = "invoice_documents"
    invoice_id: uuid.UUID = Field(foreign_key="invoices.id", primary_key=True)
    variant: str = Field(max_length=100, primary_key=True)
    content: bytes = Field(sa_type=LargeBinary)
    etag: str = Field(max_length=80)
    created_at: datetime = _ts()


class DelegatedAction(SQLModel, table=True):
    """A consequential action (finalize, send, pay, void) an app took, or was refused, for a person:
    what the connected-apps page shows, and what an app's per-day limit counts (per app, person and
    business, over every sign-in of the app)."""

    __tablename__ = "delegated_actions"
    __table_args__ = (Index("ix_delegated_actions_app_created", "account_id", "user_id", "client_id", "created_at"),)
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    account_id: uuid.UUID = Field(foreign_key="accounts.id")
    grant_id: uuid.UUID  # the sign-in it came through
    # The app and the person it acted for (None only on actions recorded before migration 0008 whose
    # sign-in was gone by then: older than any day's count).
    client_id: str | None = Field(default=None, max_length=2048)
    user_id: uuid.UUID | None = None
    client_name: str | None = Field(default=None, max_length=256)
    action: str = Field(max_length=16)  # finalize, send, pay, void
    via: str = Field(max_length=16)  # MCP or REST
    invoice_id: uuid.UUID
    invoice_label: str = Field(max_length=300)  # its number, or "draft for …"
    amount: int = Field(sa_type=BigInteger)
    currency: str = Field(max_length=3)
    outcome: str = Field(max_length=16)  # done or refused
    detail: str | None = Field(default=None, max_length=1000)
    created_at: datetime = _ts()


class McpConfirmation(SQLModel, table=True):
    """A question put to a person through an assistant (MCP `elicitation/create` on a handshake-era
    connection) and, once it comes, the answer. The answer may reach any server process; the one
    holding the question's stream reads it here."""

    __tablename__ = "mcp_confirmations"
    id: str = Field(max_length=64, primary_key=True)  # the elicitation request's JSON-RPC id
    binding: str = Field(max_length=64)  # a keyed hash of the credential that may answer
    answer: dict | None = Field(default=None, sa_type=JSON)
    expires_at: datetime = Field(sa_type=UTCDateTime, index=True)


class SpentToken(SQLModel, table=True):
    """Tokens good for one use that have been used (`core.mechanisms.single_use`): signed-out forms'
    CSRF tokens, confirmations of an assistant's actions. Kept until they would have expired anyway."""

    __tablename__ = "spent_tokens"
    token_hash: str = Field(max_length=64, primary_key=True)
    expires_at: datetime = Field(sa_type=UTCDateTime, index=True)


class WorkerHeartbeat(SQLModel, table=True):
    """When each background worker last ran its due jobs without a failure (readiness, metrics)."""

    __tablename__ = "worker_heartbeats"
    worker_id: str = Field(max_length=200, primary_key=True)  # host:pid
    last_success_at: datetime = _ts()


class WebSession(SQLModel, table=True):
    __tablename__ = "web_sessions"
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    token_hash: str = Field(max_length=64, unique=True)
    user_id: uuid.UUID = Field(foreign_key="users.id", index=True)
    account_id: uuid.UUID | None = Field(default=None, foreign_key="accounts.id")  # the business chosen here
    created_at: datetime = _ts()
    expires_at: datetime = Field(sa_type=UTCDateTime)


@functools.cache
def plain(model: type[SQLModel]) -> type:
    """A light stand-in for rows of `model`: its fields with their defaults, the table (`__table__`)
    and no ORM state or validation. For rows built in memory and written without the ORM (the fast
    write path); ORM instances cost ~30 µs each, mostly looking up how to call default factories."""
    fields = model.model_fields
    defaults = {name: field.default for name, field in fields.items()
                if field.default_factory is None and field.default is not PydanticUndefined}
    factories = {name: field.default_factory for name, field in fields.items() if field.default_factory is not None}

    def __init__(self, **values: Any) -> None:
        for name, default in defaults.items():
            setattr(self, name, default)
        for name, factory in factories.items():
            setattr(self, name, factory())
        for name, value in values.items():
            setattr(self, name, value)

    return type(f"Plain{model.__name__}", (), {"__slots__": tuple(fields), "__table__": model.__table__,
                                               "__init__": __init__})


def as_inserted(row):
    """`row` (plain or ORM) made as the ORM's INSERT makes a new row: last updated when it was created
    (`_updated_equals_created_on_insert`)."""
    for created, updated in (("created", "updated"), ("created_at", "updated_at")):
        if hasattr(row, created) and hasattr(row, updated):
            setattr(row, updated, getattr(row, created))
    return row


def inserted_values(row) -> dict:
    """The column values of a new row as the ORM's INSERT writes them, the row made so too (`as_inserted`)."""
    as_inserted(row)
    return {column.name: getattr(row, column.name) for column in row.__table__.c}


class McpTask(SQLModel, table=True):
    """A tool call an assistant asked to run as a task (MCP extension `io.modelcontextprotocol/tasks`):
    its state, so whichever process a `tasks/get`, `tasks/update` or `tasks/cancel` reaches answers
    it. The process that accepted the call runs it and keeps `heartbeat_at` fresh; a task whose
    runner stopped beating is failed by whoever reads it next."""

    __tablename__ = "mcp_tasks"
    id: str = Field(max_length=64, primary_key=True)  # the task id the client holds (unguessable)
    account_id: uuid.UUID = Field(foreign_key="accounts.id", index=True)
    binding: str = Field(max_length=64)  # a keyed hash of the credential that created it (only it may read it)
    tool: str = Field(max_length=64)
    arguments: dict = Field(sa_type=JSON)
    status: str = Field(max_length=16)  # working, input_required, completed, failed, cancelled
    status_message: str | None = Field(default=None, max_length=2000)
    input_requests: dict | None = Field(default=None, sa_type=JSON)  # outstanding, by key
    input_responses: dict | None = Field(default=None, sa_type=JSON)  # delivered, not yet taken by the runner
    result: dict | None = Field(default=None, sa_type=JSON)  # the CallToolResult, once completed
    error: dict | None = Field(default=None, sa_type=JSON)  # the JSON-RPC error, once failed
    cancel_requested: bool = Field(default=False)
    runner: str | None = Field(default=None, max_length=200)  # host:pid of the process running it
    heartbeat_at: datetime | None = _ts_null()
    created_at: datetime = _ts()
    updated_at: datetime = _ts()
    expires_at: datetime = Field(sa_type=UTCDateTime, index=True)


class EInvoiceExport(SQLModel, table=True):
    """A ZIP of a period's e-invoices (finalized invoices and credit notes in one format), made by
    the `export_e_invoices` tool and kept for a day."""

    __tablename__ = "e_invoice_exports"
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    account_id: uuid.UUID = Field(foreign_key="accounts.id", index=True)
    format: str = Field(max_length=16)
    period_start: date
    period_end: date
    filename: str = Field(max_length=200)
    documents: int = Field(default=0)
    content: bytes = Field(sa_type=LargeBinary)
    created_at: datetime = _ts()
    expires_at: datetime = Field(sa_type=UTCDateTime, index=True)


class ChangeFeedEntry(SQLModel, table=True):
    """A change to an account's invoices, for the MCP listen streams of every process: written in the
    change's own transaction (on PostgreSQL a NOTIFY wakes the listeners at once; on SQLite they poll
    this table). Kept for a few minutes."""

    __tablename__ = "change_feed"
    id: int | None = Field(default=None, primary_key=True, sa_type=BigInteger().with_variant(Integer(), "sqlite"))
    account_id: uuid.UUID = Field(index=True)
    uri: str = Field(max_length=200)  # the resource that changed, such as invoice://in_…
    kind: str = Field(max_length=64)  # the event type that changed it, such as invoice.paid
    created_at: datetime = _ts(index=True)


class McpListenStream(SQLModel, table=True):
    """An open `subscriptions/listen` stream, counted per credential across processes (at most a few
    each). The process holding it refreshes `heartbeat_at`; a stream not refreshed lately is gone."""

    __tablename__ = "mcp_listen_streams"
    id: str = Field(max_length=64, primary_key=True)
    binding: str = Field(max_length=64, index=True)
    heartbeat_at: datetime = _ts()
