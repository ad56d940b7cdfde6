"""Peppol BIS Billing 3.0: an invoice as a UBL 2.1 Invoice, a credit note as a UBL 2.1 CreditNote (type
381, its lines `CreditNoteLine` with `CreditedQuantity`, the invoice it corrects as `BillingReference`),
in Peppol's profile of EN 16931."""

from __future__ import annotations

from decimal import Decimal

from lxml import etree
from lxml.builder import ElementMaker

from core.documents import codes
from core.documents.en16931 import EInvoice, Line, Party, VatGroup, plain, present

UBL = "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"
UBL_CREDIT_NOTE = "urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2"
CAC = "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2"
CBC = "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2"
CUSTOMIZATION = "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0"
PROFILE = "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0"
MEDIA_TYPE = "application/xml"

_nsmap = {"cac": CAC, "cbc": CBC}
root = ElementMaker(namespace=UBL, nsmap={None: UBL, **_nsmap})
credit_note_root = ElementMaker(namespace=UBL_CREDIT_NOTE, nsmap={None: UBL_CREDIT_NOTE, **_nsmap})
cac = ElementMaker(namespace=CAC, nsmap=_nsmap)
cbc = ElementMaker(namespace=CBC, nsmap=_nsmap)


def render(invoice: EInvoice) -> bytes:
    money = _Money(invoice)
    credit_note = invoice.is_credit_note
    document = (credit_note_root.CreditNote if credit_note else root.Invoice)(*present(
        cbc.CustomizationID(CUSTOMIZATION),
        cbc.ProfileID(PROFILE),
        cbc.ID(invoice.number),
        cbc.IssueDate(invoice.issue_date.isoformat()),
        # A UBL 2.1 CreditNote has no DueDate (nor does a credit note have one: BT-9 is for payment).
        cbc.DueDate(invoice.due_date.isoformat()) if invoice.due_date and not credit_note else None,
        (cbc.CreditNoteTypeCode if credit_note else cbc.InvoiceTypeCode)(invoice.type_code),
        # PEPPOL-EN16931-R002: one note (two only between German parties).
        cbc.Note("\n\n".join(invoice.notes)) if invoice.notes else None,
        cbc.DocumentCurrencyCode(invoice.currency),
        cbc.BuyerReference(invoice.buyer_reference) if invoice.buyer_reference else None,
        cac.InvoicePeriod(cbc.StartDate(invoice.period[0].isoformat()), cbc.EndDate(invoice.period[1].isoformat()))
        if invoice.period else None,
        cac.OrderReference(cbc.ID(invoice.order_reference)) if invoice.order_reference else None,
        _billing_reference(invoice),
        cac.AccountingSupplierParty(_party(invoice.seller, seller=True)),
        cac.AccountingCustomerParty(_party(invoice.buyer, seller=False)),
        _delivery(invoice),
        _payment_means(invoice),
        cac.PaymentTerms(cbc.Note(invoice.payment_terms)) if invoice.payment_terms else None,
        cac.TaxTotal(money.tag(cbc.TaxAmount, invoice.tax_total), *(_subtotal(group, money) for group in invoice.vat)),
        cac.LegalMonetaryTotal(*present(
            money.tag(cbc.LineExtensionAmount, invoice.line_total),
            money.tag(cbc.TaxExclusiveAmount, invoice.tax_exclusive),
            money.tag(cbc.TaxInclusiveAmount, invoice.tax_inclusive),
            money.tag(cbc.PrepaidAmount, invoice.prepaid) if invoice.prepaid else None,
            money.tag(cbc.PayableRoundingAmount, invoice.rounding) if invoice.rounding else None,
            money.tag(cbc.PayableAmount, invoice.payable),
        )),
        *(_line(line, money, credit_note=credit_note) for line in invoice.lines),
    ))
    return etree.tostring(document, xml_declaration=True, encoding="UTF-8", pretty_print=True)


class _Money:
    def __init__(self, invoice: EInvoice) -> None:
        self.invoice = invoice

    def tag(self, maker, value: Decimal):
        return maker(self.invoice.amount(value), currencyID=self.invoice.currency)

    def adjustment(self, maker, value: Decimal):
        return maker(self.invoice.adjustment(value), currencyID=self.invoice.currency)


def _billing_reference(invoice: EInvoice):
    """BG-3: the invoice a credit note corrects, its number (BT-25) and issue date (BT-26)."""
    preceding = invoice.preceding
    if preceding is None:
        return None
    return cac.BillingReference(cac.InvoiceDocumentReference(*present(
        cbc.ID(preceding.number),
        cbc.IssueDate(preceding.issue_date.isoformat()) if preceding.issue_date else None,
    )))


