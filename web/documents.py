"""Invoice and credit note PDFs as the pages serve them: kept documents with their ETag, revalidated;
drafts never stored."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from core.billing.documents import Document
from core.billing.pdf import filename_for


def pdf_response(request: Request, document: Document, disposition: str, headers: dict[str, str]) -> Response:
    """The PDF, or `304 Not Modified` when the browser holds these very bytes (If-None-Match)."""
    caching = {"ETag": document.etag, "Cache-Control": "private, no-cache"} if document.etag else \
        {"Cache-Control": "private, no-store"}
    if document.held_by(request.headers.get("if-none-match")):
        return Response(status_code=304, headers={**headers, **caching})
    return Response(document.content, media_type="application/pdf",
                    headers={**headers, "Content-Disposition": disposition, **caching})


def framed_pdf(request: Request, document: Document, view: dict) -> Response:
    """The PDF of `view` shown inside its own dashboard page (inline, unless `?download=1`): framed by
    this origin only."""
    inline = request.query_params.get("download") != "1"
    disposition = f'{"inline" if inline else "attachment"}; filename="{filename_for(view)}"'
    return pdf_response(request, document, disposition, {"Content-Security-Policy": "frame-ancestors 'self'",
                                                         "X-Frame-Options": "SAMEORIGIN",
                                                         "X-Content-Type-Options": "nosniff"})
