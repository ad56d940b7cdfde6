"""Credit notes in the dashboard: issued from an invoice's page (whole or chosen lines, previewed first,
with the form's idempotency key), refusals shown on the form, the list, a credit note's page, PDF, void
and e-mail, run as the signed-in person through the same operations as REST (tests/api covers the
rules themselves)."""

from __future__ import annotations

import re

import pytest

from core.billing import documents
from tests.api.invoicing import adhoc, customer, open_invoice, paid_part, pay, void
from tests.web.conftest import BUSINESS_FORM, Browser, outbox_messages
from tests.web.test_dashboard_invoices import KEY_FIELD, events_of

# 3 × 10.00 at 20 % and 1 × 5.00 at 0 %: 30.00 + 6.00 tax, 5.00: total 41.00.
ITEMS = [adhoc("Consulting", 1000, quantity=3, tax_rate=20), adhoc("Travel", 500)]
HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')
needs_pdf = pytest.mark.skipif(not hasattr(documents, "credit_note_pdf"), reason="the credit note PDF is not in yet")


def invoice_with_lines(tenant, **fields) -> dict:
    invoice = open_invoice(tenant, items=fields.pop("items", ITEMS), **fields)
    return tenant.get(f"/invoices/{invoice['id']}").json()["data"]


def line_ids(invoice: dict) -> list[str]:
    return [line["id"] for line in invoice["lines"]["data"]]


def form_url(invoice: dict) -> str:
    return f"/invoices/{invoice['id']}/credit-note"


def preview(person: Browser, invoice: dict, fields: dict | list):
    """Send the credit note form as shown (with its idempotency key): the preview page, or the form refused."""
    page = person.get(form_url(invoice)).text
    key = KEY_FIELD.search(page).group(1)
    items = list(fields.items()) if isinstance(fields, dict) else list(fields)
    return person.submit(form_url(invoice), [("idempotency_key", key), ("step", "preview"), *items],
                         page=form_url(invoice))


def confirm(person: Browser, invoice: dict, preview_page: str, step: str = "issue"):
    """Press a button of the preview page: send back its hidden fields (its key among them) with `step`."""
    fields = [(name, value.replace("&amp;", "&")) for name, value in HIDDEN.findall(preview_page)
              if name != "csrf_token"]
    return person.submit(form_url(invoice), [*fields, ("step", step)], page=form_url(invoice))


def issue(person: Browser, invoice: dict, fields: dict | list) -> str:
    """Preview then issue; the new credit note's id."""
    shown = preview(person, invoice, fields)
    assert shown.status_code == 200, shown.text
    response = confirm(person, invoice, shown.text)
    assert response.status_code == 303, response.text
    location = response.headers["location"]
    assert location.endswith("?notice=issued")
    return location.split("/credit-notes/")[1].split("?")[0]


def notes_of(tenant, invoice: dict) -> list[dict]:
    return tenant.get(f"/invoices/{invoice['id']}/credit-notes").json()["data"]


def invoice_now(tenant, invoice: dict) -> dict:
    return tenant.get(f"/invoices/{invoice['id']}").json()["data"]


# --- the form --------------------------------------------------------------------------------------


def test_credit_note_pages_require_sign_in(client, tenant):
    invoice = invoice_with_lines(tenant)
    for path in ("/credit-notes", form_url(invoice)):
        response = Browser(client).get(path)
        assert response.status_code == 303
        assert response.headers["location"].startswith("/login?next=")


def test_only_an_issued_invoice_offers_a_credit_note(person, tenant):
    from tests.api.invoicing import draft
    a_draft = draft(tenant)
    assert "Issue a credit note" not in person.get(f"/invoices/{a_draft['id']}").text
    assert person.get(form_url(a_draft)).headers["location"] == f"/invoices/{a_draft['id']}"
    opened = invoice_with_lines(tenant)
    assert f'href="{form_url(opened)}"' in person.get(f"/invoices/{opened['id']}").text
    voided = invoice_with_lines(tenant)
    void(tenant, voided["id"])
    assert "Issue a credit note" not in person.get(f"/invoices/{voided['id']}").text


