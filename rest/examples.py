"""Examples in the OpenAPI document: one of each resource (by its schema name) and one request
body per operation that takes a body. `tests/api/test_openapi.py` validates each against its
schema, so they cannot drift from the models."""

from __future__ import annotations

_CREATED = "2026-11-02T09:30:00.000Z"
_CUSTOMER_ID = "cus_91628e1542b347d9a4b20d5b864f84da"
_PRODUCT_ID = "prod_0b3f6a1e9c2d4b7a8e5f1a2b3c4d5e6f"
_PRICE_ID = "price_5c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f"
_INVOICE_ID = "in_7e88a0c4d2b14f6e9a3c5b7d9e1f2a4c"
_TOKEN = "q3Yk2m8ZJtV0xN5bL7aR1cW9eH4uP6sD2fG8hK0jM3n"
_ORIGIN = "https://invoicing.example.com"

ADDRESS = {"line1": "1 Harbour Road", "line2": None, "city": "Bristol", "state": None, "postal_code": "BS1 5TY",
           "country": "GB"}
BUSINESS = {
    "id": "6d0f3b4e-2a1c-4e8f-9b7d-5c3a1e2f4b6d", "legal_name": "Acme Trading Ltd", "trade_name": "Acme",
    "country_code": "GB", "currency": "GBP", "tax_id": "GB123456789",
    "address": {"line1": "1 High Street", "line2": None, "city": "London", "region": None,
                "postal_code": "EC1A 1AA", "country_code": "GB", "country": "United Kingdom"},
    "email": "billing@acme.example", "phone": "+44 20 7946 0000",
    "bank": {"bank_name": "Example Bank", "account_name": "Acme Trading Ltd", "account_number": "12345678",
             "routing_number": "12-34-56"},
    "invoice_prefix": "INV", "credit_note_prefix": "CN", "created_at": "2026-10-01T08:00:00.000Z",
}
CUSTOMER = {
    "id": _CUSTOMER_ID, "object": "customer", "name": "Northwind Traders", "email": "ap@northwind.example",
    "phone": None, "tax_id": "GB987654321", "address": ADDRESS, "deleted": False, "created": _CREATED,
}
PRODUCT = {"id": _PRODUCT_ID, "object": "product", "name": "Consulting", "description": "Senior consultant time",
           "active": True, "created": _CREATED, "updated": _CREATED}
PRICE = {
    "id": _PRICE_ID, "object": "price", "product": _PRODUCT_ID, "nickname": "Standard day rate",
    "unit_amount": 80000, "currency": "GBP", "billing_scheme": "per_unit", "type": "one_time", "recurring": None,
    "tax_rate": 20, "active": True, "created": _CREATED,
}
LINES = [
    {"id": "ii_2a4c6e8f0b1d3f5a7c9e1b3d5f7a9c0e", "object": "invoiceitem", "invoice": _INVOICE_ID,
     "price": _PRICE_ID, "product": _PRODUCT_ID, "description": "Consulting", "quantity": 3, "unit": "DAY",
     "unit_amount": 80000, "amount": 216000, "discount_percent": 10, "tax_rate": 20, "tax_amount": 43200},
    {"id": "ii_3b5d7f9a1c3e5a7c9e1b3d5f7a9c0e2f", "object": "invoiceitem", "invoice": _INVOICE_ID,
     "price": None, "product": None, "description": "Hosting (months)", "quantity": 1.5, "unit": "MON",
     "unit_amount": 1500, "amount": 2250, "discount_percent": 0, "tax_rate": 20, "tax_amount": 450},
]
INVOICE = {
    "id": _INVOICE_ID, "object": "invoice", "number": "INV-0042", "status": "open", "customer": _CUSTOMER_ID,
    "customer_details": {"name": "Northwind Traders", "email": "ap@northwind.example", "address": ADDRESS,
                         "tax_id": "GB987654321"},
    "issuer": BUSINESS, "currency": "GBP", "collection_method": "send_invoice",
    "issue_date": "2026-11-02", "due_date": "2026-12-02", "description": "November work",
    "footer": "Payment within 30 days by bank transfer.",
    "subtotal": 242250, "discount": 24000, "taxable": 218250, "tax": 43650, "total": 261900, "amount_credited": 0,
    "balance_applied": 0, "amount_paid": 0, "amount_due": 261900,
    "amount_in_words": "Two thousand six hundred and nineteen British pounds", "public_url_token": _TOKEN,
    "public_url": f"{_ORIGIN}/i/{_TOKEN}", "public_pdf_url": f"{_ORIGIN}/i/{_TOKEN}/pdf",
    "finalized_at": "2026-11-02T10:00:00.000Z", "paid_at": None, "voided_at": None, "void_reason": None,
    "schedule": None, "period": None, "reminders_paused": False, "late_fee_for": None,
    "created": _CREATED, "updated": "2026-11-02T10:00:00.000Z",
}
EVENT = {"id": "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b", "type": "invoice.finalized",
         "meta": {"actor": "api_key", "api_key_id": "9a8b7c6d-5e4f-3a2b-1c0d-e9f8a7b6c5d4",
                  "request_id": "req_4f2a9c1e7b3d5f60"},
         "created_at": "2026-11-02T10:00:00.000Z"}
