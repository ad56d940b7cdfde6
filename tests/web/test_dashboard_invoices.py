"""The dashboard's invoices: list, drafts, lines, lifecycle actions and history, run as the
signed-in person through the same operations as REST (tests/api covers the rules themselves)."""

from __future__ import annotations

import re
import uuid

import pytest
from sqlmodel import select

from core.access.principal import Principal
from core.access.scopes import ALL_SCOPES
from core.base import db, executor
from core.billing import invoices as core_invoices
from core.billing.invoice_inputs import InvoiceCreate
from core.models import InvoiceEvent
from tests.api.invoicing import adhoc, customer, draft, price
from tests.api.invoicing import open_invoice as finalized
from tests.web.conftest import Browser

KEY_FIELD = re.compile(r'name="idempotency_key" value="([^"]+)"')


def events_of(invoice_id: str) -> list[InvoiceEvent]:
    from core.base.ids import parse
    with db.transaction() as session:
        return list(session.exec(select(InvoiceEvent).where(InvoiceEvent.invoice_id == parse("invoice", invoice_id))
                                 .order_by(InvoiceEvent.created_at)))


def submit_form(person: Browser, page: str, action: str, data: dict) -> object:
    """POST `data` to `action` with the CSRF token and idempotency key of the form on `page`."""
    html = person.get(page).text
    keys = KEY_FIELD.findall(html)
    return person.submit(action, {**data, **({"idempotency_key": keys[0]} if keys else {})}, page=page)


def new_draft(person: Browser, customer_id: str, **fields):
    return submit_form(person, "/invoices/new", "/invoices/new", {"customer": customer_id, **fields})


def draft_id_from(response) -> str:
    assert response.status_code == 303, response.text
    return response.headers["location"].split("/invoices/")[1].split("?")[0]


@pytest.mark.parametrize("path", ["/invoices", "/invoices/new", "/customers", "/products", "/settings/business"])
def test_dashboard_pages_require_sign_in(client, path):
    response = Browser(client).get(path)
    assert response.status_code == 303
    assert response.headers["location"].startswith("/login?next=")


def test_a_new_draft_is_created_by_the_person(person, tenant):
    buyer = customer(tenant)
    invoice_id = draft_id_from(new_draft(person, buyer["id"], description="Spring work"))
    page = person.get(f"/invoices/{invoice_id}").text
    assert "Draft invoice" in page and "Jane Doe" in page and "Spring work" in page
    created = events_of(invoice_id)[0]
    assert created.type == "invoice.created"
    assert created.meta == {"actor": "user", "user_id": created.meta["user_id"]}


def test_a_draft_for_an_archived_customer_is_refused_at_customer(person, tenant):
    buyer = customer(tenant)
    customer(tenant, name="Still active")  # so that the form is shown
    tenant.delete(f"/customers/{buyer['id']}")
    response = new_draft(person, buyer["id"])
    assert response.status_code == 422
    assert "is archived" in response.text


def test_adding_an_ad_hoc_line_in_major_units(person, tenant):
    invoice_id = draft_id_from(new_draft(person, customer(tenant)["id"]))
    response = submit_form(person, f"/invoices/{invoice_id}", f"/invoices/{invoice_id}/lines",
                           {"description": "Design", "quantity": "2", "unit": "HRS", "unit_amount": "1,250.50",
                            "tax_rate": "20"})
    assert response.status_code == 303
    lines = tenant.get(f"/invoices/{invoice_id}").json()["data"]["lines"]["data"]
    assert [(line["unit_amount"], line["amount"], line["tax_amount"]) for line in lines] == [(125050, 250100, 50020)]
    assert "3,001.20 USD" in person.get(f"/invoices/{invoice_id}").text  # the total, from the core arithmetic


def test_adding_a_priced_line(person, tenant):
    widget = price(tenant, unit_amount=4200, tax_rate=10)
    invoice_id = draft_id_from(new_draft(person, customer(tenant)["id"]))
    assert "Widget · 42.00 USD" in person.get(f"/invoices/{invoice_id}").text
    submit_form(person, f"/invoices/{invoice_id}", f"/invoices/{invoice_id}/lines", {"price": widget["id"],
                                                                                      "quantity": "3"})
    line = tenant.get(f"/invoices/{invoice_id}").json()["data"]["lines"]["data"][0]
    assert (line["description"], line["amount"], line["tax_rate"]) == ("Widget", 12600, 10)


@pytest.mark.parametrize(("amount", "message"), [("12.345", "at most 2 decimals"), ("ten", "at most 2 decimals"),
                                                 ("", "is required for a line without a price")])
