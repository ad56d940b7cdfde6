"""A credit note as a document: its PDF (REST, kept, VOID when void), its public page `/c/{token}` and
PDF, its e-mail; and what credit notes and the customer's balance print on the invoice's own documents."""

from __future__ import annotations

import io
from datetime import date

import pytest
from pypdf import PdfReader
from sqlmodel import select

from config.settings import get_settings
from core.base import db
from core.billing import documents
from core.billing.pdf import filename_for
from core.mechanisms import ratelimit
from core.models import InvoiceDocument
from tests.api.invoicing import adhoc, customer, history, open_invoice, pay
from tests.api.test_send import send
from tests.limits import spend
from tests.smtp import mail_settings, smtp_server

# 3 × 10.00 at 20 % and 1 × 5.00 at 0 %: 30.00 + 6.00 tax, 5.00: total 41.00 USD.
ITEMS = [adhoc("Consulting", 1000, quantity=3, unit="HRS", tax_rate=20), adhoc("Travel", 500)]


def text_of(pdf: bytes) -> str:
    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(pdf)).pages)


def invoice_with_lines(tenant, **fields) -> dict:
    invoice = open_invoice(tenant, items=fields.pop("items", ITEMS), **fields)
    return tenant.get(f"/invoices/{invoice['id']}").json()["data"]


def credit(tenant, body: dict) -> dict:
    response = tenant.post("/credit-notes", json=body, idem=True)
    assert response.status_code == 201, response.text
    return response.json()["data"]


def partial(tenant, invoice: dict, **fields) -> dict:
    """One hour of consulting (10.00 + 2.00 tax) and 2.00 of travel by amount: 14.00 USD."""
    first, second = (line["id"] for line in invoice["lines"]["data"])
    return credit(tenant, {"invoice": invoice["id"], "reason": "order_change", "memo": "Two hours less than planned",
                           "lines": [{"invoice_line": first, "quantity": 1}, {"invoice_line": second, "amount": 200}],
                           **fields})


def void_note(tenant, note: dict) -> dict:
    response = tenant.post(f"/credit-notes/{note['id']}/void", idem=True)
    assert response.status_code == 200, response.text
    return response.json()["data"]


def token_of(note: dict) -> str:
    return note["public_url"].rsplit("/", 1)[-1]


def invoice_token(tenant, invoice_id: str) -> str:
    return tenant.get(f"/invoices/{invoice_id}").json()["data"]["public_url_token"]


@pytest.fixture
def mailbox():
    """A working SMTP server that the service sends through."""
    with smtp_server() as (handler, url), mail_settings(smtp_url=url):
        yield handler


@pytest.fixture
def invoice(tenant) -> dict:
    return invoice_with_lines(tenant)


@pytest.fixture
def note(tenant, invoice) -> dict:
    return partial(tenant, invoice)


# --- the PDF ------------------------------------------------------------------------------------


def test_pdf_of_a_partial_credit_note(tenant, invoice, note):
    response = tenant.get(f"/credit-notes/{note['id']}/pdf")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/pdf"
    assert response.headers["content-disposition"] == 'attachment; filename="credit-note-CN-0001.pdf"'
    text = text_of(response.content)
    issued = date.fromisoformat(invoice["issue_date"])
    for expected in ("CREDIT NOTE", "CN-0001", "Acme Trading Ltd", "Customer", "Jane Doe",
                     f"Corrects invoice INV-0001 of {issued.day} {issued.strftime('%B')} {issued.year}",
                     "Reason: Order change", "Two hours less than planned", "Consulting", "Travel",
                     "Net total 12.00 USD", "Tax 20% 2.00 USD", "Total 14.00 USD", "Fourteen",
                     "Settlement", "Credited against invoice INV-0001 14.00 USD",
                     "View this credit note online", note["public_url"]):
        assert expected in text, expected
    assert "VOID" not in text and "DRAFT" not in text and "Payment details" not in text
    assert "—" in text  # the travel line's quantity: credited by amount


def test_pdf_title_and_footer_name_the_credit_note(tenant, note):
    reader = PdfReader(io.BytesIO(tenant.get(f"/credit-notes/{note['id']}/pdf").content))
    assert reader.metadata.title == "Credit note CN-0001"
    assert "CN-0001 · page 1 of 1" in reader.pages[0].extract_text()


@pytest.mark.parametrize("reason, words", [("duplicate", "Duplicate invoice"), ("order_change", "Order change"),
                                           ("product_unsatisfactory", "Product unsatisfactory"),
                                           ("fraudulent", "Fraudulent charge")])
