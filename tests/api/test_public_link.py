"""The customer's public link: /i/{token} and /i/{token}/pdf, with throttled viewed/downloaded events."""

from __future__ import annotations

import io
import threading
from datetime import date, timedelta

import pytest
from pypdf import PdfReader
from sqlmodel import select

from core.base import db
from core.base.clock import now
from core.billing import public
from core.models import Invoice, InvoiceEvent
from tests.api.invoicing import adhoc, customer, draft, history, open_invoice, void


def events_of(tenant, invoice_id: str, kind: str) -> list[dict]:
    return [event for event in history(tenant, invoice_id) if event["type"] == kind]


def age_throttle(token: str, column: str, minutes: int) -> None:
    """Pretend the last recorded event of that kind happened `minutes` ago."""
    with db.transaction() as session:
        invoice = session.exec(select(Invoice).where(Invoice.public_url_token == token)).one()
        setattr(invoice, column, now() - timedelta(minutes=minutes))
        session.add(invoice)


@pytest.fixture
def invoice(tenant) -> dict:
    return open_invoice(tenant, items=[adhoc("Łódź workshop — day one", 120000, tax_rate=20)],
                        description="Thank you!", footer="Due in 30 days")


def test_token_is_long_and_url_safe(invoice):
    token = invoice["public_url_token"]
    assert len(token) >= 43  # 32 random bytes: 256 bits
    assert public.well_formed(token)


def test_page_shows_the_invoice(tenant, invoice):
    response = tenant.client.get(f"/i/{invoice['public_url_token']}")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    page = response.text
    for expected in ("Invoice INV-0001", "Acme", "Jane Doe", "Łódź workshop — day one", "1,200.00 USD",
                     "240.00 USD", "1,440.00 USD", "Open", "Thank you!", "Due in 30 days", "12345678"):
        assert expected in page, expected
    assert f'href="/i/{invoice["public_url_token"]}/pdf"' in page
    assert "Download PDF" in page


def test_page_shows_the_issuer_not_the_services_sign_in(tenant, invoice):
    page = tenant.client.get(f"/i/{invoice['public_url_token']}").text
    assert 'href="/login"' not in page and 'href="/signup"' not in page
    assert '<header class="site issuer" aria-label="Issuer"><span class="brand">Acme</span></header>' in page


def test_page_dates_are_readable_with_iso_beside(tenant, invoice):
    page = tenant.client.get(f"/i/{invoice['public_url_token']}").text
    issued = date.fromisoformat(invoice["issue_date"])
    assert f"{issued.day} {issued.strftime('%B')} {issued.year} ({invoice['issue_date']})" in page  # a GB issuer


def test_page_totals_start_from_the_sum_of_the_lines(tenant):
    invoice = open_invoice(tenant, items=[adhoc("Design", 10000, quantity=2, discount_percent=50, tax_rate=20)])
    page = tenant.client.get(f"/i/{invoice['public_url_token']}").text
    assert '<th scope="row">Net total</th><td class="num">100.00 USD</td>' in page
    assert '<th scope="row">Tax 20%</th><td class="num">20.00 USD</td>' in page
    assert "Line amounts include discounts of 100.00 USD (list price 200.00 USD)." in page
    assert "Subtotal" not in page


def test_every_line_value_is_labelled_for_the_phone_layout(tenant, invoice):
    page = tenant.client.get(f"/i/{invoice['public_url_token']}").text
    assert '<td class="num amount" data-label="Amount">1,200.00 USD</td>' in page


def test_an_unknown_link_shows_no_header_at_all(tenant):
    page = tenant.client.get("/i/nope").text
    assert "<header" not in page and 'href="/login"' not in page


def test_page_keeps_the_token_out_of_search_engines_and_referrers(tenant, invoice):
    response = tenant.client.get(f"/i/{invoice['public_url_token']}")
    assert response.headers["X-Robots-Tag"].startswith("noindex")
    assert response.headers["Referrer-Policy"] == "no-referrer"
    assert response.headers["Cache-Control"] == "no-store"


def test_page_escapes_customer_text(tenant):
    evil = customer(tenant, name="<script>alert(1)</script>")
    invoice = open_invoice(tenant, customer_id=evil["id"])
    page = tenant.client.get(f"/i/{invoice['public_url_token']}").text
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;" in page