def test_the_form_shows_what_remains_of_each_line(person, tenant):
    invoice = invoice_with_lines(tenant)
    consulting, travel = line_ids(invoice)
    tenant.post("/credit-notes", json={"invoice": invoice["id"], "lines": [
        {"invoice_line": consulting, "quantity": 1}, {"invoice_line": travel}]}, idem=True)
    page = person.get(form_url(invoice)).text
    assert "2 of 3 NOS" in page and "20.00 USD + 4.00 USD tax" in page
    assert "Credited in full" in page
    assert "24.00 USD of it can still be credited" in page
    for kind in ("quantity", "amount"):  # nothing of the travel line is left to credit
        assert re.search(rf'id="f-{kind}-{travel}"[^>]*disabled', page)


def test_issuing_the_whole_invoice_against_what_is_due(person, tenant):
    invoice = invoice_with_lines(tenant)
    shown = preview(person, invoice, {"scope": "whole", "destination": "credit", "reason": "duplicate",
                                      "memo": "Sent twice"})
    assert shown.status_code == 200, shown.text
    assert "A credit note of 41.00 USD numbered CN-0001 will be issued for invoice INV-0001" in shown.text
    assert "the invoice will be paid (by credit)" in shown.text
    assert "Duplicate invoice" in shown.text and "Sent twice" in shown.text
    assert notes_of(tenant, invoice) == []  # a preview issues nothing
    response = confirm(person, invoice, shown.text)
    assert response.status_code == 303
    (note,) = notes_of(tenant, invoice)
    assert response.headers["location"] == f"/credit-notes/{note['id']}?notice=issued"
    assert (note["number"], note["total"], note["credit_amount"]) == ("CN-0001", 4100, 4100)
    assert (note["reason"], note["memo"]) == ("duplicate", "Sent twice")
    assert invoice_now(tenant, invoice)["status"] == "paid"
    created = [event for event in events_of(invoice["id"]) if event.type == "credit_note.created"][0]
    assert created.meta["actor"] == "user"


def test_issuing_chosen_lines_by_quantity_and_amount_and_a_line_of_ones_own(person, tenant):
    invoice = invoice_with_lines(tenant)
    paid_part(tenant, invoice["id"], 1650)  # the balance gives back money paid
    consulting, travel = line_ids(invoice)
    note_id = issue(person, invoice, {"scope": "lines", f"quantity.{consulting}": "1", f"amount.{travel}": "2.50",
                                      "custom_description": "Goodwill", "custom_amount": "2",
                                      "destination": "balance"})
    note = tenant.get(f"/credit-notes/{note_id}").json()["data"]
    lines = [(line["type"], line["quantity"], line["amount"], line["tax_amount"]) for line in note["lines"]["data"]]
    assert lines == [("invoice_line", 1, 1000, 200), ("invoice_line", None, 250, 0), ("custom", None, 200, 0)]
    assert (note["total"], note["balance_amount"], note["credit_amount"]) == (1650, 1650, 0)
    assert invoice_now(tenant, invoice)["amount_due"] == 2450


def test_a_ticked_line_credits_all_that_remains_of_it(person, tenant):
    invoice = invoice_with_lines(tenant)
    consulting, _ = line_ids(invoice)
    note_id = issue(person, invoice, [("scope", "lines"), ("line", consulting), ("destination", "credit")])
    note = tenant.get(f"/credit-notes/{note_id}").json()["data"]
    assert (note["total"], note["credit_amount"]) == (3600, 3600)
    assert invoice_now(tenant, invoice)["amount_due"] == 500


def test_what_the_form_hides_is_not_sent(person, tenant):
    """Crediting the whole invoice ignores the lines' fields; only a refund takes a reference."""
    invoice = invoice_with_lines(tenant)
    assert pay(tenant, invoice["id"]).status_code == 200
    consulting, _ = line_ids(invoice)
    note_id = issue(person, invoice, {"scope": "whole", f"quantity.{consulting}": "1", "custom_amount": "9",
                                      "destination": "balance", "refund_reference": "ignored"})
    note = tenant.get(f"/credit-notes/{note_id}").json()["data"]
    assert (note["total"], note["balance_amount"], note["refund"]) == (4100, 4100, None)