def test_every_reason_prints_in_words(tenant, invoice, reason, words):
    preview = tenant.post("/credit-notes/preview", json={"invoice": invoice["id"], "reason": reason})
    assert preview.status_code == 200, preview.text
    view = preview.json()["data"]
    document = documents.credit_note_pdf(view)
    assert document.etag is None  # a preview is never kept
    text = text_of(document.content)
    assert f"Reason: {words}" in text
    assert "DRAFT" in text  # nothing issued


def test_without_a_reason_or_memo_nothing_is_printed_for_them(tenant, invoice):
    note = credit(tenant, {"invoice": invoice["id"]})
    text = text_of(tenant.get(f"/credit-notes/{note['id']}/pdf").content)
    assert "Reason" not in text and "Total 41.00 USD" in text


def test_refund_and_balance_say_where_the_money_went(tenant, invoice):
    pay(tenant, invoice["id"])
    note = credit(tenant, {"invoice": invoice["id"], "refund_amount": 3000, "refund_reference": "RF-118",
                           "refunded_on": "2026-11-21", "balance_amount": 1100})
    text = text_of(tenant.get(f"/credit-notes/{note['id']}/pdf").content)
    assert "Refunded (reference RF-118, 21 November 2026) 30.00 USD" in text
    assert "Credited to the customer's balance, for their next invoices in USD 11.00 USD" in text
    assert "Credited against invoice" not in text


def test_a_void_credit_note_is_marked_void_in_a_document_of_its_own(tenant, note):
    before = tenant.get(f"/credit-notes/{note['id']}/pdf").content
    voided = void_note(tenant, note)
    after = tenant.get(f"/credit-notes/{note['id']}/pdf").content
    assert after != before
    text = text_of(after)
    assert "VOID" in text and "Status: Void" in text
    voided_on = date.fromisoformat(voided["voided_at"][:10])
    assert f"Voided on {voided_on.day} {voided_on.strftime('%B')} {voided_on.year}" in text
    assert "Settlement (undone when it was voided)" in text


def test_the_pdf_is_rendered_once_and_kept_under_its_invoice(tenant, invoice, note, monkeypatch):
    made = []
    real = documents.render_credit_note

    def counting(view):
        made.append(view["number"])
        return real(view)
    monkeypatch.setattr(documents, "render_credit_note", counting)
    first = tenant.get(f"/credit-notes/{note['id']}/pdf").content
    again = tenant.get(f"/credit-notes/{note['id']}/pdf").content
    public = tenant.client.get(f"/c/{token_of(note)}/pdf").content
    assert made == ["CN-0001"] and first == again == public
    void_note(tenant, note)
    tenant.get(f"/credit-notes/{note['id']}/pdf")
    assert made == ["CN-0001", "CN-0001"]
    with db.transaction() as session:
        variants = session.exec(select(InvoiceDocument.variant)).all()
    assert sorted(variant.split(":")[2] for variant in variants if variant.startswith("credit_note:")) == \
        ["issued", "void"]


def test_filename():
    assert filename_for({"object": "credit_note", "number": "CN-0001", "id": "cn_1"}) == "credit-note-CN-0001.pdf"
    assert filename_for({"object": "credit_note", "number": "CN 7/2", "id": "cn_1"}) == "credit-note-CN_7_2.pdf"
    assert filename_for({"object": "credit_note", "number": None, "id": None}) == "credit-note-preview.pdf"
    assert filename_for({"object": "invoice", "number": "INV-0001", "id": "in_1"}) == "INV-0001.pdf"


def test_other_accounts_credit_note_pdf_is_404(tenant, other_tenant, note):
    assert other_tenant.get(f"/credit-notes/{note['id']}/pdf").status_code == 404


# --- what the invoice's documents show ------------------------------------------------------


def test_the_invoice_pdf_shows_what_credit_notes_took_off_it(tenant, invoice):
    before = text_of(tenant.get(f"/invoices/{invoice['id']}/pdf").content)
    assert "Credited" not in before and "Amount due 41.00 USD" in before
    note = partial(tenant, invoice)
    after = text_of(tenant.get(f"/invoices/{invoice['id']}/pdf").content)  # the same status, a new document
    assert "Credited (credit notes) -14.00 USD" in after and "Amount due 27.00 USD" in after
    void_note(tenant, note)
    assert "Credited" not in text_of(tenant.get(f"/invoices/{invoice['id']}/pdf").content)