def test_a_bad_line_is_refused_next_to_its_field(person, tenant, amount, message):
    invoice_id = draft_id_from(new_draft(person, customer(tenant)["id"]))
    response = submit_form(person, f"/invoices/{invoice_id}", f"/invoices/{invoice_id}/lines",
                           {"description": "Design", "quantity": "1", "unit": "NOS", "unit_amount": amount})
    assert response.status_code == 422
    assert message in response.text
    assert 'id="add-unit_amount" name="unit_amount"' in response.text and 'aria-invalid="true"' in response.text
    assert tenant.get(f"/invoices/{invoice_id}").json()["data"]["lines"]["data"] == []


def test_editing_a_line_keeps_the_others(person, tenant):
    invoice = draft(tenant, items=[adhoc("First", 1000), adhoc("Second", 2000)])
    second = invoice["lines"]["data"][1]["id"]
    response = person.submit(f"/invoices/{invoice['id']}/lines/{second}",
                             {"description": "Second, revised", "quantity": "3", "unit": "DAY",
                              "unit_amount": "20.00", "discount_percent": "10", "tax_rate": "0"},
                             page=f"/invoices/{invoice['id']}")
    assert response.status_code == 303
    lines = tenant.get(f"/invoices/{invoice['id']}").json()["data"]["lines"]["data"]
    assert [(line["description"], line["amount"]) for line in lines] == [("First", 1000), ("Second, revised", 5400)]


def test_a_refused_line_edit_names_the_field(person, tenant):
    invoice = draft(tenant)
    line = invoice["lines"]["data"][0]["id"]
    response = person.submit(f"/invoices/{invoice['id']}/lines/{line}", {"description": "X", "quantity": "-1",
                                                                        "unit": "NOS", "unit_amount": "1"},
                             page=f"/invoices/{invoice['id']}")
    assert response.status_code == 422
    assert "Quantity:" in response.text


def test_removing_a_line(person, tenant):
    invoice = draft(tenant, items=[adhoc("First"), adhoc("Second")])
    first = invoice["lines"]["data"][0]["id"]
    response = person.submit(f"/invoices/{invoice['id']}/lines/{first}/remove", page=f"/invoices/{invoice['id']}")
    assert response.status_code == 303
    lines = tenant.get(f"/invoices/{invoice['id']}").json()["data"]["lines"]["data"]
    assert [line["description"] for line in lines] == ["Second"]


def test_saving_draft_details(person, tenant):
    invoice = draft(tenant, footer="Old terms")
    response = person.submit(f"/invoices/{invoice['id']}", {"customer": invoice["customer"], "currency": "USD",
                                                           "issue_date": "2026-11-01", "due_date": "2026-12-15",
                                                           "description": "", "footer": "Net 45"},
                             page=f"/invoices/{invoice['id']}")
    assert response.status_code == 303
    saved = tenant.get(f"/invoices/{invoice['id']}").json()["data"]
    assert (saved["issue_date"], saved["due_date"], saved["footer"]) == ("2026-11-01", "2026-12-15", "Net 45")


def test_a_due_date_before_the_issue_date_is_refused(person, tenant):
    invoice = draft(tenant)
    response = person.submit(f"/invoices/{invoice['id']}", {"customer": invoice["customer"], "currency": "USD",
                                                           "issue_date": "2026-11-10", "due_date": "2026-11-01"},
                             page=f"/invoices/{invoice['id']}")
    assert response.status_code == 422
    assert "Due date" in response.text


def test_finalize_is_confirmed_with_the_number_it_will_take(person, tenant):
    finalized(tenant)  # INV-0001 is taken
    invoice = draft(tenant)
    page = person.get(f"/invoices/{invoice['id']}/finalize").text
    assert "It will be numbered INV-0002 and can no longer be edited" in page
    response = submit_form(person, f"/invoices/{invoice['id']}/finalize", f"/invoices/{invoice['id']}/finalize", {})
    assert response.headers["location"] == f"/invoices/{invoice['id']}?notice=finalized"
    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["number"] == "INV-0002"


def test_the_same_form_sent_twice_acts_once(person, tenant):
    invoice = draft(tenant)
    page = person.get(f"/invoices/{invoice['id']}/finalize").text
    key = KEY_FIELD.search(page).group(1)
    for _ in range(2):
        response = person.submit(f"/invoices/{invoice['id']}/finalize", {"idempotency_key": key},
                                 page=f"/invoices/{invoice['id']}/finalize")
        assert response.status_code == 303
    assert [event.type for event in events_of(invoice["id"])].count("invoice.finalized") == 1


def test_finalizing_an_empty_draft_is_refused_with_the_reason(person, tenant):
    invoice = draft(tenant, items=[])
    response = submit_form(person, f"/invoices/{invoice['id']}/finalize", f"/invoices/{invoice['id']}/finalize", {})
    assert response.status_code == 422
    assert "Lines" in response.text


