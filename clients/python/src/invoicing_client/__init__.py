"""Python client of the Invoicing REST API (0.x: minor releases may break).

    from invoicing_client import InvoicingClient

    with InvoicingClient(api_key="inv_live_…", base_url="https://invoices.example/api/v1") as client:
        customer = client.customers.create(name="Globex", email="ap@globex.example")
        draft = client.invoices.create(customer=customer.id, items=[
            {"description": "Design", "quantity": 2, "unit_amount": 80000}])
        client.invoices.send(draft.id)
"""

from invoicing_client import errors, models, webhooks
from invoicing_client._client import AsyncInvoicingClient, InvoicingClient
from invoicing_client._version import __version__
from invoicing_client.errors import (
    APIConnectionError,
    AuthenticationError,
    ConflictError,
    InvoicingError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    UpstreamError,
    ValidationError,
    WebhookVerificationError,
)
from invoicing_client.models import Page
from invoicing_client.pagination import AsyncPager, Pager

__all__ = [
    "__version__", "InvoicingClient", "AsyncInvoicingClient", "errors", "models", "webhooks", "Page", "Pager",
    "AsyncPager", "InvoicingError", "AuthenticationError", "PermissionDeniedError", "NotFoundError", "ConflictError",
    "ValidationError", "RateLimitError", "UpstreamError", "APIConnectionError", "WebhookVerificationError",
]
