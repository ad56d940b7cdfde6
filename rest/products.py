"""Products: list, create, retrieve, update, archive and restore."""

from operations import products
from rest.framework import Api

api = Api(tag="Products")
api.endpoint("GET", "/products", products.list_products, summary="List products, newest first")
api.endpoint("POST", "/products", products.create_product, status=201, summary="Create a product")
api.endpoint("GET", "/products/{id}", products.get_product, summary="Retrieve a product")
api.endpoint("PATCH", "/products/{id}", products.update_product,
             summary="Update a product (only the fields sent change)")
api.endpoint("DELETE", "/products/{id}", products.archive_product,
             summary="Archive a product (active: false); repeating is harmless")
api.endpoint("POST", "/products/{id}/restore", products.restore_product,
             summary="Restore an archived product (active: true)")