def test_send_from_the_dashboard_e_mails_the_pdf(person, tenant, outbox):
    from tests.web.conftest import outbox_messages
    invoice = finalized(tenant)
    response = submit_form(person, f"/invoices/{invoice['id']}/send", f"/invoices/{invoice['id']}/send",
                           {"to": "accounts@buyer.test", "cc": "", "message": "Thank you!"})
    assert response.status_code == 303, response.text
    (message,) = outbox_messages(outbox, "accounts@buyer.test")
    assert any(part.get_content_type() == "application/pdf" for part in message.iter_attachments())
    emailed = [e for e in events_of(invoice["id"]) if e.type == "invoice.emailed"][0]
    assert emailed.meta["actor"] == "user" and emailed.meta["to"] == "accounts@buyer.test"


def test_dashboard_sends_count_against_the_account_e_mail_limit(person, tenant, monkeypatch):
    from config.settings import get_settings
    monkeypatch.setattr(get_settings(), "rate_limit_emails", 1)
    first, second = finalized(tenant), finalized(tenant)
    assert tenant.post(f"/invoices/{first['id']}/send", idem=True).status_code == 200  # by the API
    response = submit_form(person, f"/invoices/{second['id']}/send", f"/invoices/{second['id']}/send", {"to": ""})
    assert response.status_code == 429
    assert "invoice e-mails per account" in response.text


def test_the_per_key_send_limit_does_not_apply_to_a_person(person, tenant, monkeypatch):
    from config.settings import get_settings
    monkeypatch.setattr(get_settings(), "rate_limit_sends", 1)
    for invoice in (finalized(tenant), finalized(tenant)):
        response = submit_form(person, f"/invoices/{invoice['id']}/send", f"/invoices/{invoice['id']}/send", {})
        assert response.status_code == 303, response.text


def test_mark_paid_with_a_reference(person, tenant):
    invoice = finalized(tenant)
    response = submit_form(person, f"/invoices/{invoice['id']}/pay", f"/invoices/{invoice['id']}/pay",
                           {"paid_on": "2026-11-20", "reference": "BACS 1234"})
    assert response.status_code == 303
    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["status"] == "paid"
    history = person.get(f"/invoices/{invoice['id']}").text
    assert "reference BACS 1234" in history and "(dashboard)" in history and "API key “test”" in history


def test_void_with_a_reason(person, tenant):
    invoice = finalized(tenant)
    page = person.get(f"/invoices/{invoice['id']}/void").text
    assert "This cannot be undone" in page
    submit_form(person, f"/invoices/{invoice['id']}/void", f"/invoices/{invoice['id']}/void",
                {"reason": "Issued twice"})
    voided = tenant.get(f"/invoices/{invoice['id']}").json()["data"]
    assert (voided["status"], voided["void_reason"]) == ("void", "Issued twice")


def test_deleting_a_draft(person, tenant):
    invoice = draft(tenant)
    response = submit_form(person, f"/invoices/{invoice['id']}/delete", f"/invoices/{invoice['id']}/delete", {})
    assert response.headers["location"] == "/invoices?notice=deleted"
    assert tenant.get(f"/invoices/{invoice['id']}").status_code == 404


def test_an_action_the_state_does_not_allow_leads_back_to_the_invoice(person, tenant):
    invoice = finalized(tenant)
    response = person.get(f"/invoices/{invoice['id']}/delete")
    assert response.headers["location"] == f"/invoices/{invoice['id']}"
    refused = person.submit(f"/invoices/{invoice['id']}/delete", page=f"/invoices/{invoice['id']}")
    assert refused.status_code == 409


def test_the_pdf_is_shown_inline_and_downloadable(person, tenant):
    invoice = finalized(tenant)
    inline = person.get(f"/invoices/{invoice['id']}/pdf")
    assert inline.headers["content-type"] == "application/pdf" and inline.content.startswith(b"%PDF")
    assert inline.headers["content-disposition"].startswith("inline;")
    assert "frame-ancestors 'self'" in inline.headers["content-security-policy"]
    download = person.get(f"/invoices/{invoice['id']}/pdf?download=1")
    assert download.headers["content-disposition"].startswith("attachment;")


def test_the_list_filters_by_status_number_customer_and_dates(person, tenant):
    buyer = customer(tenant, name="Zed Zoo")
    paid = finalized(tenant)
    tenant.post(f"/invoices/{paid['id']}/pay", idem=True)
    open_one = finalized(tenant, customer_id=buyer["id"])
    a_draft = draft(tenant, issue_date="2026-01-05")
    assert open_one["number"] in person.get("/invoices?status=open").text
    assert paid["number"] not in person.get("/invoices?status=open").text
    assert f'/invoices/{a_draft["id"]}' in person.get("/invoices?status=draft").text
    by_number = person.get(f"/invoices?number={open_one['number'].lower()}").text
    assert open_one["number"] in by_number and paid["number"] not in by_number
    by_customer = person.get(f"/invoices?customer={buyer['id']}").text
    assert open_one["number"] in by_customer and paid["number"] not in by_customer
    in_january = person.get("/invoices?from=2026-01-01&to=2026-01-31").text
    assert f'/invoices/{a_draft["id"]}' in in_january and paid["number"] not in in_january


