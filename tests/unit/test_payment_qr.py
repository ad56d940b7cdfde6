"""core.billing.payment_qr: which invoices get an EPC069-12 payment code, and what it holds."""

from __future__ import annotations

import io

import pytest
import zxingcpp
from PIL import Image

from core.billing import payment_qr

IBAN = "DE89370400440532013000"


def view(**fields) -> dict:
    """An open EUR invoice as the API shows it (the parts the code reads)."""
    bank = {"bank_name": "Musterbank", "account_name": "Muster Handel GmbH",
            "account_number": "DE89 3704 0044 0532 0130 00", "routing_number": "COBADEFFXXX"}
    issuer = {"legal_name": "Muster Handel GmbH", "trade_name": "Muster", "bank": bank | fields.pop("bank", {})}
    return {"object": "invoice", "number": "RE-0007", "status": "open", "currency": "EUR", "amount_due": 1234,
            "issuer": issuer | fields.pop("issuer", {}), **fields}


def lines(**fields) -> list[str]:
    payload = payment_qr.epc_payload(view(**fields))
    assert payload is not None
    return payload.split("\n")


def test_payload_of_an_open_eur_invoice():
    assert payment_qr.epc_payload(view()) == (
        "BCD\n002\n1\nSCT\nCOBADEFFXXX\nMuster Handel GmbH\nDE89370400440532013000\nEUR12.34\n\n\nRE-0007")


def test_the_code_holds_the_payload():
    code = payment_qr.epc_qr(view())
    decoded = zxingcpp.read_barcodes(Image.open(io.BytesIO(payment_qr.png(code))))
    assert [result.text for result in decoded] == [payment_qr.epc_payload(view())]


def test_overdue_invoices_get_a_code():
    assert payment_qr.epc_payload(view(status="overdue")) is not None


def test_the_amount_is_what_remains_due():
    assert lines(amount_due=50)[7] == "EUR0.5"


@pytest.mark.parametrize("currency", ["USD", "GBP", "CHF"])
def test_no_code_in_another_currency(currency):
    assert payment_qr.epc_qr(view(currency=currency)) is None


@pytest.mark.parametrize("account", ["12345678", "GB82 WEST 1234 5698 7654 33", None])
def test_no_code_without_a_valid_iban(account):
    assert payment_qr.epc_qr(view(bank={"account_number": account})) is None


def test_an_iban_in_sepa_outside_the_eea_needs_the_bic():
    swiss = "CH93 0076 2011 6238 5295 7"
    assert payment_qr.epc_qr(view(bank={"account_number": swiss, "routing_number": None})) is None
    with_bic = payment_qr.epc_payload(view(bank={"account_number": swiss, "routing_number": "UBSWCHZH80A"}))
    assert with_bic.split("\n")[4:7] == ["UBSWCHZH80A", "Muster Handel GmbH", "CH9300762011623852957"]


def test_within_the_eea_the_bic_is_optional():
    assert lines(bank={"routing_number": None})[4] == ""


def test_no_code_for_an_iban_outside_the_sepa_zone():
    brazil = "BR18 0036 0305 0000 1000 9795 493C 1"
    assert payment_qr.epc_qr(view(bank={"account_number": brazil, "routing_number": None})) is None


@pytest.mark.parametrize("status", ["draft", "paid", "void"])
def test_no_code_unless_open_or_overdue(status):
    assert payment_qr.epc_qr(view(status=status)) is None


def test_no_code_when_nothing_is_due():
    assert payment_qr.epc_qr(view(amount_due=0)) is None


def test_no_code_beyond_the_epc_maximum():
    assert payment_qr.epc_qr(view(amount_due=99_999_999_999 + 1)) is None


def test_no_code_on_a_credit_note():
    assert payment_qr.epc_qr(view(object="credit_note")) is None


@pytest.mark.parametrize("routing", [None, "", "12-34-56"])
def test_bic_is_left_out_when_not_given_or_not_a_bic(routing):
    assert lines(bank={"routing_number": routing})[4] == ""


def test_the_iban_is_compact_and_upper_case():
    assert lines(bank={"account_number": "de89 3704 0044 0532 0130 00"})[6] == IBAN


def test_the_name_is_the_issuers_legal_name_without_an_account_name():
    assert lines(bank={"account_name": None}, issuer={"legal_name": "Muster Handel GmbH & Co. KG"})[5] == \
        "Muster Handel GmbH & Co. KG"


def test_long_names_are_cut_to_70_characters_at_a_word():
    name = "Internationale Handelsgesellschaft für Maschinenbau und Anlagentechnologie GmbH"  # 79 characters
    assert lines(bank={"account_name": name})[5] == "Internationale Handelsgesellschaft für Maschinenbau und"


def test_a_long_name_without_spaces_is_cut_at_70():
    assert lines(bank={"account_name": "A" * 100})[5] == "A" * 70


def test_the_remittance_is_the_number_as_unstructured_text():
    payload = lines()
    assert (payload[9], payload[10]) == ("", "RE-0007")  # no ISO 11649 reference, the number as text


def test_the_svg_is_an_image_named_by_its_caption():
    markup = payment_qr.svg(payment_qr.epc_qr(view()))
    assert markup.startswith('<svg role="img" ')
    assert f"<title>{payment_qr.CAPTION}</title>" in markup


def test_a_name_too_long_in_bytes_is_cut_to_fit_the_payload():
    name = "😀" * 70  # four bytes each: 280 bytes, more than the payload's 331 bytes leave for it
    payload = payment_qr.epc_payload(view(bank={"account_name": name}))
    assert len(payload.encode()) <= 331 and payload.split("\n")[5] == "😀" * len(payload.split("\n")[5])
    assert payment_qr.epc_qr(view(bank={"account_name": name})) is not None
