"""What a fast write is given and makes in memory, whichever database runs it (`fast_writes` on
PostgreSQL, `fast_writes_sqlite` on SQLite): the request as the surface received it, the handover to
the pipeline, and the draft or finalization made by core's own functions before it is written."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from core.access.principal import Principal
from core.base import money
from core.base.errors import DomainError
from core.billing import invoice_reads, invoices
from core.billing.invoice_inputs import InvoiceCreate
from core.mechanisms import idempotency, ratelimit
from core.models import IdempotencyRecord, InvoiceLine, as_inserted
from operations import fast_reads
from operations import invoices as invoice_operations
from operations.pipeline import Call, Presenter

CREATE, FINALIZE = invoice_operations.create_invoice, invoice_operations.finalize_invoice
RECORDS = IdempotencyRecord.__table__
INVOICES, CUSTOMERS, BUSINESSES = invoice_reads.INVOICES, invoice_reads.CUSTOMERS, invoice_reads.BUSINESSES
LINES = InvoiceLine.__table__
NO_ACCOUNT = uuid.UUID(int=0)


@dataclass(frozen=True)
class Handover:
    """The pipeline answers, with the request counted already (its standing: `usage`)."""

    usage: ratelimit.Usage


@dataclass(frozen=True)
class Request:
    """A write as the surface received it."""

    authorization: str | None
    body: bytes
    idempotency_key: str | None
    scope: tuple[str, str]  # the method and path the key is claimed under
    query_items: list
    params: dict  # the ids the path names
    request_id: str
    presenter: Presenter  # the surface's: how a result is kept under the key (and answered)

    def claimable(self) -> tuple[str, str] | None:
        """The API key's lookup id and secret, when the fast path may serve the request; None: the pipeline's."""
        credential = fast_reads.api_key_of(self.authorization)
        if credential is None or self.idempotency_key is None:
            return None
        try:
            idempotency.check_key(self.idempotency_key)
        except DomainError:
            return None
        return credential

    def fingerprint(self, body_json) -> str:
        return idempotency.call_fingerprint(body_json, self.query_items, self.params)


def drafted(principal: Principal, customer, business, request: Request, data: InvoiceCreate,
            draft: tuple) -> tuple:
    """The draft built before the account was known, made the account's (in the profile's currency when
    none was given), with what its event shows and the answer: (invoice, lines, shown, reply)."""
    invoice, lines = draft
    invoice.account_id = principal.account_id
    for line in lines:
        line.account_id = principal.account_id
    if data.currency is None:  # the business profile's, as the pipeline's draft takes it
        invoice.currency = business.currency
        invoice.amount_in_words = money.amount_in_words(invoice.total, invoice.currency)
    shown, whole = invoices.draft_shown(as_inserted(invoice), lines, customer, business)
    return invoice, lines, shown, request.presenter.success(whole)


def call_of(principal: Principal, request: Request) -> Call:
    """What the pipeline's handler of an operation without input gets (`pipeline.handled`)."""
    return Call(session=None, principal=principal, params=request.params, query=None, body=None)
