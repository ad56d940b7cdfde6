"""POST /invoices/{id}/send: finalize a draft, e-mail the PDF and link, limits and provider failures."""

from __future__ import annotations

import email
import io
import time
import uuid
from email.policy import default as default_policy

import pytest
from pypdf import PdfReader

from core.mechanisms import ratelimit
from tests.api.invoicing import customer, draft, history, open_invoice, pay, void
from tests.conftest import TEST_ORIGIN
from tests.limits import spend
from tests.smtp import Handler, mail_settings, smtp_server


@pytest.fixture
def mailbox():
    """A working SMTP server that the service sends through."""
    with smtp_server() as (handler, url), mail_settings(smtp_url=url):
        yield handler


def send(tenant, invoice_id: str, body: dict | None = None, *, idem: str | bool = True):
    return tenant.post(f"/invoices/{invoice_id}/send", json=body, idem=idem)


def types(tenant, invoice_id: str) -> list[str]:
    return [event["type"] for event in reversed(history(tenant, invoice_id))]


def test_send_finalizes_a_draft_and_emails_it(tenant, mailbox):
    invoice = draft(tenant)
    response = send(tenant, invoice["id"])
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"data", "emailed_to"}
    assert body["emailed_to"] == "jane@example.com"
    assert body["data"]["status"] == "open"
    assert body["data"]["number"] == "INV-0001"
    assert "lines" not in body["data"]
    assert types(tenant, invoice["id"]) == ["invoice.created", "invoice.finalized", "invoice.emailed"]
    assert len(mailbox.received) == 1


def test_email_carries_subject_link_and_pdf(tenant, mailbox):
    invoice = draft(tenant)
    data = send(tenant, invoice["id"]).json()["data"]
    [received] = mailbox.received
    assert received.rcpt_tos == ["jane@example.com"]
    assert received.message["Subject"] == "Invoice INV-0001 from Acme"
    assert received.message["Reply-To"] == "billing@acme.test"
    text = received.message.get_body(("plain",)).get_content()
    assert f"{TEST_ORIGIN}/i/{data['public_url_token']}" in text
    assert "10.00 USD" in text
    [attachment] = received.attachments()
    assert attachment.get_filename() == "INV-0001.pdf"
    assert attachment.get_content_type() == "application/pdf"
    pdf_text = PdfReader(io.BytesIO(attachment.get_content())).pages[0].extract_text()
    assert "INV-0001" in pdf_text and "Jane Doe" in pdf_text and "Total 10.00 USD" in pdf_text


def test_emailed_event_meta_names_the_recipient(tenant, mailbox):
    invoice = open_invoice(tenant)
    send(tenant, invoice["id"], {"cc": ["boss@example.com"]})
    emailed = history(tenant, invoice["id"])[0]
    assert emailed["type"] == "invoice.emailed"
    assert emailed["meta"]["to"] == "jane@example.com"
    assert emailed["meta"]["cc"] == ["boss@example.com"]
    assert emailed["meta"]["actor"] == "api_key"
    assert emailed["meta"]["api_key_id"] == str(tenant.key_id)


def test_open_invoice_is_emailed_again_keeping_its_number(tenant, mailbox):
    invoice = open_invoice(tenant)
    assert send(tenant, invoice["id"]).status_code == 200
    second = send(tenant, invoice["id"])
    assert second.status_code == 200
    assert second.json()["data"]["number"] == invoice["number"]
    assert len(mailbox.received) == 2
    assert types(tenant, invoice["id"]).count("invoice.emailed") == 2


def test_overdue_invoice_can_be_sent(tenant, mailbox):
    invoice = open_invoice(tenant, issue_date="2020-01-01", due_date="2020-01-31")
    response = send(tenant, invoice["id"])
    assert response.status_code == 200
    assert response.json()["data"]["status"] == "overdue"


def test_to_overrides_the_customer_email_and_cc_is_copied(tenant, mailbox):
    invoice = draft(tenant)
    response = send(tenant, invoice["id"], {"to": "ap@client.example", "cc": ["a@client.example", "b@client.example"]})
    assert response.json()["emailed_to"] == "ap@client.example"
    [received] = mailbox.received
    assert received.rcpt_tos == ["ap@client.example", "a@client.example", "b@client.example"]
    assert received.message["Cc"] == "a@client.example, b@client.example"


