"""Code lists e-invoices use: units (UN/ECE Recommendation 20), VAT categories (UNCL 5305) and the
payment means (UNCL 4461); the exemptions' VATEX codes and wording are `invoice_lines.EXEMPTION_DEFAULTS`."""

from __future__ import annotations

# Our unit codes → UN/ECE Recommendation 20 (and 21, with an X prefix).
UNIT_CODES = {
    "NOS": "C62", "PCS": "H87", "KGS": "KGM", "GMS": "GRM", "LTR": "LTR", "MTR": "MTR", "SQF": "FTK", "SQM": "MTK",
    "HRS": "HUR", "DAY": "DAY", "MON": "MON", "BOX": "XBX", "SET": "SET", "OTH": "ZZ",
}

CATEGORY_NAMES = {"S": "standard rate", "Z": "zero rated", "E": "exempt", "AE": "reverse charge",
                  "K": "intra-community supply", "G": "export outside the EU", "O": "not subject to VAT"}
# Categories that need the seller's VAT number (BR-S-02, BR-Z-02, BR-E-02, BR-AE-02, BR-IC-02, BR-G-02)…
NEEDS_SELLER_VAT = frozenset({"S", "Z", "E", "AE", "K", "G"})
# …and the buyer's (BR-AE-02, BR-IC-02).
NEEDS_BUYER_VAT = frozenset({"AE", "K"})

CREDIT_TRANSFER = "30"
SEPA_CREDIT_TRANSFER = "58"
COMMERCIAL_INVOICE = "380"  # UNCL 1001
CREDIT_NOTE = "381"
DISCOUNT_REASON = "95"  # UNCL 5189: Discount
