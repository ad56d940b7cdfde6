"""Customers: list, create, retrieve, update, archive and restore."""

from core.catalog import customers
from core.catalog.customers import CustomerCreate, CustomerListQuery, CustomerOut, CustomerUpdate, customer_to_api
from operations.pipeline import Operation
from operations.rendering import page

READ, WRITE = "clients:read", "clients:write"


list_customers = Operation(
    "list_customers", lambda call: page(customers.list_customers(*call.account(), call.query), customer_to_api),
    scope=READ, query=CustomerListQuery, response=CustomerOut, shape="list")
create_customer = Operation(
    "create_customer", lambda call: customer_to_api(customers.create_customer(*call.account(), call.body)),
    scope=WRITE, body=CustomerCreate, body_required=True, idempotency="optional", response=CustomerOut,
    audit="Created the customer")
get_customer = Operation(
    "get_customer", lambda call: customer_to_api(customers.get_customer(*call.account(), call.params["id"])),
    scope=READ, response=CustomerOut)
update_customer = Operation(
    "update_customer",
    lambda call: customer_to_api(customers.update_customer(*call.account(), call.params["id"], call.body)),
    scope=WRITE, body=CustomerUpdate, response=CustomerOut, audit="Updated the customer")
archive_customer = Operation(
    "archive_customer", lambda call: customer_to_api(customers.set_archived(*call.account(), call.params["id"], True)),
    scope=WRITE, idempotency="optional", response=CustomerOut, audit="Archived the customer")
restore_customer = Operation(
    "restore_customer", lambda call: customer_to_api(customers.set_archived(*call.account(), call.params["id"], False)),
    scope=WRITE, idempotency="optional", response=CustomerOut, audit="Restored the customer")