def test_email_is_html_with_a_plain_text_part_and_a_view_invoice_button(tenant, mailbox):
    data = send(tenant, draft(tenant)["id"]).json()["data"]
    message = mailbox.received[0].message
    html = message.get_body(("html",)).get_content()
    assert f'<a href="{data["public_url"]}"' in html and ">View invoice</a>" in html
    assert "<strong>INV-0001</strong>" in html and "<strong>10.00 USD</strong>" in html
    assert "src=" not in html  # no remote images: nothing for a mail client to block or track
    text = message.get_body(("plain",)).get_content()
    assert f"View invoice: {data['public_url']}" in text


def test_email_is_from_the_issuers_name_at_the_services_address(tenant, mailbox):
    send(tenant, draft(tenant)["id"])
    assert mailbox.received[0].message["From"] == "Acme <invoices@localhost>"


def test_email_dates_are_readable(tenant, mailbox):
    invoice = draft(tenant, issue_date="2026-03-01", due_date="2026-03-31")
    send(tenant, invoice["id"])
    message = mailbox.received[0].message
    assert "due 31 March 2026" in message.get_body(("plain",)).get_content()
    assert "1 March 2026" in message.get_body(("html",)).get_content()


def test_the_note_is_escaped_in_the_html(tenant, mailbox):
    send(tenant, draft(tenant)["id"], {"message": "<script>alert(1)</script> & thanks"})
    html = mailbox.received[0].message.get_body(("html",)).get_content()
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; thanks" in html


def test_message_is_added_to_the_body(tenant, mailbox):
    invoice = draft(tenant)
    send(tenant, invoice["id"], {"message": "Thanks for the quick turnaround!"})
    assert "Thanks for the quick turnaround!" in mailbox.received[0].message.get_body(("plain",)).get_content()


def test_no_address_at_all_is_422_at_to_and_nothing_changes(tenant, mailbox):
    nobody = customer(tenant, email=None)
    invoice = draft(tenant, customer_id=nobody["id"])
    response = send(tenant, invoice["id"])
    assert response.status_code == 422
    assert response.json()["errors"][0]["path"] == "to"
    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["status"] == "draft"
    assert mailbox.received == []


@pytest.mark.parametrize("body, path", [
    ({"to": "not-an-address"}, "to"),
    ({"cc": [f"c{i}@example.com" for i in range(6)]}, "cc"),
    ({"cc": ["ok@example.com", "broken"]}, "cc.1"),
    ({"message": "x" * 2001}, "message"),
    ({"subject": "unknown field"}, "subject"),
])
def test_invalid_body_is_422_at_its_path(tenant, mailbox, body, path):
    invoice = draft(tenant)
    response = send(tenant, invoice["id"], body)
    assert response.status_code == 422
    assert response.json()["code"] == "validation"
    assert [error["path"] for error in response.json()["errors"]] == [path]


def test_five_cc_and_2000_character_message_are_accepted(tenant, mailbox):
    invoice = draft(tenant)
    body = {"cc": [f"c{i}@example.com" for i in range(5)], "message": "x" * 2000}
    assert send(tenant, invoice["id"], body).status_code == 200


def test_unverified_account_email_is_409_and_nothing_is_finalized(tenant_factory, mailbox):
    tenant = tenant_factory(verified=False)
    invoice = draft(tenant)
    response = send(tenant, invoice["id"])
    assert response.status_code == 409
    assert response.json()["code"] == "invalid_state"
    assert "verif" in response.json()["detail"]
    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["number"] is None
    assert mailbox.received == []


def test_paid_invoice_is_409(tenant, mailbox):
    invoice = open_invoice(tenant)
    pay(tenant, invoice["id"])
    response = send(tenant, invoice["id"])
    assert response.status_code == 409
    assert response.json()["code"] == "invalid_state"


def test_void_invoice_is_409(tenant, mailbox):
    invoice = open_invoice(tenant)
    void(tenant, invoice["id"])
    assert send(tenant, invoice["id"]).status_code == 409
    assert mailbox.received == []


def test_other_accounts_invoice_is_404(tenant, other_tenant, mailbox):
    invoice = draft(other_tenant)
    assert send(tenant, invoice["id"]).status_code == 404
    assert send(tenant, "in_malformed").status_code == 404


