"""Webhook endpoints: register, list and delete (endpoints are never edited)."""

from operations import webhook_endpoints
from rest.framework import Api

api = Api(tag="Webhook endpoints")
api.endpoint("GET", "/webhook-endpoints", webhook_endpoints.list_webhook_endpoints,
             summary="List webhook endpoints, newest first")
api.endpoint("POST", "/webhook-endpoints", webhook_endpoints.create_webhook_endpoint, status=201,
             summary="Register a webhook endpoint (the signing secret is shown only here)")
api.endpoint("DELETE", "/webhook-endpoints/{id}", webhook_endpoints.delete_webhook_endpoint,
             summary="Delete a webhook endpoint at once")
