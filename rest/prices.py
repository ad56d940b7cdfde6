"""Prices: list, create, retrieve, update, archive and restore."""

from operations import products
from rest.framework import Api

api = Api(tag="Prices")
api.endpoint("GET", "/prices", products.list_prices, extra_responses=(404,), summary="List prices, newest first")
api.endpoint("POST", "/prices", products.create_price, status=201, extra_responses=(404,),
             summary="Create a price for a product")
api.endpoint("GET", "/prices/{id}", products.get_price, summary="Retrieve a price")
api.endpoint("PATCH", "/prices/{id}", products.update_price,
             summary="Update a price (only the fields sent change; the product cannot change)")
api.endpoint("DELETE", "/prices/{id}", products.archive_price,
             summary="Archive a price (active: false); repeating is harmless")
api.endpoint("POST", "/prices/{id}/restore", products.restore_price,
             summary="Restore an archived price (active: true)")
