from core import catalog
from core.catalog import ProductCreate, ProductListQuery, ProductOut, ProductUpdate, product_to_api
from rest.envelopes import one, page
from rest.framework import Api, Call

api = Api()
TAG = "Products"


@api.operation("GET", "/products", scope="products:read", tag=TAG, query=ProductListQuery,
               response=ProductOut, envelope="list", summary="List products, newest first")
def list_products(call: Call) -> dict:
    return page(catalog.list_products(call.session, call.principal.account_id, call.query), product_to_api)


@api.operation("POST", "/products", scope="products:write", tag=TAG, body=ProductCreate, body_required=True,
               idempotency="optional", response=ProductOut, status=201, summary="Create a product")
def create_product(call: Call) -> dict:
    return one(product_to_api(catalog.create_product(call.session, call.principal.account_id, call.body)))


@api.operation("GET", "/products/{id}", scope="products:read", tag=TAG, response=ProductOut,
               summary="Retrieve a product")
def get_product(call: Call) -> dict:
    return one(product_to_api(catalog.get_product(call.session, call.principal.account_id, call.path["id"])))


@api.operation("PATCH", "/products/{id}", scope="products:write", tag=TAG, body=ProductUpdate,
               response=ProductOut, summary="Update a product (only the fields sent change)")
def update_product(call: Call) -> dict:
    row = catalog.update_product(call.session, call.principal.account_id, call.path["id"], call.body)
    return one(product_to_api(row))


@api.operation("DELETE", "/products/{id}", scope="products:write", tag=TAG, response=ProductOut,
               idempotency="optional", summary="Archive a product (active: false); repeating is harmless")
def archive_product(call: Call) -> dict:
    return one(product_to_api(catalog.archive_product(call.session, call.principal.account_id, call.path["id"])))


@api.operation("POST", "/products/{id}/restore", scope="products:write", tag=TAG, response=ProductOut,
               idempotency="optional", summary="Restore an archived product (active: true)")
def restore_product(call: Call) -> dict:
    return one(product_to_api(catalog.restore_product(call.session, call.principal.account_id, call.path["id"])))
