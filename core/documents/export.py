"""An invoice's or a credit note's e-invoice in one of the formats: what the API, MCP and the dashboard serve."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Literal, get_args

from pydantic import BaseModel, Field

from core.base.errors import InvalidState
from core.base.validation import QueryInput
from core.billing.documents import RENDER_POOL
from core.billing.events import E_INVOICE_FORMATS
from core.billing.pdf import filename_for
from core.documents import cii, en16931, factur_x, peppol

Format = Literal["peppol", "cii", "facturx"]
FORMATS: tuple[str, ...] = get_args(Format)
assert FORMATS == E_INVOICE_FORMATS, "the formats webhooks link are the formats served"
FORMAT_NAMES = {"peppol": "Peppol BIS Billing 3.0 (UBL)", "cii": "EN 16931 CII", "facturx": "Factur-X (PDF/A-3)"}


class EInvoiceQuery(QueryInput):
    format: Format = Field(description="peppol: UBL 2.1 in the Peppol BIS Billing 3.0 profile; cii: UN/CEFACT CII "
                                       "D16B, EN 16931 profile; facturx: the PDF as PDF/A-3 with the CII embedded")


class EInvoiceOut(BaseModel):
    """An e-invoice as an assistant receives it: XML as text, a PDF in base64."""

    invoice: str = Field(description="The invoice, `in_…` (or the credit note, `cn_…`)")
    format: Format = Field(description="peppol, cii or facturx")
    media_type: str = Field(description="application/xml or application/pdf")
    filename: str = Field(description="A file name for it, such as INV-0001-peppol.xml")
    encoding: Literal["utf-8", "base64"] = Field(description="How `content` holds the document")
    content: str = Field(description="The document: XML text, or the PDF in base64")


@dataclass(frozen=True)
class EDocument:
    format: str
    content: bytes
    media_type: str
    filename: str

    def to_api(self, invoice_id: str) -> dict:
        text = self.media_type.endswith("xml")
        return EInvoiceOut(invoice=invoice_id, format=self.format, media_type=self.media_type, filename=self.filename,
                           encoding="utf-8" if text else "base64",
                           content=self.content.decode() if text else base64.b64encode(self.content).decode()
                           ).model_dump()


def e_invoice(view: dict, format: Format) -> EDocument:
    """The finalized invoice `view` (`view_invoice`), or the credit note `view`
    (`credit_notes.e_invoice_view`: type 381, naming the invoice it corrects), as an e-invoice;
    InvalidState for a draft, ValidationFailed naming what EN 16931 (or Peppol) needs that the
    document lacks."""
    if view.get("status") == "draft" or not view.get("number"):
        raise InvalidState("A draft has no e-invoice: it gets one when it is finalized (a number, fixed contents).")
    invoice = en16931.build(view)
    stem = filename_for(view).removesuffix(".pdf")
    if format == "peppol":
        return EDocument(format, peppol.render(en16931.for_peppol(invoice)), peppol.MEDIA_TYPE, f"{stem}-peppol.xml")
    if format == "cii":
        return EDocument(format, cii.render(invoice), cii.MEDIA_TYPE, f"{stem}-cii.xml")
    # A PDF renders on the documents' own threads, never the ones serving requests.
    content = RENDER_POOL.run(factur_x.render, view, invoice)
    return EDocument(format, content, factur_x.MEDIA_TYPE, f"{stem}-facturx.pdf")
