"""An invoice or a credit note as the business terms of EN 16931 (BT-…), computed once for every format.

`build(view)` takes the document as the API shows it and returns an `EInvoice`, or raises
`ValidationFailed` naming the field to fill in and the business term that needs it:
- an invoice (`view_invoice`: the snapshots of a finalized invoice, its lines) is a commercial
  invoice, type 380;
- a credit note (`credit_notes.e_invoice_view`: `object` "credit_note", with `corrected_invoice`) is a
  credit note, type 381, naming the invoice it corrects (BG-3: BT-25 number, BT-26 issue date). Its
  amounts are positive, as EN 16931 wants them on a 381; a line credited by amount (no quantity) is
  one unit at that amount. Nothing is paid on it in advance, so the amount due (BT-115) is its total,
  and its payment terms (BT-20) say where that went (taken off the invoice, refunded, or credited to
  the customer's balance).
Both go through the same code: parties, lines, VAT breakdown and totals are the same business terms.
`for_peppol` adds what Peppol BIS Billing 3.0 requires on top.

Amounts are `Decimal` in major units with the currency's own decimals (EN 16931 allows at most two).
VAT per category is computed from the category's taxable amount, as BR-CO-17 states it; the service
rounds tax per line, so where the two differ by a currency unit or more the difference is the
rounding amount BT-114, and the amount due (BT-115) is always the document's own.

On an invoice, the paid amount (BT-113) is the customer's credit balance applied when it was
finalized (`balance_applied`), or, once it is paid, all of its total that credit notes did not take
off: what later credit notes take off an invoice is theirs to say, never a change to its e-invoice.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import date
from decimal import ROUND_HALF_UP, Decimal

from core.base.electronic_addresses import EAS_OF_VAT_PREFIX, derived_from_vat, parse_peppol_id, vat_number
from core.base.errors import FieldError
from core.base.money import currency_exponent, format_money
from core.base.validation import failed
from core.billing.bank_account import iban_of
from core.billing.invoice_lines import EXEMPTION_DEFAULTS, given_exemption_reasons
from core.billing.presentation import country_code, reason_text, settlement_rows
from core.documents import codes

CENT = Decimal("0.01")
# Schemes of company registers: an electronic address of one names the legal entity too (BT-30, BT-47).
LEGAL_SCHEMES = frozenset({"0002", "0007", "0009", "0037", "0060", "0096", "0106", "0130", "0135", "0142", "0151",
                           "0183", "0184", "0190", "0192", "0193", "0195", "0196", "0199", "0200", "0208", "0211",
                           "0213", "0218", "0221", "0230", "0235"})


@dataclass(frozen=True)
class Address:
    line1: str | None
    line2: str | None
    city: str | None
    postal_code: str | None
    region: str | None
    country: str  # ISO 3166-1 alpha-2


@dataclass(frozen=True)
class Party:
    name: str  # BT-27 / BT-44
    trade_name: str | None  # BT-28 / BT-45
    address: Address  # BG-5 / BG-8
    vat_id: str | None  # BT-31 / BT-48
    tax_registration: str | None  # BT-32 (the seller's tax number where there is no VAT number)
    legal_id: tuple[str | None, str] | None  # BT-30 / BT-47 (scheme, identifier)
    identifier: tuple[str, str] | None  # BT-29 / BT-46 (scheme, identifier)
    endpoint: tuple[str, str] | None  # BT-34 / BT-49 (scheme, identifier)
    email: str | None = None
    phone: str | None = None


@dataclass(frozen=True)
class Line:
    id: str  # BT-126
    name: str  # BT-153
    quantity: Decimal  # BT-129
    unit_code: str  # BT-130
    net_price: Decimal  # BT-146
    net_amount: Decimal  # BT-131
    allowance: Decimal  # BT-136 (a discount, or rounding); 0 for none
    allowance_reason: str | None
    charge: Decimal  # BT-141 (rounding only); 0 for none
    category: str  # BT-151
    rate: Decimal | None  # BT-152; None for O


@dataclass(frozen=True)
class VatGroup:
    category: str  # BT-118
    rate: Decimal | None  # BT-119; None for O
    taxable: Decimal  # BT-116
    tax: Decimal  # BT-117
    exemption_code: str | None  # BT-121
    exemption_reason: str | None  # BT-120


@dataclass(frozen=True)
class Payment:
    means_code: str  # BT-81
    account: str  # BT-84
    account_name: str | None  # BT-85
    provider: str | None  # BT-86
    remittance: str  # BT-83


@dataclass(frozen=True)
class PrecedingInvoice:
    """BG-3: the invoice a credit note corrects."""

    number: str  # BT-25
    issue_date: date | None  # BT-26


@dataclass(frozen=True)
class EInvoice:
    number: str  # BT-1
    issue_date: date  # BT-2
    due_date: date | None  # BT-9
    currency: str  # BT-5
    decimals: int  # of the currency's amounts
    notes: list[str]  # BT-22
    buyer_reference: str | None  # BT-10
    order_reference: str | None  # BT-13
    seller: Party
    buyer: Party
    delivery_date: date | None  # BT-72
    delivery_country: str | None  # BT-80
    period: tuple[date, date] | None  # BG-14: the invoicing period's start (BT-73) and end (BT-74)
    payment: Payment | None  # BG-16
    payment_terms: str | None  # BT-20
    lines: list[Line]
    vat: list[VatGroup]
    line_total: Decimal  # BT-106
    tax_exclusive: Decimal  # BT-109
    tax_total: Decimal  # BT-110
    tax_inclusive: Decimal  # BT-112
    prepaid: Decimal  # BT-113
    rounding: Decimal  # BT-114
    payable: Decimal  # BT-115
    invoice_id: str = ""  # ours (in_… or cn_…), for file names
    type_code: str = codes.COMMERCIAL_INVOICE  # BT-3
    preceding: PrecedingInvoice | None = None  # BG-3, on a credit note
    warnings: list[str] = field(default_factory=list)

    @property
    def is_credit_note(self) -> bool:
        return self.type_code == codes.CREDIT_NOTE

    @property
    def title(self) -> str:
        """What the document is called: "Invoice" or "Credit note"."""
        return "Credit note" if self.is_credit_note else "Invoice"

    def amount(self, value: Decimal) -> str:
        """An amount as the documents write it: the currency's decimals (at most two)."""
        return f"{value:.{self.decimals}f}"

    def adjustment(self, value: Decimal) -> str:
        """A line's allowance or charge, which may carry cents even in a currency without them (rounding)."""
        return f"{value:.2f}" if value != value.to_integral_value() else self.amount(value)


