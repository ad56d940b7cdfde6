"""Customers: list, create, retrieve, update, archive and restore."""

from operations import customers
from rest.framework import Api

api = Api(tag="Customers")
api.endpoint("GET", "/customers", customers.list_customers, summary="List customers",
             description="Newest first, 25 per page by default (`limit` up to 100). `query` matches a "
                         "case-insensitive part of the name. Archived customers are left out unless "
                         "`include_deleted=true`. Send `next_cursor` back as `cursor`, with the same filters.")
api.endpoint("POST", "/customers", customers.create_customer, status=201, summary="Create a customer",
             description="Only `name` is required. An `Idempotency-Key` is optional: without one, two identical "
                         "calls create two customers.")
api.endpoint("GET", "/customers/{id}", customers.get_customer, summary="Retrieve a customer",
             description="Archived customers can be retrieved too (`deleted: true`).")
api.endpoint("PATCH", "/customers/{id}", customers.update_customer, summary="Update a customer",
             description="Only the fields sent change; `null` or the empty string clears an optional field. "
                         "Drafts show the change; finalized invoices keep the details they were issued with.")
api.endpoint("DELETE", "/customers/{id}", customers.archive_customer, summary="Archive a customer",
             description="Sets `deleted: true`; the customer stays readable and its invoices are untouched, but new "
                         "invoices cannot name it. Repeating is harmless; `POST /customers/{id}/restore` undoes it.")
api.endpoint("POST", "/customers/{id}/restore", customers.restore_customer, summary="Restore an archived customer",
             description="Sets `deleted: false`. Restoring an active customer is harmless.")
