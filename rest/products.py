"""Products: list, create, retrieve, update, archive and restore."""

from operations import products
from rest.framework import Api

api = Api(tag="Products")
api.endpoint("GET", "/products", products.list_products, summary="List products",
             description="Newest first, paginated with `cursor` and `limit`. `query` matches part of the name; "
                         "`active=true` or `false` filters by archive state (both by default).")
api.endpoint("POST", "/products", products.create_product, status=201, summary="Create a product",
             description="A name and an optional description; amounts are set on its prices (`POST /prices`).")
api.endpoint("GET", "/products/{id}", products.get_product, summary="Retrieve a product",
             description="Archived products can be retrieved too (`active: false`).")
api.endpoint("PATCH", "/products/{id}", products.update_product, summary="Update a product",
             description="Only the fields sent change. `active: false` archives and `true` restores.")
api.endpoint("DELETE", "/products/{id}", products.archive_product, summary="Archive a product",
             description="Sets `active: false`; history is kept and lines already billed are untouched. Prices of "
                         "an archived product cannot be added to invoices. Repeating is harmless.")
api.endpoint("POST", "/products/{id}/restore", products.restore_product, summary="Restore an archived product",
             description="Sets `active: true` again. Restoring an active one is harmless.")
