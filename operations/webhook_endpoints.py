"""Webhook endpoints: register, list and delete (endpoints are never edited)."""

from urllib.parse import urlsplit

from core.access import activity
from core.webhooks import endpoints
from core.webhooks.endpoints import (
    WebhookEndpointCreate,
    WebhookEndpointCreatedOut,
    WebhookEndpointDeletedOut,
    WebhookEndpointListQuery,
    WebhookEndpointOut,
    deleted_to_api,
    endpoint_to_api,
)
from operations.pipeline import Call, Operation
from operations.rendering import page

SCOPE = "webhooks:manage"


def _host(url: str) -> str:
    """Where an endpoint is, for the activity page: its host only (a URL's path or query may hold a secret)."""
    return urlsplit(url).hostname or "an unknown host"


def _create(call: Call) -> dict:
    row = endpoints.create_endpoint(*call.account(), call.body)
    activity.record(call.session, call.principal, "webhook_endpoint.created", f"Added a webhook endpoint at {_host(row.url)}")
    return endpoint_to_api(row, with_secret=True)


def _delete(call: Call) -> dict:
    host = _host(endpoints.get_endpoint(*call.account(), call.params["id"]).url)
    deleted = endpoints.delete_endpoint(*call.account(), call.params["id"])
    activity.record(call.session, call.principal, "webhook_endpoint.deleted", f"Deleted a webhook endpoint at {host}")
    return deleted_to_api(deleted)


list_webhook_endpoints = Operation(
    "list_webhook_endpoints", lambda call: page(endpoints.list_endpoints(*call.account(), call.query), endpoint_to_api),
    scope=SCOPE, query=WebhookEndpointListQuery, response=WebhookEndpointOut, shape="list")
create_webhook_endpoint = Operation(
    "create_webhook_endpoint",
    _create,
    scope=SCOPE, body=WebhookEndpointCreate, body_required=True, idempotency="optional",
    response=WebhookEndpointCreatedOut)
delete_webhook_endpoint = Operation(
    "delete_webhook_endpoint", _delete,
    scope=SCOPE, idempotency="optional", response=WebhookEndpointDeletedOut)
