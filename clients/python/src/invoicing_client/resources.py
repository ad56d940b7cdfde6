"""The API's resources, sync and async, shaped alike.

Each method is one request: keyword arguments are the API's fields (its reference lists them), with
dates as `datetime.date` or ISO strings and money in minor units. `list()` pages through everything;
`list_page()` fetches one page. Writes take `idempotency_key=`; POSTs get one generated otherwise.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from invoicing_client._http import Call, path, unexpected
from invoicing_client.models import (
    Business,
    CreditNote,
    CreditNotePreview,
    Customer,
    CustomerReceivables,
    DeletedInvoice,
    DeletedWebhookEndpoint,
    EInvoiceExport,
    Invitation,
    Invoice,
    InvoiceEvent,
    InvoiceItem,
    InvoicePreview,
    InvoiceSchedule,
    InvoicingObject,
    LateFee,
    Member,
    Page,
    Payment,
    Price,
    Product,
    Receivables,
    RemindedInvoice,
    ReminderPolicy,
    RemovedMember,
    ScheduleRun,
    SentCreditNote,
    SentInvoice,
    WebhookEndpoint,
)
from invoicing_client.pagination import AsyncPager, Pager

T = TypeVar("T", bound=InvoicingObject)
# Named here: inside the resource classes `list` is their method.
Lines = list[dict[str, Any]]
Strings = list[str]


def jsonable(value: Any) -> Any:
    """Arguments as JSON: keyword names with a trailing underscore as the Python keyword they stand for
    (`from_` is `from`), then the values: dates as ISO strings, Decimals as numbers, models as the fields
    set. `None` stays `null` (which clears a field in an update)."""
    if isinstance(value, dict):
        return {name.rstrip("_") if name.endswith("_") and name[:-1] in KEYWORDS else name: _value(item)
                for name, item in value.items()}
    return _value(value)


KEYWORDS = frozenset({"from", "type", "id"})


def _value(value: Any) -> Any:
    if isinstance(value, dict):
        return {name: _value(item) for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_value(item) for item in value]
    if isinstance(value, BaseModel):
        return _value(value.model_dump(exclude_unset=True))
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, Decimal):  # the API takes at most 15 digits, which a float holds exactly
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def given(**arguments: Any) -> dict[str, Any]:
    """The optional arguments the caller passed (those left at None are not sent)."""
    return jsonable({name: value for name, value in arguments.items() if value is not None})


def _page(model: type[T], answer: Any, request: str | None) -> Page[T]:
    try:
        return Page[model](data=[model.from_api(item) for item in answer["data"]],  # type: ignore[valid-type]
                           next_cursor=answer.get("next_cursor"))
    except (ValidationError, KeyError, TypeError, AttributeError) as exc:
        raise unexpected(exc, request) from None


def _parsed(model: type[T], answer: Any, request: str | None) -> T:
    try:
        return model.from_api(answer["data"])
    except (ValidationError, KeyError, TypeError) as exc:
        raise unexpected(exc, request) from None


S = TypeVar("S", SentInvoice, SentCreditNote, RemindedInvoice)


def _sent(model: type[S], answer: Any, request: str | None) -> S:
    """The answer of a send or a reminder, `{"data": …, "emailed_to": …}`, as one object."""
    try:
        return model.from_api({**answer["data"], "emailed_to": answer.get("emailed_to")})
    except (ValidationError, KeyError, TypeError, AttributeError) as exc:
        raise unexpected(exc, request) from None


class _Resource:
    def __init__(self, client: Any) -> None:
        self._client = client

    def _one(self, call: Call, model: type[T]) -> T:
        return _parsed(model, self._client.request(call), self._client.last_request_id)

    def _pager(self, where: str, model: type[T], params: dict[str, Any]) -> Pager[T]:
        return Pager(lambda cursor: self._list_page(where, model, {**params, "cursor": cursor}))

    def _list_page(self, where: str, model: type[T], params: dict[str, Any]) -> Page[T]:
        answer = self._client.request(Call.get(where, jsonable(params)))
        return _page(model, answer, self._client.last_request_id)


class _AsyncResource:
    def __init__(self, client: Any) -> None:
        self._client = client

    async def _one(self, call: Call, model: type[T]) -> T:
        return _parsed(model, await self._client.request(call), self._client.last_request_id)

    def _pager(self, where: str, model: type[T], params: dict[str, Any]) -> AsyncPager[T]:
        return AsyncPager(lambda cursor: self._list_page(where, model, {**params, "cursor": cursor}))

    async def _list_page(self, where: str, model: type[T], params: dict[str, Any]) -> Page[T]:
        answer = await self._client.request(Call.get(where, jsonable(params)))
        return _page(model, answer, self._client.last_request_id)


# --- customers, products, prices: create, retrieve, update, list, archive, restore -----------------

class _Catalog(_Resource, Generic[T]):
    _path: str
    _model: type[T]

    def create(self, *, idempotency_key: str | None = None, **fields: Any) -> T:
        return self._one(Call.post(self._path, jsonable(fields), idempotency_key), self._model)

    def retrieve(self, id: str) -> T:
        return self._one(Call.get(path(self._path + "/{}", id)), self._model)

    def update(self, id: str, **fields: Any) -> T:
        return self._one(Call.patch(path(self._path + "/{}", id), jsonable(fields)), self._model)

    def list(self, *, limit: int | None = None, **filters: Any) -> Pager[T]:
        return self._pager(self._path, self._model, {"limit": limit, **filters})

    def list_page(self, *, cursor: str | None = None, limit: int | None = None, **filters: Any) -> Page[T]:
        return self._list_page(self._path, self._model, {"cursor": cursor, "limit": limit, **filters})

    def archive(self, id: str, *, idempotency_key: str | None = None) -> T:
        """Archive it (DELETE): it stays on the invoices that use it, and can be restored."""
        return self._one(Call.delete(path(self._path + "/{}", id), idempotency_key=idempotency_key), self._model)

    def restore(self, id: str, *, idempotency_key: str | None = None) -> T:
        return self._one(Call.post(path(self._path + "/{}/restore", id), idempotency_key=idempotency_key), self._model)


class _AsyncCatalog(_AsyncResource, Generic[T]):
    _path: str
    _model: type[T]

    async def create(self, *, idempotency_key: str | None = None, **fields: Any) -> T:
        return await self._one(Call.post(self._path, jsonable(fields), idempotency_key), self._model)

    async def retrieve(self, id: str) -> T:
        return await self._one(Call.get(path(self._path + "/{}", id)), self._model)

    async def update(self, id: str, **fields: Any) -> T:
        return await self._one(Call.patch(path(self._path + "/{}", id), jsonable(fields)), self._model)

    def list(self, *, limit: int | None = None, **filters: Any) -> AsyncPager[T]:
        return self._pager(self._path, self._model, {"limit": limit, **filters})

    async def list_page(self, *, cursor: str | None = None, limit: int | None = None, **filters: Any) -> Page[T]:
        return await self._list_page(self._path, self._model, {"cursor": cursor, "limit": limit, **filters})

    async def archive(self, id: str, *, idempotency_key: str | None = None) -> T:
        """Archive it (DELETE): it stays on the invoices that use it, and can be restored."""
        return await self._one(Call.delete(path(self._path + "/{}", id), idempotency_key=idempotency_key), self._model)

    async def restore(self, id: str, *, idempotency_key: str | None = None) -> T:
        return await self._one(Call.post(path(self._path + "/{}/restore", id), idempotency_key=idempotency_key),
                               self._model)


class Customers(_Catalog[Customer]):
    """`create(name=…, email=…, phone=…, tax_id=…, address={…})`; `list(query=…, include_deleted=…)`."""

    _path, _model = "/customers", Customer


class Products(_Catalog[Product]):
    """`create(name=…, description=…, active=…)`; `list(query=…, active=…)`."""

    _path, _model = "/products", Product


class Prices(_Catalog[Price]):
    """`create(product=…, unit_amount=…, currency=…, nickname=…, type=…, recurring={…}, tax_rate=…)`;
    `list(product=…, active=…, currency=…, type=…)`."""

    _path, _model = "/prices", Price


class AsyncCustomers(_AsyncCatalog[Customer]):
    _path, _model = "/customers", Customer


class AsyncProducts(_AsyncCatalog[Product]):
    _path, _model = "/products", Product


class AsyncPrices(_AsyncCatalog[Price]):
    _path, _model = "/prices", Price


# --- invoices ------------------------------------------------------------------------------------

class Invoices(_Resource):
    """Drafts are created, updated and deleted; `finalize` numbers one, `send` e-mails it (finalizing
    a draft first), `pay` records one payment of all that is due (`payments.create` records part of it),
    `void` cancels; `pdf` is the document's bytes."""

    def create(self, *, customer: str, items: Lines | None = None,
               idempotency_key: str | None = None, **fields: Any) -> Invoice:
        """A draft: `customer`, `items` (`{"description", "quantity", "unit_amount"}` or `{"price"}`),
        and `currency`, `due_date` or `days_until_due`, `issue_date`, `description`, `footer`."""
        body = {**given(customer=customer, items=items), **jsonable(fields)}
        return self._one(Call.post("/invoices", body, idempotency_key), Invoice)

    def preview(self, *, customer: str, items: Lines | None = None, **fields: Any) -> InvoicePreview:
        """What `create` would make with these arguments, computed and saved nowhere."""
        body = {**given(customer=customer, items=items), **jsonable(fields)}
        return self._one(Call.post("/invoices/preview", body), InvoicePreview)

    def retrieve(self, id: str) -> Invoice:
        return self._one(Call.get(path("/invoices/{}", id)), Invoice)

    def update(self, id: str, **fields: Any) -> Invoice:
        """Change a draft; `items` replaces every line, leaving it out keeps them."""
        return self._one(Call.patch(path("/invoices/{}", id), jsonable(fields)), Invoice)

    def list(self, *, limit: int | None = None, status: str | None = None, customer: str | None = None,
             from_: dt.date | str | None = None, to: dt.date | str | None = None, number: str | None = None) -> Pager[Invoice]:
        return self._pager("/invoices", Invoice, {"limit": limit, "status": status, "customer": customer,
                                                  "from_": from_, "to": to, "number": number})

    def list_page(self, *, cursor: str | None = None, limit: int | None = None, **filters: Any) -> Page[Invoice]:
        return self._list_page("/invoices", Invoice, {"cursor": cursor, "limit": limit, **filters})

    def delete(self, id: str, *, idempotency_key: str | None = None) -> DeletedInvoice:
        """Delete a draft (a finalized invoice is voided instead)."""
        return self._one(Call.delete(path("/invoices/{}", id), idempotency_key=idempotency_key), DeletedInvoice)

    def finalize(self, id: str, *, idempotency_key: str | None = None) -> Invoice:
        return self._one(Call.post(path("/invoices/{}/finalize", id), idempotency_key=idempotency_key), Invoice)

    def send(self, id: str, *, to: str | None = None, cc: Strings | None = None, message: str | None = None,
             idempotency_key: str | None = None) -> SentInvoice:
        """E-mail it with its PDF (to the customer's address unless `to`); a draft is finalized first."""
        call = Call.post(path("/invoices/{}/send", id), given(to=to, cc=cc, message=message), idempotency_key)
        return _sent(SentInvoice, self._client.request(call), self._client.last_request_id)

    def remind(self, id: str, *, message: str | None = None, idempotency_key: str | None = None) -> RemindedInvoice:
        """E-mail the customer a payment reminder of an open invoice with something due, now: the reminder
        policy's wording for its days overdue, `message` put before it. The invoice, with `emailed_to`.
        A `ConflictError` unless it is open with something due (or while the account's e-mail address is
        unverified). Counts as a send; needs the scope `invoices:send`."""
        call = Call.post(path("/invoices/{}/remind", id), given(message=message), idempotency_key)
        return _sent(RemindedInvoice, self._client.request(call), self._client.last_request_id)

    def pause_reminders(self, id: str) -> Invoice:
        """No reminder of the policy for this invoice (a dispute, an agreed delay) until resumed:
        `reminders_paused` becomes True. A reminder by `remind` still goes."""
        return self._one(Call.post(path("/invoices/{}/reminders", id), {"paused": True}), Invoice)

    def resume_reminders(self, id: str) -> Invoice:
        """The policy's reminders for this invoice again (`reminders_paused` False)."""
        return self._one(Call.post(path("/invoices/{}/reminders", id), {"paused": False}), Invoice)

    def pay(self, id: str, *, paid_on: dt.date | str | None = None, reference: str | None = None,
            idempotency_key: str | None = None) -> Invoice:
        body = given(paid_on=paid_on, reference=reference)
        return self._one(Call.post(path("/invoices/{}/pay", id), body, idempotency_key), Invoice)

    def void(self, id: str, *, reason: str | None = None, idempotency_key: str | None = None) -> Invoice:
        return self._one(Call.post(path("/invoices/{}/void", id), given(reason=reason), idempotency_key), Invoice)

    def pdf(self, id: str) -> bytes:
        return self._client.request(Call.get(path("/invoices/{}/pdf", id), binary=True))

    def e_invoice(self, id: str, *, format: str = "peppol") -> bytes:
        """A finalized invoice as an EN 16931 e-invoice: `peppol` (UBL XML), `cii` (XML) or `facturx` (PDF)."""
        return self._client.request(Call.get(path("/invoices/{}/e-invoice", id), {"format": format}, binary=True))

    def events(self, id: str, *, limit: int | None = None) -> Pager[InvoiceEvent]:
        """What happened to it, newest first."""
        return self._pager(path("/invoices/{}/events", id), InvoiceEvent, {"limit": limit})


