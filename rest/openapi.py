"""OpenAPI 3.1 document built from the operations' own declarations and pydantic models.

What generators need is made explicit: every resource, list page and `{data: …}` envelope is a
named schema; dates, timestamps, e-mails and URLs carry their `format`; every operation has a
description, its scope under both security schemes (API key and OAuth 2.0) and examples; the PDF
is `application/pdf` binary; the webhook payloads are in `webhooks`. Components no path or webhook
uses are left out.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from config.settings import get_settings
from core.access.roles import ROLES
from core.access.scopes import ALL_SCOPES, SCOPE_DESCRIPTIONS
from core.base.context import REQUEST_ID_MAX
from core.base.errors import ALL_ERRORS
from core.billing.events import EVENT_TYPES
from rest import examples
from rest.framework import Endpoint

REF = "#/components/schemas/{model}"
# Model class names → the names clients see (generated classes take them).
SCHEMA_NAMES = {
    "AddressOut": "Address", "BankDetailsOut": "BankDetails", "BusinessAddressOut": "BusinessAddress",
    "BusinessOutModel": "Business", "CallerBusinessOut": "CallerBusiness", "MemberOut": "Member",
    "InvitationOut": "Invitation", "CustomerAddress": "AddressInput", "CustomerDetailsOut": "CustomerDetails",
    "CustomerOut": "Customer", "DeletedInvoiceOut": "DeletedInvoice", "EventOut": "InvoiceEvent",
    "InvoiceItemOut": "InvoiceItem", "InvoiceOut": "Invoice", "InvoiceWithLinesOut": "InvoiceWithLines",
    "InvoicePreviewOut": "InvoicePreview", "InvoicePreviewLineOut": "InvoicePreviewLine",
    "PreviewLinesOut": "InvoicePreviewLines",
    "ItemAdd": "InvoiceItemCreate", "ItemFields": "InvoiceItemInput", "LinesOut": "InvoiceLines",
    "PayInput": "InvoicePay", "PriceOut": "Price", "ProductOut": "Product", "RecurringOut": "Recurring",
    "SendInput": "InvoiceSend", "SendOut": "InvoiceSendResult", "VoidInput": "InvoiceVoid",
    "WebhookEndpointCreatedOut": "WebhookEndpointWithSecret", "WebhookEndpointDeletedOut": "DeletedWebhookEndpoint",
    "WebhookEndpointOut": "WebhookEndpoint",
    "CreditNoteOut": "CreditNote", "CreditNoteLineOut": "CreditNoteLine", "CreditNoteLinesOut": "CreditNoteLines",
    "CreditNoteCreate": "CreditNoteCreate", "CreditNoteLineInput": "CreditNoteLineInput", "RefundOut": "Refund",
    "CreditNoteSendOut": "CreditNoteSendResult",
    "PaymentOut": "Payment", "PaymentCreate": "PaymentCreate", "PaymentReverse": "PaymentReverse",
    "ReceivablesOut": "Receivables", "ReceivablesPageOut": "ReceivablesPage", "AgingBucketOut": "AgingBucket",
    "CurrencyReceivablesOut": "CurrencyReceivables", "CustomerReceivablesOut": "CustomerReceivables",
    "ScheduleOut": "InvoiceSchedule", "ScheduleCreate": "InvoiceScheduleCreate", "SchedulePause": "InvoiceSchedulePause",
    "ScheduleResume": "InvoiceScheduleResume", "ScheduleRunOut": "ScheduleRun", "ScheduleRunEmail": "ScheduleRunEmail",
    "ReminderPolicyOut": "ReminderPolicy", "ReminderPolicyInput": "ReminderPolicyInput", "ReminderStep": "ReminderStep",
    "LateFee": "LateFee", "RemindInput": "InvoiceRemind", "RemindOut": "InvoiceRemindResult",
    "RemindersPause": "InvoiceRemindersPause",
    "ScheduleFailure": "ScheduleFailure", "ScheduleCreator": "ScheduleCreator", "InvoiceTemplate": "InvoiceTemplate",
    "InvoiceTemplateOut": "ScheduleInvoice", "TemplateItemOut": "ScheduleInvoiceItem",
    "ExportInput": "EInvoiceExportCreate", "ExportOut": "EInvoiceExport", "ExportPeriod": "EInvoiceExportPeriod",
    "SkippedOut": "EInvoiceExportSkipped",
}
TAGS = [
    {"name": "Business", "description": "The business profile: the issuer printed on every invoice. Read-only "
                                        "here; the account owner edits it in the web pages."},
    {"name": "Customers", "description": "Who the business invoices. Customers are archived, never deleted."},
    {"name": "Products", "description": "What the business sells. Amounts live on prices."},
    {"name": "Prices", "description": "Amounts and currencies of products, one-time or recurring (recorded only: "
                                      "nothing bills automatically)."},
    {"name": "Invoices", "description": "Drafts, finalized (numbered, immutable) invoices, payment, void, the "
                                        "history, the PDF and e-mail. Money is integer minor units."},
    {"name": "Invoice items", "description": "The lines of a draft invoice, one at a time."},
    {"name": "Credit notes", "description": "Corrections of issued invoices: documents of their own, numbered in "
                                            "their own series, that credit part or all of an invoice."},
    {"name": "Invoice schedules", "description": "Recurring invoices: the same invoice made for a customer once per "
                                                 "period (weekly to yearly), as drafts to review, finalized, or "
                                                 "finalized and e-mailed, by the worker, exactly once per period."},
    {"name": "Reminders", "description": "Payment reminders: the account's policy of e-mails before and after due "
                                         "dates, with an optional late fee invoiced separately."},
    {"name": "Payments", "description": "Money received for invoices outside the service, in part or in full; "
                                        "reversible (a bounced transfer). No money moves here."},
    {"name": "Webhook endpoints", "description": "Where signed event notifications (see `webhooks`) are sent."},
    {"name": "Members", "description": "The people of the business and their roles (each role bounds every key, "
                                       "token and app of its person there), and e-mailed invitations to join."},
]
DESCRIPTION = """\
The REST API of the invoicing service. A user guide with runnable examples is in the repository's \
`docs/guide/`.