def test_the_next_invoice_shows_the_balance_paid_in_advance(tenant, invoice):
    pay(tenant, invoice["id"])
    credit(tenant, {"invoice": invoice["id"], "balance_amount": 4100})
    later = open_invoice(tenant, customer_id=invoice["customer"], items=[adhoc("Support", 10000)])
    assert later["balance_applied"] == 4100
    text = text_of(tenant.get(f"/invoices/{later['id']}/pdf").content)
    assert "Paid in advance (customer balance) -41.00 USD" in text and "Amount due 59.00 USD" in text
    page = tenant.client.get(f"/i/{later['public_url_token']}").text
    assert '<th scope="row">Paid in advance (customer balance)</th><td class="num">-41.00 USD</td>' in page


def test_the_invoice_page_lists_its_issued_credit_notes(tenant, invoice):
    first = partial(tenant, invoice)
    second = credit(tenant, {"invoice": invoice["id"], "lines": [{"invoice_line": invoice["lines"]["data"][1]["id"],
                                                                  "amount": 100}]})
    void_note(tenant, first)
    page = tenant.client.get(f"/i/{invoice_token(tenant, invoice['id'])}").text
    assert f'<a href="/c/{token_of(second)}">Credit note CN-0002</a>' in page
    assert token_of(first) not in page and "CN-0001" not in page
    assert '<th scope="row">Credited (credit notes)</th><td class="num">-1.00 USD</td>' in page


# --- the public page ----------------------------------------------------------------------------


def test_public_page_shows_the_credit_note(tenant, invoice, note):
    response = tenant.client.get(f"/c/{token_of(note)}")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["X-Robots-Tag"].startswith("noindex")
    assert response.headers["Referrer-Policy"] == "no-referrer"
    page = response.text
    for expected in ("<title>Credit note CN-0001 from Acme</title>", "Credit note CN-0001", "Issued",
                     "Corrects invoice INV-0001 of", "Order change", "Two hours less than planned", "Jane Doe",
                     '<th scope="row">Total</th><td class="num">14.00 USD</td>',
                     '<td class="num" data-label="Quantity">—</td>',
                     "Credited against invoice INV-0001", "Download PDF"):
        assert expected in page, expected
    assert f'href="/c/{token_of(note)}/pdf"' in page
    assert f'href="/i/{invoice_token(tenant, invoice["id"])}"' in page
    assert '<header class="site issuer" aria-label="Issuer"><span class="brand">Acme</span></header>' in page
    assert 'href="/login"' not in page


def test_public_page_of_a_void_credit_note_says_so(tenant, note):
    void_note(tenant, note)
    page = tenant.client.get(f"/c/{token_of(note)}").text
    assert "status-void" in page and "this credit note no longer applies" in page


def test_public_page_escapes_customer_text(tenant):
    evil = customer(tenant, name="<script>alert(1)</script>")
    invoice = invoice_with_lines(tenant, customer_id=evil["id"])
    note = credit(tenant, {"invoice": invoice["id"], "memo": "<b>memo</b>"})
    page = tenant.client.get(f"/c/{token_of(note)}").text
    assert "<script>alert(1)</script>" not in page and "<b>memo</b>" not in page
    assert "&lt;script&gt;" in page and "&lt;b&gt;memo&lt;/b&gt;" in page


