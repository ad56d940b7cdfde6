"""Payments: record, list, retrieve and reverse them."""

from core.base.validation import PageQuery
from core.billing import payments
from core.billing.payment_inputs import PaymentCreate, PaymentListQuery, PaymentReverse
from core.billing.payment_render import PaymentOut, payment_to_api
from operations.pipeline import Call, Operation
from operations.rendering import page

READ, WRITE = "invoices:read", "payments:write"


def _list(call: Call, query: PaymentListQuery | None = None) -> dict:
    return page(payments.list_payments(call.session, call.principal.account_id, query or call.query), payment_to_api)


def _list_of_invoice(call: Call) -> dict:
    return _list(call, PaymentListQuery(invoice=call.params["id"], cursor=call.query.cursor, limit=call.query.limit))


list_payments = Operation("list_payments", _list, scope=READ, query=PaymentListQuery, response=PaymentOut,
                          shape="list")
list_invoice_payments = Operation("list_invoice_payments", _list_of_invoice, scope=READ, query=PageQuery,
                                  response=PaymentOut, shape="list")
get_payment = Operation(
    "get_payment",
    lambda call: payment_to_api(payments.get_payment(call.session, call.principal.account_id, call.params["id"])),
    scope=READ, response=PaymentOut)
record_payment = Operation(
    "record_payment",
    lambda call: payment_to_api(payments.record_payment(call.session, call.principal, call.body,
                                                        confirmed=call.confirmed)),
    scope=WRITE, body=PaymentCreate, body_required=True, idempotency="required", response=PaymentOut)
reverse_payment = Operation(
    "reverse_payment",
    lambda call: payment_to_api(payments.reverse_payment(call.session, call.principal, call.params["id"], call.body,
                                                         confirmed=call.confirmed)),
    scope=WRITE, body=PaymentReverse, body_required=True, idempotency="required", response=PaymentOut)