class AsyncInvoices(_AsyncResource):
    async def create(self, *, customer: str, items: Lines | None = None,
                     idempotency_key: str | None = None, **fields: Any) -> Invoice:
        body = {**given(customer=customer, items=items), **jsonable(fields)}
        return await self._one(Call.post("/invoices", body, idempotency_key), Invoice)

    async def preview(self, *, customer: str, items: Lines | None = None, **fields: Any) -> InvoicePreview:
        body = {**given(customer=customer, items=items), **jsonable(fields)}
        return await self._one(Call.post("/invoices/preview", body), InvoicePreview)

    async def retrieve(self, id: str) -> Invoice:
        return await self._one(Call.get(path("/invoices/{}", id)), Invoice)

    async def update(self, id: str, **fields: Any) -> Invoice:
        return await self._one(Call.patch(path("/invoices/{}", id), jsonable(fields)), Invoice)

    def list(self, *, limit: int | None = None, status: str | None = None, customer: str | None = None,
             from_: dt.date | str | None = None, to: dt.date | str | None = None,
             number: str | None = None) -> AsyncPager[Invoice]:
        return self._pager("/invoices", Invoice, {"limit": limit, "status": status, "customer": customer,
                                                  "from_": from_, "to": to, "number": number})

    async def list_page(self, *, cursor: str | None = None, limit: int | None = None, **filters: Any) -> Page[Invoice]:
        return await self._list_page("/invoices", Invoice, {"cursor": cursor, "limit": limit, **filters})

    async def delete(self, id: str, *, idempotency_key: str | None = None) -> DeletedInvoice:
        return await self._one(Call.delete(path("/invoices/{}", id), idempotency_key=idempotency_key), DeletedInvoice)

    async def finalize(self, id: str, *, idempotency_key: str | None = None) -> Invoice:
        return await self._one(Call.post(path("/invoices/{}/finalize", id), idempotency_key=idempotency_key), Invoice)

    async def send(self, id: str, *, to: str | None = None, cc: Strings | None = None, message: str | None = None,
                   idempotency_key: str | None = None) -> SentInvoice:
        call = Call.post(path("/invoices/{}/send", id), given(to=to, cc=cc, message=message), idempotency_key)
        return _sent(SentInvoice, await self._client.request(call), self._client.last_request_id)

    async def remind(self, id: str, *, message: str | None = None,
                     idempotency_key: str | None = None) -> RemindedInvoice:
        call = Call.post(path("/invoices/{}/remind", id), given(message=message), idempotency_key)
        return _sent(RemindedInvoice, await self._client.request(call), self._client.last_request_id)

    async def pause_reminders(self, id: str) -> Invoice:
        return await self._one(Call.post(path("/invoices/{}/reminders", id), {"paused": True}), Invoice)

    async def resume_reminders(self, id: str) -> Invoice:
        return await self._one(Call.post(path("/invoices/{}/reminders", id), {"paused": False}), Invoice)

    async def pay(self, id: str, *, paid_on: dt.date | str | None = None, reference: str | None = None,
                  idempotency_key: str | None = None) -> Invoice:
        body = given(paid_on=paid_on, reference=reference)
        return await self._one(Call.post(path("/invoices/{}/pay", id), body, idempotency_key), Invoice)

    async def void(self, id: str, *, reason: str | None = None, idempotency_key: str | None = None) -> Invoice:
        return await self._one(Call.post(path("/invoices/{}/void", id), given(reason=reason), idempotency_key), Invoice)

    async def pdf(self, id: str) -> bytes:
        return await self._client.request(Call.get(path("/invoices/{}/pdf", id), binary=True))

    async def e_invoice(self, id: str, *, format: str = "peppol") -> bytes:
        return await self._client.request(Call.get(path("/invoices/{}/e-invoice", id), {"format": format},
                                                   binary=True))

    def events(self, id: str, *, limit: int | None = None) -> AsyncPager[InvoiceEvent]:
        return self._pager(path("/invoices/{}/events", id), InvoiceEvent, {"limit": limit})


