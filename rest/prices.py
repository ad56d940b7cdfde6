"""Prices: list, create, retrieve, update, archive and restore."""

from operations import products
from rest.framework import Api

api = Api(tag="Prices")
api.endpoint("GET", "/prices", products.list_prices, extra_responses=(404,), summary="List prices",
             description="Newest first, paginated. Filters: `product` (404 if it is not the account's), `active`, "
                         "`currency`, `type` (`one_time` or `recurring`).")
api.endpoint("POST", "/prices", products.create_price, status=201, extra_responses=(404,),
             summary="Create a price for a product",
             description="`unit_amount` is in the currency's minor unit. `type` defaults to `one_time`; a "
                         "`recurring` price needs `recurring.interval` (recorded only: nothing bills "
                         "automatically). The product must be active.")
api.endpoint("GET", "/prices/{id}", products.get_price, summary="Retrieve a price",
             description="Archived prices can be retrieved too (`active: false`).")
api.endpoint("PATCH", "/prices/{id}", products.update_price, summary="Update a price",
             description="Only the fields sent change; `product` cannot (422 at path `product`). Switching to "
                         "`one_time` clears the interval. Drafts pick up a new amount the next time they are saved; "
                         "finalized invoices keep what they billed.")
api.endpoint("DELETE", "/prices/{id}", products.archive_price, summary="Archive a price",
             description="Sets `active: false`: it can no longer be added to invoices. Repeating is harmless.")
api.endpoint("POST", "/prices/{id}/restore", products.restore_price, summary="Restore an archived price",
             description="Sets `active: true` again. Restoring an active one is harmless.")
