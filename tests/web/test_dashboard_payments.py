"""Payments in the dashboard: the form on an open invoice's page records part or all of what is due
(or more, with the excess on the customer's balance) with the page's idempotency key; the invoice page
lists its payments and reads part paid; a payment is reversed with a reason, confirmed first; "Mark paid"
records one payment of what is due; the EUR payment QR code. Run as the signed-in person through the same
operations as REST (tests/api covers the rules themselves)."""

from __future__ import annotations

import re

import pytest

from core.base.clock import today
from tests.api.invoicing import adhoc, customer, draft, open_invoice, paid_part, pay
from tests.conftest import BUSINESS, make_tenant
from tests.web.conftest import OWNER_PASSWORD, Browser
from tests.web.test_dashboard_invoices import KEY_FIELD, events_of, submit_form

# 3 × 10.00 at 20 % and 1 × 5.00 at 0 %: 30.00 + 6.00 tax, 5.00: total 41.00 USD.
ITEMS = [adhoc("Consulting", 1000, quantity=3, tax_rate=20), adhoc("Travel", 500)]


def invoice_of(tenant, **fields) -> dict:
    return open_invoice(tenant, items=fields.pop("items", ITEMS), **fields)


def now(tenant, invoice: dict) -> dict:
    return tenant.get(f"/invoices/{invoice['id']}").json()["data"]


def payments_of(tenant, invoice: dict) -> list[dict]:
    return tenant.get(f"/invoices/{invoice['id']}/payments").json()["data"][::-1]  # oldest first


def record(person: Browser, invoice: dict, fields: dict):
    """Send the invoice page's payment form as shown (its key), with `fields` over what it was filled with."""
    page = f"/invoices/{invoice['id']}"
    key = KEY_FIELD.search(person.get(page).text).group(1)
    return person.submit(f"/invoices/{invoice['id']}/payments",
                         {"amount": "", "paid_on": "", "method": "bank_transfer", "reference": "", "note": "",
                          **fields, "idempotency_key": key}, page=page)


def reverse_url(invoice: dict, payment: dict) -> str:
    return f"/invoices/{invoice['id']}/payments/reverse?payment={payment['id']}"


def reverse(person: Browser, invoice: dict, payment: dict, reason: str):
    page = reverse_url(invoice, payment)
    key = KEY_FIELD.search(person.get(page).text).group(1)
    return person.submit(f"/invoices/{invoice['id']}/payments/reverse",
                         {"payment": payment["id"], "reason": reason, "idempotency_key": key}, page=page)


def badge(page: str) -> str:
    return re.search(r'<h1>[^<]*<span class="status [^"]+">([^<]+)</span>', page).group(1)


# --- recording -----------------------------------------------------------------------------------


def test_the_form_is_filled_with_what_is_due_received_today(person, tenant):
    invoice = invoice_of(tenant)
    page = person.get(f"/invoices/{invoice['id']}").text
    assert 'action="/invoices/' + invoice["id"] + '/payments"' in page
    assert 'id="f-amount" name="amount" type="text" value="41.00"' in page
    assert f'id="f-paid_on" name="paid_on" type="date" value="{today().isoformat()}"' in page
    assert '<option value="bank_transfer" selected>Bank transfer</option>' in page
    assert 'name="overpayment" value="balance" aria-describedby' in page  # not ticked
    assert "None recorded" in page and badge(page) == "Open"


def test_recording_part_of_what_is_due(person, tenant):
    invoice = invoice_of(tenant)
    response = record(person, invoice, {"amount": "10.50", "paid_on": "2026-11-20", "method": "cash",
                                        "reference": "Receipt 7", "note": "Paid at the counter"})
    assert response.status_code == 303, response.text
    assert response.headers["location"] == f"/invoices/{invoice['id']}?notice=payment_recorded"
    (payment,) = payments_of(tenant, invoice)
    assert (payment["amount"], payment["method"], payment["reference"], payment["note"], payment["paid_on"]) == (
        1050, "cash", "Receipt 7", "Paid at the counter", "2026-11-20")
    assert (now(tenant, invoice)["status"], now(tenant, invoice)["amount_due"]) == ("open", 3050)
    recorded = [event for event in events_of(invoice["id"]) if event.type == "payment.recorded"][0]
    assert recorded.meta["actor"] == "user"

    page = person.get(response.headers["location"]).text
    assert "The payment is recorded." in page
    assert badge(page) == "Part paid"
    totals = page.split('<table class="totals">')[1].split("</table>")[0]
    assert re.search(r"<th scope=\"row\">Paid</th><td class=\"num\">-10.50 USD</td>", totals)
    assert "30.50 USD" in totals
    rows = page.split('<table class="cards-on-phone payments">')[1].split("</table>")[0]
    for shown in ("2026-11-20", "Cash", "Receipt 7", "Note: Paid at the counter", "Recorded", "10.50 USD"):
        assert shown in rows
    assert 'id="f-amount" name="amount" type="text" value="30.50"' in page  # the form offers what is left
    assert "payment recorded" in page  # the history


