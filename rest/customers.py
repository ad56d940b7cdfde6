"""Customers: list, create, retrieve, update, archive and restore."""

from operations import customers
from rest.framework import Api

api = Api(tag="Customers")
api.endpoint("GET", "/customers", customers.list_customers, summary="List customers, newest first")
api.endpoint("POST", "/customers", customers.create_customer, status=201, summary="Create a customer")
api.endpoint("GET", "/customers/{id}", customers.get_customer, summary="Retrieve a customer")
api.endpoint("PATCH", "/customers/{id}", customers.update_customer,
             summary="Update a customer (only the fields sent change)")
api.endpoint("DELETE", "/customers/{id}", customers.archive_customer,
             summary="Archive a customer (deleted: true); repeating is harmless")
api.endpoint("POST", "/customers/{id}/restore", customers.restore_customer, summary="Restore an archived customer")