def test_open_ended_date_filters_list_every_invoice(person, tenant):
    a_draft = draft(tenant, issue_date="2026-01-05")
    assert f'/invoices/{a_draft["id"]}' in person.get("/invoices?from=0001-01-01&to=9999-12-31").text
    crossed = person.get("/invoices?from=9999-12-31&to=0001-01-01")
    assert crossed.status_code == 200 and f'/invoices/{a_draft["id"]}' not in crossed.text


def test_a_bad_filter_is_explained_not_a_crash(person):
    response = person.get("/invoices?from=yesterday")
    assert response.status_code == 200
    assert "Issued from" in response.text


def test_the_list_pages_with_a_cursor(person, tenant):
    buyer = customer(tenant)
    for _ in range(26):
        draft(tenant, customer_id=buyer["id"], items=[])
    first = person.get("/invoices").text
    next_link = re.search(r'href="(/invoices\?cursor=[^"]+)"', first).group(1).replace("&amp;", "&")
    second = person.get(next_link).text
    assert second.count('data-label="Number"') == 1
    assert "First page" in second


def _app_draft(tenant, client_name: str) -> str:
    """A draft created as a connected app would (through the same core function)."""
    buyer = customer(tenant)
    app = Principal(account_id=tenant.account_id, granted_scopes=frozenset(ALL_SCOPES), actor="oauth_app", role="owner",
                    client_id="https://claude.example/client.json", client_name=client_name, user_id=uuid.uuid4())
    with db.transaction() as session:
        invoice = executor.within(session, core_invoices.create_invoice, app, InvoiceCreate(customer=buyer["id"],
                                                                           items=[adhoc()]))
        from core.base.ids import public_id
        return public_id("invoice", invoice.id)


def test_drafts_by_a_connected_app_wait_for_review_with_its_badge(person, tenant):
    invoice_id = _app_draft(tenant, "Claude")
    draft(tenant)  # by an API key: not waiting for review
    home = person.get("/").text
    assert home.count("Drafted by Claude") == 1 and f"/invoices/{invoice_id}" in home
    assert "Drafted by Claude" in person.get("/invoices").text
    assert "Drafted by Claude" in person.get(f"/invoices/{invoice_id}").text
    assert "Claude (connected app)" in person.get(f"/invoices/{invoice_id}").text


def preview(person: Browser, invoice_id: str, **fields):
    return person.submit(f"/invoices/{invoice_id}/preview", fields, page=f"/invoices/{invoice_id}")


def test_live_totals_for_a_new_line_come_from_the_core(person, tenant):
    invoice = draft(tenant, items=[adhoc("Design", 10000, tax_rate=20)])
    response = preview(person, invoice["id"], line="add", description="Hosting", quantity="1.5", unit="MON",
                       unit_amount="33.33", discount_percent="10", tax_rate="20")
    assert response.status_code == 200
    # 1.5 × 33.33 × 0.9 = 44.9955 → 45.00, tax 9.00; invoice 100 + 20 + 45 + 9
    assert response.json()["message"] == ("This line: 45.00 USD plus 9.00 USD tax. "
                                          "The invoice would total 174.00 USD.")
    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["total"] == 12000  # nothing saved


def test_live_totals_for_an_edited_line(person, tenant):
    invoice = draft(tenant, items=[adhoc("First", 1000), adhoc("Second", 2000)])
    second = invoice["lines"]["data"][1]["id"]
    response = preview(person, invoice["id"], line=second, description="Second", quantity="3", unit="NOS",
                       unit_amount="20.00", discount_percent="0", tax_rate="0")
    assert response.json()["message"] == "This line: 60.00 USD. The invoice would total 70.00 USD."


def test_live_totals_explain_a_bad_value(person, tenant):
    invoice = draft(tenant)
    response = preview(person, invoice["id"], line="add", description="X", quantity="0", unit="NOS", unit_amount="1")
    assert response.status_code == 422
    assert response.json()["message"].startswith("Quantity: ")


def test_live_totals_of_another_accounts_draft_are_404(person, client):
    from tests.conftest import make_tenant
    stranger = draft(make_tenant(client))
    assert preview(person, stranger["id"], line="add", quantity="1").status_code == 404


def test_the_live_totals_script_is_only_on_drafts(person, tenant):
    invoice = draft(tenant)
    assert '<script src="/static/live-totals.js" defer></script>' in person.get(f"/invoices/{invoice['id']}").text
    opened = finalized(tenant)
    assert "live-totals.js" not in person.get(f"/invoices/{opened['id']}").text