def test_the_same_form_sent_twice_records_once(person, tenant):
    invoice = invoice_of(tenant)
    page = f"/invoices/{invoice['id']}"
    key = KEY_FIELD.search(person.get(page).text).group(1)
    answers = [person.submit(f"{page}/payments", {"amount": "5", "idempotency_key": key}, page=page)
               for _ in range(2)]
    assert [answer.status_code for answer in answers] == [303, 303]
    assert len(payments_of(tenant, invoice)) == 1


def test_paying_the_rest_makes_the_invoice_paid(person, tenant):
    invoice = invoice_of(tenant)
    paid_part(tenant, invoice["id"], 1000)
    response = record(person, invoice, {"amount": "31.00"})
    assert response.headers["location"].endswith("?notice=payment_settled")
    page = person.get(response.headers["location"]).text
    assert "the invoice is paid" in page and badge(page) == "Paid"
    assert 'id="record-payment"' not in page  # a paid invoice takes no payment
    assert [p["amount"] for p in payments_of(tenant, invoice)] == [1000, 3100]


def test_more_than_is_due_is_refused_at_the_amount_field(person, tenant):
    invoice = invoice_of(tenant)
    response = record(person, invoice, {"amount": "50.00", "reference": "Kept"})
    assert response.status_code == 422
    assert 'id="f-amount-error"' in response.text and 'aria-invalid="true"' in response.text
    error = re.search(r'<p class="error" id="f-amount-error">([^<]+)</p>', response.text).group(1)
    assert "50.00 USD is more than invoice INV-0001 has due (41.00 USD)" in error
    assert "tick “Put any excess on the customer&#39;s balance”" in error  # not the API's wording
    assert '<a href="#f-amount">Amount received</a>' in response.text  # the summary links to the field
    assert 'value="50.00"' in response.text and 'value="Kept"' in response.text
    assert payments_of(tenant, invoice) == []


@pytest.mark.parametrize("amount, message", [("1.234", "at most 2 decimals"), ("ten", "must be an amount in USD"),
                                             ("0", "greater than 0")])
def test_an_amount_that_is_not_money_is_refused_beside_it(person, tenant, amount, message):
    invoice = invoice_of(tenant)
    response = record(person, invoice, {"amount": amount})
    assert response.status_code == 422
    error = re.search(r'<p class="error" id="f-amount-error">([^<]+)</p>', response.text)
    assert error and message in error.group(1), response.text[:3000]


def test_an_overpayment_goes_to_the_balance_with_the_box_ticked(person, tenant):
    buyer = customer(tenant)
    invoice = invoice_of(tenant, customer_id=buyer["id"])
    response = record(person, invoice, {"amount": "50.00", "overpayment": "balance"})
    assert response.headers["location"].endswith("?notice=payment_to_balance")
    (payment,) = payments_of(tenant, invoice)
    assert (payment["amount"], payment["amount_applied"], payment["balance_amount"]) == (5000, 4100, 900)
    page = person.get(response.headers["location"]).text
    assert "on the customer&#39;s balance for their next invoice" in page and badge(page) == "Paid"
    assert "9.00 USD of it to the customer's balance" in page
    following = invoice_of(tenant, customer_id=buyer["id"])
    assert following["balance_applied"] == 900  # the excess pays part of their next invoice