def _party(party: Party, *, seller: bool):
    address = party.address
    return cac.Party(*present(
        cbc.EndpointID(party.endpoint[1], schemeID=party.endpoint[0]) if party.endpoint else None,
        cac.PartyIdentification(cbc.ID(party.identifier[1], schemeID=party.identifier[0])) if party.identifier else None,
        cac.PartyName(cbc.Name(party.trade_name)) if party.trade_name else None,
        cac.PostalAddress(*present(
            cbc.StreetName(address.line1) if address.line1 else None,
            cbc.AdditionalStreetName(address.line2) if address.line2 else None,
            cbc.CityName(address.city) if address.city else None,
            cbc.PostalZone(address.postal_code) if address.postal_code else None,
            cbc.CountrySubentity(address.region) if address.region else None,
            cac.Country(cbc.IdentificationCode(address.country)),
        )),
        cac.PartyTaxScheme(cbc.CompanyID(party.vat_id), cac.TaxScheme(cbc.ID("VAT"))) if party.vat_id else None,
        cac.PartyTaxScheme(cbc.CompanyID(party.tax_registration), cac.TaxScheme(cbc.ID("TAX")))
        if seller and party.tax_registration else None,
        cac.PartyLegalEntity(*present(
            cbc.RegistrationName(party.name),
            _company_id(party.legal_id),
        )),
        cac.Contact(*present(cbc.Telephone(party.phone) if party.phone else None,
                              cbc.ElectronicMail(party.email) if party.email else None))
        if party.phone or party.email else None,
    ))


def _company_id(legal_id):
    if legal_id is None:
        return None
    scheme, identifier = legal_id
    return cbc.CompanyID(identifier, schemeID=scheme) if scheme else cbc.CompanyID(identifier)


def _delivery(invoice: EInvoice):
    if invoice.delivery_date is None and invoice.delivery_country is None:
        return None
    return cac.Delivery(*present(
        cbc.ActualDeliveryDate(invoice.delivery_date.isoformat()) if invoice.delivery_date else None,
        cac.DeliveryLocation(cac.Address(cac.Country(cbc.IdentificationCode(invoice.delivery_country))))
        if invoice.delivery_country else None,
    ))


def _payment_means(invoice: EInvoice):
    payment = invoice.payment
    if payment is None:
        return None
    return cac.PaymentMeans(
        cbc.PaymentMeansCode(payment.means_code),
        cbc.PaymentID(payment.remittance),
        cac.PayeeFinancialAccount(*present(
            cbc.ID(payment.account),
            cbc.Name(payment.account_name) if payment.account_name else None,
            cac.FinancialInstitutionBranch(cbc.ID(payment.provider)) if payment.provider else None,
        )),
    )


def _tax_category(maker, category: str, rate: Decimal | None, *, code: str | None = None, reason: str | None = None):
    return maker(*present(
        cbc.ID(category),
        cbc.Percent(plain(rate)) if rate is not None else None,
        cbc.TaxExemptionReasonCode(code) if code else None,
        cbc.TaxExemptionReason(reason) if reason else None,
        cac.TaxScheme(cbc.ID("VAT")),
    ))


def _subtotal(group: VatGroup, money: _Money):
    return cac.TaxSubtotal(
        money.tag(cbc.TaxableAmount, group.taxable),
        money.tag(cbc.TaxAmount, group.tax),
        _tax_category(cac.TaxCategory, group.category, group.rate, code=group.exemption_code,
                      reason=group.exemption_reason),
    )


def _line(line: Line, money: _Money, *, credit_note: bool):
    return (cac.CreditNoteLine if credit_note else cac.InvoiceLine)(*present(
        cbc.ID(line.id),
        (cbc.CreditedQuantity if credit_note else cbc.InvoicedQuantity)(plain(line.quantity), unitCode=line.unit_code),
        money.tag(cbc.LineExtensionAmount, line.net_amount),
        cac.AllowanceCharge(cbc.ChargeIndicator("false"),
                            *present(cbc.AllowanceChargeReasonCode(codes.DISCOUNT_REASON)
                                      if line.allowance_reason == "Discount" else None),
                            cbc.AllowanceChargeReason(line.allowance_reason),
                            money.adjustment(cbc.Amount, line.allowance)) if line.allowance else None,
        cac.AllowanceCharge(cbc.ChargeIndicator("true"), cbc.AllowanceChargeReason("Rounding"),
                            money.adjustment(cbc.Amount, line.charge)) if line.charge else None,
        cac.Item(cbc.Name(line.name), _tax_category(cac.ClassifiedTaxCategory, line.category, line.rate)),
        cac.Price(cbc.PriceAmount(plain(line.net_price), currencyID=money.invoice.currency)),
    ))