def plain(value: Decimal) -> str:
    """A quantity, price or rate as the documents write it: no exponent, no trailing zeros (`2`, `1.5`)."""
    return f"{value.normalize():f}"


def present(*children):
    """The children that are there (a builder argument of None is left out, never written empty)."""
    return [child for child in children if child is not None]


def _major(minor: int, decimals: int) -> Decimal:
    return Decimal(minor).scaleb(-decimals)


def _round(value: Decimal, decimals: int) -> Decimal:
    return value.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)


def build(view: dict) -> EInvoice:
    """The business terms of a finalized invoice (`view_invoice`) or of a credit note
    (`credit_notes.e_invoice_view`), or ValidationFailed naming what must be filled in first."""
    errors: list[FieldError] = []
    currency = view["currency"]
    decimals = currency_exponent(currency)
    if decimals > 2:
        errors.append(FieldError("currency", f"BT-5: an e-invoice writes amounts with at most two decimals, and "
                                             f"{currency} has {decimals}; invoice in another currency"))
    issuer, customer = view.get("issuer") or {}, view.get("customer_details") or {}
    seller = _seller(issuer, errors)
    credit_note = is_credit_note(view)
    lines_data = [_as_credited(line) if credit_note else line for line in (view.get("lines") or {}).get("data") or []]
    not_subject = any(line.get("tax_category") == "O" for line in lines_data)
    categories = [_category(line, seller, not_subject) for line in lines_data]
    uses_o = "O" in categories
    if uses_o:
        seller = _not_subject(seller)
    buyer = _buyer(customer, errors, uses_o=uses_o)
    if not lines_data:
        errors.append(FieldError("lines", "BG-25: an e-invoice has at least one line"))
    if errors:
        raise failed(errors)
    lines = [_line(index, line, category, decimals)
             for index, (line, category) in enumerate(zip(lines_data, categories, strict=True))]
    _check_parties(categories, seller, buyer, errors)
    if errors:
        raise failed(errors)
    vat = _vat_groups(lines_data, lines, decimals)
    line_total = sum((line.net_amount for line in lines), Decimal(0))
    tax_total = sum((group.tax for group in vat), Decimal(0))
    total = _major(view["total"], decimals)
    inclusive = line_total + tax_total
    intra_community = "K" in categories
    kind = _credit_note_terms(view, decimals) if credit_note else _invoice_terms(view, issuer, decimals)
    return EInvoice(
        number=view["number"], issue_date=_date(view["issue_date"]), due_date=kind.due_date,
        currency=currency, decimals=decimals, notes=kind.notes,
        buyer_reference=kind.buyer_reference, order_reference=kind.order_reference,
        seller=seller, buyer=buyer,
        delivery_date=_date(view["issue_date"]) if intra_community else None,  # BR-IC-11: the supply's date
        delivery_country=buyer.address.country if intra_community else None,  # BR-IC-12
        period=_period(view.get("period")),
        payment=kind.payment, payment_terms=kind.payment_terms,
        lines=lines, vat=vat, line_total=line_total, tax_exclusive=line_total, tax_total=tax_total,
        tax_inclusive=inclusive, prepaid=kind.prepaid, rounding=total - inclusive, payable=total - kind.prepaid,
        invoice_id=view.get("id") or "", type_code=kind.type_code, preceding=kind.preceding,
    )


