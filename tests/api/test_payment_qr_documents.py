"""The payment QR code (EPC069-12) on the invoice PDF and the public invoice page: the printed code scans as
the transfer of what is due, and invoices that cannot be paid that way carry none."""

from __future__ import annotations

import io
import os
import shutil
import subprocess

import pytest
import zxingcpp
from PIL import Image
from pypdf import PdfReader

from tests.api.invoicing import adhoc, open_invoice, paid_part, pay
from tests.conftest import BUSINESS, make_tenant

EUR_SELLER = BUSINESS | {
    "legal_name": "Muster Handel GmbH", "trade_name": "Muster", "country_code": "DE", "currency": "EUR",
    "bank": {"bank_name": "Musterbank", "account_name": "Muster Handel GmbH",
             "account_number": "DE89 3704 0044 0532 0130 00", "routing_number": "COBADEFFXXX"},
    "invoice_prefix": "RE",
}


def payload(amount: str) -> str:
    return f"BCD\n002\n1\nSCT\nCOBADEFFXXX\nMuster Handel GmbH\nDE89370400440532013000\n{amount}\n\n\nRE-0001"


@pytest.fixture
def seller(client):
    return make_tenant(client, business=EUR_SELLER)


def pdf_of(tenant, invoice: dict) -> bytes:
    response = tenant.get(f"/invoices/{invoice['id']}/pdf")
    assert response.status_code == 200, response.text
    return response.content


def images_on(pdf: bytes) -> int:
    return sum(len(page.images) for page in PdfReader(io.BytesIO(pdf)).pages)


def scanned(pdf: bytes, tmp_path) -> list[str]:
    """The codes read off page 1 as printed (rendered at 200 dpi by pdftoppm, read by zxing-cpp)."""
    (tmp_path / "invoice.pdf").write_bytes(pdf)
    subprocess.run(["pdftoppm", "-png", "-r", "200", "-f", "1", "-l", "1", "-singlefile", str(tmp_path / "invoice.pdf"),
                    str(tmp_path / "page")], check=True)
    return [result.text for result in zxingcpp.read_barcodes(Image.open(tmp_path / "page.png"))]


needs_pdftoppm = pytest.mark.skipif(shutil.which("pdftoppm") is None and os.environ.get("CI") != "true",
                                    reason="pdftoppm (poppler-utils) is not installed")


@needs_pdftoppm
def test_the_printed_code_scans_as_the_transfer_of_the_amount_due(seller, tmp_path):
    invoice = open_invoice(seller, items=[adhoc("Design", 1234)])
    assert scanned(pdf_of(seller, invoice), tmp_path) == [payload("EUR12.34")]


@needs_pdftoppm
def test_after_a_part_payment_the_code_asks_for_what_remains(seller, tmp_path):
    invoice = open_invoice(seller, items=[adhoc("Design", 1234)])
    pdf_of(seller, invoice)  # the first one is kept
    paid_part(seller, invoice["id"], 1000)
    assert scanned(pdf_of(seller, invoice), tmp_path) == [payload("EUR2.34")]


def test_a_paid_invoice_has_no_code(seller):
    invoice = open_invoice(seller, items=[adhoc("Design", 1234)])
    assert pay(seller, invoice["id"]).status_code == 200
    assert images_on(pdf_of(seller, invoice)) == 0


def test_a_usd_invoice_has_no_code(tenant):
    invoice = open_invoice(tenant, items=[adhoc("Design", 1234)])
    assert images_on(pdf_of(tenant, invoice)) == 0


def test_the_public_page_shows_the_code_as_inline_svg(seller):
    invoice = open_invoice(seller, items=[adhoc("Design", 1234)])
    page = seller.client.get(f"/i/{invoice['public_url_token']}").text
    assert '<svg role="img" viewBox=' in page
    assert "<title>Scan to pay with your banking app</title>" in page
    assert "<img" not in page  # nothing the Content-Security-Policy would have to allow


def test_the_public_page_of_a_usd_invoice_has_no_code(tenant):
    invoice = open_invoice(tenant, items=[adhoc("Design", 1234)])
    page = tenant.client.get(f"/i/{invoice['public_url_token']}").text
    assert "<svg" not in page and "Scan to pay" not in page
