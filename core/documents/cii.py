"""UN/CEFACT Cross Industry Invoice (CII D16B) in the EN 16931 profile: the XML of Factur-X and
ZUGFeRD, and the CII syntax of EN 16931. A credit note is a CrossIndustryInvoice too, of TypeCode 381,
with the invoice it corrects as the settlement's `InvoiceReferencedDocument` (BG-3)."""

from __future__ import annotations

from datetime import date

from lxml import etree
from lxml.builder import ElementMaker

from core.documents import codes
from core.documents.en16931 import EInvoice, Line, Party, VatGroup, plain, present

RSM = "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"
RAM = "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100"
QDT = "urn:un:unece:uncefact:data:standard:QualifiedDataType:100"
UDT = "urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100"
GUIDELINE = "urn:cen.eu:en16931:2017"
MEDIA_TYPE = "application/xml"

_nsmap = {"rsm": RSM, "qdt": QDT, "ram": RAM, "udt": UDT}
rsm = ElementMaker(namespace=RSM, nsmap=_nsmap)
ram = ElementMaker(namespace=RAM, nsmap=_nsmap)
udt = ElementMaker(namespace=UDT, nsmap=_nsmap)
qdt = ElementMaker(namespace=QDT, nsmap=_nsmap)


def _day(maker, value: date):
    return maker(udt.DateTimeString(value.strftime("%Y%m%d"), format="102"))


def render(invoice: EInvoice) -> bytes:
    amount = invoice.amount
    document = rsm.CrossIndustryInvoice(
        rsm.ExchangedDocumentContext(ram.GuidelineSpecifiedDocumentContextParameter(ram.ID(GUIDELINE))),
        rsm.ExchangedDocument(
            ram.ID(invoice.number), ram.TypeCode(invoice.type_code), _day(ram.IssueDateTime, invoice.issue_date),
            *(ram.IncludedNote(ram.Content(note)) for note in invoice.notes),
        ),
        rsm.SupplyChainTradeTransaction(
            *(_line(line, invoice) for line in invoice.lines),
            ram.ApplicableHeaderTradeAgreement(*present(
                ram.BuyerReference(invoice.buyer_reference) if invoice.buyer_reference else None,
                _party(ram.SellerTradeParty, invoice.seller, seller=True),
                _party(ram.BuyerTradeParty, invoice.buyer, seller=False),
                ram.BuyerOrderReferencedDocument(ram.IssuerAssignedID(invoice.order_reference))
                if invoice.order_reference else None,
            )),
            ram.ApplicableHeaderTradeDelivery(*present(
                ram.ShipToTradeParty(ram.PostalTradeAddress(ram.CountryID(invoice.delivery_country)))
                if invoice.delivery_country else None,
                ram.ActualDeliverySupplyChainEvent(_day(ram.OccurrenceDateTime, invoice.delivery_date))
                if invoice.delivery_date else None,
            )),
            ram.ApplicableHeaderTradeSettlement(*present(
                ram.PaymentReference(invoice.payment.remittance) if invoice.payment else None,
                ram.InvoiceCurrencyCode(invoice.currency),
                _payment_means(invoice),
                *(_tax(group, invoice) for group in invoice.vat),
                ram.BillingSpecifiedPeriod(_day(ram.StartDateTime, invoice.period[0]),
                                           _day(ram.EndDateTime, invoice.period[1])) if invoice.period else None,
                ram.SpecifiedTradePaymentTerms(*present(
                    ram.Description(invoice.payment_terms) if invoice.payment_terms else None,
                    _day(ram.DueDateDateTime, invoice.due_date) if invoice.due_date else None,
                )) if invoice.payment_terms or invoice.due_date else None,
                ram.SpecifiedTradeSettlementHeaderMonetarySummation(*present(
                    ram.LineTotalAmount(amount(invoice.line_total)),
                    ram.TaxBasisTotalAmount(amount(invoice.tax_exclusive)),
                    ram.TaxTotalAmount(amount(invoice.tax_total), currencyID=invoice.currency),
                    ram.RoundingAmount(amount(invoice.rounding)) if invoice.rounding else None,
                    ram.GrandTotalAmount(amount(invoice.tax_inclusive)),
                    ram.TotalPrepaidAmount(amount(invoice.prepaid)) if invoice.prepaid else None,
                    ram.DuePayableAmount(amount(invoice.payable)),
                )),
                _invoice_reference(invoice),
            )),
        ),
    )
    return etree.tostring(document, xml_declaration=True, encoding="UTF-8", pretty_print=True)


def _invoice_reference(invoice: EInvoice):
    """BG-3: the invoice a credit note corrects, its number (BT-25) and issue date (BT-26)."""
    preceding = invoice.preceding
    if preceding is None:
        return None
    return ram.InvoiceReferencedDocument(*present(
        ram.IssuerAssignedID(preceding.number),
        ram.FormattedIssueDateTime(qdt.DateTimeString(preceding.issue_date.strftime("%Y%m%d"), format="102"))
        if preceding.issue_date else None,
    ))