def _period(period: dict | None) -> tuple[date, date] | None:
    """BG-14 of an invoice a schedule made: the days it bills."""
    if not period:
        return None
    return _date(period["start"]), _date(period["end"])


def is_credit_note(view: dict) -> bool:
    return view.get("object") == "credit_note"


@dataclass(frozen=True)
class _Kind:
    """What an invoice and a credit note say differently; the rest is the same business terms."""

    type_code: str  # BT-3
    due_date: date | None  # BT-9
    notes: list[str]  # BT-22
    buyer_reference: str | None  # BT-10
    order_reference: str | None  # BT-13
    payment: Payment | None  # BG-16
    payment_terms: str | None  # BT-20
    prepaid: Decimal  # BT-113
    preceding: PrecedingInvoice | None  # BG-3


def _invoice_terms(view: dict, issuer: dict, decimals: int) -> _Kind:
    total, credited = view["total"], view.get("amount_credited") or 0
    # BT-113: the balance applied at finalization was paid in advance; a paid invoice was paid all that
    # credit notes did not take off (which they did, not a payment: the invoice's own amounts stand).
    paid = total - credited if view.get("status") == "paid" else view.get("balance_applied") or 0
    return _Kind(
        type_code=codes.COMMERCIAL_INVOICE, due_date=_date(view.get("due_date")),
        notes=[text for text in (view.get("description"), view.get("footer")) if text],
        buyer_reference=view.get("buyer_reference"), order_reference=view.get("order_reference"),
        payment=_payment(issuer.get("bank") or {}, view["number"]),
        payment_terms=f"Payment due by {view['due_date']}" if view.get("due_date") else "Payment due on receipt",
        prepaid=_major(max(paid, 0), decimals), preceding=None)


def _credit_note_terms(view: dict, decimals: int) -> _Kind:
    corrected = view.get("corrected_invoice") or {}
    number = corrected.get("number") or view.get("invoice_number")
    issued = corrected.get("issue_date") or view.get("invoice_issue_date")
    reason = reason_text(view)
    notes = [text for text in (f"Reason: {reason}" if reason else None, view.get("memo")) if text]
    # BR-CO-25: an amount due above 0 has a due date or payment terms; a credit note's is what it
    # credits, and its terms say where that goes. No payment means: the seller collects nothing.
    settled = "; ".join(f"{label}: {format_money(amount, view['currency'])}" for label, amount in settlement_rows(view))
    return _Kind(
        type_code=codes.CREDIT_NOTE, due_date=None, notes=notes,
        buyer_reference=corrected.get("buyer_reference"), order_reference=corrected.get("order_reference"),
        payment=None, payment_terms=settled or f"Credited against invoice {number}",
        prepaid=Decimal(0), preceding=PrecedingInvoice(number=number, issue_date=_date(issued)))


def _as_credited(line: dict) -> dict:
    """A credit note's line as an invoice line reads: one credited by amount (no quantity, and every
    line of its own) is one unit at that amount, with no discount (the amount is after it)."""
    if line.get("quantity") is not None and line.get("unit_amount") is not None:
        return line
    return {**line, "quantity": 1, "unit_amount": line["amount"], "discount_percent": 0}


def _date(value: object) -> date | None:
    if value is None or isinstance(value, date):
        return value
    return date.fromisoformat(str(value)[:10])


def _text(value: object) -> str | None:
    return str(value).strip() or None if value is not None else None


def _address(data: dict, country: str | None) -> Address:
    return Address(line1=_text(data.get("line1")), line2=_text(data.get("line2")), city=_text(data.get("city")),
                   postal_code=_text(data.get("postal_code")), region=_text(data.get("region") or data.get("state")),
                   country=country or "")