- **Authentication**: `Authorization: Bearer <key>` with an API key (`inv_live_…`, made in Settings → \
API keys) or an OAuth 2.1 access token (`inv_oat_…`, authorization code with PKCE S256 and \
`resource` set to this base URL). Each operation names its scope.
- **Money** is always an integer in the currency's minor unit: 250000 is 2,500.00 GBP; 5000 is 5,000 JPY.
- **Responses** wrap the resource in `{data: …}`; lists add `next_cursor` (send it back as `cursor`; \
null on the last page). Errors are `application/problem+json` (RFC 9457) with a stable `code`.
- **Idempotency**: writes that must not run twice require an `Idempotency-Key` header (kept 24 hours); \
a retry with the same key returns the first response with `Idempotent-Replayed: true`.
- **Limits**: 120 requests per minute per credential; 10 invoice sends per hour per credential; \
50 invoice e-mails per hour per account. Every response carries `RateLimit-*` headers; a 429 \
carries `Retry-After`.
"""
_RATE_HEADER = {"schema": {"type": "integer"}}
RESPONSE_HEADERS = {
    "X-Request-Id": {"description": "The request id (req_... or yours)", "schema": {"type": "string"}},
    "RateLimit-Limit": {"description": "Requests allowed per window", **_RATE_HEADER},
    "RateLimit-Remaining": {"description": "Requests left in this window", **_RATE_HEADER},
    "RateLimit-Reset": {"description": "When the window ends (Unix seconds)", **_RATE_HEADER},
}
REPLAYED_HEADER = {"Idempotent-Replayed": {
    "description": "`true` when this is the stored response of an earlier request with the same Idempotency-Key",
    "schema": {"type": "string", "enum": ["true"]}}}
ERROR_HEADERS = {
    401: {"WWW-Authenticate": {"description": "Bearer challenge naming the protected-resource metadata (RFC 9728)",
                               "schema": {"type": "string"}}},
    403: {"WWW-Authenticate": {"description": "Bearer challenge: `insufficient_scope` with the scope needed",
                               "schema": {"type": "string"}}},
    429: {"Retry-After": {"description": "Seconds to wait before retrying", "schema": {"type": "integer"}}},
}
STATUS_TEXT = {
    200: "OK", 201: "Created", 401: "Unauthorized", 403: "Forbidden", 404: "Not found",
    409: "Invalid state or conflict", 413: "Request body over 8 MiB", 422: "Validation failed",
    428: "Idempotency key required", 429: "Rate limited", 502: "Upstream failed",
}


def _problem_schema() -> dict:
    return {
        "type": "object",
        "description": "An error (RFC 9457). Branch on `code`; `detail` is for people and may change.",
        "required": ["type", "title", "status", "detail", "instance", "code"],
        "properties": {
            "type": {"type": "string", "format": "uri", "description": "`{origin}/problems/{slug}`"},
            "title": {"type": "string", "description": "Short summary of the kind of error"},
            "status": {"type": "integer", "description": "The HTTP status"},
            "detail": {"type": "string", "description": "What went wrong in this request"},
            "instance": {"type": "string", "description": "The request id (req_…), as in X-Request-Id"},
            "code": {"type": "string", "enum": sorted({e.code for e in ALL_ERRORS}),
                     "description": "Stable machine-readable code"},
            "required_scope": {"type": "string", "description": "Only on 403 forbidden: the scope the operation "
                               "needs"},
            "role": {"type": ["string", "null"], "enum": [*ROLES, None],
                     "description": "Only on 403 forbidden when the person's role in the business refuses the "
                     "scope (a credential with more would not help): that role, or null when the person is no "
                     "longer a member"},
            "remediation_url": {"type": "string", "format": "uri", "description": "Only on 403 "
                                "grant_limit_exceeded: the dashboard page where the person raises the app's limit, "
                                "or finishes the action themselves"},
            "errors": {
                "type": "array", "description": "Only on 422: each invalid field",
                "items": {"type": "object", "required": ["path", "message"],
                          "properties": {"path": {"type": "string", "description": "Dotted path: items.0.unit_amount"},
                                         "message": {"type": "string", "description": "What is wrong with it"}}},
            },
        },
    }


def _problem_example(status: int) -> dict:
    error = next(e for e in ALL_ERRORS if e.status == status)
    example = {"type": f"{get_settings().origin.rstrip('/')}/problems/{error.slug}", "title": error.title,
               "status": status, "detail": _PROBLEM_DETAILS.get(error.code, error.title + "."),
               "instance": "req_4f2a9c1e7b3d5f60", "code": error.code}
    if status == 422:
        example["errors"] = [{"path": "items.0.unit_amount", "message": "Input should be a valid integer"}]
    return example


_PROBLEM_DETAILS = {
    "unauthorized": "The API key has been revoked.", "forbidden": "This key lacks the scope invoices:finalize.",
    "not_found": "No such invoice: in_7e88a0c4d2b14f6e9a3c5b7d9e1f2a4c", "validation": "Invalid input.",
    "invalid_state": "Invoice in_7e88… is open: only a draft can be edited.",
    "idempotency_key_required": "This operation needs an Idempotency-Key header.",
    "rate_limited": "Too many requests: 120 per 60 seconds per credential. Retry after 17 seconds.",
    "upstream_failed": "The e-mail provider refused the message.",
    "grant_limit_exceeded": "This app may finalize invoices of up to 1,000.00 USD; this one totals 2,500.00 USD.",
    "payload_too_large": "The request body is larger than 8 MiB, the most any request of this API needs.",
}


def _collect_schemas(operations: list[Endpoint]) -> tuple[dict, dict]:
    """One schema per model in the mode it is used (bodies validate, responses serialize), under
    its public name."""
    wanted = {}
    for op in operations:
        for model, mode in ((op.body, "validation"), (op.query, "validation"), (op.response, "serialization")):
            if model is not None:
                wanted[(model, mode)] = None
    refs, definitions = models_json_schema(list(wanted), ref_template=REF)
    schemas = definitions.get("$defs", {})
    renamed = {old: SCHEMA_NAMES.get(old, old) for old in schemas}
    _rename_refs(schemas, renamed)
    _rename_refs(refs, renamed)
    for old, schema in schemas.items():
        schema["title"] = renamed[old]  # generators name classes after the title
    return refs, {renamed[name]: schema for name, schema in schemas.items()}


def _rename_refs(node: Any, renamed: dict[str, str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            name = ref.rsplit("/", 1)[1]
            node["$ref"] = REF.format(model=renamed.get(name, name))
        for value in node.values():
            _rename_refs(value, renamed)
    elif isinstance(node, list):
        for value in node:
            _rename_refs(value, renamed)


def _name_of(ref: dict) -> str:
    return ref["$ref"].rsplit("/", 1)[1]


def _query_parameters(model: type[BaseModel] | None, refs: dict, schemas: dict) -> list[dict]:
    if model is None:
        return []
    schema = schemas[_name_of(refs[(model, "validation")])]
    required = set(schema.get("required", ()))
    parameters = []
    for name, prop in schema.get("properties", {}).items():
        parameter = {"name": name, "in": "query", "required": name in required,
                     "schema": {k: v for k, v in prop.items() if k not in ("title", "description")}}
        if "description" in prop:
            parameter["description"] = prop["description"]
        parameters.append(parameter)
    return parameters


def _drop_impossible_null_defaults(node: Any) -> None:
    """`default: null` on a schema that refuses null only says "omitted means not sent"; drop it."""
    if isinstance(node, dict):
        if node.get("default", ...) is None and "type" in node and "null" not in (
                node["type"] if isinstance(node["type"], list) else [node["type"]]):
            del node["default"]
        for value in node.values():
            _drop_impossible_null_defaults(value)
    elif isinstance(node, list):
        for value in node:
            _drop_impossible_null_defaults(value)


def _envelope(op: Endpoint, refs: dict, schemas: dict) -> tuple[dict, Any]:
    """The success schema (a named envelope, added to `schemas`) and its example."""
    ref = refs[(op.response, "serialization")]
    name = _name_of(ref)
    example = examples.RESOURCES[name]
    if op.shape == "raw":
        return ref, example
    if op.shape == "list":
        envelope, body = f"{name}List", {"data": [example], "next_cursor": None}
        schema = {"type": "object", "description": f"A page of {name} objects, newest first",
                  "required": ["data", "next_cursor"],
                  "properties": {"data": {"type": "array", "items": ref, "description": "This page"},
                                 "next_cursor": {"anyOf": [{"type": "string"}, {"type": "null"}], "description":
                                                 "Pass as `cursor` for the next page; null on the last"}}}
    elif op.shape == "items":
        envelope, body = f"{name}List", {"data": [example]}
        schema = {"type": "object", "description": f"Every {name}, not paginated", "required": ["data"],
                  "properties": {"data": {"type": "array", "items": ref, "description": "All of them"}}}
    else:
        envelope, body = f"{name}Response", {"data": example}
        schema = {"type": "object", "description": f"A {name} in its envelope", "required": ["data"],
                  "properties": {"data": {**ref, "description": f"The {name}"}}}
    schemas[envelope] = schema
    return {"$ref": REF.format(model=envelope)}, body


def _security(scope: str) -> list[dict]:
    return [{"apiKey": [scope]}, {"oauth2": [scope]}]


def _operation(op: Endpoint, refs: dict, schemas: dict) -> dict:
    params = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"},
               "description": "The id (prefixed, such as `in_…`, or the bare UUID)"}
              for name in re.findall(r"{(\w+)}", op.path)]
    params += _query_parameters(op.query, refs, schemas)
    params.append({"name": "X-Request-Id", "in": "header", "required": False,
                   "description": "Your own request id, echoed back; otherwise one is generated (req_...)",
                   "schema": {"type": "string", "maxLength": REQUEST_ID_MAX}})
    if op.idempotency != "none":
        params.append({"name": "Idempotency-Key", "in": "header", "required": op.idempotency == "required",
                       "description": "Any unique string (a UUID); a retry with the same key and body returns the "
                                      "first response instead of running again. Kept 24 hours",
                       "schema": {"type": "string", "minLength": 1, "maxLength": 255}})
    if op.media_type != "application/json":  # a document; several media types are separated by commas
        success_content = {kind: {"schema": {"type": "string", "format": "binary", "contentMediaType": kind}}
                           for kind in op.media_type.split(",")}
    elif op.response is None:
        success_content = {"application/json": {"schema": {"type": "object"}}}
    else:
        schema, example = _envelope(op, refs, schemas)
        success_content = {"application/json": {"schema": schema, "example": example}}
    headers = {**RESPONSE_HEADERS, **(REPLAYED_HEADER if op.idempotency != "none" else {})}
    responses: dict[str, Any] = {str(op.status): {"description": STATUS_TEXT.get(op.status, "OK"),
                                                  "headers": headers, "content": success_content}}
    statuses = {401, 403, 429, 404 if "{" in op.path else None, 422 if (op.body or op.query) else None,
                413 if op.body else None, 428 if op.idempotency == "required" else None, *op.extra_responses}
    for status in sorted(s for s in statuses if s):
        responses[str(status)] = {"description": STATUS_TEXT.get(status, "Error"), "content": {
            "application/problem+json": {"schema": {"$ref": REF.format(model="Problem")},
                                         "example": _problem_example(status)}}}
        if status in ERROR_HEADERS:
            responses[str(status)]["headers"] = ERROR_HEADERS[status]
    responses["default"] = {"description": "Server fault (500 internal_error, 502 upstream_failed)",
                            "content": {"application/problem+json": {"schema": {"$ref": REF.format(model="Problem")}}}}
    result = {
        "operationId": op.operation_id, "summary": op.summary, "description": op.description, "tags": [op.tag],
        "parameters": params, "responses": responses, "security": _security(op.scope),
        "x-required-scope": op.scope,
    }
    if op.body is not None:
        result["requestBody"] = {"required": op.body_required, "content": {"application/json": {
            "schema": refs[(op.body, "validation")], "example": examples.REQUESTS[op.operation_id]}}}
    return result


def _links(created: Endpoint, operations: list[Endpoint]) -> dict:
    """OpenAPI links from a create operation to what takes the new object's id: `/things/{id}…` of
    its own collection, and query parameters named after it (`invoice` of `/invoice-items`)."""
    if created.method != "POST" or created.status != 201 or "{" in created.path:
        return {}
    new_id = "$response.body#/data/id"
    links = {}
    noun = created.path.strip("/").removesuffix("s").replace("-", "_")  # /invoices -> invoice
    for op in operations:
        if op.path.startswith(created.path + "/{id}"):
            links[op.operation_id] = {"operationId": op.operation_id, "parameters": {"path.id": new_id}}
        elif "{" not in op.path and op.query is not None and noun in op.query.model_fields:
            links[op.operation_id] = {"operationId": op.operation_id, "parameters": {f"query.{noun}": new_id}}
    return links


# What each kind of event carries as `data.object`: its notification's schema and an example.
NOTIFIED = {"invoice": ("InvoiceEventNotification", examples.INVOICE),
            "credit_note": ("CreditNoteEventNotification", examples.CREDIT_NOTE),
            "payment": ("PaymentEventNotification", examples.PAYMENT),
            "invoice_schedule": ("InvoiceScheduleEventNotification", examples.INVOICE_SCHEDULE)}


def _webhooks(schemas: dict) -> dict:
    """One entry per event kind: what the service POSTs to a webhook endpoint."""
    for name, model, kinds, about in (
            ("InvoiceEventNotification", "Invoice", [k for k in EVENT_TYPES if k.startswith("invoice.")],
             "The invoice as at the event, without lines"),
            ("CreditNoteEventNotification", "CreditNote", [k for k in EVENT_TYPES if k.startswith("credit_note.")],
             "The credit note as at the event, naming its invoice"),
            ("PaymentEventNotification", "Payment", [k for k in EVENT_TYPES if k.startswith("payment.")],
             "The payment as at the event, naming its invoice"),
            ("InvoiceScheduleEventNotification", "InvoiceSchedule",
             [k for k in EVENT_TYPES if k.startswith("invoice_schedule.")], "The schedule as at the event")):
        schemas[name] = {
            "type": "object",
            "description": "The body of a webhook delivery. Verify `webhook-signature` before trusting it.",
            "required": ["id", "type", "created_at", "data"],
            "properties": {
                "id": {"type": "string", "description": "Event id; the same for every endpoint and every retry"},
                "type": {"type": "string", "enum": kinds, "description": "The event kind"},
                "created_at": {"type": "string", "format": "date-time", "description": "When it happened"},
                "data": {"type": "object", "required": ["object"], "description": "What the event is about",
                         "properties": {"object": {"$ref": REF.format(model=model), "description": about},
                                        "e_invoices": {"type": "object", "description": "Only on invoice.finalized "
                                                       "and credit_note.created: the API addresses of its e-invoices by "
                                                       "format (peppol, cii, facturx), fetched with a credential that "
                                                       "reads invoices",
                                                       "additionalProperties": {"type": "string", "format": "uri"}}}},
            },
        }
    headers = [
        ("webhook-id", "The event id (the same on every retry): deduplicate on it"),
        ("webhook-timestamp", "Unix seconds of this attempt; reject it if more than 5 minutes from your clock"),
        ("webhook-signature", "`v1,<base64 HMAC-SHA256>` over `{webhook-id}.{webhook-timestamp}.{raw body}` keyed "
                              "with the endpoint secret (the part after `whsec_`, base64-decoded); several may be "
                              "space-separated (Standard Webhooks)"),
    ]
    result = {}
    for kind in EVENT_TYPES:
        about = kind.split(".")[0]
        example = {"id": "msg_2b7c9e4f1a3d5c6e", "type": kind, "created_at": "2026-11-02T10:00:00.000Z",
                   "data": {"object": NOTIFIED[about][1]}}
        notification = NOTIFIED[about][0]
        result[kind] = {"post": {
            "summary": f"{kind} notification", "operationId": f"webhook_{kind.replace('.', '_')}",
            "description": f"Sent to every active endpoint subscribed to `{kind}`. Answer with any 2xx within 15 "
                           "seconds; otherwise it is retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h "
                           "with the same `webhook-id`.",
            "tags": ["Webhook endpoints"],
            "parameters": [{"name": name, "in": "header", "required": True, "description": text,
                            "schema": {"type": "string"}} for name, text in headers],
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": {"$ref": REF.format(model=notification)}, "example": example}}},
            "responses": {"2XX": {"description": "Acknowledged; any other status is retried"}},
        }}
    return result


def _security_schemes() -> dict:
    origin = get_settings().origin.rstrip("/")
    return {
        "apiKey": {"type": "http", "scheme": "bearer",
                   "description": "An API key (`inv_live_…`) made in Settings → API keys, with its scopes. "
                                  "An OAuth access token (`inv_oat_…`) is sent the same way."},
        "oauth2": {"type": "oauth2",
                   "description": "OAuth 2.1: authorization code with PKCE (S256 only) and `resource` set to "
                                  f"`{origin}/api/v1` (RFC 8707). Clients register dynamically at "
                                  f"`{origin}/oauth/register` or use a client metadata document URL as client_id. "
                                  "Refresh tokens rotate on every use.",
                   "flows": {"authorizationCode": {
                       "authorizationUrl": f"{origin}/oauth/authorize", "tokenUrl": f"{origin}/oauth/token",
                       "refreshUrl": f"{origin}/oauth/token",
                       "scopes": {scope: SCOPE_DESCRIPTIONS[scope] for scope in ALL_SCOPES}}}},
    }


def _reachable(document: dict, schemas: dict) -> dict:
    """Only the components something refers to (query models become parameters, not schemas)."""
    seen: set[str] = set()
    pending = [document]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and (name := ref.rsplit("/", 1)[1]) not in seen and name in schemas:
                seen.add(name)
                pending.append(schemas[name])
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return {name: schema for name, schema in sorted(schemas.items()) if name in seen}


def _with_examples(schemas: dict) -> None:
    for name, example in examples.RESOURCES.items():
        if name in schemas:
            schemas[name]["examples"] = [example]


def build(operations: list[Endpoint]) -> dict:
    refs, schemas = _collect_schemas(operations)
    paths: dict[str, dict] = {}
    for op in operations:
        operation = _operation(op, refs, schemas)
        if links := _links(op, operations):
            operation["responses"][str(op.status)]["links"] = links
        paths.setdefault(op.path, {})[op.method.lower()] = operation
    schemas["Problem"] = _problem_schema()
    webhooks = _webhooks(schemas)
    _with_examples(schemas)
    _drop_impossible_null_defaults(schemas)
    _drop_impossible_null_defaults(paths)
    settings = get_settings()
    document = {
        "openapi": "3.1.0",
        "info": {"title": "Invoicing API", "version": "1", "description": DESCRIPTION},
        "servers": [{"url": settings.base_url}],
        "tags": TAGS,
        "paths": paths,
        "webhooks": webhooks,
    }
    document["components"] = {"schemas": _reachable(document, schemas), "securitySchemes": _security_schemes()}
    return document