_CREDIT_NOTE_ID = "cn_4d6f8a0c2e4b6d8f0a2c4e6b8d0f2a4c"
_CN_TOKEN = "Zx8Lq2Vb6Nm4Kp0Hj7Gf3Ds9Aa1Ss5Dd8Ff2Gg6Hh0J"
CREDIT_NOTE = {
    "id": _CREDIT_NOTE_ID, "object": "credit_note", "number": "CN-0007", "status": "issued", "invoice": _INVOICE_ID,
    "invoice_number": "INV-0042", "invoice_issue_date": "2026-11-02", "customer": _CUSTOMER_ID,
    "customer_details": INVOICE["customer_details"], "issuer": BUSINESS, "currency": "GBP",
    "reason": "order_change", "memo": "One consulting day less, as agreed", "issue_date": "2026-11-10",
    "subtotal": 72000, "tax": 14400, "total": 86400, "credit_amount": 86400, "refund_amount": 0, "refund": None,
    "balance_amount": 0, "balance_remaining": 0,
    "amount_in_words": "Eight hundred and sixty-four British pounds",
    "public_url": f"{_ORIGIN}/c/{_CN_TOKEN}", "public_pdf_url": f"{_ORIGIN}/c/{_CN_TOKEN}/pdf", "voided_at": None,
    "created": "2026-11-10T14:00:00.000Z", "updated": "2026-11-10T14:00:00.000Z",
    "lines": {"data": [{"id": "cnli_1a3c5e7a9c1e3a5c7e9a1c3e5a7c9e1a", "object": "credit_note_line",
                        "type": "invoice_line", "invoice_line": LINES[0]["id"], "description": "Consulting",
                        "quantity": 1, "unit": "DAY", "unit_amount": 80000, "discount_percent": 10, "amount": 72000,
                        "tax_rate": 20, "tax_category": None, "tax_exemption_reason": None, "tax_amount": 14400}]},
}
PAYMENT = {
    "id": "py_6a8c0e2a4c6e8a0c2e4a6c8e0a2c4e6a", "object": "payment", "status": "recorded", "invoice": _INVOICE_ID,
    "invoice_number": "INV-0042", "customer": _CUSTOMER_ID, "currency": "GBP", "amount": 100000,
    "amount_applied": 100000, "balance_amount": 0, "balance_remaining": 0, "paid_on": "2026-11-20",
    "paid_at": "2026-11-20T00:00:00.000Z", "method": "bank_transfer", "reference": "NW-TRF-88213", "note": None,
    "reversed_at": None, "reversal_reason": None, "created": "2026-11-21T09:30:00.000Z",
    "updated": "2026-11-21T09:30:00.000Z",
}

