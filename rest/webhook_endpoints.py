"""Webhook endpoints: register, list and delete (endpoints are never edited)."""

from core import webhooks
from core.webhooks import (WebhookEndpointCreate, WebhookEndpointCreatedOut, WebhookEndpointDeletedOut,
                           WebhookEndpointListQuery, WebhookEndpointOut, deleted_to_api, endpoint_to_api)
from rest.envelopes import one, page
from rest.framework import Api, Call

api = Api()
TAG = "Webhook endpoints"
SCOPE = "webhooks:manage"


@api.operation("GET", "/webhook-endpoints", scope=SCOPE, tag=TAG, query=WebhookEndpointListQuery,
               response=WebhookEndpointOut, envelope="list", summary="List webhook endpoints, newest first")
def list_webhook_endpoints(call: Call) -> dict:
    return page(webhooks.list_endpoints(call.session, call.principal.account_id, call.query), endpoint_to_api)


@api.operation("POST", "/webhook-endpoints", scope=SCOPE, tag=TAG, body=WebhookEndpointCreate, body_required=True,
               idempotency="optional", response=WebhookEndpointCreatedOut, status=201,
               summary="Register a webhook endpoint (the signing secret is shown only here)")
def create_webhook_endpoint(call: Call) -> dict:
    row = webhooks.create_endpoint(call.session, call.principal.account_id, call.body)
    return one(endpoint_to_api(row, with_secret=True))


@api.operation("DELETE", "/webhook-endpoints/{id}", scope=SCOPE, tag=TAG, idempotency="optional",
               response=WebhookEndpointDeletedOut, summary="Delete a webhook endpoint at once")
def delete_webhook_endpoint(call: Call) -> dict:
    return one(deleted_to_api(webhooks.delete_endpoint(call.session, call.principal.account_id, call.path["id"])))