# --- credit notes ----------------------------------------------------------------------------------

class CreditNotes(_Resource):
    """Credit notes correct an open or paid invoice with a document of their own (`CN-0001`). `create`
    issues one (an idempotency key is generated unless you pass `idempotency_key=`), `preview`
    computes it and saves nothing, `void` undoes its effects, `send` e-mails it; `pdf` and
    `e_invoice` are its documents' bytes."""

    def create(self, *, invoice: str, lines: Lines | None = None, idempotency_key: str | None = None,
               **fields: Any) -> CreditNote:
        """Issue a credit note on `invoice`. `lines`: `{"invoice_line": "ii_…"}` with `quantity` or
        `amount` (neither: all that remains of it), or a line of its own `{"description", "amount",
        "tax_rate", "tax_category", "tax_exemption_reason"}`; omitted, all that remains of the invoice.
        Where the money goes: `credit_amount`, `refund_amount` (with `refund_reference`, `refunded_on`)
        and `balance_amount`, adding up to its total; also `reason` and `memo`."""
        body = {**given(invoice=invoice, lines=lines), **jsonable(fields)}
        return self._one(Call.post("/credit-notes", body, idempotency_key), CreditNote)

    def preview(self, *, invoice: str, lines: Lines | None = None, **fields: Any) -> CreditNotePreview:
        """What `create` would issue with these arguments, computed exactly so and saved nowhere."""
        body = {**given(invoice=invoice, lines=lines), **jsonable(fields)}
        return self._one(Call.post("/credit-notes/preview", body), CreditNotePreview)

    def retrieve(self, id: str) -> CreditNote:
        return self._one(Call.get(path("/credit-notes/{}", id)), CreditNote)

    def list(self, *, limit: int | None = None, invoice: str | None = None,
             customer: str | None = None) -> Pager[CreditNote]:
        return self._pager("/credit-notes", CreditNote, {"limit": limit, "invoice": invoice, "customer": customer})

    def list_page(self, *, cursor: str | None = None, limit: int | None = None, **filters: Any) -> Page[CreditNote]:
        return self._list_page("/credit-notes", CreditNote, {"cursor": cursor, "limit": limit, **filters})

    def list_for_invoice(self, invoice: str, *, limit: int | None = None) -> Pager[CreditNote]:
        """The credit notes of one invoice, newest first (`GET /invoices/{id}/credit-notes`)."""
        return self._pager(path("/invoices/{}/credit-notes", invoice), CreditNote, {"limit": limit})

    def void(self, id: str, *, idempotency_key: str | None = None) -> CreditNote:
        """Undo its effects: what it took off the invoice is due again, its balance leaves the customer's."""
        return self._one(Call.post(path("/credit-notes/{}/void", id), idempotency_key=idempotency_key), CreditNote)

    def send(self, id: str, *, to: str | None = None, cc: Strings | None = None, message: str | None = None,
             idempotency_key: str | None = None) -> SentCreditNote:
        """E-mail it with its PDF, to the customer's address unless `to`."""
        call = Call.post(path("/credit-notes/{}/send", id), given(to=to, cc=cc, message=message), idempotency_key)
        return _sent(SentCreditNote, self._client.request(call), self._client.last_request_id)

    def pdf(self, id: str) -> bytes:
        return self._client.request(Call.get(path("/credit-notes/{}/pdf", id), binary=True))

    def e_invoice(self, id: str, *, format: str = "peppol") -> bytes:
        """As an EN 16931 credit note naming its invoice: `peppol` (UBL XML), `cii` (XML) or `facturx` (PDF)."""
        return self._client.request(Call.get(path("/credit-notes/{}/e-invoice", id), {"format": format}, binary=True))


