"""`InvoicingClient` and `AsyncInvoicingClient`: one connection pool, retries, and the resources."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from invoicing_client import _http, errors
from invoicing_client._http import Call
from invoicing_client.resources import (
    AsyncBusinessResource,
    AsyncCreditNotes,
    AsyncCustomers,
    AsyncEInvoiceExports,
    AsyncInvitations,
    AsyncInvoiceItems,
    AsyncInvoices,
    AsyncInvoiceSchedules,
    AsyncMembers,
    AsyncPayments,
    AsyncPrices,
    AsyncProducts,
    AsyncReceivablesResource,
    AsyncReminders,
    AsyncWebhookEndpoints,
    BusinessResource,
    CreditNotes,
    Customers,
    EInvoiceExports,
    Invitations,
    InvoiceItems,
    Invoices,
    InvoiceSchedules,
    Members,
    Payments,
    Prices,
    Products,
    ReceivablesResource,
    Reminders,
    WebhookEndpoints,
)


class _Base:
    def __init__(self, api_key: str | None, base_url: str | None, max_retries: int,
                 timeout: float | httpx.Timeout | None) -> None:
        self.api_key, self.base_url = _http.settings(api_key, base_url)
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        self.max_retries = max_retries
        self.timeout = _http.DEFAULT_TIMEOUT if timeout is None else timeout
        self.last_request_id: str | None = None  # of the last answer, for support

    def _url(self, call: Call) -> str:
        return self.base_url + call.path

    def _request_args(self, call: Call) -> dict[str, Any]:
        return {"method": call.method, "url": self._url(call), "params": call.params or None, "json": call.body,
                "headers": _http.headers(self.api_key, call), "timeout": self.timeout}

    def _settle(self, response: httpx.Response, call: Call) -> Any:
        self.last_request_id = _http.request_id(response)  # of the last answer (with several threads: of any)
        if response.is_success:
            return response.content if call.binary else _http.data_of(response)
        raise _http.error_from(response)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r})"


class InvoicingClient(_Base):
    """The Invoicing API. `api_key` and `base_url` default to INVOICING_API_KEY and
    INVOICING_BASE_URL; `http_client` may be your own `httpx.Client` (proxies, transports, tracing),
    which is then yours to close.

        with InvoicingClient() as client:
            customer = client.customers.create(name="Globex", email="ap@globex.example")
    """

    def __init__(self, api_key: str | None = None, base_url: str | None = None, max_retries: int = 2,
                 timeout: float | httpx.Timeout | None = None, http_client: httpx.Client | None = None) -> None:
        super().__init__(api_key, base_url, max_retries, timeout)
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client()
        self.customers = Customers(self)
        self.products = Products(self)
        self.prices = Prices(self)
        self.invoices = Invoices(self)
        self.invoice_items = InvoiceItems(self)
        self.invoice_schedules = InvoiceSchedules(self)
        self.credit_notes = CreditNotes(self)
        self.payments = Payments(self)
        self.receivables = ReceivablesResource(self)
        self.reminders = Reminders(self)
        self.webhook_endpoints = WebhookEndpoints(self)
        self.e_invoice_exports = EInvoiceExports(self)
        self.business = BusinessResource(self)
        self.members = Members(self)
        self.invitations = Invitations(self)

    def request(self, call: Call) -> Any:
        """Send `call`, retrying what may be retried; the JSON answer (bytes for a file)."""
        self.last_request_id = None
        attempt = 0
        while True:
            try:
                response = self._http.request(**self._request_args(call))
            except httpx.HTTPError as exc:
                transient = isinstance(exc, _http.TRANSIENT)
                delay = _http.retry_delay(attempt, None) if transient and attempt < self.max_retries else None
                if delay is None:
                    raise _http.connection_error(exc, self._url(call)) from exc
            else:
                delay = _http.retry_delay(attempt, response) if attempt < self.max_retries else None
                if delay is None:
                    return self._settle(response, call)
                response.close()
            attempt += 1
            time.sleep(delay)

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> InvoicingClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncInvoicingClient(_Base):
    """The Invoicing API for asyncio, shaped as `InvoicingClient`: every method is awaited, and
    lists are iterated with `async for`.

        async with AsyncInvoicingClient() as client:
            async for invoice in client.invoices.list(status="open"):
                ...
    """

    def __init__(self, api_key: str | None = None, base_url: str | None = None, max_retries: int = 2,
                 timeout: float | httpx.Timeout | None = None, http_client: httpx.AsyncClient | None = None) -> None:
        super().__init__(api_key, base_url, max_retries, timeout)
        self._owns_http = http_client is None
        self._http = http_client or httpx.AsyncClient()
        self.customers = AsyncCustomers(self)
        self.products = AsyncProducts(self)
        self.prices = AsyncPrices(self)
        self.invoices = AsyncInvoices(self)
        self.invoice_items = AsyncInvoiceItems(self)
        self.invoice_schedules = AsyncInvoiceSchedules(self)
        self.credit_notes = AsyncCreditNotes(self)
        self.payments = AsyncPayments(self)
        self.receivables = AsyncReceivablesResource(self)
        self.reminders = AsyncReminders(self)
        self.webhook_endpoints = AsyncWebhookEndpoints(self)
        self.e_invoice_exports = AsyncEInvoiceExports(self)
        self.business = AsyncBusinessResource(self)
        self.members = AsyncMembers(self)
        self.invitations = AsyncInvitations(self)

    async def request(self, call: Call) -> Any:
        """Send `call`, retrying what may be retried; the JSON answer (bytes for a file)."""
        self.last_request_id = None
        attempt = 0
        while True:
            try:
                response = await self._http.request(**self._request_args(call))
            except httpx.HTTPError as exc:
                transient = isinstance(exc, _http.TRANSIENT)
                delay = _http.retry_delay(attempt, None) if transient and attempt < self.max_retries else None
                if delay is None:
                    raise _http.connection_error(exc, self._url(call)) from exc
            else:
                delay = _http.retry_delay(attempt, response) if attempt < self.max_retries else None
                if delay is None:
                    return self._settle(response, call)
                await response.aclose()
            attempt += 1
            await asyncio.sleep(delay)

    async def close(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncInvoicingClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


__all__ = ["InvoicingClient", "AsyncInvoicingClient", "errors"]
