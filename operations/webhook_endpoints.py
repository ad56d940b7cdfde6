"""Webhook endpoints: register, list and delete (endpoints are never edited)."""

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


def _create(call: Call) -> dict:
    row = endpoints.create_endpoint(*call.account(), call.body)
    activity.record(call.session, call.principal, "webhook_endpoint.created", f"Added the webhook endpoint {row.url}")
    return endpoint_to_api(row, with_secret=True)


def _delete(call: Call) -> dict:
    url = endpoints.get_endpoint(*call.account(), call.params["id"]).url
    deleted = endpoints.delete_endpoint(*call.account(), call.params["id"])
    activity.record(call.session, call.principal, "webhook_endpoint.deleted", f"Deleted the webhook endpoint {url}")
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