_SCHEDULE_ID = "sched_1a3c5e7a9c1e3a5c7e9a1c3e5a7c9e1a"
INVOICE_SCHEDULE = {
    "id": _SCHEDULE_ID, "object": "invoice_schedule", "status": "active", "customer": _CUSTOMER_ID,
    "mode": "finalize_and_send",
    "invoice": {"currency": "GBP", "days_until_due": 14, "description": "Monthly retainer",
                "items": [{"price": _PRICE_ID, "quantity": 1, "unit": "MON", "discount_percent": 0}]},
    "recurrence": {"interval": "month", "interval_count": 1, "day_of_month": 1, "start_date": "2027-01-01",
                   "end_date": None, "count": 12, "run_at": "08:00"},
    "time_zone": "Europe/London", "catch_up": "all", "max_attempts": 3,
    "summary": "on the 1st of every month, from 2027-01-01, 12 times", "next_run": "2027-03-01T08:00:00.000Z",
    "next_period": {"start": "2027-03-01", "end": "2027-03-31"}, "invoices_made": 2, "periods_done": 2,
    "periods_remaining": 10, "last_failure": None, "pause_reason": None, "paused_at": None, "cancelled_at": None,
    "created_by": {"actor": "api_key", "api_key_id": "5b7d9f1a-3c5e-4a7c-9e1a-3c5e7a9c1e3a"},
    "created": _CREATED, "updated": "2027-02-01T08:00:02.000Z",
}
REMINDER_POLICY = {
    "object": "reminder_policy", "active": True,
    "steps": [{"days": -3, "subject": "Invoice {number} is due on {due_date}", "late_fee": False,
               "body": "Hello {customer},\n\na friendly reminder that invoice {number} for {amount_due} is due on "
                       "{due_date}.\n\n{link}\n\n{business}"},
              {"days": 14, "subject": "Invoice {number} is overdue", "late_fee": True,
               "body": "Hello {customer},\n\ninvoice {number} for {amount_due} is {days_overdue} days overdue."
                       "\n\n{link}\n\n{business}"}],
    "late_fee": {"kind": "statutory", "amount": None}, "reference_rate": 2.15, "updated": _CREATED,
}
SCHEDULE_RUN = {
    "id": "schrun_7c9e1a3c5e7a9c1e3a5c7e9a1c3e5a7c", "object": "schedule_run", "schedule": _SCHEDULE_ID,
    "period_index": 1, "period": {"start": "2027-02-01", "end": "2027-02-28"},
    "scheduled_for": "2027-02-01T08:00:00.000Z", "status": "invoiced", "invoice": _INVOICE_ID,
    "email": {"status": "sent", "error": None}, "created": "2027-02-01T08:00:02.000Z",
}


def _aging(current: tuple = (0, 0), days_1_30: tuple = (0, 0), days_31_60: tuple = (0, 0)) -> dict:
    """Receivables' figures from the (amount, invoices) of the buckets that hold any."""
    buckets = [{"bucket": name, "amount": amount, "invoices": count} for name, (amount, count) in (
        ("current", current), ("days_1_30", days_1_30), ("days_31_60", days_31_60), ("days_61_90", (0, 0)),
        ("days_over_90", (0, 0)))]
    outstanding, invoices = sum(b["amount"] for b in buckets), sum(b["invoices"] for b in buckets)
    return {"outstanding": outstanding, "overdue": outstanding - current[0], "invoices": invoices,
            "overdue_invoices": invoices - current[1], "buckets": buckets}


_CONTOSO_ID = "cus_2b4d6f8a0c2e4a6c8e0a2c4e6a8c0e2a"
RECEIVABLES_PAGE = {"data": {
    "object": "receivables", "as_of": "2026-12-20",
    "currencies": [{"currency": "EUR", **_aging(current=(12000, 1))},
                   {"currency": "GBP", **_aging(current=(48000, 1), days_1_30=(161900, 1), days_31_60=(72000, 1))}],
    "customers": [
        {"customer": _CUSTOMER_ID, "name": "Northwind Traders", "currency": "GBP",
         **_aging(current=(48000, 1), days_1_30=(161900, 1))},
        {"customer": _CONTOSO_ID, "name": "Contoso GmbH", "currency": "GBP", **_aging(days_31_60=(72000, 1))},
        {"customer": _CONTOSO_ID, "name": "Contoso GmbH", "currency": "EUR", **_aging(current=(12000, 1))}],
}, "next_cursor": None}
WEBHOOK_ENDPOINT = {"id": "3c2b1a09-8f7e-6d5c-4b3a-291807f6e5d4", "url": "https://example.com/hooks/invoicing",
                    "events": ["invoice.finalized", "invoice.paid"], "active": True, "disabled_at": None,
                    "failure_count": 0, "created_at": _CREATED}
