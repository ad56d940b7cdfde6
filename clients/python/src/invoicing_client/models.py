"""The API's objects, with attribute access and a type for every field.

Written from the served OpenAPI document (`GET /api/v1/openapi.json`); a test of the server's
repository checks every field of every schema against these classes. Money is an integer in the
currency's minor unit (cents, yen), as the API sends it; quantities and rates are `Decimal`. Fields
a newer server adds are kept (`extra="allow"`) and never break parsing; `to_dict()` gives the object
exactly as the API sent it.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Annotated, Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, PlainSerializer, PrivateAttr
from typing_extensions import Self


def _json_number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


Number = Annotated[Decimal, PlainSerializer(_json_number, when_used="json")]


class InvoicingObject(BaseModel):
    """Base of every object: unknown fields are kept, and the API's JSON is at hand."""

    model_config = ConfigDict(extra="allow", frozen=False, populate_by_name=True)
    _raw: dict[str, Any] | None = PrivateAttr(default=None)

    @classmethod
    def from_api(cls, data: dict[str, Any]) -> Self:
        obj = cls.model_validate(data)
        obj._raw = data
        return obj

    def to_dict(self) -> dict[str, Any]:
        """The object as JSON-ready data: as the API sent it, or as built."""
        return self._raw if self._raw is not None else self.model_dump(mode="json")


class Address(InvoicingObject):
    line1: str | None = None
    line2: str | None = None
    city: str | None = None
    state: str | None = None
    postal_code: str | None = None
    country: str | None = None


class Customer(InvoicingObject):
    id: str
    object: str = "customer"
    name: str
    email: str | None = None
    phone: str | None = None
    tax_id: str | None = None
    address: Address = Address()
    peppol_id: str | None = None  # electronic address for e-invoices, `scheme:identifier`
    deleted: bool = False
    created: dt.datetime


class Product(InvoicingObject):
    id: str
    object: str = "product"
    name: str
    description: str | None = None
    active: bool
    created: dt.datetime
    updated: dt.datetime


class Recurring(InvoicingObject):
    interval: str  # day, week, month or year
    interval_count: int


class Price(InvoicingObject):
    id: str
    object: str = "price"
    product: str
    nickname: str | None = None
    unit_amount: int
    currency: str
    billing_scheme: str = "per_unit"
    type: str  # one_time or recurring
    recurring: Recurring | None = None
    tax_rate: Number
    active: bool
    created: dt.datetime


class BusinessAddress(InvoicingObject):
    line1: str | None = None
    line2: str | None = None
    city: str | None = None
    region: str | None = None
    postal_code: str | None = None
    country_code: str | None = None
    country: str | None = None


class BankDetails(InvoicingObject):
    bank_name: str | None = None
    account_name: str | None = None
    account_number: str | None = None
    routing_number: str | None = None


class Business(InvoicingObject):
    """The business profile. From `business.retrieve()` (`GET /business`) also which business the credential
    acts for (`account`, `acct_…`) and the caller's `role` in it (older servers send neither; an invoice's
    `issuer` has neither)."""

    id: str
    object: str = "business"
    account: str | None = None  # acct_…: the business a key belongs to, or an app's sign-in was bound to
    role: str | None = None  # owner, admin, accountant, sales or viewer: bounds every scope of the credential
    legal_name: str
    trade_name: str | None = None
    country_code: str
    currency: str
    tax_id: str | None = None
    address: BusinessAddress
    email: str | None = None
    phone: str | None = None
    bank: BankDetails
    invoice_prefix: str
    credit_note_prefix: str = "CN"  # credit notes are numbered in a series of their own: CN-0001, …
    peppol_id: str | None = None  # electronic address for e-invoices, `scheme:identifier`
    created_at: dt.datetime


class CustomerDetails(InvoicingObject):
    """The customer as the invoice shows them (frozen when it is finalized)."""

    name: str
    email: str | None = None
    address: Address = Address()
    tax_id: str | None = None
    peppol_id: str | None = None


class InvoiceItem(InvoicingObject):
    id: str
    object: str = "invoice_item"
    invoice: str
    price: str | None = None
    product: str | None = None
    description: str
    quantity: Number
    unit: str
    unit_amount: int
    amount: int
    discount_percent: Number
    tax_rate: Number
    tax_amount: int
    tax_category: str | None = None  # S, Z, E, AE, K, G or O when chosen
    tax_exemption_reason: str | None = None


class InvoiceLines(InvoicingObject):
    data: list[InvoiceItem]


