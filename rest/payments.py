"""Payments: record what an invoice was paid, in part or in full; list, retrieve and reverse them."""

from operations import payments as operations
from rest.framework import Api

api = Api(tag="Payments")
api.endpoint("GET", "/payments", operations.list_payments, summary="List payments",
             description="Newest first, paginated, reversed ones included. Filters: `invoice` and `customer` (404 "
                         "when not the account's).")
api.endpoint("POST", "/payments", operations.record_payment, status=201, extra_responses=(409, 422),
             summary="Record a payment",
             description="Money received for an open (or overdue) invoice outside the service: no money moves. "
                         "`amount` (minor units of the invoice's currency) is taken off `amount_due` and added to "
                         "the invoice's `amount_paid`; the payment that brings `amount_due` to 0 makes the invoice "
                         "`paid` (its `paid_at` the latest payment's date). More than is due is 422 at `amount` "
                         "unless `overpayment` is `balance`: the excess goes on the customer's credit balance in "
                         "that currency, applied to their next invoice when it is finalized. A draft, paid or void "
                         "invoice is 409 `invalid_state`. Requires `payments:write` and an `Idempotency-Key`. "
                         "Records `payment.recorded` (and `invoice.paid`) in the invoice's history.")
api.endpoint("GET", "/payments/{id}", operations.get_payment, summary="Retrieve a payment",
             description="With what it took off the invoice, any excess put on the customer's balance, and, once "
                         "reversed, when and why.")
api.endpoint("POST", "/payments/{id}/reverse", operations.reverse_payment, extra_responses=(409, 422),
             summary="Reverse a payment",
             description="Undoes a recorded payment (a bounced transfer, a charge-back, a mistake), with a "
                         "`reason`: what it paid is due again, and a paid invoice reopens (`invoice.reopened`). "
                         "The payment stays, `reversed`. 409 `invalid_state` when reversed already, once its excess "
                         "was applied to another invoice, or when the invoice's credit notes refunded (or put on "
                         "the balance) more than would remain paid: void those first. Requires `payments:write` "
                         "and an `Idempotency-Key`. Records `payment.reversed`.")
api.endpoint("GET", "/invoices/{id}/payments", operations.list_invoice_payments,
             summary="List an invoice's payments", tag="Invoices",
             description="Newest first, paginated, reversed ones included.")