def test_a_paid_invoice_is_refunded_with_its_reference(person, tenant):
    invoice = invoice_with_lines(tenant)
    pay(tenant, invoice["id"])
    form = person.get(form_url(invoice)).text
    assert 'value="credit"' not in form and 'value="refund" checked' in form
    note_id = issue(person, invoice, {"scope": "whole", "destination": "refund", "refund_reference": "BACS 99",
                                      "refunded_on": "2026-11-20"})
    note = tenant.get(f"/credit-notes/{note_id}").json()["data"]
    assert note["refund_amount"] == 4100
    assert note["refund"] == {"reference": "BACS 99", "refunded_on": "2026-11-20"}
    page = person.get(f"/credit-notes/{note_id}").text
    assert "Refunded to the customer" in page and "reference BACS 99" in page


def test_change_goes_back_to_the_form_as_it_was_filled(person, tenant):
    invoice = invoice_with_lines(tenant)
    consulting, _ = line_ids(invoice)
    shown = preview(person, invoice, {"scope": "lines", f"quantity.{consulting}": "2", "memo": "Two hours less",
                                      "destination": "credit"})
    back = confirm(person, invoice, shown.text, step="edit")
    assert back.status_code == 200
    assert f'name="quantity.{consulting}" value="2"' in back.text and "Two hours less" in back.text
    assert 'id="f-scope-lines" name="scope" value="lines" checked' in back.text
    assert notes_of(tenant, invoice) == []


def test_the_same_preview_confirmed_twice_issues_once(person, tenant):
    invoice = invoice_with_lines(tenant)
    assert pay(tenant, invoice["id"]).status_code == 200
    shown = preview(person, invoice, {"scope": "whole", "destination": "balance"})
    first, second = confirm(person, invoice, shown.text), confirm(person, invoice, shown.text)
    assert first.status_code == second.status_code == 303
    assert first.headers["location"] == second.headers["location"]
    assert len(notes_of(tenant, invoice)) == 1


# --- refusals, on the form --------------------------------------------------------------------------


def test_more_than_remains_of_a_line_is_refused_beside_it(person, tenant):
    invoice = invoice_with_lines(tenant)
    consulting, _ = line_ids(invoice)
    response = preview(person, invoice, {"scope": "lines", f"quantity.{consulting}": "5", "memo": "Kept",
                                         "destination": "credit"})
    assert response.status_code == 422
    assert f'id="f-quantity-{consulting}-error"' in response.text
    assert "Line 1: quantity</a>: is more than remains of the invoice line (3)" in response.text
    assert f'name="quantity.{consulting}" value="5"' in response.text and ">Kept</textarea>" in response.text


def test_an_amount_that_is_not_money_is_refused_beside_it(person, tenant):
    invoice = invoice_with_lines(tenant)
    _, travel = line_ids(invoice)
    response = preview(person, invoice, {"scope": "lines", f"amount.{travel}": "1.234", "destination": "credit"})
    assert response.status_code == 422
    assert f'id="f-amount-{travel}-error"' in response.text and "at most 2 decimals" in response.text


def test_a_line_of_ones_own_needs_a_description(person, tenant):
    invoice = invoice_with_lines(tenant)
    response = preview(person, invoice, {"scope": "lines", "custom_amount": "5", "destination": "credit"})
    assert response.status_code == 422
    assert "Line of your own: description</a>: is required for a line of its own" in response.text


def test_choosing_no_line_is_explained(person, tenant):
    invoice = invoice_with_lines(tenant)
    response = preview(person, invoice, {"scope": "lines", "destination": "credit"})
    assert response.status_code == 422
    assert "choose a line to credit" in response.text


def test_more_than_is_due_is_refused_at_where_the_money_goes(person, tenant):
    buyer = customer(tenant)
    earlier = invoice_with_lines(tenant, customer_id=buyer["id"])
    paid_part(tenant, earlier["id"], 500)
    tenant.post("/credit-notes", json={"invoice": earlier["id"], "lines": [{"invoice_line": line_ids(earlier)[1]}],
                                       "balance_amount": 500}, idem=True)
    invoice = invoice_with_lines(tenant, customer_id=buyer["id"])  # 5.00 of it paid in advance by that balance
    assert invoice["amount_due"] == 3600
    page = person.get(f"/invoices/{invoice['id']}").text
    assert "Paid in advance" in page and "(customer balance)" in page
    response = preview(person, invoice, {"scope": "whole", "destination": "credit"})
    assert response.status_code == 422
    assert "Where the money goes</a>: is more than invoice INV-0002 still has due (36.00 USD)" in response.text


