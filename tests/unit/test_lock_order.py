"""Writers that meet on a customer's credit balance never deadlock on PostgreSQL: a key's finalization
holding the customer's credit while an app's finalization holds the account's lock for its limits
(the account lock is FOR NO KEY UPDATE, so the key's inserts pointing at the account do not wait on it)."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from core.access.authorization_details import InvoiceActions
from core.access.principal import Principal
from core.access.scopes import ALL_SCOPES
from core.base import db
from core.billing import customer_balance, delegated_actions, finalization, invoices
from tests.api.invoicing import adhoc, customer, draft, open_invoice, paid_part


def test_a_keys_finalization_and_an_apps_meeting_on_the_balance_both_finish(tenant, monkeypatch):
    if db.get_engine().dialect.name != "postgresql":
        pytest.skip("row locks: SQLite serializes writers whole")
    buyer = customer(tenant)
    first = open_invoice(tenant, customer_id=buyer["id"], items=[adhoc("Service", 10000)])
    paid_part(tenant, first["id"], 5000)  # the balance gives back money paid
    note = tenant.post("/credit-notes", json={"invoice": first["id"], "credit_amount": 5000, "balance_amount": 5000},
                       idem=True)
    assert note.status_code == 201, note.text
    for_app = draft(tenant, customer_id=buyer["id"], items=[adhoc("Next", 10000)])
    for_key = draft(tenant, customer_id=buyer["id"], items=[adhoc("Other", 10000)])
    app = Principal(account_id=tenant.account_id, granted_scopes=frozenset(ALL_SCOPES), actor="oauth_app", role="owner",
                    client_id="https://app.example/a", user_id=uuid.uuid4(), credential_id="a",
                    authorization_details=(InvoiceActions(actions=("finalize",)),), grant_id=uuid.uuid4())
    key = Principal(account_id=tenant.account_id, granted_scopes=frozenset(ALL_SCOPES), actor="api_key", role="owner",
                    api_key_id=uuid.uuid4(), credential_id="k")
    available, act_for = customer_balance.available, delegated_actions.act_for
    app_holds_the_account = threading.Event()

    async def key_waits_holding_the_credit(tx, customer_id, currency):
        rows = await available(tx, customer_id, currency)
        if threading.current_thread().name == "key":
            app_holds_the_account.wait(5)
            time.sleep(0.5)  # the app's finalization now waits on the credit's row
        return rows

    async def app_holds(tx, principal, action, invoice, **options):
        await act_for(tx, principal, action, invoice, **options)
        app_holds_the_account.set()

    monkeypatch.setattr(customer_balance, "available", key_waits_holding_the_credit)
    monkeypatch.setattr(delegated_actions, "act_for", app_holds)
    results = {}

    def finalize(name: str, principal: Principal, invoice_id: str, delay: float) -> None:
        time.sleep(delay)
        session = db.new_session()
        try:
            finalization.finalize_in(session, principal, invoices.get_invoice(session, tenant.account_id, invoice_id))
            session.commit()
            results[name] = "ok"
        except Exception as exc:  # asserted on below
            session.rollback()
            results[name] = repr(exc)[:300]
        finally:
            session.close()

    threads = [threading.Thread(target=finalize, name="key", args=("key", key, for_key["id"], 0)),
               threading.Thread(target=finalize, name="app", args=("app", app, for_app["id"], 0.3))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == {"key": "ok", "app": "ok"}
