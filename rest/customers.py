from core import customers
from core.customers import CustomerCreate, CustomerListQuery, CustomerOut, CustomerUpdate, customer_to_api
from rest.envelopes import one, page
from rest.framework import Api, Call

api = Api()
TAG = "Customers"


@api.operation("GET", "/customers", scope="clients:read", tag=TAG, query=CustomerListQuery,
               response=CustomerOut, envelope="list", summary="List customers, newest first")
def list_customers(call: Call) -> dict:
    return page(customers.list_customers(call.session, call.principal.account_id, call.query), customer_to_api)


@api.operation("POST", "/customers", scope="clients:write", tag=TAG, body=CustomerCreate, body_required=True,
               idempotency="optional", response=CustomerOut, status=201, summary="Create a customer")
def create_customer(call: Call) -> dict:
    return one(customer_to_api(customers.create_customer(call.session, call.principal.account_id, call.body)))


@api.operation("GET", "/customers/{id}", scope="clients:read", tag=TAG, response=CustomerOut,
               summary="Retrieve a customer")
def get_customer(call: Call) -> dict:
    return one(customer_to_api(customers.get_customer(call.session, call.principal.account_id, call.path["id"])))


@api.operation("PATCH", "/customers/{id}", scope="clients:write", tag=TAG, body=CustomerUpdate,
               response=CustomerOut, summary="Update a customer (only the fields sent change)")
def update_customer(call: Call) -> dict:
    row = customers.update_customer(call.session, call.principal.account_id, call.path["id"], call.body)
    return one(customer_to_api(row))


@api.operation("DELETE", "/customers/{id}", scope="clients:write", tag=TAG, response=CustomerOut,
               idempotency="optional", summary="Archive a customer (deleted: true); repeating is harmless")
def archive_customer(call: Call) -> dict:
    row = customers.set_archived(call.session, call.principal.account_id, call.path["id"], True)
    return one(customer_to_api(row))


@api.operation("POST", "/customers/{id}/restore", scope="clients:write", tag=TAG, response=CustomerOut,
               idempotency="optional", summary="Restore an archived customer")
def restore_customer(call: Call) -> dict:
    row = customers.set_archived(call.session, call.principal.account_id, call.path["id"], False)
    return one(customer_to_api(row))
