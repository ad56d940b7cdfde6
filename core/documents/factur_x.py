"""Factur-X / ZUGFeRD 2.x, profile EN 16931: the invoice's (or the credit note's) PDF as PDF/A-3 with its
CII embedded as `factur-x.xml` (AFRelationship Data) and XMP naming the Factur-X profile. fpdf2 makes
the PDF/A-3B base (embedded fonts, an sRGB output intent); the `factur-x` package embeds the XML,
writes the XMP extension schema and checks the XML against the Factur-X XSD as it does."""

from __future__ import annotations

from core.billing.pdf import render_credit_note, render_invoice
from core.documents import cii
from core.documents.en16931 import EInvoice

MEDIA_TYPE = "application/pdf"
LEVEL = "en16931"


def render(view: dict, invoice: EInvoice) -> bytes:
    # Imported when first needed: the package and its schemas hold ~40 MB that a process serving no
    # Factur-X never needs (docs/performance.md, peak RSS).
    import facturx

    render_pdf = render_credit_note if invoice.is_credit_note else render_invoice
    base = render_pdf(view, compliance="PDF/A-3B")
    issuer = invoice.seller.trade_name or invoice.seller.name
    title = invoice.title
    return facturx.generate_from_binary(
        base, cii.render(invoice), flavor="factur-x", level=LEVEL, check_xsd=True, lang="en",
        pdf_metadata={"author": issuer, "keywords": f"Factur-X, {title}", "title": f"{issuer}: {title} {invoice.number}",
                      "subject": f"Factur-X {title.lower()} {invoice.number} dated {invoice.issue_date.isoformat()} "
                                 f"issued by {issuer}"},
    )
