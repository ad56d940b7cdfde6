"""Helpers shared by the invoice tests: customers, prices, drafts and finalized invoices."""

from __future__ import annotations

import uuid

from sqlmodel import select

from core.base import db
from core.models import InvoiceEvent, WebhookDelivery, WebhookEndpoint


def customer(tenant, **fields) -> dict:
    response = tenant.post("/customers", json={"name": "Jane Doe", "email": "jane@example.com", **fields})
    assert response.status_code == 201, response.text
    return response.json()["data"]


def price(tenant, unit_amount: int = 1000, currency: str = "USD", *, product_name: str = "Widget", **fields) -> dict:
    product = tenant.post("/products", json={"name": product_name})
    assert product.status_code == 201, product.text
    response = tenant.post("/prices", json={"product": product.json()["data"]["id"], "unit_amount": unit_amount,
                                            "currency": currency, **fields})
    assert response.status_code == 201, response.text
    return response.json()["data"]


def adhoc(description: str = "Consulting", unit_amount: int = 1000, **fields) -> dict:
    return {"description": description, "unit_amount": unit_amount, **fields}


def create(tenant, *, customer_id: str | None = None, **fields):
    """POST /invoices with an idempotency key; returns the response."""
    body = {"customer": customer_id or customer(tenant)["id"], **fields}
    return tenant.post("/invoices", json=body, idem=True)


def draft(tenant, **fields) -> dict:
    fields.setdefault("items", [adhoc()])
    response = create(tenant, **fields)
    assert response.status_code == 201, response.text
    return response.json()["data"]


def finalize(tenant, invoice_id: str):
    return tenant.post(f"/invoices/{invoice_id}/finalize", idem=True)


def open_invoice(tenant, **fields) -> dict:
    invoice = draft(tenant, **fields)
    response = finalize(tenant, invoice["id"])
    assert response.status_code == 200, response.text
    return response.json()["data"]


def pay(tenant, invoice_id: str, body: dict | None = None):
    return tenant.post(f"/invoices/{invoice_id}/pay", json=body, idem=True)


def record_payment(tenant, invoice_id: str, amount: int, **fields):
    return tenant.post("/payments", json={"invoice": invoice_id, "amount": amount, **fields}, idem=True)


def paid_part(tenant, invoice_id: str, amount: int, **fields) -> dict:
    """A payment of `amount` recorded for the invoice (asserted)."""
    response = record_payment(tenant, invoice_id, amount, **fields)
    assert response.status_code == 201, response.text
    return response.json()["data"]


def void(tenant, invoice_id: str, body: dict | None = None):
    return tenant.post(f"/invoices/{invoice_id}/void", json=body, idem=True)


def history(tenant, invoice_id: str) -> list[dict]:
    response = tenant.get(f"/invoices/{invoice_id}/events", params={"limit": 100})
    assert response.status_code == 200, response.text
    return response.json()["data"]


def add_webhook_endpoint(account_id: uuid.UUID, events: list[str] | None = None) -> uuid.UUID:
    with db.transaction() as session:
        endpoint = WebhookEndpoint(account_id=account_id, url="https://hooks.example.com/in", events=events,
                                   secret="whsec_" + "A" * 43)
        session.add(endpoint)
        session.flush()
        return endpoint.id


def outbox_rows(account_id: uuid.UUID) -> list[tuple[str, uuid.UUID]]:
    """(event type, endpoint id) of every outbox row of the account, oldest event first."""
    with db.transaction() as session:
        rows = session.exec(select(InvoiceEvent.type, WebhookDelivery.endpoint_id, InvoiceEvent.created_at)
                            .join(WebhookDelivery, WebhookDelivery.event_id == InvoiceEvent.id)
                            .where(WebhookDelivery.account_id == account_id)).all()
    return [(kind, endpoint) for kind, endpoint, _ in sorted(rows, key=lambda r: r[2])]


def stored_events(account_id: uuid.UUID) -> list[InvoiceEvent]:
    with db.transaction() as session:
        return list(session.exec(select(InvoiceEvent).where(InvoiceEvent.account_id == account_id)
                                 .order_by(InvoiceEvent.created_at)))


def profile_of(tenant) -> dict:
    """The business profile as an invoice prints it: GET /business without who is asking."""
    business = tenant.get("/business").json()["data"]
    return {k: v for k, v in business.items() if k not in ("object", "account", "role")}