_EXPORT_ID = "exp_5e7a9c1e3a5c7e9a1c3e5a7c9e1a3c5e"
E_INVOICE_EXPORT = {
    "id": _EXPORT_ID, "object": "e_invoice_export", "format": "peppol",
    "period": {"start": "2026-10-01", "end": "2026-12-31"}, "documents": 41,
    "skipped": [{"number": "INV-0039", "detail": "Invalid request: customer.address.country: BT-55: the buyer's "
                                                 "country is required (a country name or its two-letter code)"}],
    "filename": "e-invoices-2026-10-01-2026-12-31-peppol.zip", "size": 187432,
    "created": "2027-01-04T09:15:00.000Z", "expires_at": "2027-01-05T09:15:00.000Z",
    "uri": f"e-invoice-export://{_EXPORT_ID}",
}

_ACCOUNT_ID = "acct_3f9a1c7e5b2d4f608a1c3e5b7d9f1a2c"
MEMBER = {"id": "mem_8c2e4a6f1b3d5f7a9c0e2a4c6e8f0b1d", "object": "member", "email": "sam@acme.example",
          "name": "Sam Patel", "role": "accountant", "joined_at": "2026-10-03T10:00:00.000Z"}
INVITATION = {"id": "invite_4b6d8f0a2c4e6a8c0e2b4d6f8a0c2e4b", "object": "invitation", "email": "lee@acme.example",
              "role": "sales", "status": "pending", "created_at": _CREATED, "sent_at": _CREATED,
              "expires_at": "2026-11-16T09:30:00.000Z", "accepted_at": None, "revoked_at": None}