def test_public_pdf(tenant, note):
    response = tenant.client.get(f"/c/{token_of(note)}/pdf")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/pdf"
    assert response.headers["content-disposition"] == 'attachment; filename="credit-note-CN-0001.pdf"'
    assert response.headers["X-Robots-Tag"].startswith("noindex")
    assert response.headers["Referrer-Policy"] == "no-referrer"
    assert "CN-0001" in text_of(response.content)
    etag = response.headers["etag"]
    again = tenant.client.get(f"/c/{token_of(note)}/pdf", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    assert tenant.client.head(f"/c/{token_of(note)}/pdf").status_code == 200


def test_the_public_urls_of_the_api_object_work(tenant, note):
    origin = get_settings().origin.rstrip("/")
    assert note["public_url"] == f"{origin}/c/{token_of(note)}"
    assert tenant.client.get(note["public_url"].removeprefix(origin)).status_code == 200
    assert tenant.client.get(note["public_pdf_url"].removeprefix(origin)).status_code == 200


@pytest.mark.parametrize("token", ["unknown-token-0123456789", "x" * 300, "a%2Fb", "%00", "ab cd"])
def test_unknown_or_malformed_token_is_a_404_page(tenant, note, token):
    for path in (f"/c/{token}", f"/c/{token}/pdf", f"/c/{token}/more"):
        response = tenant.client.get(path)
        assert response.status_code == 404, path
        assert response.headers["content-type"].startswith("text/html")
        assert "Credit note not found" in response.text
        assert "<header" not in response.text
        assert response.headers["X-Robots-Tag"].startswith("noindex")


def test_an_invoice_token_is_no_credit_note_link(tenant, invoice, note):
    assert tenant.client.get(f"/c/{invoice_token(tenant, invoice['id'])}").status_code == 404
    assert tenant.client.get(f"/i/{token_of(note)}").status_code == 404


def test_the_public_limit_is_shared_with_invoice_links(tenant, invoice, note, monkeypatch):
    monkeypatch.setattr(get_settings(), "rate_limit_public_link", 3)
    statuses = [tenant.client.get(f"/i/{invoice_token(tenant, invoice['id'])}").status_code,
                tenant.client.get(f"/c/{token_of(note)}").status_code,
                tenant.client.get(f"/c/{token_of(note)}/pdf").status_code]
    refused = tenant.client.get(f"/c/{token_of(note)}")
    assert statuses == [200, 200, 200] and refused.status_code == 429
    assert "Retry-After" in refused.headers and "credit note links" in refused.text
    assert tenant.client.get(f"/c/{token_of(note)}/pdf").status_code == 429


# --- the e-mail ---------------------------------------------------------------------------------


def send_note(tenant, note_id: str, body: dict | None = None):
    return tenant.post(f"/credit-notes/{note_id}/send", json=body, idem=True)


def test_send_emails_the_credit_note_with_its_pdf(tenant, invoice, note, mailbox):
    response = send_note(tenant, note["id"], {"cc": ["boss@example.com"]})
    assert response.status_code == 200, response.text
    assert response.json()["emailed_to"] == "jane@example.com"
    assert response.json()["data"]["number"] == "CN-0001"
    [received] = mailbox.received
    assert received.rcpt_tos == ["jane@example.com", "boss@example.com"]
    assert received.message["Subject"] == "Credit note CN-0001 from Acme"
    assert received.message["Reply-To"] == "billing@acme.test"
    text = received.message.get_body(("plain",)).get_content()
    assert note["public_url"] in text and "14.00 USD" in text and "INV-0001" in text
    [attachment] = received.attachments()
    assert attachment.get_filename() == "credit-note-CN-0001.pdf"
    assert attachment.get_content_type() == "application/pdf"
    pdf_text = text_of(attachment.get_content())
    assert "CREDIT NOTE" in pdf_text and "Corrects invoice INV-0001" in pdf_text and "Total 14.00 USD" in pdf_text
    assert attachment.get_content() == tenant.get(f"/credit-notes/{note['id']}/pdf").content  # the kept document
    [emailed] = [event for event in history(tenant, invoice["id"]) if event["type"] == "credit_note.emailed"]
    assert emailed["meta"]["to"] == "jane@example.com" and emailed["meta"]["cc"] == ["boss@example.com"]


def test_sending_a_void_credit_note_is_409(tenant, note, mailbox):
    void_note(tenant, note)
    response = send_note(tenant, note["id"])
    assert response.status_code == 409
    assert response.json()["code"] == "invalid_state"
    assert mailbox.received == []


def test_sending_with_an_unverified_account_email_is_409(tenant_factory, mailbox):
    tenant = tenant_factory(verified=False)
    note = partial(tenant, invoice_with_lines(tenant))
    response = send_note(tenant, note["id"])
    assert response.status_code == 409
    assert "verif" in response.json()["detail"]
    assert mailbox.received == []


def test_credit_note_sends_count_against_the_invoice_send_limit(tenant, invoice, note, mailbox):
    spend(ratelimit.sends_per_key(), f"key:{tenant.key_id}", 8)
    assert send(tenant, invoice["id"]).status_code == 200  # the 9th send of the hour
    assert send_note(tenant, note["id"]).status_code == 200  # the 10th
    refused = send_note(tenant, note["id"])
    assert refused.status_code == 429
    assert refused.headers["RateLimit-Limit"] == "10"
    assert send(tenant, invoice["id"]).status_code == 429
    assert len(mailbox.received) == 2


def test_credit_note_sends_count_against_the_account_email_limit(tenant, note, mailbox):
    spend(ratelimit.emails_per_account(), str(tenant.account_id), 50)
    response = send_note(tenant, note["id"])
    assert response.status_code == 429
    assert response.headers["RateLimit-Limit"] == "50"
    assert mailbox.received == []


def test_the_api_pdf_carries_an_etag_and_answers_304_when_held(tenant):
    invoice = open_invoice(tenant, items=[adhoc("Workshop", 10000)])
    note = tenant.post("/credit-notes", json={"invoice": invoice["id"]}, idem=True).json()["data"]
    first = tenant.get(f"/credit-notes/{note['id']}/pdf")
    assert first.status_code == 200 and first.headers["etag"]
    again = tenant.get(f"/credit-notes/{note['id']}/pdf", headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304