def test_a_form_sent_to_an_invoice_paid_meanwhile_is_refused_with_409(person, tenant):
    invoice = invoice_of(tenant)
    page = f"/invoices/{invoice['id']}"
    key = KEY_FIELD.search(person.get(page).text).group(1)
    assert pay(tenant, invoice["id"]).status_code == 200
    response = person.submit(f"{page}/payments", {"amount": "41.00", "idempotency_key": key}, page=page)
    assert response.status_code == 409
    assert "only an open or overdue invoice can be paid" in response.text and 'role="alert"' in response.text
    assert len(payments_of(tenant, invoice)) == 1


def test_mark_paid_still_records_one_payment_of_what_is_due(person, tenant):
    invoice = invoice_of(tenant)
    paid_part(tenant, invoice["id"], 1000)
    assert "(31.00 USD due)" in person.get(f"/invoices/{invoice['id']}/pay").text
    response = submit_form(person, f"/invoices/{invoice['id']}/pay", f"/invoices/{invoice['id']}/pay",
                           {"paid_on": "2026-11-21", "reference": "BACS 1"})
    assert response.headers["location"] == f"/invoices/{invoice['id']}?notice=paid"
    assert [(p["amount"], p["method"], p["reference"]) for p in payments_of(tenant, invoice)] == [
        (1000, "other", None), (3100, "other", "BACS 1")]
    assert now(tenant, invoice)["status"] == "paid"


def test_drafts_and_void_invoices_have_no_payment_form(person, tenant):
    page = person.get(f"/invoices/{draft(tenant)['id']}").text
    assert 'id="record-payment"' not in page and 'id="payments-h"' not in page
    voided = invoice_of(tenant)
    tenant.post(f"/invoices/{voided['id']}/void", idem=True)
    page = person.get(f"/invoices/{voided['id']}").text
    assert 'id="record-payment"' not in page and "None recorded." in page


# --- reversing ------------------------------------------------------------------------------------


def test_reversing_with_a_reason_reopens_a_paid_invoice(person, tenant):
    invoice = invoice_of(tenant)
    submit_form(person, f"/invoices/{invoice['id']}/pay", f"/invoices/{invoice['id']}/pay", {"reference": "BACS 9"})
    (payment,) = payments_of(tenant, invoice)
    page = person.get(f"/invoices/{invoice['id']}").text
    assert badge(page) == "Paid" and f'href="{reverse_url(invoice, payment)}"'.replace("&", "&amp;") in page

    confirm = person.get(reverse_url(invoice, payment))
    assert confirm.status_code == 200
    assert "Reverse the payment of 41.00 USD?" in confirm.text
    assert "reference BACS 9" in confirm.text and "it reopens" in confirm.text and "cannot be undone" in confirm.text

    for blank in ("", "   "):
        no_reason = reverse(person, invoice, payment, blank)
        assert no_reason.status_code == 422 and 'id="f-reason-error"' in no_reason.text
        assert "say why the payment is reversed" in no_reason.text
    assert now(tenant, invoice)["status"] == "paid"

    response = reverse(person, invoice, payment, "The transfer bounced")
    assert response.headers["location"] == f"/invoices/{invoice['id']}?notice=payment_reversed"
    (reversed_payment,) = payments_of(tenant, invoice)
    assert (reversed_payment["status"], reversed_payment["reversal_reason"]) == ("reversed", "The transfer bounced")
    reopened = now(tenant, invoice)
    assert (reopened["status"], reopened["amount_due"], reopened["amount_paid"]) == ("open", 4100, 0)
    reversal = [event for event in events_of(invoice["id"]) if event.type == "payment.reversed"][0]
    assert reversal.meta["actor"] == "user" and reversal.meta["reason"] == "The transfer bounced"

    page = person.get(response.headers["location"]).text
    assert "The payment is reversed" in page and badge(page) == "Open"
    row = page.split('<tr class="reversed">')[1].split("</tr>")[0]
    assert "Reversed" in row and "The transfer bounced" in row and "Reverse…" not in row
    assert "payment reversed" in page and "because “The transfer bounced”" in page and "reopened" in page
    assert 'id="record-payment"' in page  # it can be paid again