class InvoicePeriod(InvoicingObject):
    """The days an invoice bills, both included."""

    start: dt.date
    end: dt.date


class Invoice(InvoicingObject):
    """An invoice. `lines` is there when the API sends them (retrieve, create, update; not the
    lists or the finalize, pay and void answers)."""

    id: str
    object: str = "invoice"
    number: str | None = None
    status: str  # draft, open, paid, overdue or void
    customer: str
    currency: str
    collection_method: str
    issue_date: dt.date
    due_date: dt.date | None = None
    description: str | None = None
    footer: str | None = None
    buyer_reference: str | None = None
    order_reference: str | None = None
    subtotal: int
    discount: int
    taxable: int
    tax: int
    total: int
    amount_credited: int = 0  # what credit notes took off what is due (their credit_amount)
    balance_applied: int = 0  # the customer's credit balance applied when it was finalized (paid in advance; in amount_paid)
    amount_paid: int = 0  # the balance applied and the payments recorded and not reversed; above 0 on an open one: part-paid
    amount_due: int  # total − amount_credited − amount_paid while open or overdue; else 0
    amount_in_words: str | None = None
    public_url_token: str | None = None
    public_url: str | None = None
    public_pdf_url: str | None = None
    finalized_at: dt.datetime | None = None
    paid_at: dt.datetime | None = None
    voided_at: dt.datetime | None = None
    void_reason: str | None = None
    schedule: str | None = None  # the invoice schedule (sched_) that made it
    period: InvoicePeriod | None = None  # the days it bills, when a schedule made it
    reminders_paused: bool = False  # the account's payment reminders paused for this invoice
    late_fee_for: str | None = None  # on a late fee's invoice: the overdue invoice (in_) it charges for
    created: dt.datetime
    updated: dt.datetime
    customer_details: CustomerDetails
    issuer: Business | None = None
    lines: InvoiceLines | None = None


class SentInvoice(Invoice):
    """The invoice after `send`, with the address it was e-mailed to."""

    emailed_to: str


class RemindedInvoice(Invoice):
    """The invoice after `remind`, with the address the payment reminder was e-mailed to."""

    emailed_to: str


class InvoicePreviewLine(InvoiceItem):
    """A line of a preview: saved nowhere, so without an id."""

    id: str | None = None  # type: ignore[assignment]
    invoice: str | None = None  # type: ignore[assignment]


class InvoicePreviewLines(InvoicingObject):
    data: list[InvoicePreviewLine]


class InvoicePreview(Invoice):
    """What `create` would make, computed and saved nowhere: `id` is None."""

    id: str | None = None  # type: ignore[assignment]
    object: str = "invoice_preview"
    lines: InvoicePreviewLines | None = None  # type: ignore[assignment]


class DeletedInvoice(InvoicingObject):
    id: str
    object: str = "invoice"
    deleted: bool = True


class InvoiceEvent(InvoicingObject):
    id: str
    type: str  # invoice.created, invoice.finalized, payment.recorded, invoice.paid, payment.reversed, invoice.reopened, …
    meta: dict[str, Any] | None = None
    created_at: dt.datetime


class CreditNoteLine(InvoicingObject):
    """A line of a credit note: part of a line of the invoice (`type` `invoice_line`), or a line of its
    own (`custom`). Tax is the invoice line's rate, rounded as the invoice was."""

    id: str  # cnli_…
    object: str = "credit_note_line"
    type: str  # invoice_line or custom
    invoice_line: str | None = None  # the invoice line credited, ii_…; None for a line of its own
    description: str
    quantity: Number | None = None  # units credited, when credited by quantity
    unit: str
    unit_amount: int | None = None  # the invoice line's unit price; None for a line of its own
    discount_percent: Number
    amount: int  # credited before tax
    tax_rate: Number
    tax_category: str | None = None
    tax_exemption_reason: str | None = None
    tax_amount: int


class CreditNoteLines(InvoicingObject):
    data: list[CreditNoteLine]


class Refund(InvoicingObject):
    """The part of a credit note refunded outside the service."""

    reference: str | None = None
    refunded_on: dt.date


