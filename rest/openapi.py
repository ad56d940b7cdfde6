"""OpenAPI 3.1 document built from the operations' own declarations and pydantic models."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from core.errors import ALL_ERRORS
from rest.framework import Operation
from service.settings import get_settings

REF = "#/components/schemas/{model}"
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


def _models(operations: list[Operation]) -> list[type[BaseModel]]:
    seen: dict[str, type[BaseModel]] = {}
    for op in operations:
        for model in (op.body, op.response):
            if model is not None:
                seen.setdefault(model.__name__, model)
    return list(seen.values())


def _query_parameters(model: type[BaseModel] | None) -> list[dict]:
    if model is None:
        return []
    schema = model.model_json_schema()
    return [{"name": name, "in": "query", "required": False, "schema": {k: v for k, v in prop.items() if k != "title"},
             **({"description": prop["description"]} if "description" in prop else {})}
            for name, prop in schema.get("properties", {}).items()]


def _success_schema(op: Operation) -> dict:
    if op.response is None:
        return {"type": "object"}
    ref = {"$ref": REF.format(model=op.response.__name__)}
    if op.envelope == "list":
        return {"type": "object", "required": ["data", "next_cursor"],
                "properties": {"data": {"type": "array", "items": ref},
                               "next_cursor": {"type": ["string", "null"]}}}
    if op.envelope == "items":
        return {"type": "object", "required": ["data"], "properties": {"data": {"type": "array", "items": ref}}}
    if op.envelope == "raw":
        return ref
    return {"type": "object", "required": ["data"], "properties": {"data": ref}}


def _operation(op: Operation) -> dict:
    params = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
              for name in re.findall(r"{(\w+)}", op.path)]
    params += _query_parameters(op.query)
    if op.idempotency != "none":
        params.append({"name": "Idempotency-Key", "in": "header", "required": op.idempotency == "required",
                       "schema": {"type": "string", "maxLength": 255}})
    problem = {"application/problem+json": {"schema": {"$ref": REF.format(model="Problem")}}}
    success_content = ({op.media_type: {"schema": {"type": "string", "format": "binary"}}}
                       if op.media_type != "application/json"
                       else {"application/json": {"schema": _success_schema(op)}})
    responses: dict[str, Any] = {str(op.status): {"description": STATUS_TEXT.get(op.status, "OK"),
                                                  "content": success_content}}
    statuses = {401, 403, 429, 404 if "{" in op.path else None, 422 if (op.body or op.query) else None,
                428 if op.idempotency == "required" else None, *op.extra_responses}
    for status in sorted(s for s in statuses if s):
        responses[str(status)] = {"description": STATUS_TEXT.get(status, "Error"), "content": problem}
    result = {
        "operationId": op.operation_id, "summary": op.summary, "tags": [op.tag],
        "parameters": params, "responses": responses,
        "security": [{"bearer": [op.scope]}],
        "x-required-scope": op.scope,
    }
    if op.body is not None:
        result["requestBody"] = {"required": op.body_required,
                                 "content": {"application/json": {"schema": {"$ref": REF.format(model=op.body.__name__)}}}}
    return result


def build(operations: list[Operation]) -> dict:
    _, definitions = models_json_schema([(m, "validation") for m in _models(operations)], ref_template=REF)
    schemas = definitions.get("$defs", {})
    schemas["Problem"] = _problem_schema()
    paths: dict[str, dict] = {}
    for op in operations:
        paths.setdefault(op.path, {})[op.method.lower()] = _operation(op)
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