class AsyncCreditNotes(_AsyncResource):
    async def create(self, *, invoice: str, lines: Lines | None = None, idempotency_key: str | None = None,
                     **fields: Any) -> CreditNote:
        body = {**given(invoice=invoice, lines=lines), **jsonable(fields)}
        return await self._one(Call.post("/credit-notes", body, idempotency_key), CreditNote)

    async def preview(self, *, invoice: str, lines: Lines | None = None, **fields: Any) -> CreditNotePreview:
        body = {**given(invoice=invoice, lines=lines), **jsonable(fields)}
        return await self._one(Call.post("/credit-notes/preview", body), CreditNotePreview)

    async def retrieve(self, id: str) -> CreditNote:
        return await self._one(Call.get(path("/credit-notes/{}", id)), CreditNote)

    def list(self, *, limit: int | None = None, invoice: str | None = None,
             customer: str | None = None) -> AsyncPager[CreditNote]:
        return self._pager("/credit-notes", CreditNote, {"limit": limit, "invoice": invoice, "customer": customer})

    async def list_page(self, *, cursor: str | None = None, limit: int | None = None,
                        **filters: Any) -> Page[CreditNote]:
        return await self._list_page("/credit-notes", CreditNote, {"cursor": cursor, "limit": limit, **filters})

    def list_for_invoice(self, invoice: str, *, limit: int | None = None) -> AsyncPager[CreditNote]:
        return self._pager(path("/invoices/{}/credit-notes", invoice), CreditNote, {"limit": limit})

    async def void(self, id: str, *, idempotency_key: str | None = None) -> CreditNote:
        return await self._one(Call.post(path("/credit-notes/{}/void", id), idempotency_key=idempotency_key),
                               CreditNote)

    async def send(self, id: str, *, to: str | None = None, cc: Strings | None = None, message: str | None = None,
                   idempotency_key: str | None = None) -> SentCreditNote:
        call = Call.post(path("/credit-notes/{}/send", id), given(to=to, cc=cc, message=message), idempotency_key)
        return _sent(SentCreditNote, await self._client.request(call), self._client.last_request_id)

    async def pdf(self, id: str) -> bytes:
        return await self._client.request(Call.get(path("/credit-notes/{}/pdf", id), binary=True))

    async def e_invoice(self, id: str, *, format: str = "peppol") -> bytes:
        return await self._client.request(Call.get(path("/credit-notes/{}/e-invoice", id), {"format": format},
                                                   binary=True))


# --- payments ----------------------------------------------------------------------------------------

Day = dt.date | dt.datetime | str


def _payment_body(invoice: str, amount: int, fields: dict[str, Any], **optional: Any) -> dict[str, Any]:
    return {**given(invoice=invoice, amount=amount, **optional), **jsonable(fields)}


class Payments(_Resource):
    """Money received for an invoice outside the service (no money moves here). `create` records one,
    in part or in full (an idempotency key is generated unless you pass `idempotency_key=`), `reverse`
    undoes one (a bounced transfer): what it paid is due again and a paid invoice reopens."""

    def create(self, *, invoice: str, amount: int, currency: str | None = None, paid_on: Day | None = None,
               method: str | None = None, reference: str | None = None, note: str | None = None,
               overpayment: str | None = None, idempotency_key: str | None = None, **fields: Any) -> Payment:
        """Record `amount` (minor units of the invoice's currency, above 0) received for an open or overdue
        invoice: it comes off `amount_due`, and the payment that brings it to 0 makes the invoice paid.
        `currency` (to be sure of the unit: another than the invoice's is refused), `paid_on` (a date or
        a timestamp; default now), `method` (bank_transfer, card, cash, cheque, direct_debit or other, the
        default), `reference`, `note` (internal). More than is due is a `ValidationError` at `amount`
        unless `overpayment="balance"` puts the excess on the customer's credit balance."""
        body = _payment_body(invoice, amount, fields, currency=currency, paid_on=paid_on, method=method,
                             reference=reference, note=note, overpayment=overpayment)
        return self._one(Call.post("/payments", body, idempotency_key), Payment)

    def retrieve(self, id: str) -> Payment:
        return self._one(Call.get(path("/payments/{}", id)), Payment)

    def list(self, *, limit: int | None = None, invoice: str | None = None,
             customer: str | None = None) -> Pager[Payment]:
        """Newest first, reversed ones included."""
        return self._pager("/payments", Payment, {"limit": limit, "invoice": invoice, "customer": customer})

    def list_page(self, *, cursor: str | None = None, limit: int | None = None, **filters: Any) -> Page[Payment]:
        return self._list_page("/payments", Payment, {"cursor": cursor, "limit": limit, **filters})

    def list_for_invoice(self, invoice: str, *, limit: int | None = None) -> Pager[Payment]:
        """The payments of one invoice, newest first (`GET /invoices/{id}/payments`)."""
        return self._pager(path("/invoices/{}/payments", invoice), Payment, {"limit": limit})

    def reverse(self, id: str, *, reason: str, idempotency_key: str | None = None) -> Payment:
        """Undo a recorded payment, saying why: what it paid is due again (a paid invoice reopens); the
        payment stays, `reversed`. A `ConflictError` when reversed already, or once its excess was applied
        to another invoice."""
        return self._one(Call.post(path("/payments/{}/reverse", id), {"reason": reason}, idempotency_key), Payment)


