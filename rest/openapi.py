"""OpenAPI 3.1 document built from the operations' own declarations and pydantic models."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from config.settings import get_settings
from core.base.errors import ALL_ERRORS
from rest.framework import REQUEST_ID_MAX, Endpoint

REF = "#/components/schemas/{model}"
_RATE_HEADER = {"schema": {"type": "integer"}}
RESPONSE_HEADERS = {
    "X-Request-Id": {"description": "The request id (req_... or yours)", "schema": {"type": "string"}},
    "RateLimit-Limit": {"description": "Requests allowed per window", **_RATE_HEADER},
    "RateLimit-Remaining": {"description": "Requests left in this window", **_RATE_HEADER},
    "RateLimit-Reset": {"description": "When the window ends (Unix seconds)", **_RATE_HEADER},
}
STATUS_TEXT = {
    200: "OK", 201: "Created", 401: "Unauthorized", 403: "Forbidden", 404: "Not found",
    409: "Invalid state or conflict", 422: "Validation failed", 428: "Idempotency key required",
    429: "Rate limited", 502: "Upstream failed",
}


def _problem_schema() -> dict:
    return {
        "type": "object",
        "required": ["type", "title", "status", "detail", "instance", "code"],
        "properties": {
            "type": {"type": "string", "format": "uri"},
            "title": {"type": "string"},
            "status": {"type": "integer"},
            "detail": {"type": "string"},
            "instance": {"type": "string", "description": "The request id (req_…)"},
            "code": {"type": "string", "enum": sorted({e.code for e in ALL_ERRORS})},
            "errors": {
                "type": "array",
                "items": {"type": "object", "required": ["path", "message"],
                          "properties": {"path": {"type": "string"}, "message": {"type": "string"}}},
            },
        },
    }


def _model_refs(operations: list[Endpoint]) -> tuple[dict, dict]:
    """One schema per model, in the mode it is used (bodies validate, responses serialize)."""
    wanted = {}
    for op in operations:
        for model, mode in ((op.body, "validation"), (op.query, "validation"), (op.response, "serialization")):
            if model is not None:
                wanted[(model, mode)] = None
    refs, definitions = models_json_schema(list(wanted), ref_template=REF)
    return refs, definitions.get("$defs", {})


def _query_parameters(model: type[BaseModel] | None, refs: dict, schemas: dict) -> list[dict]:
    if model is None:
        return []
    schema = schemas[refs[(model, "validation")]["$ref"].rsplit("/", 1)[1]]
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


def _success_schema(op: Endpoint, refs: dict) -> dict:
    if op.response is None:
        return {"type": "object"}
    ref = refs[(op.response, "serialization")]
    if op.shape == "list":
        return {"type": "object", "required": ["data", "next_cursor"],
                "properties": {"data": {"type": "array", "items": ref},
                               "next_cursor": {"type": ["string", "null"]}}}
    if op.shape == "items":
        return {"type": "object", "required": ["data"], "properties": {"data": {"type": "array", "items": ref}}}
    if op.shape == "raw":
        return ref
    return {"type": "object", "required": ["data"], "properties": {"data": ref}}


def _operation(op: Endpoint, refs: dict, schemas: dict) -> dict:
    params = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
              for name in re.findall(r"{(\w+)}", op.path)]
    params += _query_parameters(op.query, refs, schemas)
    params.append({"name": "X-Request-Id", "in": "header", "required": False,
                   "description": "Your own request id, echoed back; otherwise one is generated (req_...)",
                   "schema": {"type": "string", "maxLength": REQUEST_ID_MAX}})
    if op.idempotency != "none":
        params.append({"name": "Idempotency-Key", "in": "header", "required": op.idempotency == "required",
                       "schema": {"type": "string", "minLength": 1, "maxLength": 255}})
    problem = {"application/problem+json": {"schema": {"$ref": REF.format(model="Problem")}}}
    success_content = ({op.media_type: {"schema": {"type": "string", "format": "binary"}}}
                       if op.media_type != "application/json"
                       else {"application/json": {"schema": _success_schema(op, refs)}})
    responses: dict[str, Any] = {str(op.status): {"description": STATUS_TEXT.get(op.status, "OK"),
                                                  "headers": RESPONSE_HEADERS, "content": success_content}}
    statuses = {401, 403, 429, 404 if "{" in op.path else None, 422 if (op.body or op.query) else None,
                428 if op.idempotency == "required" else None, *op.extra_responses}
    for status in sorted(s for s in statuses if s):
        responses[str(status)] = {"description": STATUS_TEXT.get(status, "Error"), "content": problem}
    responses["default"] = {"description": "Server fault (500 internal_error, 502 upstream_failed)",
                            "content": problem}
    result = {
        "operationId": op.operation_id, "summary": op.summary, "tags": [op.tag],
        "parameters": params, "responses": responses,
        "security": [{"bearer": [op.scope]}],
        "x-required-scope": op.scope,
    }
    if op.body is not None:
        result["requestBody"] = {"required": op.body_required,
                                 "content": {"application/json": {"schema": refs[(op.body, "validation")]}}}
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


def build(operations: list[Endpoint]) -> dict:
    refs, schemas = _model_refs(operations)
    paths: dict[str, dict] = {}
    for op in operations:
        operation = _operation(op, refs, schemas)
        if links := _links(op, operations):
            operation["responses"][str(op.status)]["links"] = links
        paths.setdefault(op.path, {})[op.method.lower()] = operation
    schemas["Problem"] = _problem_schema()
    _drop_impossible_null_defaults(schemas)
    _drop_impossible_null_defaults(paths)
    settings = get_settings()
    return {
        "openapi": "3.1.0",
        "info": {"title": "Invoicing API", "version": "1",
                 "description": "Money is always an integer in the currency's minor unit."},
        "servers": [{"url": settings.base_url}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "API key (inv_live_…) or OAuth access token (inv_oat_…)"}},
        },
    }