class CreditNote(InvoicingObject):
    """A credit note: a document of its own, numbered in its own series (`CN-0001`), that corrects an
    open or paid invoice. Its `total` went to `credit_amount` (off what was due), `refund_amount`
    (refunded outside the service, see `refund`) and `balance_amount` (the customer's credit, applied
    to their next invoice in this currency; `balance_remaining` is what is not applied yet)."""

    id: str  # cn_…
    object: str = "credit_note"
    number: str
    status: str  # issued or void
    invoice: str
    invoice_number: str
    invoice_issue_date: dt.date
    customer: str
    customer_details: CustomerDetails
    issuer: Business | None = None
    currency: str
    reason: str | None = None  # duplicate, order_change, product_unsatisfactory or fraudulent
    memo: str | None = None
    issue_date: dt.date
    subtotal: int
    tax: int
    total: int
    credit_amount: int
    refund_amount: int
    refund: Refund | None = None
    balance_amount: int
    balance_remaining: int
    amount_in_words: str | None = None
    public_url: str | None = None
    public_pdf_url: str | None = None
    voided_at: dt.datetime | None = None
    created: dt.datetime
    updated: dt.datetime
    lines: CreditNoteLines


class SentCreditNote(CreditNote):
    """The credit note after `send`, with the address it was e-mailed to."""

    emailed_to: str


class CreditNotePreviewLine(CreditNoteLine):
    """A line of a preview: saved nowhere, so without an id."""

    id: str | None = None  # type: ignore[assignment]


class CreditNotePreviewLines(InvoicingObject):
    data: list[CreditNotePreviewLine]


class CreditNotePreview(CreditNote):
    """What `create` would issue, computed exactly so and saved nowhere: `id`, `number`, `created`
    and `updated` are None."""

    id: str | None = None  # type: ignore[assignment]
    number: str | None = None  # type: ignore[assignment]
    created: dt.datetime | None = None  # type: ignore[assignment]
    updated: dt.datetime | None = None  # type: ignore[assignment]
    lines: CreditNotePreviewLines  # type: ignore[assignment]


class Payment(InvoicingObject):
    """Money received for an invoice outside the service (no money moves through it): a bank transfer,
    a card, cash, … Of its `amount`, `amount_applied` came off what the invoice had due and
    `balance_amount` (an overpayment put on the customer's credit balance) went to their next invoice in
    this currency (`balance_remaining`: not applied yet). Reversed, it stays with `reversed_at` and
    `reversal_reason`, and what it paid is due again."""

    id: str  # py_…
    object: str = "payment"
    status: str  # recorded or reversed
    invoice: str
    invoice_number: str
    customer: str
    currency: str  # the invoice's: every amount is in it
    amount: int
    amount_applied: int
    balance_amount: int
    balance_remaining: int
    paid_on: dt.date  # when it was received (UTC date)
    paid_at: dt.datetime  # the same, as given (a date is midnight UTC)
    method: str  # bank_transfer, card, cash, cheque, direct_debit or other
    reference: str | None = None
    note: str | None = None  # internal, never shown to the customer
    reversed_at: dt.datetime | None = None
    reversal_reason: str | None = None
    created: dt.datetime
    updated: dt.datetime


BUCKETS = ("current", "days_1_30", "days_31_60", "days_61_90", "days_over_90")


class AgingBucket(InvoicingObject):
    """The open invoices of one age, by days past their due date on the day counted (`as_of`)."""

    bucket: str  # current (not yet due, due today, or no due date), days_1_30, days_31_60, days_61_90 or days_over_90
    amount: int  # outstanding on them
    invoices: int  # how many


class ReceivableFigures(InvoicingObject):
    """What is owed in one currency: `outstanding` on `invoices` open invoices, of which `overdue` on
    `overdue_invoices` past their due date, and the aging `buckets`, youngest first (zeros included),
    adding up to `outstanding`."""

    currency: str
    outstanding: int
    overdue: int
    invoices: int
    overdue_invoices: int
    buckets: list[AgingBucket]

    def bucket(self, name: str) -> AgingBucket:
        """One bucket by name (`current`, `days_1_30`, `days_31_60`, `days_61_90`, `days_over_90`);
        a bucket the server did not send is empty."""
        if name not in BUCKETS:
            raise KeyError(f"{name!r} is not an aging bucket: one of {', '.join(BUCKETS)}")
        return next((bucket for bucket in self.buckets if bucket.bucket == name),
                    AgingBucket(bucket=name, amount=0, invoices=0))


class CurrencyReceivables(ReceivableFigures):
    """What the account's customers owe in one currency (amounts are never added across currencies)."""


class CustomerReceivables(ReceivableFigures):
    """What one customer owes in one currency (a customer owing in two currencies has two rows)."""

    customer: str  # cus_…
    name: str  # the customer's name, as it is now


