from core import catalog
from core.catalog import PriceCreate, PriceListQuery, PriceOut, PriceUpdate, price_to_api
from rest.envelopes import one, page
from rest.framework import Api, Call

api = Api()
TAG = "Prices"


@api.operation("GET", "/prices", scope="products:read", tag=TAG, query=PriceListQuery,
               response=PriceOut, envelope="list", summary="List prices, newest first", extra_responses=(404,))
def list_prices(call: Call) -> dict:
    return page(catalog.list_prices(call.session, call.principal.account_id, call.query), price_to_api)


@api.operation("POST", "/prices", scope="products:write", tag=TAG, body=PriceCreate, body_required=True,
               idempotency="optional", response=PriceOut, status=201, extra_responses=(404,),
               summary="Create a price for a product")
def create_price(call: Call) -> dict:
    return one(price_to_api(catalog.create_price(call.session, call.principal.account_id, call.body)))


@api.operation("GET", "/prices/{id}", scope="products:read", tag=TAG, response=PriceOut,
               summary="Retrieve a price")
def get_price(call: Call) -> dict:
    return one(price_to_api(catalog.get_price(call.session, call.principal.account_id, call.path["id"])))


@api.operation("PATCH", "/prices/{id}", scope="products:write", tag=TAG, body=PriceUpdate, response=PriceOut,
               summary="Update a price (only the fields sent change; the product cannot change)")
def update_price(call: Call) -> dict:
    return one(price_to_api(catalog.update_price(call.session, call.principal.account_id, call.path["id"], call.body)))


@api.operation("DELETE", "/prices/{id}", scope="products:write", tag=TAG, response=PriceOut,
               idempotency="optional", summary="Archive a price (active: false); repeating is harmless")
def archive_price(call: Call) -> dict:
    return one(price_to_api(catalog.archive_price(call.session, call.principal.account_id, call.path["id"])))


@api.operation("POST", "/prices/{id}/restore", scope="products:write", tag=TAG, response=PriceOut,
               idempotency="optional", summary="Restore an archived price (active: true)")
def restore_price(call: Call) -> dict:
    return one(price_to_api(catalog.restore_price(call.session, call.principal.account_id, call.path["id"])))