class AsyncPayments(_AsyncResource):
    async def create(self, *, invoice: str, amount: int, currency: str | None = None, paid_on: Day | None = None,
                     method: str | None = None, reference: str | None = None, note: str | None = None,
                     overpayment: str | None = None, idempotency_key: str | None = None, **fields: Any) -> Payment:
        body = _payment_body(invoice, amount, fields, currency=currency, paid_on=paid_on, method=method,
                             reference=reference, note=note, overpayment=overpayment)
        return await self._one(Call.post("/payments", body, idempotency_key), Payment)

    async def retrieve(self, id: str) -> Payment:
        return await self._one(Call.get(path("/payments/{}", id)), Payment)

    def list(self, *, limit: int | None = None, invoice: str | None = None,
             customer: str | None = None) -> AsyncPager[Payment]:
        return self._pager("/payments", Payment, {"limit": limit, "invoice": invoice, "customer": customer})

    async def list_page(self, *, cursor: str | None = None, limit: int | None = None, **filters: Any) -> Page[Payment]:
        return await self._list_page("/payments", Payment, {"cursor": cursor, "limit": limit, **filters})

    def list_for_invoice(self, invoice: str, *, limit: int | None = None) -> AsyncPager[Payment]:
        return self._pager(path("/invoices/{}/payments", invoice), Payment, {"limit": limit})

    async def reverse(self, id: str, *, reason: str, idempotency_key: str | None = None) -> Payment:
        return await self._one(Call.post(path("/payments/{}/reverse", id), {"reason": reason}, idempotency_key),
                               Payment)


# --- receivables -------------------------------------------------------------------------------------

def _receivables(answer: Any, request: str | None) -> Receivables:
    """The answer `{"data": {…}, "next_cursor": …}` as one object, the cursor of its customers beside them."""
    try:
        return Receivables.from_api({**answer["data"], "next_cursor": answer.get("next_cursor")})
    except (ValidationError, KeyError, TypeError, AttributeError) as exc:
        raise unexpected(exc, request) from None


def _customers_page(receivables: Receivables) -> Page[CustomerReceivables]:
    return Page[CustomerReceivables](data=receivables.customers, next_cursor=receivables.next_cursor)


class ReceivablesResource(_Resource):
    """What customers owe on open invoices, by age (`GET /receivables`; the scope `invoices:read`)."""

    def retrieve(self, *, currency: str | None = None, limit: int | None = None,
                 cursor: str | None = None) -> Receivables:
        """Per currency (`currencies`, every one on every page) and a page of `limit` customers (default
        25, largest outstanding first; `next_cursor` for the next); `currency` narrows both to one."""
        call = Call.get("/receivables", jsonable({"currency": currency, "limit": limit, "cursor": cursor}))
        return _receivables(self._client.request(call), self._client.last_request_id)

    get = retrieve

    def customers(self, *, currency: str | None = None, limit: int | None = None) -> Pager[CustomerReceivables]:
        """Every customer row (per customer and currency), largest outstanding first, fetching pages of
        `limit` as it goes."""
        return Pager(lambda cursor: _customers_page(self.retrieve(currency=currency, limit=limit, cursor=cursor)))


class AsyncReceivablesResource(_AsyncResource):
    async def retrieve(self, *, currency: str | None = None, limit: int | None = None,
                       cursor: str | None = None) -> Receivables:
        call = Call.get("/receivables", jsonable({"currency": currency, "limit": limit, "cursor": cursor}))
        return _receivables(await self._client.request(call), self._client.last_request_id)

    get = retrieve

    def customers(self, *, currency: str | None = None, limit: int | None = None) -> AsyncPager[CustomerReceivables]:
        async def fetch(cursor: str | None) -> Page[CustomerReceivables]:
            return _customers_page(await self.retrieve(currency=currency, limit=limit, cursor=cursor))
        return AsyncPager(fetch)


# --- invoice schedules -------------------------------------------------------------------------------

INVOICE_FIELDS = ("items", "currency", "collection_method", "days_until_due", "description", "footer",
                  "buyer_reference", "order_reference")
RECURRENCE_FIELDS = ("interval", "interval_count", "day_of_month", "start_date", "end_date", "count", "run_at")
FLAT_FIELDS = (*INVOICE_FIELDS, *RECURRENCE_FIELDS, "mode", "time_zone", "catch_up", "max_attempts")


def _flat(arguments: dict[str, Any]) -> dict[str, Any]:
    """The flat keyword arguments of `create` (sync or async), from its `locals()`."""
    return {name: arguments[name] for name in FLAT_FIELDS}