def test_a_paid_invoice_takes_no_credit_against_it(person, tenant):
    invoice = invoice_with_lines(tenant)
    pay(tenant, invoice["id"])
    response = preview(person, invoice, {"scope": "whole", "destination": "credit"})
    assert response.status_code == 422
    assert "a paid invoice has nothing due" in response.text


def test_an_invoice_voided_meanwhile_is_refused_with_409(person, tenant):
    invoice = invoice_with_lines(tenant)
    shown = preview(person, invoice, {"scope": "whole", "destination": "credit"})
    void(tenant, invoice["id"])
    response = confirm(person, invoice, shown.text)
    assert response.status_code == 409
    assert "only an open, overdue or paid invoice can be credited" in response.text
    assert notes_of(tenant, invoice) == []


# --- the invoice, the list and a credit note's page --------------------------------------------------


def test_the_invoice_page_shows_its_credit_notes_and_what_they_took(person, tenant):
    invoice = invoice_with_lines(tenant)
    first = issue(person, invoice, {"scope": "lines", f"quantity.{line_ids(invoice)[0]}": "1",
                                    "destination": "credit"})
    page = person.get(f"/invoices/{invoice['id']}").text
    assert f'<a href="/credit-notes/{first}">CN-0001</a>' in page
    assert "Credited against the invoice 12.00 USD" in page
    assert "Credited (credit notes)" in page and "29.00 USD" in page  # the totals, and what is due
    assert "credit note issued" in page  # the history


def test_the_list_shows_credit_notes_newest_first(person, tenant):
    first_invoice, second_invoice = invoice_with_lines(tenant), invoice_with_lines(tenant)
    tenant.post("/credit-notes", json={"invoice": first_invoice["id"]}, idem=True)
    tenant.post("/credit-notes", json={"invoice": second_invoice["id"]}, idem=True)
    page = person.get("/credit-notes").text
    assert page.index("CN-0002") < page.index("CN-0001")
    assert f'href="/invoices/{first_invoice["id"]}">INV-0001' in page
    assert '<a href="/credit-notes" aria-current="page">Credit notes</a>' in page


def test_the_list_filters_by_customer_and_pages_with_a_cursor(person, tenant):
    other = customer(tenant, name="Zed Zoo")
    mine = invoice_with_lines(tenant, customer_id=other["id"], items=[adhoc("Hours", 10000)])
    for _ in range(26):
        tenant.post("/credit-notes", json={"invoice": mine["id"], "lines": [{"invoice_line": line_ids(mine)[0],
                                                                             "amount": 1}]}, idem=True)
    tenant.post("/credit-notes", json={"invoice": invoice_with_lines(tenant)["id"]}, idem=True)  # CN-0027
    assert "CN-0027" not in person.get(f"/credit-notes?customer={other['id']}").text
    first = person.get("/credit-notes").text
    next_link = re.search(r'href="(/credit-notes\?cursor=[^"]+)"', first).group(1).replace("&amp;", "&")
    second = person.get(next_link).text
    assert second.count('data-label="Number"') == 2 and "First page" in second
    assert person.get("/credit-notes?customer=cus_nope").status_code == 200


def test_a_credit_note_page_shows_its_invoice_lines_and_money(person, tenant):
    invoice = invoice_with_lines(tenant)
    consulting, _ = line_ids(invoice)
    note_id = issue(person, invoice, {"scope": "lines", f"quantity.{consulting}": "1", "reason": "order_change",
                                      "memo": "One hour less", "destination": "credit"})
    page = person.get(f"/credit-notes/{note_id}?notice=issued").text
    assert "The credit note is issued." in page
    assert "Credit note CN-0001" in page and "Order change" in page and "One hour less" in page
    assert f'<a href="/invoices/{invoice["id"]}">INV-0001</a>' in page
    assert "Credited against invoice" in page and "12.00 USD" in page
    assert f'src="/credit-notes/{note_id}/pdf"' in page
    assert f'href="/credit-notes/{note_id}/void"' in page and f'href="/credit-notes/{note_id}/send"' in page


