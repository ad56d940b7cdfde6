"""The invoice PDF as the pages serve it: kept documents with their ETag, revalidated; drafts never stored."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from core.billing.documents import Document


def pdf_response(request: Request, document: Document, disposition: str, headers: dict[str, str]) -> Response:
    """The PDF, or `304 Not Modified` when the browser holds these very bytes (If-None-Match)."""
    caching = {"ETag": document.etag, "Cache-Control": "private, no-cache"} if document.etag else \
        {"Cache-Control": "private, no-store"}
    if document.held_by(request.headers.get("if-none-match")):
        return Response(status_code=304, headers={**headers, **caching})
    return Response(document.content, media_type="application/pdf",
                    headers={**headers, "Content-Disposition": disposition, **caching})
