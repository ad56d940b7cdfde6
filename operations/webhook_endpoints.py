"""Webhook endpoints: register, list and delete (endpoints are never edited)."""

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
from operations.pipeline import Operation
from operations.rendering import page

SCOPE = "webhooks:manage"


list_webhook_endpoints = Operation(
    "list_webhook_endpoints", lambda call: page(endpoints.list_endpoints(*call.account(), call.query), endpoint_to_api),
    scope=SCOPE, query=WebhookEndpointListQuery, response=WebhookEndpointOut, shape="list")
create_webhook_endpoint = Operation(
    "create_webhook_endpoint",
    lambda call: endpoint_to_api(endpoints.create_endpoint(*call.account(), call.body), with_secret=True),
    scope=SCOPE, body=WebhookEndpointCreate, body_required=True, idempotency="optional",
    response=WebhookEndpointCreatedOut)
delete_webhook_endpoint = Operation(
    "delete_webhook_endpoint", lambda call: deleted_to_api(endpoints.delete_endpoint(*call.account(), call.params["id"])),
    scope=SCOPE, idempotency="optional", response=WebhookEndpointDeletedOut)