def _endpoint(peppol_id: str | None) -> tuple[str, str] | None:
    if not peppol_id:
        return None
    try:
        return parse_peppol_id(peppol_id)
    except ValueError:  # stored before it was checked: treated as none
        return None


def _vat(tax_id: object, country: str | None) -> str | None:
    """A tax id as a VAT number with its country prefix: as written (`DE123456789`), or, in a country
    of VAT numbers, with the prefix added (`123456789` in Germany is DE123456789; Greece writes EL)."""
    if not tax_id:
        return None
    number = vat_number(str(tax_id))
    if number:
        return number
    prefix = "EL" if country == "GR" else country
    return vat_number(f"{prefix}{tax_id}") if prefix in EAS_OF_VAT_PREFIX else None


def _seller(issuer: dict, errors: list[FieldError]) -> Party:
    address = issuer.get("address") or {}
    country = country_code(address.get("country_code")) or country_code(issuer.get("country_code"))
    if not country:
        errors.append(FieldError("business.country_code", "BT-40: the seller's country is required"))
    endpoint = _endpoint(issuer.get("peppol_id"))
    tax_id = _text(issuer.get("tax_id"))
    vat = _vat(tax_id, country)
    registration = tax_id if tax_id and not vat else None  # a tax number of a country without VAT numbers
    legal = endpoint if endpoint and endpoint[0] in LEGAL_SCHEMES else None
    identifier = endpoint if endpoint and not endpoint[0].startswith("99") else None
    if registration and not legal:
        legal = (None, registration)  # BR-CO-26: the seller is named by BT-29, BT-30 or BT-31
    if not vat and not legal and not identifier:
        errors.append(FieldError("business.tax_id", "BT-31: an e-invoice names its seller by VAT number (or BT-30 "
                                                    "legal registration, BT-29 identifier): set the business's tax id "
                                                    "or Peppol id"))
    return Party(name=issuer.get("legal_name") or "", trade_name=issuer.get("trade_name"),
                 address=_address(address, country), vat_id=vat, tax_registration=registration, legal_id=legal,
                 identifier=identifier, endpoint=endpoint or derived_from_vat(vat), email=issuer.get("email"),
                 phone=issuer.get("phone"))


def _not_subject(seller: Party) -> Party:
    """BR-O-02: an invoice not subject to VAT names no seller VAT number (BT-31); a registered seller's
    number names it as its tax registration (BT-32) and, lacking a register's id, its legal id (BT-30)."""
    if not seller.vat_id:
        return seller
    return replace(seller, vat_id=None, tax_registration=seller.vat_id,
                   legal_id=seller.legal_id or (None, seller.vat_id))


def _buyer(customer: dict, errors: list[FieldError], *, uses_o: bool) -> Party:
    address = customer.get("address") or {}
    country = country_code(address.get("country"))
    if not country:
        errors.append(FieldError("customer.address.country", "BT-55: the buyer's country is required (a country name "
                                                             "or its two-letter code)"))
    tax_id = _text(customer.get("tax_id"))
    vat = _vat(tax_id, country)
    endpoint = _endpoint(customer.get("peppol_id")) or derived_from_vat(vat)
    legal = endpoint if endpoint and endpoint[0] in LEGAL_SCHEMES else None
    if tax_id and (not vat or uses_o):  # BR-O-02: no buyer VAT number on an invoice not subject to VAT
        legal, vat = legal or (None, tax_id), None
    return Party(name=customer.get("name") or "", trade_name=None, address=_address(address, country), vat_id=vat,
                 tax_registration=None, legal_id=legal, identifier=None, endpoint=endpoint,
                 email=customer.get("email"))


def _category(line: dict, seller: Party, not_subject: bool) -> str:
    """The line's VAT category: as chosen; else S above 0 %, and for 0 % not subject to VAT on an
    invoice that has a line chosen as such (the lines accepted at finalize can only be 0 % then:
    `check_tax_categories`) or from a seller not registered for tax, zero-rated otherwise."""
    chosen = line.get("tax_category")
    if chosen:
        return chosen
    if Decimal(str(line["tax_rate"])) > 0:
        return "S"
    return "O" if not_subject or not (seller.vat_id or seller.tax_registration) else "Z"


