"""How an invoice reads to a person, shared by the PDF, the public page and the e-mail: status and
unit labels, the issuer's name, address lines, exact numbers, bank details and the public link."""

from __future__ import annotations

from decimal import Decimal

from config.settings import get_settings

STATUS_LABELS = {"draft": "Draft", "open": "Open", "overdue": "Overdue", "paid": "Paid", "void": "Void"}
UNIT_NAMES = {
    "NOS": "pcs", "PCS": "pcs", "KGS": "kg", "GMS": "g", "LTR": "l", "MTR": "m", "SQF": "sq ft",
    "SQM": "m²", "HRS": "h", "DAY": "days", "MON": "months", "BOX": "boxes", "SET": "sets", "OTH": "",
}
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


def issuer_name(view: dict, default: str = "") -> str:
    issuer = view.get("issuer") or {}
    return issuer.get("trade_name") or issuer.get("legal_name") or default


def exact_number(value: object) -> str:
    """1.50 -> '1.5', 10 -> '10' (quantities and percentages exactly as entered, never 1E+1)."""
    decimal = value if isinstance(value, Decimal) else Decimal(str(value))
    return f"{decimal.normalize():f}"


def address_lines(address: dict | None) -> list[str]:
    address = address or {}
    city_line = " ".join(filter(None, (plain_text(address.get("postal_code")), plain_text(address.get("city")))))
    region = plain_text(address.get("region") or address.get("state"))
    country = plain_text(address.get("country") or address.get("country_code"))
    return [line for line in (plain_text(address.get("line1")), plain_text(address.get("line2")), city_line, region, country)
            if line]


def bank_rows(bank: dict | None) -> list[tuple[str, str]]:
    """(label, value) for each bank detail given."""
    bank = bank or {}
    return [(label, plain_text(bank[key])) for key, label in BANK_LABELS if bank.get(key)]
