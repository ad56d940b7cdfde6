"""The payment means of an e-invoice (BG-16): an account number that is a valid IBAN is a SEPA credit
transfer to the compact IBAN; any other account number is a credit transfer to the account as written."""

from __future__ import annotations

from lxml import etree

from tests.api.invoicing import adhoc
from tests.conftest import make_tenant
from tests.einvoices.test_spread import DE_SELLER, e_invoice, issued

UBL = {"cac": "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2",
       "cbc": "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2"}


def payment_means(client, account_number: str) -> tuple[str, str]:
    """The means code (BT-81) and the account (BT-84) of the Peppol e-invoice of a seller paid to `account_number`."""
    seller = make_tenant(client, business=DE_SELLER | {"bank": DE_SELLER["bank"] | {"account_number": account_number,
                                                                                     "routing_number": None}})
    invoice = issued(seller, [adhoc("Design", 10000, tax_rate=19)])
    document = etree.fromstring(e_invoice(seller, invoice["id"], "peppol").content)
    return (document.findtext("cac:PaymentMeans/cbc:PaymentMeansCode", namespaces=UBL),
            document.findtext("cac:PaymentMeans/cac:PayeeFinancialAccount/cbc:ID", namespaces=UBL))


def test_an_iban_is_a_sepa_credit_transfer_to_the_compact_iban(client):
    assert payment_means(client, "de89 3704 0044 0532 0130 00") == ("58", "DE89370400440532013000")


def test_another_account_number_is_a_credit_transfer_as_written(client):
    assert payment_means(client, "12345678") == ("30", "12345678")