def _check_parties(categories: list[str], seller: Party, buyer: Party, errors: list[FieldError]) -> None:
    used = set(categories)
    if "O" in used and len(used) > 1:
        index = categories.index("O")
        errors.append(FieldError(f"lines.{index}.tax_category", "BR-O-11: not subject to VAT (O) cannot share an "
                                                                "e-invoice with other VAT categories"))
    needs_seller = sorted(used & codes.NEEDS_SELLER_VAT)
    if needs_seller and not seller.vat_id and not seller.tax_registration:
        names = ", ".join(f"{c} ({codes.CATEGORY_NAMES[c]})" for c in needs_seller)
        errors.append(FieldError("business.tax_id", f"BT-31: lines of VAT category {names} need the seller's VAT "
                                                    "number (such as DE123456789)"))
    for category in sorted(used & codes.NEEDS_BUYER_VAT):
        if not buyer.vat_id:
            errors.append(FieldError("customer.tax_id", f"BT-48: lines of VAT category {category} "
                                                        f"({codes.CATEGORY_NAMES[category]}) need the customer's VAT "
                                                        "number"))


def _line(index: int, line: dict, category: str, decimals: int) -> Line:
    quantity = Decimal(str(line["quantity"]))
    price = _major(line["unit_amount"], decimals)
    net = _major(line["amount"], decimals)
    # Quantity × price less the line's allowance is its net amount (PEPPOL-EN16931-R120, within 0.02):
    # the allowance is the discount, to the cent; a line whose product has more decimals than the
    # currency (1.5 × 333 JPY) is squared by a rounding allowance or charge.
    difference = (quantity * price - net).quantize(CENT, rounding=ROUND_HALF_UP)
    discounted = Decimal(str(line.get("discount_percent") or 0)) > 0
    rate = None if category == "O" else Decimal(str(line["tax_rate"]))
    return Line(id=str(index + 1), name=(line.get("description") or "").strip() or "Item", quantity=quantity,
                unit_code=codes.UNIT_CODES.get(line.get("unit") or "NOS", "C62"), net_price=price, net_amount=net,
                allowance=max(difference, Decimal(0)),
                allowance_reason=("Discount" if discounted else "Rounding") if difference > 0 else None,
                charge=max(-difference, Decimal(0)), category=category, rate=rate)


def _vat_groups(lines_data: list[dict], lines: list[Line], decimals: int) -> list[VatGroup]:
    groups: dict[tuple[str, Decimal | None], list[int]] = {}
    for index, line in enumerate(lines):
        groups.setdefault((line.category, line.rate), []).append(index)
    given_reasons = given_exemption_reasons(lines_data)
    result = []
    for (category, rate), members in groups.items():
        taxable = sum((lines[i].net_amount for i in members), Decimal(0))
        tax = Decimal(0)
        if category == "S":
            exact = (taxable * rate / 100).quantize(CENT, rounding=ROUND_HALF_UP)
            ours = _major(sum(lines_data[i]["tax_amount"] for i in members), decimals)
            # BR-CO-17 accepts the category's tax within one currency unit of taxable × rate.
            tax = ours if abs(ours - exact) < 1 else _round(taxable * rate / 100, decimals)
        code, reason = None, None
        if category in EXEMPTION_DEFAULTS:
            given = given_reasons.get(category)
            default_code, default_reason = EXEMPTION_DEFAULTS[category]
            code = default_code if not given or category != "E" else None
            reason = given or default_reason
        result.append(VatGroup(category=category, rate=rate, taxable=taxable, tax=tax, exemption_code=code,
                               exemption_reason=reason))
    return result


def _payment(bank: dict, number: str) -> Payment | None:
    account = _text(bank.get("account_number"))
    if not account:
        return None
    iban = iban_of(account)
    return Payment(means_code=codes.SEPA_CREDIT_TRANSFER if iban else codes.CREDIT_TRANSFER,
                   account=iban or account, account_name=_text(bank.get("account_name")),
                   provider=_text(bank.get("routing_number")), remittance=number)


def for_peppol(invoice: EInvoice) -> EInvoice:
    """The invoice as Peppol BIS Billing 3.0 takes it: both electronic addresses (R010, R020) and a
    buyer reference or order reference (R003), whose default is the invoice number (on a credit note,
    the number of the invoice it corrects, as that invoice's e-invoice carried it)."""
    errors = []
    if invoice.seller.endpoint is None:
        errors.append(FieldError("business.peppol_id", "BT-34: Peppol needs the seller's electronic address: set the "
                                                       "business's Peppol id (such as 0208:0123456789) or an EU VAT "
                                                       "number as its tax id"))
    if invoice.buyer.endpoint is None:
        errors.append(FieldError("customer.peppol_id", "BT-49: Peppol needs the buyer's electronic address: set the "
                                                       "customer's Peppol id or an EU VAT number as their tax id"))
    if errors:
        raise failed(errors)
    if invoice.buyer_reference or invoice.order_reference:
        return invoice
    return replace(invoice, buyer_reference=invoice.preceding.number if invoice.preceding else invoice.number)