class Receivables(InvoicingObject):
    """What customers owe on open invoices on `as_of` (today, UTC): per currency, all of them; and a
    page of `customers` (per customer and currency, largest outstanding first), the next page's cursor
    in `next_cursor` (None on the last)."""

    object: str = "receivables"
    as_of: dt.date
    currencies: list[CurrencyReceivables]
    customers: list[CustomerReceivables]
    next_cursor: str | None = None

    @property
    def has_more(self) -> bool:
        return self.next_cursor is not None

    def currency(self, code: str) -> CurrencyReceivables | None:
        """The figures of one currency (any case); None when nothing is owed in it."""
        return next((row for row in self.currencies if row.currency == code.upper()), None)


class InvoiceTemplateItem(InvoicingObject):
    """A line of a schedule's invoice, as it was given: by `price` (its amount and tax unless set here), or
    ad hoc with `description` and `unit_amount`."""

    price: str | None = None  # price_…
    description: str | None = None
    quantity: Number = Decimal(1)
    unit: str = "NOS"
    unit_amount: int | None = None  # minor units
    discount_percent: Number = Decimal(0)
    tax_rate: Number | None = None  # None: the price's, or 0 for an ad-hoc line
    tax_category: str | None = None
    tax_exemption_reason: str | None = None


class InvoiceTemplate(InvoicingObject):
    """The invoice each run of a schedule makes: what `invoices.create` takes, but for the customer
    (the schedule's) and the dates (issued on the period's first day, due `days_until_due` later)."""

    currency: str | None = None  # None: the business's
    collection_method: str | None = None
    days_until_due: int | None = None  # None: 30
    description: str | None = None
    footer: str | None = None
    buyer_reference: str | None = None
    order_reference: str | None = None
    items: list[InvoiceTemplateItem]


class Recurrence(InvoicingObject):
    """How often a schedule runs (every `interval_count` `interval`s: week, month, quarter or year), on
    which day of the month (1 to 31, or `last`; None: the start date's), from `start_date`, until
    `end_date` or `count` invoices, at `run_at` (local `HH:MM`) in the schedule's time zone."""

    interval: str
    interval_count: int = 1
    day_of_month: int | str | None = None
    start_date: dt.date
    end_date: dt.date | None = None
    count: int | None = None
    run_at: str = "08:00"


class ScheduleFailure(InvoicingObject):
    """The latest failed run of a schedule's next period."""

    reason: str
    at: dt.datetime
    attempts: int


class ScheduleCreator(InvoicingObject):
    """Who a schedule's runs act as: the credential that created (or last resumed) it."""

    actor: str  # api_key, oauth_app or user
    api_key_id: str | None = None
    client_id: str | None = None
    user_id: str | None = None


class InvoiceSchedule(InvoicingObject):
    """A recurring invoice: `invoice` made for `customer` once per period of `recurrence`, in `mode`
    (`draft`, `finalize` or `finalize_and_send`). `next_run` (UTC) and `next_period` say what comes
    next while it is `active`; `paused` (see `pause_reason`), `cancelled` and `completed` run no more."""

    id: str  # sched_…
    object: str = "invoice_schedule"
    status: str  # active, paused, cancelled or completed
    customer: str
    mode: str  # draft, finalize or finalize_and_send
    invoice: InvoiceTemplate
    recurrence: Recurrence
    time_zone: str  # IANA, such as Europe/Berlin
    catch_up: str  # all or latest
    max_attempts: int
    summary: str  # the recurrence in words: "on the 1st of every month, from 2027-01-01, 12 times"
    next_run: dt.datetime | None = None
    next_period: InvoicePeriod | None = None
    invoices_made: int
    periods_done: int
    periods_remaining: int | None = None  # None without a count
    last_failure: ScheduleFailure | None = None
    pause_reason: str | None = None
    paused_at: dt.datetime | None = None
    cancelled_at: dt.datetime | None = None
    created_by: ScheduleCreator
    created: dt.datetime
    updated: dt.datetime


class ScheduleRunEmail(InvoicingObject):
    """The e-mail of a run in `finalize_and_send` mode."""

    status: str  # pending, sending, sent, failed or unknown
    error: str | None = None


class ScheduleRun(InvoicingObject):
    """One period of a schedule: `invoiced` (its `invoice`, in_…) or `skipped`."""

    id: str  # schrun_…
    object: str = "schedule_run"
    schedule: str
    period_index: int  # 0 for the first period
    period: InvoicePeriod
    scheduled_for: dt.datetime
    status: str  # invoiced or skipped
    invoice: str | None = None
    email: ScheduleRunEmail | None = None
    created: dt.datetime


