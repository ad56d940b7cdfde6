"""The REST API under /api/v1: every endpoint module's operations, the OpenAPI document and its
interactive reference."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from rest import (
    business,
    credit_notes,
    customers,
    e_invoice_exports,
    invoice_documents,
    invoice_items,
    invoices,
    members,
    openapi,
    payments,
    prices,
    products,
    receivables,
    reference,
    reminders,
    schedules,
    webhook_endpoints,
)
from rest.framework import Endpoint, unrouted

# Endpoint modules, each with its own `api`. New resources add themselves here.
MODULES = [business, customers, products, prices, webhook_endpoints, invoices, invoice_items, invoice_documents,
           credit_notes, payments, receivables, schedules, reminders, e_invoice_exports, members]


def operations() -> list[Endpoint]:
    return [op for module in MODULES for op in module.api.operations]


def create_rest_app() -> Starlette:
    document_cache: dict[str, dict] = {}

    async def openapi_json(_: Request) -> Response:
        if "doc" not in document_cache:
            document_cache["doc"] = openapi.build(operations())
        return JSONResponse(document_cache["doc"])

    routes = [Route("/openapi.json", openapi_json, methods=["GET"]), *reference.routes()]
    for module in MODULES:
        routes += module.api.routes()
    return Starlette(routes=routes, exception_handlers={404: unrouted, 405: unrouted})