def test_idempotency_key_is_required(tenant, mailbox):
    invoice = draft(tenant)
    response = send(tenant, invoice["id"], idem=False)
    assert response.status_code == 428
    assert response.json()["code"] == "idempotency_key_required"


def test_replay_returns_the_first_response_without_a_second_email(tenant, mailbox):
    invoice = draft(tenant)
    key = uuid.uuid4().hex
    first = send(tenant, invoice["id"], idem=key)
    again = send(tenant, invoice["id"], idem=key)
    assert again.json() == first.json()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert len(mailbox.received) == 1


def test_needs_the_invoices_send_scope(tenant, mailbox):
    invoice = draft(tenant)
    without = tenant.as_key(tenant.key_with(["invoices:read", "invoices:write", "invoices:finalize"]))
    response = send(without, invoice["id"])
    assert response.status_code == 403
    assert "invoices:send" in response.json()["detail"]
    only_send = tenant.as_key(tenant.key_with(["invoices:send"]))
    assert send(only_send, invoice["id"]).status_code == 200


def test_without_smtp_url_the_email_is_written_to_the_outbox(tenant, tmp_path):
    invoice = draft(tenant)
    with mail_settings(smtp_url=None, data_dir=tmp_path):
        assert send(tenant, invoice["id"]).status_code == 200
    [written] = list((tmp_path / "outbox").glob("*.eml"))
    parsed = email.message_from_bytes(written.read_bytes(), policy=default_policy)
    assert parsed["To"] == "jane@example.com"
    assert [a.get_filename() for a in parsed.iter_attachments()] == ["INV-0001.pdf"]


# --- the provider refuses -------------------------------------------------------------------


def test_refused_email_is_502_keeps_the_number_and_records_email_failed(tenant):
    invoice = draft(tenant)
    with smtp_server(Handler(refuse="550 5.1.1 Mailbox does not exist")) as (_, url), mail_settings(smtp_url=url):
        response = send(tenant, invoice["id"])
    assert response.status_code == 502
    problem = response.json()
    assert problem["code"] == "upstream_failed"
    assert "550" in problem["detail"] and "INV-0001" in problem["detail"]
    assert "127.0.0.1" not in problem["detail"]
    stored = tenant.get(f"/invoices/{invoice['id']}").json()["data"]
    assert stored["status"] == "open" and stored["number"] == "INV-0001"
    events = history(tenant, invoice["id"])
    assert [e["type"] for e in reversed(events)] == ["invoice.created", "invoice.finalized", "invoice.email_failed"]
    assert events[0]["meta"]["to"] == "jane@example.com"


def test_retry_after_a_refusal_sends_with_the_same_number(tenant):
    invoice = draft(tenant)
    key = uuid.uuid4().hex
    with smtp_server(Handler(refuse="550 No thanks")) as (_, url), mail_settings(smtp_url=url):
        assert send(tenant, invoice["id"], idem=key).status_code == 502
    with smtp_server() as (handler, url), mail_settings(smtp_url=url):
        retry = send(tenant, invoice["id"], idem=key)
    assert retry.status_code == 200
    assert retry.json()["data"]["number"] == "INV-0001"
    assert len(handler.received) == 1
    assert types(tenant, invoice["id"])[-2:] == ["invoice.email_failed", "invoice.emailed"]


def test_unreachable_provider_is_502(tenant):
    invoice = open_invoice(tenant)
    with smtp_server() as (_, url):
        pass  # stopped: nothing listens on that port any more
    with mail_settings(smtp_url=url):
        response = send(tenant, invoice["id"])
    assert response.status_code == 502
    assert history(tenant, invoice["id"])[0]["type"] == "invoice.email_failed"


# --- limits ---------------------------------------------------------------------------------


def test_success_carries_the_send_limit_headers(tenant, mailbox):
    invoice = draft(tenant)
    response = send(tenant, invoice["id"])
    assert response.headers["RateLimit-Limit"] == "10"
    assert response.headers["RateLimit-Remaining"] == "9"