def test_reversing_part_of_a_part_paid_invoice(person, tenant):
    invoice = invoice_of(tenant)
    first, _ = paid_part(tenant, invoice["id"], 1000), paid_part(tenant, invoice["id"], 500)
    assert "will have 10.00 USD due again (36.00 USD in all)." in person.get(reverse_url(invoice, first)).text
    assert reverse(person, invoice, first, "Entered twice").status_code == 303
    assert (now(tenant, invoice)["amount_paid"], now(tenant, invoice)["status"]) == (500, "open")


def test_a_reversed_payment_is_not_reversed_again(person, tenant):
    invoice = invoice_of(tenant)
    payment = paid_part(tenant, invoice["id"], 1000)
    page = reverse_url(invoice, payment)
    key = KEY_FIELD.search(person.get(page).text).group(1)
    tenant.post(f"/payments/{payment['id']}/reverse", json={"reason": "By the API"}, idem=True)
    assert person.get(page).headers["location"] == f"/invoices/{invoice['id']}"
    response = person.submit(f"/invoices/{invoice['id']}/payments/reverse",
                             {"payment": payment["id"], "reason": "Again", "idempotency_key": key}, page=page)
    assert response.status_code == 409 and "is reversed already" in response.text


# --- who may -----------------------------------------------------------------------------------------


def test_the_forms_without_a_csrf_token_are_refused(person, tenant):
    invoice = invoice_of(tenant)
    payment = paid_part(tenant, invoice["id"], 1000)
    for path, data in ((f"/invoices/{invoice['id']}/payments", {"amount": "5"}),
                       (f"/invoices/{invoice['id']}/payments/reverse", {"payment": payment["id"], "reason": "x"})):
        response = person.client.post(path, data=data, follow_redirects=False)
        assert response.status_code == 403 and "This form has expired" in response.text
    assert [p["status"] for p in payments_of(tenant, invoice)] == ["recorded"]


def test_another_accounts_invoice_and_payment_are_404(person, tenant, client):
    stranger = make_tenant(client)
    theirs = invoice_of(stranger)
    their_payment = paid_part(stranger, theirs["id"], 1000)
    response = person.submit(f"/invoices/{theirs['id']}/payments", {"amount": "5"}, page="/invoices")
    assert response.status_code == 404 and "belongs to another account" in response.text
    assert person.get(reverse_url(theirs, their_payment)).status_code == 404
    mine = invoice_of(tenant)  # their payment through my invoice's address
    assert person.get(reverse_url(mine, their_payment)).status_code == 404
    response = person.submit(f"/invoices/{mine['id']}/payments/reverse",
                             {"payment": their_payment["id"], "reason": "Mine now"}, page="/invoices")
    assert response.status_code == 404
    assert [p["status"] for p in payments_of(stranger, theirs)] == ["recorded"]
    assert person.get(f"/invoices/{mine['id']}/payments/reverse?payment=py_nope").status_code == 404


# --- the payment QR code ------------------------------------------------------------------------------

EUR_SELLER = BUSINESS | {
    "legal_name": "Muster Handel GmbH", "country_code": "DE", "currency": "EUR",
    "bank": {"bank_name": "Musterbank", "account_name": "Muster Handel GmbH",
             "account_number": "DE89 3704 0044 0532 0130 00", "routing_number": "COBADEFFXXX"},
}


def test_an_open_eur_invoice_shows_its_payment_qr_code(client):
    seller = make_tenant(client, business=EUR_SELLER)
    owner = Browser(client)
    owner.sign_in(seller.user_email, OWNER_PASSWORD)
    assert "<svg" not in owner.get(f"/invoices/{invoice_of(seller, currency='USD')['id']}").text  # USD: no code
    invoice = invoice_of(seller, currency="EUR")
    page = owner.get(f"/invoices/{invoice['id']}").text
    figure = page.split('<figure class="payment-qr">')[1].split("</figure>")[0]
    assert '<svg role="img"' in figure and "<title>Scan to pay with your banking app</title>" in figure
    assert "Scan to pay with your banking app: a transfer of 41.00 EUR for invoice INV-0002" in figure
    paid_part(seller, invoice["id"], 4000)
    assert "1.00 EUR" in owner.get(f"/invoices/{invoice['id']}").text.split('<figure class="payment-qr">')[1]
    paid_part(seller, invoice["id"], 100)
    assert 'class="payment-qr"' not in owner.get(f"/invoices/{invoice['id']}").text  # paid: nothing to transfer