def _line(line: Line, invoice: EInvoice):
    adjustments = []
    if line.allowance:
        adjustments.append(ram.SpecifiedTradeAllowanceCharge(*present(
            ram.ChargeIndicator(udt.Indicator("false")), ram.ActualAmount(invoice.adjustment(line.allowance)),
            ram.ReasonCode(codes.DISCOUNT_REASON) if line.allowance_reason == "Discount" else None,
            ram.Reason(line.allowance_reason))))
    if line.charge:
        adjustments.append(ram.SpecifiedTradeAllowanceCharge(
            ram.ChargeIndicator(udt.Indicator("true")), ram.ActualAmount(invoice.adjustment(line.charge)),
            ram.Reason("Rounding")))
    return ram.IncludedSupplyChainTradeLineItem(
        ram.AssociatedDocumentLineDocument(ram.LineID(line.id)),
        ram.SpecifiedTradeProduct(ram.Name(line.name)),
        ram.SpecifiedLineTradeAgreement(ram.NetPriceProductTradePrice(ram.ChargeAmount(plain(line.net_price)))),
        ram.SpecifiedLineTradeDelivery(ram.BilledQuantity(plain(line.quantity), unitCode=line.unit_code)),
        ram.SpecifiedLineTradeSettlement(
            ram.ApplicableTradeTax(*present(
                ram.TypeCode("VAT"), ram.CategoryCode(line.category),
                ram.RateApplicablePercent(plain(line.rate)) if line.rate is not None else None)),
            *adjustments,
            ram.SpecifiedTradeSettlementLineMonetarySummation(ram.LineTotalAmount(invoice.amount(line.net_amount))),
        ),
    )


def _party(maker, party: Party, *, seller: bool):
    address = party.address
    registrations = []
    if party.vat_id:
        registrations.append(ram.SpecifiedTaxRegistration(ram.ID(party.vat_id, schemeID="VA")))
    if seller and party.tax_registration:
        registrations.append(ram.SpecifiedTaxRegistration(ram.ID(party.tax_registration, schemeID="FC")))
    legal = None
    if party.legal_id or party.trade_name:
        scheme, identifier = party.legal_id or (None, None)
        legal = ram.SpecifiedLegalOrganization(*present(
            (ram.ID(identifier, schemeID=scheme) if scheme else ram.ID(identifier)) if identifier else None,
            ram.TradingBusinessName(party.trade_name) if party.trade_name else None))
    contact = None
    if seller and (party.phone or party.email):
        contact = ram.DefinedTradeContact(*present(
            ram.TelephoneUniversalCommunication(ram.CompleteNumber(party.phone)) if party.phone else None,
            ram.EmailURIUniversalCommunication(ram.URIID(party.email)) if party.email else None))
    return maker(*present(
        ram.GlobalID(party.identifier[1], schemeID=party.identifier[0]) if party.identifier else None,
        ram.Name(party.name),
        legal,
        contact,
        ram.PostalTradeAddress(*present(
            ram.PostcodeCode(address.postal_code) if address.postal_code else None,
            ram.LineOne(address.line1) if address.line1 else None,
            ram.LineTwo(address.line2) if address.line2 else None,
            ram.CityName(address.city) if address.city else None,
            ram.CountryID(address.country),
            ram.CountrySubDivisionName(address.region) if address.region else None,
        )),
        ram.URIUniversalCommunication(ram.URIID(party.endpoint[1], schemeID=party.endpoint[0]))
        if party.endpoint else None,
        *registrations,
    ))


def _payment_means(invoice: EInvoice):
    payment = invoice.payment
    if payment is None:
        return None
    iban = payment.means_code == "58"
    return ram.SpecifiedTradeSettlementPaymentMeans(*present(
        ram.TypeCode(payment.means_code),
        ram.PayeePartyCreditorFinancialAccount(*present(  # the schema's order: IBAN, name, other number
            ram.IBANID(payment.account) if iban else None,
            ram.AccountName(payment.account_name) if payment.account_name else None,
            None if iban else ram.ProprietaryID(payment.account))),
        ram.PayeeSpecifiedCreditorFinancialInstitution(ram.BICID(payment.provider)) if payment.provider else None,
    ))


def _tax(group: VatGroup, invoice: EInvoice):
    return ram.ApplicableTradeTax(*present(
        ram.CalculatedAmount(invoice.amount(group.tax)),
        ram.TypeCode("VAT"),
        ram.ExemptionReason(group.exemption_reason) if group.exemption_reason else None,
        ram.BasisAmount(invoice.amount(group.taxable)),
        ram.CategoryCode(group.category),
        ram.ExemptionReasonCode(group.exemption_code) if group.exemption_code else None,
        ram.RateApplicablePercent(plain(group.rate)) if group.rate is not None else None,
    ))