def test_first_view_records_viewed_with_null_meta(tenant, invoice):
    tenant.client.get(f"/i/{invoice['public_url_token']}")
    [viewed] = events_of(tenant, invoice["id"], "invoice.viewed")
    assert viewed["meta"] is None


def test_second_view_within_ten_minutes_records_nothing(tenant, invoice):
    token = invoice["public_url_token"]
    tenant.client.get(f"/i/{token}")
    tenant.client.get(f"/i/{token}")
    assert len(events_of(tenant, invoice["id"], "invoice.viewed")) == 1


def test_view_after_ten_minutes_records_again(tenant, invoice):
    token = invoice["public_url_token"]
    tenant.client.get(f"/i/{token}")
    age_throttle(token, "last_viewed_event_at", 9)
    tenant.client.get(f"/i/{token}")
    assert len(events_of(tenant, invoice["id"], "invoice.viewed")) == 1
    age_throttle(token, "last_viewed_event_at", 10)
    tenant.client.get(f"/i/{token}")
    assert len(events_of(tenant, invoice["id"], "invoice.viewed")) == 2


def test_head_records_nothing(tenant, invoice):
    token = invoice["public_url_token"]
    assert tenant.client.head(f"/i/{token}").status_code == 200
    assert tenant.client.head(f"/i/{token}/pdf").status_code == 200
    assert events_of(tenant, invoice["id"], "invoice.viewed") == []
    assert events_of(tenant, invoice["id"], "invoice.downloaded") == []


def test_pdf_download(tenant, invoice):
    response = tenant.client.get(f"/i/{invoice['public_url_token']}/pdf")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/pdf"
    assert response.headers["content-disposition"] == 'attachment; filename="INV-0001.pdf"'
    assert response.headers["X-Robots-Tag"].startswith("noindex")
    assert response.headers["Referrer-Policy"] == "no-referrer"
    text = PdfReader(io.BytesIO(response.content)).pages[0].extract_text()
    assert "INV-0001" in text and "Jane Doe" in text and "Total 1,440.00 USD" in text


def test_downloads_are_throttled_separately_from_views(tenant, invoice):
    token = invoice["public_url_token"]
    tenant.client.get(f"/i/{token}")
    tenant.client.get(f"/i/{token}/pdf")
    tenant.client.get(f"/i/{token}/pdf")
    assert len(events_of(tenant, invoice["id"], "invoice.downloaded")) == 1
    assert len(events_of(tenant, invoice["id"], "invoice.viewed")) == 1
    age_throttle(token, "last_downloaded_event_at", 11)
    tenant.client.get(f"/i/{token}/pdf")
    assert len(events_of(tenant, invoice["id"], "invoice.downloaded")) == 2


def test_void_invoice_page_still_opens_and_says_void(tenant, invoice):
    void(tenant, invoice["id"], {"reason": "duplicate"})
    response = tenant.client.get(f"/i/{invoice['public_url_token']}")
    assert response.status_code == 200
    assert "Void" in response.text


@pytest.mark.parametrize("token", ["unknown-token-0123456789", "x" * 300, "a%2Fb", "%00", "ab cd"])
def test_unknown_or_malformed_token_is_a_404_page(tenant, invoice, token):
    for path in (f"/i/{token}", f"/i/{token}/pdf"):
        response = tenant.client.get(path)
        assert response.status_code == 404, path
        assert response.headers["content-type"].startswith("text/html")
        assert "Invoice not found" in response.text
        assert response.headers["X-Robots-Tag"].startswith("noindex")


def test_drafts_have_no_public_link(tenant):
    invoice = draft(tenant)
    assert invoice["public_url_token"] is None


def test_concurrent_views_record_one_event(invoice):
    token = invoice["public_url_token"]
    start = threading.Barrier(4)
    outcomes: list[bool] = []

    def visit():
        start.wait()
        with db.transaction() as session:
            row, _ = public.open_invoice(session, token)
            outcomes.append(public.record_view(session, row))

    threads = [threading.Thread(target=visit) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(outcomes) == [False, False, False, True]
    with db.transaction() as session:
        viewed = session.exec(select(InvoiceEvent).where(InvoiceEvent.type == "invoice.viewed")).all()
    assert len(viewed) == 1
