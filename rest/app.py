"""The REST API under /api/v1: every endpoint module's operations, the OpenAPI document and its
interactive reference."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from rest import (
    business,
    customers,
    fast_reads,
    fast_writes,
    invoice_documents,
    invoice_items,
    invoices,
    openapi,
    prices,
    products,
    reference,
    webhook_endpoints,
)
from rest.framework import Endpoint, unrouted

# Endpoint modules, each with its own `api`. New resources add themselves here.
MODULES = [business, customers, products, prices, webhook_endpoints, invoices, invoice_items, invoice_documents]


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
    fast = {op.path: op for op in operations() if op.name in fast_writes.WRITES}
    return Starlette(routes=[_fast(route, fast.get(route.path)) for route in routes],
                     exception_handlers={404: unrouted, 405: unrouted})


def _fast(route: Route, write: Endpoint | None) -> Route:
    """The route, with the fast read path and (`write`: the operation at its path that has one) the
    fast write path in front."""
    if route.path not in ("/invoices/{id}", "/invoices") and write is None:
        return route
    endpoint = fast_writes.fast_write(write, route.endpoint) if write is not None else route.endpoint
    if route.path in ("/invoices/{id}", "/invoices"):
        endpoint = fast_reads.invoice_reads(endpoint)
    return Route(route.path, endpoint, methods=sorted(route.methods - {"HEAD"}))
