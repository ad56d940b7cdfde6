"""Seed the benchmark's account in the database INVOICING_DATABASE_URL names (migrating it first):
a business, a full-access key and 50 customers. Prints their ids and the key as JSON."""

from __future__ import annotations

import json

from core.access import accounts, apikeys
from core.access.scopes import PRESETS
from core.base import db
from core.billing.business import BusinessInput, set_profile
from core.catalog import customers
from core.catalog.customers import CustomerCreate
from service import migrate

BUSINESS = {"legal_name": "Bench Ltd", "country_code": "GB", "currency": "USD", "invoice_prefix": "BEN"}


def main() -> None:
    migrate.upgrade()
    with db.transaction() as session:
        _user, account = accounts.create_account(session, email="bench@example.com", password="benchmark password")
        set_profile(session, account.id, BusinessInput.model_validate(BUSINESS))
        key = apikeys.create_key(session, account.id, name="bench", scopes=list(PRESETS["full_access"]))
        first = [customers.create_customer(session, account.id, CustomerCreate(name=f"Customer {n:03d}"))
                 for n in range(50)][0]
    print(json.dumps({"key": key.key, "account": str(account.id), "customer": "cus_" + first.id.hex}))


if __name__ == "__main__":
    main()