RESOURCES: dict[str, dict] = {
    "Business": BUSINESS,
    "CallerBusiness": {**BUSINESS, "object": "business", "account": _ACCOUNT_ID, "role": "owner"},
    "Member": MEMBER,
    "Invitation": INVITATION,
    "Customer": CUSTOMER,
    "Product": PRODUCT,
    "Price": PRICE,
    "InvoiceItem": LINES[0],
    "Invoice": INVOICE,
    "InvoiceWithLines": {**INVOICE, "lines": {"data": LINES}},
    "InvoicePreview": {**INVOICE, "id": None, "object": "invoice_preview", "number": None, "status": "draft",
                       "amount_due": 0, "public_url_token": None, "public_url": None, "public_pdf_url": None,
                       "finalized_at": None, "lines": {"data": [{**line, "id": None, "invoice": None} for line in LINES]}},
    "DeletedInvoice": {"id": _INVOICE_ID, "object": "invoice", "deleted": True},
    "InvoiceEvent": EVENT,
    "InvoiceSendResult": {"data": INVOICE, "emailed_to": "ap@northwind.example"},
    "WebhookEndpoint": WEBHOOK_ENDPOINT,
    "WebhookEndpointWithSecret": {**WEBHOOK_ENDPOINT, "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
    "DeletedWebhookEndpoint": {"id": WEBHOOK_ENDPOINT["id"], "deleted": True},
    "CreditNote": CREDIT_NOTE,
    "CreditNoteLine": CREDIT_NOTE["lines"]["data"][0],
    "CreditNoteSendResult": {"data": CREDIT_NOTE, "emailed_to": "ap@northwind.example"},
    "Payment": PAYMENT,
    "ReceivablesPage": RECEIVABLES_PAGE,
    "InvoiceSchedule": INVOICE_SCHEDULE,
    "ReminderPolicy": REMINDER_POLICY,
    "InvoiceRemindResult": {"data": INVOICE, "emailed_to": "ap@northwind.example"},
    "ScheduleRun": SCHEDULE_RUN,
    "EInvoiceExport": E_INVOICE_EXPORT,
}

_ITEMS = [{"price": _PRICE_ID, "quantity": 3, "unit": "DAY", "discount_percent": 10},
          {"description": "Hosting (months)", "quantity": 1.5, "unit": "MON", "unit_amount": 1500, "tax_rate": 20}]

REQUESTS: dict[str, dict] = {
    "create_customer": {"name": "Northwind Traders", "email": "ap@northwind.example", "tax_id": "GB987654321",
                        "address": {"line1": "1 Harbour Road", "city": "Bristol", "postal_code": "BS1 5TY",
                                    "country": "GB"}},
    "update_customer": {"email": "accounts@northwind.example"},
    "create_product": {"name": "Consulting", "description": "Senior consultant time"},
    "update_product": {"description": "Senior consultant time, billed per day"},
    "create_price": {"product": _PRODUCT_ID, "unit_amount": 80000, "currency": "GBP", "tax_rate": 20,
                     "nickname": "Standard day rate"},
    "update_price": {"unit_amount": 85000},
    "create_webhook_endpoint": {"url": "https://example.com/hooks/invoicing",
                                "events": ["invoice.finalized", "invoice.paid"]},
    "create_invoice": {"customer": _CUSTOMER_ID, "currency": "GBP", "days_until_due": 30,
                       "description": "November work", "items": _ITEMS},
    "preview_invoice": {"customer": _CUSTOMER_ID, "currency": "GBP", "items": _ITEMS},
    "update_invoice": {"footer": "Payment within 30 days by bank transfer.", "due_date": "2026-12-02"},
    "add_invoice_item": {"invoice": _INVOICE_ID, "description": "Travel", "unit_amount": 12000, "tax_rate": 20},
    "pay_invoice": {"paid_on": "2026-11-20", "reference": "BACS 20-11 NORTHWIND"},
    "void_invoice": {"reason": "Raised twice; see INV-0043"},
    "send_invoice": {"to": "ap@northwind.example", "cc": ["finance@northwind.example"],
                     "message": "Thank you for your business."},
    "create_credit_note": {"invoice": _INVOICE_ID, "lines": [{"invoice_line": LINES[0]["id"], "quantity": 1}],
                           "reason": "order_change", "memo": "One consulting day less, as agreed"},
    "preview_credit_note": {"invoice": _INVOICE_ID, "lines": [{"invoice_line": LINES[0]["id"], "quantity": 1}]},
    "send_credit_note": {"to": "ap@northwind.example", "message": "As agreed on the phone."},
    "record_payment": {"invoice": _INVOICE_ID, "amount": 100000, "currency": "GBP", "paid_on": "2026-11-20",
                       "method": "bank_transfer", "reference": "NW-TRF-88213"},
    "reverse_payment": {"reason": "The transfer bounced (returned by the bank on 2026-11-24)"},
    "create_invoice_schedule": {
        "customer": _CUSTOMER_ID, "mode": "finalize_and_send", "time_zone": "Europe/London",
        "invoice": {"currency": "GBP", "days_until_due": 14, "description": "Monthly retainer",
                    "items": [{"price": _PRICE_ID, "quantity": 1, "unit": "MON"}]},
        "recurrence": {"interval": "month", "day_of_month": 1, "start_date": "2027-01-01", "count": 12}},
    "pause_invoice_schedule": {"reason": "The client is away until March"},
    "resume_invoice_schedule": {"skip_missed": True},
    "replace_reminder_policy": {k: v for k, v in REMINDER_POLICY.items() if k not in ("object", "updated")},
    "remind_invoice": {"message": "Could you let us know when this will be paid?"},
    "pause_invoice_reminders": {"paused": True},
    "update_member": {"role": "viewer"},
    "create_invitation": {"email": "lee@acme.example", "role": "sales"},
    "export_e_invoices": {"period_start": "2026-10-01", "period_end": "2026-12-31", "format": "peppol"},
}
