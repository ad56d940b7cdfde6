"""Notifying an account's own systems: webhook endpoints, the outbox rows written with each
event, Standard Webhooks signatures, and the delivery job that sends and retries them."""