@needs_pdf
def test_the_credit_note_pdf_is_shown_inline_and_downloadable(person, tenant):
    invoice = invoice_with_lines(tenant)
    note_id = tenant.post("/credit-notes", json={"invoice": invoice["id"]}, idem=True).json()["data"]["id"]
    inline = person.get(f"/credit-notes/{note_id}/pdf")
    assert inline.headers["content-type"] == "application/pdf" and inline.content.startswith(b"%PDF")
    assert inline.headers["content-disposition"].startswith("inline;")
    assert "frame-ancestors 'self'" in inline.headers["content-security-policy"]
    assert person.get(f"/credit-notes/{note_id}/pdf?download=1").headers["content-disposition"].startswith(
        "attachment;")


def test_voiding_is_confirmed_and_undoes_the_credit(person, tenant):
    invoice = invoice_with_lines(tenant)
    note_id = issue(person, invoice, {"scope": "whole", "destination": "credit"})
    assert invoice_now(tenant, invoice)["status"] == "paid"
    page = person.get(f"/credit-notes/{note_id}/void").text
    assert "will be due again" in page and "This cannot be undone" in page
    key = KEY_FIELD.search(page).group(1)
    response = person.submit(f"/credit-notes/{note_id}/void", {"idempotency_key": key},
                             page=f"/credit-notes/{note_id}/void")
    assert response.headers["location"] == f"/credit-notes/{note_id}?notice=voided"
    assert tenant.get(f"/credit-notes/{note_id}").json()["data"]["status"] == "void"
    assert invoice_now(tenant, invoice)["status"] == "open"
    shown = person.get(f"/credit-notes/{note_id}").text
    assert f'href="/credit-notes/{note_id}/void"' not in shown and "This credit note is void" in shown
    assert person.get(f"/credit-notes/{note_id}/void").headers["location"] == f"/credit-notes/{note_id}"
    again = person.submit(f"/credit-notes/{note_id}/void", {}, page=f"/credit-notes/{note_id}")
    assert again.status_code == 409 and "is void already" in again.text


@needs_pdf
def test_sending_a_credit_note_by_e_mail(person, tenant, outbox):
    invoice = invoice_with_lines(tenant)
    note_id = tenant.post("/credit-notes", json={"invoice": invoice["id"]}, idem=True).json()["data"]["id"]
    page = person.get(f"/credit-notes/{note_id}/send").text
    key = KEY_FIELD.search(page).group(1)
    response = person.submit(f"/credit-notes/{note_id}/send", {"idempotency_key": key, "to": "ap@buyer.test",
                                                               "cc": "", "message": "As agreed"},
                             page=f"/credit-notes/{note_id}/send")
    assert response.headers["location"] == f"/credit-notes/{note_id}?notice=sent", response.text
    (message,) = outbox_messages(outbox, "ap@buyer.test")
    assert "CN-0001" in message["Subject"]


def test_a_refused_send_is_shown_on_its_form(person, tenant):
    invoice = invoice_with_lines(tenant)
    note_id = tenant.post("/credit-notes", json={"invoice": invoice["id"]}, idem=True).json()["data"]["id"]
    response = person.submit(f"/credit-notes/{note_id}/send", {"to": "not an address"},
                             page=f"/credit-notes/{note_id}/send")
    assert response.status_code == 422
    assert 'id="f-to-error"' in response.text and 'value="not an address"' in response.text


# --- the business profile ------------------------------------------------------------------------------


def test_the_credit_note_prefix_is_set_and_kept_in_the_business_profile(onboarded):
    from tests.web.test_onboarding_pages import profile_of
    assert profile_of(onboarded.email).credit_note_prefix == "CN"
    page = onboarded.get("/settings/business").text
    assert 'name="credit_note_prefix" type="text" value="CN"' in page
    onboarded.submit("/settings/business", {**BUSINESS_FORM, "credit_note_prefix": "ACR"})
    assert profile_of(onboarded.email).credit_note_prefix == "ACR"
    onboarded.submit("/settings/business", {**BUSINESS_FORM, "credit_note_prefix": "ACR", "phone": ""})
    assert profile_of(onboarded.email).credit_note_prefix == "ACR"  # saving the form again keeps it
    refused = onboarded.submit("/settings/business", {**BUSINESS_FORM, "credit_note_prefix": "CR 1"})
    assert refused.status_code == 422 and "Credit note number prefix" in refused.text
