"""An invoice's payment QR code: the EPC069-12 code ("GiroCode", version 002) that a European banking app
scans to fill in a SEPA credit transfer, printed on the PDF and shown on the public page.

One rule, `transfer(view)`, says when an invoice gets one and what it holds: an invoice (not a credit
note) that is open or overdue, in EUR, whose issuer's bank details (frozen at finalize) have an IBAN as
account number; the amount is what is due (0.01 to 999,999,999.99 EUR, so none when nothing is due); the
beneficiary is the account name, else the issuer's legal name (cut to EPC's 70 characters, at a word
where one ends late enough); the BIC is the routing number when that is a valid BIC (optional in EPC
002); the remittance information is the invoice number as unstructured text (the structured field is
for ISO 11649 creditor references, which an invoice number is not). The code is made by
`segno.helpers.make_epc_qr` in UTF-8 (character set 1).
"""

from __future__ import annotations

import io
from dataclasses import dataclass, replace
from decimal import Decimal

import segno
from segno.helpers import make_epc_qr

from core.billing.bank_account import bic_of, in_eea, sepa_iban_of

CAPTION = "Scan to pay with your banking app"
STATUSES = frozenset({"open", "overdue"})
NAME_MAX = 70  # characters of the beneficiary's name (EPC069-12)
TEXT_MAX = 140  # characters of unstructured remittance information
PAYLOAD_MAX = 331  # bytes of the whole payload
AMOUNT_MIN, AMOUNT_MAX = Decimal("0.01"), Decimal("999999999.99")
BORDER = 4  # modules of quiet zone around the code, as ISO/IEC 18004 asks


@dataclass(frozen=True)
class Transfer:
    """The credit transfer a code asks for."""

    name: str
    iban: str  # compact
    bic: str | None
    amount: Decimal  # euros
    text: str  # the invoice number


def transfer(view: dict) -> Transfer | None:
    """The transfer an invoice's code asks for (`view`: the invoice as the API shows it), or None when it
    gets no code."""
    if view.get("object") == "credit_note" or view.get("status") not in STATUSES or view.get("currency") != "EUR":
        return None
    issuer = view.get("issuer") or {}
    bank = issuer.get("bank") or {}
    iban = sepa_iban_of(bank.get("account_number"))  # the code asks for a SEPA transfer
    amount = Decimal(view.get("amount_due") or 0).scaleb(-2)  # EUR has two decimals
    name = _shortened(bank.get("account_name"), NAME_MAX) or _shortened(issuer.get("legal_name"), NAME_MAX)
    number = _shortened(view.get("number"), TEXT_MAX)
    if not (iban and name and number and AMOUNT_MIN <= amount <= AMOUNT_MAX):
        return None
    bic = bic_of(bank.get("routing_number"))
    if bic is None and not in_eea(iban):  # EPC069-12: the BIC is optional only within the EEA
        return None
    wanted = Transfer(name="", iban=iban, bic=bic, amount=amount, text=number)
    # 70 characters of four bytes each would not fit the payload's 331 bytes: such a name is cut further.
    room = PAYLOAD_MAX - len(_payload(wanted).encode())
    while len(name.encode()) > room:
        name = name[:-1].rstrip()
    return replace(wanted, name=name)


def epc_payload(view: dict) -> str | None:
    """The text the code holds, line by line as EPC069-12 lays it out, or None when there is no code."""
    wanted = transfer(view)
    return _payload(wanted) if wanted is not None else None


def epc_qr(view: dict) -> segno.QRCode | None:
    """The invoice's EPC QR code, or None."""
    wanted = transfer(view)
    if wanted is None:
        return None
    return make_epc_qr(name=wanted.name, iban=wanted.iban, amount=wanted.amount, text=wanted.text,
                       bic=wanted.bic, encoding="utf-8")


def png(code: segno.QRCode, *, scale: int = 8) -> bytes:
    """The code as a black and white PNG with its quiet zone, `scale` pixels per module (for the PDF)."""
    out = io.BytesIO()
    code.save(out, kind="png", scale=scale, border=BORDER, dark="#000", light="#fff")
    return out.getvalue()


def svg(code: segno.QRCode) -> str:
    """The code as inline SVG for an HTML page: an image named by the caption, without size (CSS sizes it),
    on white so that it scans on a dark page too."""
    markup = code.svg_inline(scale=1, border=BORDER, dark="#000", light="#fff", omitsize=True, title=CAPTION,
                             svgclass="qr-code")
    return markup.replace("<svg ", '<svg role="img" ', 1)


def _payload(wanted: Transfer) -> str:
    return "\n".join(("BCD", "002", "1", "SCT", wanted.bic or "", wanted.name, wanted.iban,
                      _epc_amount(wanted.amount), "", "", wanted.text))


def _epc_amount(amount: Decimal) -> str:
    """`EUR12.34`, `EUR12.3`, `EUR12`: two decimals at most, no trailing zeros (as segno writes it)."""
    return f"EUR{amount:.2f}".rstrip("0").rstrip(".")


def _shortened(value: object, limit: int) -> str:
    """`value` on one line with single spaces, cut to `limit` characters: at the end of a word when one
    ends in the last third, else at the limit."""
    text = " ".join(str(value or "").split())
    if len(text) <= limit:
        return text
    cut = text[:limit + 1].rsplit(" ", 1)[0]
    return cut if limit * 2 // 3 <= len(cut) <= limit else text[:limit]
