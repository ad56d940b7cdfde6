"""Bank account numbers: the one check of an IBAN and a BIC (schwifty), used by the business profile's
input, the e-invoices (SEPA or other credit transfer) and the payment QR code.

An IBAN is valid when its country is known, its length and BBAN format are that country's and its check
digits are right (ISO 13616); a BIC when it has the ISO 9362 structure and a known country. Account
numbers of other kinds (a US account, a UK account with its sort code) are not IBANs and are not checked.
"""

from __future__ import annotations

import re

from schwifty import BIC, IBAN
from schwifty.exceptions import (
    InvalidChecksumDigits,
    InvalidCountryCode,
    InvalidLength,
    InvalidStructure,
    SchwiftyException,
)

# Why an IBAN is refused, in the words of the person who typed it: what to check.
_REASONS = (
    (InvalidCountryCode, "it does not start with a known country code"),
    (InvalidLength, "it does not have the length of an IBAN of its country"),
    (InvalidStructure, "its account part is not in the form its country uses"),
    (InvalidChecksumDigits, "its check digits do not match (check for a typing error)"),
)
# What a person means as an IBAN: a country code, two check digits, then letters and digits (spaces allowed).
_IBAN_LIKE = re.compile(r"[A-Za-z]{2}[0-9]{2}[A-Za-z0-9 ]*")


def looks_like_iban(text: str | None) -> bool:
    """Whether `text` is written as an IBAN is (valid or not): two letters, two digits, then more."""
    return bool(text) and _IBAN_LIKE.fullmatch(text.strip()) is not None and len(_compact(text)) > 4


def sepa_iban_of(text: str | None) -> str | None:
    """`iban_of`, for an IBAN a SEPA credit transfer reaches (its country in the SEPA zone); else None."""
    iban = iban_of(text)
    return iban if iban and IBAN(iban).in_sepa_zone else None


# The European Economic Area: the EU and Iceland, Liechtenstein, Norway (territories such as the French
# overseas departments bank under their country's prefix). SEPA reaches further (the United Kingdom,
# Switzerland, Monaco, San Marino, Andorra, the Vatican), where a transfer needs the BIC.
EEA = frozenset("AT BE BG CY CZ DE DK EE ES FI FR GR HR HU IE IT LT LU LV MT NL PL PT RO SE SI SK IS LI NO".split())


def in_eea(iban: str) -> bool:
    """Whether the (valid, compact) IBAN is of an account in the EEA."""
    return iban[:2] in EEA


def iban_of(text: str | None) -> str | None:
    """The compact IBAN (`DE89370400440532013000`) when `text` is a valid IBAN, in any case and with
    spaces; else None."""
    if not looks_like_iban(text):
        return None
    try:
        return IBAN(_compact(text)).compact
    except (SchwiftyException, ValueError):
        return None


def iban_problem(text: str) -> str | None:
    """Why `text`, written as an IBAN, is not a valid one (a message for the person who typed it)."""
    try:
        IBAN(_compact(text))
    except (SchwiftyException, ValueError) as exc:
        return f"is not a valid IBAN: {_reason(exc)}"
    return None


def printed_iban(iban: str) -> str:
    """A valid IBAN as it is printed: upper case in groups of four (`DE89 3704 0044 0532 0130 00`)."""
    return IBAN(_compact(iban)).formatted


def bic_of(text: str | None) -> str | None:
    """The BIC in upper case without spaces (`COBADEFFXXX`) when `text` is a valid one; else None."""
    if not text:
        return None
    try:
        return BIC(_compact(text)).compact
    except (SchwiftyException, ValueError):
        return None


def valid_bic(text: str | None) -> bool:
    return bic_of(text) is not None


def _compact(text: str) -> str:
    return "".join(text.split()).upper()


def _reason(exc: Exception) -> str:
    return next((reason for kind, reason in _REASONS if isinstance(exc, kind)), "check for a typing error")