def _schedule_body(customer: str, invoice: dict[str, Any] | None, recurrence: dict[str, Any] | None,
                   flat: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    """The `POST /invoice-schedules` body: the API's nested `invoice` and `recurrence` (as given), with
    the flat keyword arguments set in them, and the schedule's own fields beside."""
    if isinstance(flat.get("run_at"), dt.time):  # the API takes a local time as HH:MM
        flat["run_at"] = flat["run_at"].strftime("%H:%M")
    body = {"customer": customer, **jsonable(fields)}
    body["invoice"] = {**jsonable(invoice or {}), **given(**{name: flat[name] for name in INVOICE_FIELDS})}
    body["recurrence"] = {**jsonable(recurrence or {}), **given(**{name: flat[name] for name in RECURRENCE_FIELDS})}
    body.update(given(**{name: value for name, value in flat.items()
                         if name not in INVOICE_FIELDS and name not in RECURRENCE_FIELDS}))
    return body


class InvoiceSchedules(_Resource):
    """Recurring invoices: an invoice made for a customer once per period (week, month, quarter or year)
    by the server's worker, acting as the credential that created the schedule. `create` carries an
    idempotency key (generated unless you pass `idempotency_key=`), so a retried create makes one schedule;
    `run` makes the next period's invoice now."""

    def create(self, *, customer: str, items: Lines | None = None, interval: str | None = None,
               start_date: Day | None = None, interval_count: int | None = None,
               day_of_month: int | str | None = None, end_date: Day | None = None, count: int | None = None,
               run_at: str | dt.time | None = None, currency: str | None = None, days_until_due: int | None = None,
               description: str | None = None, footer: str | None = None, collection_method: str | None = None,
               buyer_reference: str | None = None, order_reference: str | None = None, mode: str | None = None,
               time_zone: str | None = None, catch_up: str | None = None, max_attempts: int | None = None,
               invoice: dict[str, Any] | None = None, recurrence: dict[str, Any] | None = None,
               idempotency_key: str | None = None, **fields: Any) -> InvoiceSchedule:
        """Make `items` (invoice lines, as `invoices.create` takes them) for `customer` every
        `interval_count` (default 1) `interval` (`week`, `month`, `quarter` or `year`) from `start_date`
        (today or later, in `time_zone`), on `day_of_month` (1 to 31, a shorter month's last day for the
        29th to 31st, or `"last"`; default the start date's), until `end_date` or `count` invoices, at
        `run_at` (`"HH:MM"` or a `datetime.time`, local; default 08:00). `mode`: `draft` (the default),
        `finalize` or `finalize_and_send`. The invoice's `currency`, `days_until_due` (default 30),
        `description`, `footer`, … go in its `invoice`, the recurrence's in `recurrence`: pass those
        nested dicts (the API's shape) instead if you prefer; keyword arguments win over them."""
        body = _schedule_body(customer, invoice, recurrence, _flat(locals()), fields)
        return self._one(Call.post("/invoice-schedules", body, idempotency_key), InvoiceSchedule)

    def retrieve(self, id: str) -> InvoiceSchedule:
        return self._one(Call.get(path("/invoice-schedules/{}", id)), InvoiceSchedule)

    def list(self, *, limit: int | None = None, customer: str | None = None,
             status: str | None = None) -> Pager[InvoiceSchedule]:
        """Newest first; `status`: active, paused, cancelled or completed."""
        return self._pager("/invoice-schedules", InvoiceSchedule, {"limit": limit, "customer": customer,
                                                                   "status": status})

    def list_page(self, *, cursor: str | None = None, limit: int | None = None,
                  **filters: Any) -> Page[InvoiceSchedule]:
        return self._list_page("/invoice-schedules", InvoiceSchedule, {"cursor": cursor, "limit": limit, **filters})

    def pause(self, id: str, *, reason: str | None = None, idempotency_key: str | None = None) -> InvoiceSchedule:
        """No run until it is resumed; `reason` is kept. A `ConflictError` unless active."""
        return self._one(Call.post(path("/invoice-schedules/{}/pause", id), given(reason=reason), idempotency_key),
                         InvoiceSchedule)

    def resume(self, id: str, *, skip_missed: bool = False, idempotency_key: str | None = None) -> InvoiceSchedule:
        """Active again, its runs acting as you from now on. The periods that began while it was paused
        are made as its `catch_up` says, or skipped with `skip_missed=True`. A `ConflictError` unless paused."""
        return self._one(Call.post(path("/invoice-schedules/{}/resume", id), {"skip_missed": skip_missed},
                                   idempotency_key), InvoiceSchedule)

    def cancel(self, id: str, *, idempotency_key: str | None = None) -> InvoiceSchedule:
        """No further runs, for good (the invoices made stay). A `ConflictError` once cancelled or completed."""
        return self._one(Call.post(path("/invoice-schedules/{}/cancel", id), idempotency_key=idempotency_key),
                         InvoiceSchedule)

    def run(self, id: str, *, idempotency_key: str | None = None) -> ScheduleRun:
        """Make the next period's invoice now (issued today); the next run moves to the following period.
        A `ConflictError` unless active, or when no period is left."""
        return self._one(Call.post(path("/invoice-schedules/{}/run", id), idempotency_key=idempotency_key),
                         ScheduleRun)

    def runs(self, id: str, *, limit: int | None = None) -> Pager[ScheduleRun]:
        """Its periods made or skipped, newest first, with each invoice and e-mail status."""
        return self._pager(path("/invoice-schedules/{}/runs", id), ScheduleRun, {"limit": limit})

    def runs_page(self, id: str, *, cursor: str | None = None, limit: int | None = None) -> Page[ScheduleRun]:
        return self._list_page(path("/invoice-schedules/{}/runs", id), ScheduleRun, {"cursor": cursor, "limit": limit})


class AsyncInvoiceSchedules(_AsyncResource):
    async def create(self, *, customer: str, items: Lines | None = None, interval: str | None = None,
                     start_date: Day | None = None, interval_count: int | None = None,
                     day_of_month: int | str | None = None, end_date: Day | None = None, count: int | None = None,
                     run_at: str | dt.time | None = None, currency: str | None = None,
                     days_until_due: int | None = None, description: str | None = None, footer: str | None = None,
                     collection_method: str | None = None, buyer_reference: str | None = None,
                     order_reference: str | None = None, mode: str | None = None, time_zone: str | None = None,
                     catch_up: str | None = None, max_attempts: int | None = None,
                     invoice: dict[str, Any] | None = None, recurrence: dict[str, Any] | None = None,
                     idempotency_key: str | None = None, **fields: Any) -> InvoiceSchedule:
        body = _schedule_body(customer, invoice, recurrence, _flat(locals()), fields)
        return await self._one(Call.post("/invoice-schedules", body, idempotency_key), InvoiceSchedule)

    async def retrieve(self, id: str) -> InvoiceSchedule:
        return await self._one(Call.get(path("/invoice-schedules/{}", id)), InvoiceSchedule)

    def list(self, *, limit: int | None = None, customer: str | None = None,
             status: str | None = None) -> AsyncPager[InvoiceSchedule]:
        return self._pager("/invoice-schedules", InvoiceSchedule, {"limit": limit, "customer": customer,
                                                                   "status": status})

    async def list_page(self, *, cursor: str | None = None, limit: int | None = None,
                        **filters: Any) -> Page[InvoiceSchedule]:
        return await self._list_page("/invoice-schedules", InvoiceSchedule,
                                     {"cursor": cursor, "limit": limit, **filters})

    async def pause(self, id: str, *, reason: str | None = None,
                    idempotency_key: str | None = None) -> InvoiceSchedule:
        return await self._one(Call.post(path("/invoice-schedules/{}/pause", id), given(reason=reason),
                                         idempotency_key), InvoiceSchedule)

    async def resume(self, id: str, *, skip_missed: bool = False,
                     idempotency_key: str | None = None) -> InvoiceSchedule:
        return await self._one(Call.post(path("/invoice-schedules/{}/resume", id), {"skip_missed": skip_missed},
                                         idempotency_key), InvoiceSchedule)

    async def cancel(self, id: str, *, idempotency_key: str | None = None) -> InvoiceSchedule:
        return await self._one(Call.post(path("/invoice-schedules/{}/cancel", id), idempotency_key=idempotency_key),
                               InvoiceSchedule)

    async def run(self, id: str, *, idempotency_key: str | None = None) -> ScheduleRun:
        return await self._one(Call.post(path("/invoice-schedules/{}/run", id), idempotency_key=idempotency_key),
                               ScheduleRun)

    def runs(self, id: str, *, limit: int | None = None) -> AsyncPager[ScheduleRun]:
        return self._pager(path("/invoice-schedules/{}/runs", id), ScheduleRun, {"limit": limit})

    async def runs_page(self, id: str, *, cursor: str | None = None,
                        limit: int | None = None) -> Page[ScheduleRun]:
        return await self._list_page(path("/invoice-schedules/{}/runs", id), ScheduleRun,
                                     {"cursor": cursor, "limit": limit})


# --- payment reminders -------------------------------------------------------------------------------

Step = dict[str, Any] | BaseModel


def _policy_body(active: bool, steps: list[Step], late_fee: dict[str, Any] | LateFee | None,
                 reference_rate: Decimal | str | float | None, fields: dict[str, Any]) -> dict[str, Any]:
    """The `PUT /reminder-policy` body: the whole policy, what is left out sent as null (none, no fee)."""
    if not isinstance(steps, (list, tuple)):
        raise TypeError("steps is a list of steps (dicts or ReminderStep), such as "
                        "[{\"days\": 7, \"subject\": \"…\", \"body\": \"…\"}]")
    if isinstance(reference_rate, Decimal):  # as a string: exact, whatever its digits
        reference_rate = str(reference_rate)
    return {**jsonable(fields), "active": active, "steps": jsonable(list(steps)), "late_fee": jsonable(late_fee),
            "reference_rate": reference_rate}


class Reminders(_Resource):
    """The account's payment reminder policy (`GET`/`PUT /reminder-policy`): whether reminders are on, the
    steps (each e-mailed `days` after an invoice's due date), the late fee and the reference rate a statutory
    fee uses. A reminder now, and pausing one invoice's reminders, are on `invoices` (`remind`,
    `pause_reminders`, `resume_reminders`)."""

    def policy(self) -> ReminderPolicy:
        """The policy; while never set, the three default steps, off (`updated` None)."""
        return self._one(Call.get("/reminder-policy"), ReminderPolicy)

    def set_policy(self, *, active: bool, steps: list[Step], late_fee: dict[str, Any] | LateFee | None = None,
                   reference_rate: Decimal | str | float | None = None, **fields: Any) -> ReminderPolicy:
        """Replace the whole policy: `steps` (up to 10, each on a different day; dicts or `ReminderStep`:
        `days`, `subject`, `body`, `late_fee`), `late_fee` (`{"kind": "fixed", "amount": 2500}` or
        `{"kind": "statutory"}`, or a `LateFee`; None: no fee) and `reference_rate` (percent a year, needed by
        a statutory fee). Invalid ones are a `ValidationError` at the field (`steps.0.body` for an unknown
        placeholder); turning it on while the account's e-mail address is unverified, a `ConflictError`.
        Needs the scope `invoices:send`."""
        body = _policy_body(active, steps, late_fee, reference_rate, fields)
        return self._one(Call.put("/reminder-policy", body), ReminderPolicy)

    def set_active(self, active: bool) -> ReminderPolicy:
        """Turn reminders on (True) or off, keeping the steps, late fee and reference rate as they are
        (the policy is read, then replaced)."""
        current = self.policy()
        return self.set_policy(active=active, steps=current.steps, late_fee=current.late_fee,
                               reference_rate=current.reference_rate)


class AsyncReminders(_AsyncResource):
    async def policy(self) -> ReminderPolicy:
        return await self._one(Call.get("/reminder-policy"), ReminderPolicy)

    async def set_policy(self, *, active: bool, steps: list[Step], late_fee: dict[str, Any] | LateFee | None = None,
                         reference_rate: Decimal | str | float | None = None, **fields: Any) -> ReminderPolicy:
        body = _policy_body(active, steps, late_fee, reference_rate, fields)
        return await self._one(Call.put("/reminder-policy", body), ReminderPolicy)

    async def set_active(self, active: bool) -> ReminderPolicy:
        current = await self.policy()
        return await self.set_policy(active=active, steps=current.steps, late_fee=current.late_fee,
                                     reference_rate=current.reference_rate)


# --- invoice items ----------------------------------------------------------------------------------

class InvoiceItems(_Resource):
    """Lines of a draft. Adding or removing one answers the whole updated invoice."""

    def create(self, *, invoice: str, idempotency_key: str | None = None, **fields: Any) -> Invoice:
        body = {"invoice": invoice, **jsonable(fields)}
        return self._one(Call.post("/invoice-items", body, idempotency_key), Invoice)

    def retrieve(self, id: str) -> InvoiceItem:
        return self._one(Call.get(path("/invoice-items/{}", id)), InvoiceItem)

    def list(self, *, invoice: str) -> Pager[InvoiceItem]:
        """Every line of one invoice (one page)."""
        return self._pager("/invoice-items", InvoiceItem, {"invoice": invoice})

    def delete(self, id: str, *, invoice: str | None = None, idempotency_key: str | None = None) -> Invoice:
        call = Call.delete(path("/invoice-items/{}", id), {"invoice": invoice}, idempotency_key)
        return self._one(call, Invoice)


class AsyncInvoiceItems(_AsyncResource):
    async def create(self, *, invoice: str, idempotency_key: str | None = None, **fields: Any) -> Invoice:
        body = {"invoice": invoice, **jsonable(fields)}
        return await self._one(Call.post("/invoice-items", body, idempotency_key), Invoice)

    async def retrieve(self, id: str) -> InvoiceItem:
        return await self._one(Call.get(path("/invoice-items/{}", id)), InvoiceItem)

    def list(self, *, invoice: str) -> AsyncPager[InvoiceItem]:
        return self._pager("/invoice-items", InvoiceItem, {"invoice": invoice})

    async def delete(self, id: str, *, invoice: str | None = None, idempotency_key: str | None = None) -> Invoice:
        call = Call.delete(path("/invoice-items/{}", id), {"invoice": invoice}, idempotency_key)
        return await self._one(call, Invoice)


# --- e-invoice exports ------------------------------------------------------------------------------

def _export_body(period_start: Day, period_end: Day, format: str) -> dict[str, Any]:
    return jsonable({"period_start": period_start, "period_end": period_end, "format": format})


class EInvoiceExports(_Resource):
    """A period's e-invoices as one ZIP for an accountant: every finalized invoice (open, paid or void) and
    credit note issued in it, in one format, with `manifest.csv`; kept 24 hours. Needs `invoices:read`."""

    def create(self, *, period_start: Day, period_end: Day, format: str = "peppol",
               idempotency_key: str | None = None) -> EInvoiceExport:
        """Export the documents issued from `period_start` to `period_end` (both included, at most 366 days)
        as `peppol` (UBL XML), `cii` (XML) or `facturx` (PDF/A-3). A document EN 16931 would refuse is left
        out and listed in `skipped`; a period the wrong way round is a `ValidationError` at `period_end`."""
        call = Call.post("/e-invoice-exports", _export_body(period_start, period_end, format), idempotency_key)
        return self._one(call, EInvoiceExport)

    def retrieve(self, id: str) -> EInvoiceExport:
        """The export while it is kept (a `NotFoundError` after 24 hours)."""
        return self._one(Call.get(path("/e-invoice-exports/{}", id)), EInvoiceExport)

    def download(self, id: str) -> bytes:
        """The ZIP's bytes (a `NotFoundError` after 24 hours)."""
        return self._client.request(Call.get(path("/e-invoice-exports/{}/zip", id), binary=True))


class AsyncEInvoiceExports(_AsyncResource):
    async def create(self, *, period_start: Day, period_end: Day, format: str = "peppol",
                     idempotency_key: str | None = None) -> EInvoiceExport:
        call = Call.post("/e-invoice-exports", _export_body(period_start, period_end, format), idempotency_key)
        return await self._one(call, EInvoiceExport)

    async def retrieve(self, id: str) -> EInvoiceExport:
        return await self._one(Call.get(path("/e-invoice-exports/{}", id)), EInvoiceExport)

    async def download(self, id: str) -> bytes:
        return await self._client.request(Call.get(path("/e-invoice-exports/{}/zip", id), binary=True))


# --- webhook endpoints, business ---------------------------------------------------------------------

class WebhookEndpoints(_Resource):
    """Where events are delivered; `create` answers the signing `secret`, once."""

    def create(self, *, url: str, events: Strings | None = None, idempotency_key: str | None = None) -> WebhookEndpoint:
        return self._one(Call.post("/webhook-endpoints", given(url=url, events=events), idempotency_key), WebhookEndpoint)

    def list(self, *, limit: int | None = None) -> Pager[WebhookEndpoint]:
        return self._pager("/webhook-endpoints", WebhookEndpoint, {"limit": limit})

    def list_page(self, *, cursor: str | None = None, limit: int | None = None) -> Page[WebhookEndpoint]:
        return self._list_page("/webhook-endpoints", WebhookEndpoint, {"cursor": cursor, "limit": limit})

    def delete(self, id: str, *, idempotency_key: str | None = None) -> DeletedWebhookEndpoint:
        return self._one(Call.delete(path("/webhook-endpoints/{}", id), idempotency_key=idempotency_key),
                         DeletedWebhookEndpoint)


class AsyncWebhookEndpoints(_AsyncResource):
    async def create(self, *, url: str, events: Strings | None = None,
                     idempotency_key: str | None = None) -> WebhookEndpoint:
        call = Call.post("/webhook-endpoints", given(url=url, events=events), idempotency_key)
        return await self._one(call, WebhookEndpoint)

    def list(self, *, limit: int | None = None) -> AsyncPager[WebhookEndpoint]:
        return self._pager("/webhook-endpoints", WebhookEndpoint, {"limit": limit})

    async def list_page(self, *, cursor: str | None = None, limit: int | None = None) -> Page[WebhookEndpoint]:
        return await self._list_page("/webhook-endpoints", WebhookEndpoint, {"cursor": cursor, "limit": limit})

    async def delete(self, id: str, *, idempotency_key: str | None = None) -> DeletedWebhookEndpoint:
        return await self._one(Call.delete(path("/webhook-endpoints/{}", id), idempotency_key=idempotency_key),
                               DeletedWebhookEndpoint)


class BusinessResource(_Resource):
    def retrieve(self) -> Business:
        """The business profile of the business the credential acts for (404 until onboarding is finished),
        with its `account` (`acct_…`) and the caller's `role` in it."""
        return self._one(Call.get("/business"), Business)


class AsyncBusinessResource(_AsyncResource):
    async def retrieve(self) -> Business:
        return await self._one(Call.get("/business"), Business)


# --- members and invitations ---------------------------------------------------------------------------

class Members(_Resource):
    """The people of the business the credential acts for, each with a role (owner, admin, accountant, sales
    or viewer) that bounds every key, token and app of theirs in it. Listing needs `business:read`; the rest
    `members:manage` (owners and admins; what concerns owners, an owner)."""

    def list(self) -> Pager[Member]:
        """Every member, oldest first (one page)."""
        return self._pager("/members", Member, {})

    def update(self, id: str, *, role: str) -> Member:
        """Change a member's role; it takes effect on their next request. Only an owner gives or takes `owner`,
        and the last owner keeps it (a `ConflictError`)."""
        return self._one(Call.patch(path("/members/{}", id), {"role": role}), Member)

    def remove(self, id: str, *, idempotency_key: str | None = None) -> RemovedMember:
        """Remove a member (DELETE): their API keys for the business are revoked and the apps they connected to
        it disconnected at once. The last owner cannot be removed."""
        return self._one(Call.delete(path("/members/{}", id), idempotency_key=idempotency_key), RemovedMember)

    def transfer_ownership(self, id: str, *, idempotency_key: str | None = None) -> Member:
        """Hand ownership over (an owner only): the member becomes an owner, and the caller's person an admin."""
        return self._one(Call.post(path("/members/{}/transfer_ownership", id), idempotency_key=idempotency_key),
                         Member)


class AsyncMembers(_AsyncResource):
    def list(self) -> AsyncPager[Member]:
        return self._pager("/members", Member, {})

    async def update(self, id: str, *, role: str) -> Member:
        return await self._one(Call.patch(path("/members/{}", id), {"role": role}), Member)

    async def remove(self, id: str, *, idempotency_key: str | None = None) -> RemovedMember:
        return await self._one(Call.delete(path("/members/{}", id), idempotency_key=idempotency_key), RemovedMember)

    async def transfer_ownership(self, id: str, *, idempotency_key: str | None = None) -> Member:
        return await self._one(Call.post(path("/members/{}/transfer_ownership", id), idempotency_key=idempotency_key),
                               Member)


class Invitations(_Resource):
    """E-mailed invitations to join the business: each link works once, for its address only, for 14 days.
    Needs `members:manage`; only an owner invites an owner."""

    def list(self) -> Pager[Invitation]:
        """Every invitation, newest first (one page), with its `status`: pending, accepted, revoked or expired."""
        return self._pager("/invitations", Invitation, {})

    def create(self, *, email: str, role: str, idempotency_key: str | None = None) -> Invitation:
        """Invite `email` to join as `role`, e-mailing them a link. Counted against the business's invitations
        and e-mails an hour (a `RateLimitError`); a mail server that refuses it is an `UpstreamError`, the
        invitation kept: `resend` it."""
        return self._one(Call.post("/invitations", {"email": email, "role": role}, idempotency_key), Invitation)

    def resend(self, id: str, *, idempotency_key: str | None = None) -> Invitation:
        """E-mail a new link (the earlier one stops working), good for 14 days from now."""
        return self._one(Call.post(path("/invitations/{}/resend", id), idempotency_key=idempotency_key), Invitation)

    def revoke(self, id: str, *, idempotency_key: str | None = None) -> Invitation:
        """Revoke it (DELETE): its link stops working. An accepted one cannot be revoked (a `ConflictError`)."""
        return self._one(Call.delete(path("/invitations/{}", id), idempotency_key=idempotency_key), Invitation)


class AsyncInvitations(_AsyncResource):
    def list(self) -> AsyncPager[Invitation]:
        return self._pager("/invitations", Invitation, {})

    async def create(self, *, email: str, role: str, idempotency_key: str | None = None) -> Invitation:
        return await self._one(Call.post("/invitations", {"email": email, "role": role}, idempotency_key), Invitation)

    async def resend(self, id: str, *, idempotency_key: str | None = None) -> Invitation:
        return await self._one(Call.post(path("/invitations/{}/resend", id), idempotency_key=idempotency_key),
                               Invitation)

    async def revoke(self, id: str, *, idempotency_key: str | None = None) -> Invitation:
        return await self._one(Call.delete(path("/invitations/{}", id), idempotency_key=idempotency_key), Invitation)