class ReminderStep(InvoicingObject):
    """One payment reminder of the policy: e-mailed `days` after an invoice's due date (negative: before
    it; 0: on it) with `subject` and `body`, whose placeholders are filled in: {number}, {amount_due},
    {due_date}, {days_overdue}, {link}, {customer} and {business}. With `late_fee`, it charges the policy's
    late fee (a step after the due date; at most one fee per invoice)."""

    days: int  # -60 to 365
    subject: str
    body: str
    late_fee: bool = False


class LateFee(InvoicingObject):
    """The late fee the steps marked `late_fee` charge, issued as an invoice of its own that names the
    overdue one (its `late_fee_for`): `fixed`, `amount` minor units of the overdue invoice's currency; or
    `statutory`, the policy's `reference_rate` plus 8 points a year on what is due for the days overdue
    (and 40 EUR on EUR invoices), computed, so without an `amount`."""

    kind: str  # fixed or statutory
    amount: int | None = None


class ReminderPolicy(InvoicingObject):
    """The account's payment reminders: whether they are `active`, the `steps`, the `late_fee`, and the
    `reference_rate` (percent a year) a statutory fee uses. While never set (`updated` None): the three
    default steps (3 days before the due date, 7 and 30 days after), off."""

    object: str = "reminder_policy"
    active: bool
    steps: list[ReminderStep] = []
    late_fee: LateFee | None = None
    reference_rate: Decimal | None = None  # the API sends it as a string ("2.15"); read as a Decimal
    updated: dt.datetime | None = None


class EInvoiceExportPeriod(InvoicingObject):
    """The issue dates an export covers, both included."""

    start: dt.date
    end: dt.date


class EInvoiceExportSkipped(InvoicingObject):
    """A document of the period left out of the ZIP because EN 16931 or Peppol would refuse it."""

    number: str  # INV-0007 or CN-0001
    detail: str  # what it lacks, with the business term


class EInvoiceExport(InvoicingObject):
    """A period's e-invoices as one ZIP, kept 24 hours (until `expires_at`): every finalized invoice and
    credit note issued in `period`, in one `format` (peppol, cii or facturx), with `manifest.csv`. The
    ZIP's bytes: `client.e_invoice_exports.download(id)`."""

    id: str  # exp_…
    object: str = "e_invoice_export"
    format: str  # peppol, cii or facturx
    period: EInvoiceExportPeriod
    documents: int  # e-invoices in the ZIP
    skipped: list[EInvoiceExportSkipped] = []
    filename: str  # e-invoices-2026-10-01-2026-12-31-peppol.zip
    size: int  # bytes
    created: dt.datetime
    expires_at: dt.datetime
    uri: str  # e-invoice-export://exp_…, the ZIP as an MCP resource


class WebhookEndpoint(InvoicingObject):
    id: str
    url: str
    events: list[str]
    active: bool
    disabled_at: dt.datetime | None = None
    failure_count: int
    created_at: dt.datetime
    secret: str | None = None  # `whsec_…`, only in the answer to create


class DeletedWebhookEndpoint(InvoicingObject):
    id: str
    deleted: bool = True


class Member(InvoicingObject):
    """A person in the business, with the role that bounds everything they (and their keys and apps) do in it."""

    id: str  # mem_…
    object: str = "member"
    email: str
    name: str | None = None
    role: str  # owner, admin, accountant, sales or viewer
    joined_at: dt.datetime


class RemovedMember(Member):
    """A member after `members.remove`: their API keys for the business are revoked and the apps they
    connected to it disconnected."""

    deleted: bool = True


class Invitation(InvoicingObject):
    """An e-mailed invitation to join the business as `role`: its link works once, for `email` only, until
    `expires_at` (14 days after it was last sent)."""

    id: str  # invite_…
    object: str = "invitation"
    email: str
    role: str  # owner, admin, accountant, sales or viewer
    status: str  # pending, accepted, revoked or expired
    created_at: dt.datetime
    sent_at: dt.datetime  # when it was last e-mailed
    expires_at: dt.datetime
    accepted_at: dt.datetime | None = None
    revoked_at: dt.datetime | None = None


T = TypeVar("T", bound=InvoicingObject)


class Page(BaseModel, Generic[T]):
    """One page of a list: its objects, and the cursor of the next page (None on the last)."""

    data: list[T]
    next_cursor: str | None = None

    @property
    def has_more(self) -> bool:
        return self.next_cursor is not None
