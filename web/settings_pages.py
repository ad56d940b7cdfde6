"""Settings: API keys, connected OAuth apps and webhook endpoints."""

from __future__ import annotations

from datetime import datetime

from starlette.responses import Response
from starlette.routing import Route

from core.access import apikeys
from core.access.scopes import ALL_SCOPES, PRESETS, SCOPE_DESCRIPTIONS
from core.base.clock import now
from core.base.db import transaction
from core.base.errors import DomainError, NotFound, ValidationFailed
from core.base.validation import NAME_MAX, parse
from core.models import EVENT_TYPES, ApiKey
from core.webhooks import endpoints as webhooks
from operations import webhook_endpoints as webhook_operations
from pages.routing import Visit, errors_by_field, errors_of, page, redirect
from web.acting import act
from web.rendering import not_found, notice_of, render

PRESET_LABELS = {
    "read_only": "Read only",
    "raise_and_send": "Raise and send invoices",
    "ai_assistant": "AI assistant (look-ups and drafts; cannot finalize, send or mark paid)",
    "full_access": "Full access",
}
CUSTOM = "custom"
RECENT_DELIVERIES = 10

NOTICES = {
    "key_revoked": "The key is revoked. Requests with it are refused from now on.",
    "endpoint_deleted": "The webhook endpoint is deleted.",
}


def _notice(visit: Visit) -> str | None:
    return notice_of(visit, NOTICES)


# --- API keys --------------------------------------------------------------------------------

def key_status(key: ApiKey, at: datetime) -> str:
    if key.revoked_at is not None:
        return "revoked"
    if key.expires_at is not None and key.expires_at <= at:
        return "expired"
    return "active"


def _api_keys_page(visit: Visit, *, values: dict, errors: dict[str, str], status_code: int = 200) -> Response:
    with transaction() as session:
        keys = apikeys.list_keys(session, visit.account_id)
    current = now()
    return render(visit.request, "api_keys.html", status_code=status_code,
                  keys=[(key, key_status(key, current)) for key in keys],
                  presets=PRESETS, preset_labels=PRESET_LABELS, all_scopes=ALL_SCOPES,
                  scope_descriptions=SCOPE_DESCRIPTIONS, values=values, errors=errors, notice=_notice(visit))


def api_keys(visit: Visit) -> Response:
    return _api_keys_page(visit, values={"name": "", "access": "read_only", "scopes": [], "expires_in_days": "0"},
                          errors={})


def _expiry_days(text: str) -> int:
    try:
        return int(text or "0")
    except ValueError:
        raise ValidationFailed.at("expires_in_days", "must be a whole number of days (0 = never)") from None


def create_api_key(visit: Visit) -> Response:
    values = {"name": visit.text("name", NAME_MAX + 1), "access": visit.text("access", 50),
              "scopes": visit.values("scope"), "expires_in_days": visit.text("expires_in_days", 20)}
    try:
        if values["access"] == CUSTOM:
            scopes = apikeys.resolve_scopes(scopes=values["scopes"])
        else:
            scopes = apikeys.resolve_scopes(preset=values["access"] or None, scopes=[])
        with transaction() as session:
            created = apikeys.create_key(session, visit.account_id, created_by=visit.user.id, name=values["name"],
                                         scopes=scopes, expires_in_days=_expiry_days(values["expires_in_days"]))
    except ValidationFailed as exc:
        errors = errors_by_field(exc.errors)
        if "preset" in errors:
            errors["access"] = errors.pop("preset")
        if "scopes" in errors and values["access"] != CUSTOM:
            errors["access"] = errors.pop("scopes")  # nothing chosen at all
        return _api_keys_page(visit, values=values, errors=errors, status_code=422)
    return render(visit.request, "api_key_created.html", status_code=201, key=created.key, row=created.row,
                  scope_descriptions=SCOPE_DESCRIPTIONS)


def revoke_api_key(visit: Visit) -> Response:
    try:
        with transaction() as session:
            apikeys.revoke_key(session, visit.account_id, visit.path_params["key_id"], by=visit.user.id)
    except NotFound:
        return not_found(visit, "API key", "/settings/api-keys")
    return redirect("/settings/api-keys?notice=key_revoked")


# --- webhook endpoints -----------------------------------------------------------------------

def _webhooks_page(visit: Visit, *, values: dict, errors: dict[str, str], status_code: int = 200) -> Response:
    with transaction() as session:
        account_id = visit.account_id
        endpoints = [(endpoint, webhooks.recent_deliveries(session, account_id, endpoint.id, RECENT_DELIVERIES))
                     for endpoint in webhooks.all_endpoints(session, account_id)]
    return render(visit.request, "webhooks.html", status_code=status_code, endpoints=endpoints,
                  event_types=EVENT_TYPES, values=values, errors=errors, notice=_notice(visit))


def webhook_endpoints(visit: Visit) -> Response:
    return _webhooks_page(visit, values={"url": "", "which": "all", "events": []}, errors={})


def create_webhook_endpoint(visit: Visit) -> Response:
    values = {"url": visit.text("url", webhooks.URL_MAX + 1), "which": visit.text("which", 10),
              "events": visit.values("events")}
    try:
        if values["which"] == "some" and not values["events"]:
            raise ValidationFailed.at("events", "tick at least one event kind, or choose every kind")
        body = {"url": values["url"], "events": values["events"] if values["which"] == "some" else None}
        parse(webhooks.WebhookEndpointCreate, body)  # the form's own errors first, field by field
        created = act(visit, webhook_operations.create_webhook_endpoint, body=body, keyed=True)
    except DomainError as exc:
        errors = {("events" if path.startswith("events") else path): message for path, message in errors_of(exc).items()}
        return _webhooks_page(visit, values=values, errors=errors, status_code=exc.status)
    return render(visit.request, "webhook_created.html", status_code=201, endpoint=created)


def delete_webhook_endpoint(visit: Visit) -> Response:
    try:
        act(visit, webhook_operations.delete_webhook_endpoint, params={"id": visit.path_params["endpoint_id"]})
    except NotFound:
        return not_found(visit, "webhook endpoint", "/settings/webhooks")
    return redirect("/settings/webhooks?notice=endpoint_deleted")


def routes() -> list[Route]:
    """The settings pages of keys and webhooks (connected apps: web.app_pages)."""
    return [
        page("/settings", get=lambda visit: redirect("/settings/api-keys")),
        page("/settings/api-keys", get=api_keys, post=create_api_key, managers_only=True),
        page("/settings/api-keys/{key_id}/revoke", post=revoke_api_key, managers_only=True),
        page("/settings/webhooks", get=webhook_endpoints, post=create_webhook_endpoint, managers_only=True),
        page("/settings/webhooks/{endpoint_id}/delete", post=delete_webhook_endpoint, managers_only=True),
    ]

