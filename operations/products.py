"""Products and their prices: list, create, retrieve, update, archive and restore."""

from core.catalog import products
from core.catalog.products import (
    PriceCreate,
    PriceListQuery,
    PriceOut,
    PriceUpdate,
    ProductCreate,
    ProductListQuery,
    ProductOut,
    ProductUpdate,
    price_to_api,
    product_to_api,
)
from operations.pipeline import Operation
from operations.rendering import page

READ, WRITE = "products:read", "products:write"


list_products = Operation(
    "list_products", lambda call: page(products.list_products(*call.account(), call.query), product_to_api),
    scope=READ, query=ProductListQuery, response=ProductOut, shape="list")
create_product = Operation(
    "create_product", lambda call: product_to_api(products.create_product(*call.account(), call.body)),
    scope=WRITE, body=ProductCreate, body_required=True, idempotency="optional", response=ProductOut, audit="Created the product")
get_product = Operation(
    "get_product", lambda call: product_to_api(products.get_product(*call.account(), call.params["id"])),
    scope=READ, response=ProductOut)
update_product = Operation(
    "update_product", lambda call: product_to_api(products.update_product(*call.account(), call.params["id"], call.body)),
    scope=WRITE, body=ProductUpdate, response=ProductOut, audit="Updated the product")
archive_product = Operation(
    "archive_product", lambda call: product_to_api(products.archive_product(*call.account(), call.params["id"])),
    scope=WRITE, idempotency="optional", response=ProductOut, audit="Archived the product")
restore_product = Operation(
    "restore_product", lambda call: product_to_api(products.restore_product(*call.account(), call.params["id"])),
    scope=WRITE, idempotency="optional", response=ProductOut, audit="Restored the product")

list_prices = Operation(
    "list_prices", lambda call: page(products.list_prices(*call.account(), call.query), price_to_api),
    scope=READ, query=PriceListQuery, response=PriceOut, shape="list")
create_price = Operation(
    "create_price", lambda call: price_to_api(products.create_price(*call.account(), call.body)),
    scope=WRITE, body=PriceCreate, body_required=True, idempotency="optional", response=PriceOut, audit="Created the price")
get_price = Operation(
    "get_price", lambda call: price_to_api(products.get_price(*call.account(), call.params["id"])),
    scope=READ, response=PriceOut)
update_price = Operation(
    "update_price", lambda call: price_to_api(products.update_price(*call.account(), call.params["id"], call.body)),
    scope=WRITE, body=PriceUpdate, response=PriceOut, audit="Updated the price")
archive_price = Operation(
    "archive_price", lambda call: price_to_api(products.archive_price(*call.account(), call.params["id"])),
    scope=WRITE, idempotency="optional", response=PriceOut, audit="Archived the price")
restore_price = Operation(
    "restore_price", lambda call: price_to_api(products.restore_price(*call.account(), call.params["id"])),
    scope=WRITE, idempotency="optional", response=PriceOut, audit="Restored the price")
