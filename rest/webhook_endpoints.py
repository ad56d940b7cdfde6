"""Webhook endpoints: register, list and delete (endpoints are never edited)."""

from operations import webhook_endpoints
from rest.framework import Api

api = Api(tag="Webhook endpoints")
api.endpoint("GET", "/webhook-endpoints", webhook_endpoints.list_webhook_endpoints, summary="List webhook endpoints",
             description="Newest first, paginated, without their secrets.")
api.endpoint("POST", "/webhook-endpoints", webhook_endpoints.create_webhook_endpoint, status=201,
             summary="Register a webhook endpoint",
             description="The URL must be https, resolve to a public address and carry no credentials; it is "
                         "checked again at every delivery. `events` lists the kinds to receive (omit for all, "
                         "including future kinds). The response holds the signing `secret` (`whsec_…`) this once: "
                         "verify every delivery with it (Standard Webhooks; see `webhooks`). At most 16 per account.")
api.endpoint("DELETE", "/webhook-endpoints/{id}", webhook_endpoints.delete_webhook_endpoint,
             summary="Delete a webhook endpoint",
             description="Deliveries to it stop at once, pending retries included. Endpoints cannot be edited: "
                         "delete and register again.")