def test_eleventh_send_within_an_hour_per_key_is_429(tenant, mailbox):
    spend(ratelimit.sends_per_key(), f"key:{tenant.key_id}", 9)
    invoice = draft(tenant)
    assert send(tenant, invoice["id"]).status_code == 200
    response = send(tenant, invoice["id"])
    assert response.status_code == 429
    assert response.json()["code"] == "rate_limited"
    assert 0 < int(response.headers["Retry-After"]) <= 3600
    assert response.headers["RateLimit-Limit"] == "10"
    assert response.headers["RateLimit-Remaining"] == "0"
    assert len(mailbox.received) == 1


def test_send_limit_is_per_key(tenant, mailbox):
    spend(ratelimit.sends_per_key(), f"key:{tenant.key_id}", 10)
    invoice = draft(tenant)
    assert send(tenant, invoice["id"]).status_code == 429
    other_key = tenant.as_key(tenant.key_with(["invoices:send"]))
    assert send(other_key, invoice["id"]).status_code == 200


def test_rate_limited_send_leaves_the_draft_a_draft(tenant, mailbox):
    spend(ratelimit.sends_per_key(), f"key:{tenant.key_id}", 10)
    invoice = draft(tenant)
    assert send(tenant, invoice["id"]).status_code == 429
    assert tenant.get(f"/invoices/{invoice['id']}").json()["data"]["status"] == "draft"


def test_fifty_first_email_per_account_is_429_whatever_the_key(tenant, mailbox):
    spend(ratelimit.emails_per_account(), str(tenant.account_id), 49)
    invoice = draft(tenant)
    assert send(tenant, invoice["id"]).status_code == 200
    other_key = tenant.as_key(tenant.key_with(["invoices:send"]))
    response = send(other_key, invoice["id"])
    assert response.status_code == 429
    assert response.headers["RateLimit-Limit"] == "50"
    assert "Retry-After" in response.headers
    assert len(mailbox.received) == 1


def test_the_account_limit_holds_across_the_clock_hour(tenant, mailbox, monkeypatch):
    hour = int(time.time()) // 3600 * 3600
    spend(ratelimit.emails_per_account(), str(tenant.account_id), 50, now=hour - 30)
    monkeypatch.setattr(ratelimit, "clock", lambda: hour + 30)
    response = send(tenant, draft(tenant)["id"])
    assert response.status_code == 429
    assert response.headers["Retry-After"] == str(3600 - 60)
    monkeypatch.setattr(ratelimit, "clock", lambda: hour + 3600 - 30)
    assert send(tenant, draft(tenant)["id"]).status_code == 200


def test_the_key_limit_holds_across_the_clock_hour(tenant, mailbox, monkeypatch):
    hour = int(time.time()) // 3600 * 3600
    spend(ratelimit.sends_per_key(), f"key:{tenant.key_id}", 10, now=hour - 1)
    monkeypatch.setattr(ratelimit, "clock", lambda: hour + 1)
    assert send(tenant, draft(tenant)["id"]).status_code == 429


def test_account_limit_does_not_touch_other_accounts(tenant, other_tenant, mailbox):
    spend(ratelimit.emails_per_account(), str(tenant.account_id), 50)
    invoice = draft(other_tenant)
    assert send(other_tenant, invoice["id"]).status_code == 200


def test_send_is_exempt_from_the_request_limit(tenant, mailbox):
    helper = tenant.as_key(tenant.key_with(["invoices:write", "clients:write"]))
    invoice_id = draft(helper)["id"]
    spend(ratelimit.api_requests(), f"key:{tenant.key_id}", 120)
    assert send(tenant, invoice_id).status_code == 200


def test_a_draft_goes_to_the_address_frozen_into_it(tenant, mailbox, monkeypatch):
    """The customer's address changed after the send first read it, before the draft was frozen: the
    e-mail goes where the invoice says it went."""
    from sqlalchemy import update

    from core.billing import finalization
    from core.models import Customer
    invoice = draft(tenant)
    freeze = finalization.finalize_in

    def changed_just_before(session, principal, row, **options):
        session.execute(update(Customer).where(Customer.id == row.customer_id).values(email="new@example.com"))
        return freeze(session, principal, row, **options)
    monkeypatch.setattr(finalization, "finalize_in", changed_just_before)
    response = send(tenant, invoice["id"])
    assert response.status_code == 200, response.text
    assert response.json()["emailed_to"] == "new@example.com"
    assert response.json()["data"]["customer_details"]["email"] == "new@example.com"
    assert mailbox.received[0].rcpt_tos == ["new@example.com"]
