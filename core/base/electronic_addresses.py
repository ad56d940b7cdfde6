"""Electronic addresses of e-invoicing (Peppol participant identifiers): `scheme:identifier`.

The scheme is a code of the Electronic Address Scheme list (EAS, CEF): `0088` (GLN), `0208`
(Belgian enterprise number), `9930` (German VAT number)… The identifier is the party's number in it.
A business or customer may give one explicitly (`peppol_id`); otherwise an e-invoice derives it
from an EU (and nearby) VAT number, whose two-letter prefix names the scheme.
"""

from __future__ import annotations

import re

from babel import Locale

# The EAS codes Peppol BIS Billing 3.0 accepts (its 2025-Q2 code list).
EAS_CODES = frozenset("""
0002 0007 0009 0037 0060 0088 0096 0097 0106 0130 0135 0142 0147 0151 0154 0158 0170 0177 0183 0184 0188 0190
0191 0192 0193 0194 0195 0196 0198 0199 0200 0201 0202 0203 0204 0205 0208 0209 0210 0211 0212 0213 0215 0216
0217 0218 0221 0225 0230 0235 0240 9910 9913 9914 9915 9918 9919 9920 9922 9923 9924 9925 9926 9927 9928 9929
9930 9931 9932 9933 9934 9935 9936 9937 9938 9939 9940 9941 9942 9943 9944 9945 9946 9947 9948 9949 9950 9951
9952 9953 9957 9959
""".split())

# The scheme of a VAT number, by its prefix (Greece writes EL).
EAS_OF_VAT_PREFIX = {
    "AD": "9922", "AL": "9923", "AT": "9914", "BA": "9924", "BE": "9925", "BG": "9926", "CH": "9927", "CY": "9928",
    "CZ": "9929", "DE": "9930", "EE": "9931", "EL": "9933", "ES": "9920", "FI": "0213", "FR": "9957", "GB": "9932",
    "HR": "9934", "HU": "9910", "IE": "9935", "IT": "0211", "LI": "9936", "LT": "9937", "LU": "9938", "LV": "9939",
    "MC": "9940", "ME": "9941", "MK": "9942", "MT": "9943", "NL": "9944", "PL": "9945", "PT": "9946", "RO": "9947",
    "RS": "9948", "SI": "9949", "SK": "9950", "SM": "9951", "TR": "9952", "VA": "9953",
}
PEPPOL_ID_MAX = 100
_COUNTRIES = frozenset(code for code in Locale("en").territories if len(code) == 2 and code.isalpha())
_FORMAT = re.compile(r"(\d{4}):([A-Za-z0-9][A-Za-z0-9._:/+\-]{0,79})")
_VAT = re.compile(r"([A-Z]{2})([A-Z0-9+*]{2,14})")


def parse_peppol_id(value: str) -> tuple[str, str]:
    """`0088:5790000435975` → ("0088", "5790000435975"); ValueError saying what is wrong."""
    match = _FORMAT.fullmatch(value.strip())
    if match is None:
        raise ValueError("must be scheme:identifier, such as 0088:5790000435975 or 9930:DE123456789")
    scheme, identifier = match.groups()
    if scheme not in EAS_CODES:
        raise ValueError(f"names the scheme {scheme}, which is not in the Peppol electronic address scheme (EAS) list")
    return scheme, identifier


def normalized_peppol_id(value: str | None) -> str | None:
    """The stored form of an optional `peppol_id` (a pydantic validator): trimmed, empty is none."""
    if value is None or not value.strip():
        return None
    scheme, identifier = parse_peppol_id(value)
    return f"{scheme}:{identifier}"


def vat_number(tax_id: str | None) -> str | None:
    """A tax id as a VAT number with its country prefix (`DE 123 456 789` → `DE123456789`), or None
    when it does not start with one."""
    if not tax_id:
        return None
    compact = re.sub(r"[\s.\-/]", "", tax_id).upper()
    match = _VAT.fullmatch(compact)
    return compact if match and (match.group(1) in EAS_OF_VAT_PREFIX or match.group(1) in _COUNTRIES) else None


def derived_from_vat(tax_id: str | None) -> tuple[str, str] | None:
    """The electronic address a VAT number implies (`DE123456789` → ("9930", "DE123456789"))."""
    number = vat_number(tax_id)
    if number is None or number[:2] not in EAS_OF_VAT_PREFIX:
        return None
    return EAS_OF_VAT_PREFIX[number[:2]], number
