"""Icons for the MCP server and its tools (SEP-973: `icons` on the implementation and on each tool).

The server has its own icon, and each tool the icon of its category (an invoice, a customer, the
catalog, a payment, a credit note, a schedule, an e-mail, an e-invoice, the business). Each comes as
SVG (`sizes: ["any"]`) and as a 48×48 PNG, for light and for dark backgrounds (`theme`), inlined as
`data:` URIs so a client fetches nothing. The files are in `mcp_server/icons/`, drawn by
`scripts/mcp-icons.py` (run it after changing a drawing, and commit what it writes).

A tool missing from `TOOL_CATEGORIES` is a KeyError: a new tool needs its category here.
"""

from __future__ import annotations

import base64
import functools
import struct
from importlib import resources

from mcp.types import Icon

CATEGORIES = ("invoice", "customer", "catalog", "payment", "credit_note", "schedule", "email", "e_invoice", "business")
THEMES = ("light", "dark")  # light: for light backgrounds (dark strokes); dark: for dark backgrounds

TOOL_CATEGORIES: dict[str, str] = {
    "get_business": "business",
    **dict.fromkeys(("list_customers", "get_customer", "create_customer", "update_customer"), "customer"),
    **dict.fromkeys(("list_products", "list_prices"), "catalog"),
    **dict.fromkeys(("list_invoices", "get_invoice", "list_invoice_events", "create_invoice", "preview_invoice",
                     "update_invoice", "add_invoice_item", "remove_invoice_item", "delete_draft_invoice",
                     "finalize_invoice", "void_invoice", "confirm_invoice_action"), "invoice"),
    # What e-mails the customer: invoices, reminders and credit notes sent.
    **dict.fromkeys(("send_invoice", "send_invoices", "send_reminder", "send_reminders", "send_credit_note"), "email"),
    **dict.fromkeys(("mark_invoice_paid", "list_payments", "record_payment", "reverse_payment", "get_receivables"),
                    "payment"),
    **dict.fromkeys(("list_credit_notes", "get_credit_note", "preview_credit_note", "create_credit_note",
                     "void_credit_note"), "credit_note"),
    **dict.fromkeys(("list_invoice_schedules", "create_invoice_schedule", "pause_invoice_schedule",
                     "resume_invoice_schedule", "cancel_invoice_schedule"), "schedule"),
    **dict.fromkeys(("get_e_invoice", "export_e_invoices", "get_e_invoice_export"), "e_invoice"),
}

_MEDIA_TYPES = {"svg": "image/svg+xml", "png": "image/png"}


def server_icons() -> list[Icon]:
    """The server's icons, for `Server(icons=…)`."""
    return _icons("server")


def tool_icons(tool_name: str) -> list[Icon]:
    """The icons of a tool's category; KeyError for a tool without one."""
    return _icons(TOOL_CATEGORIES[tool_name])


def _icons(name: str) -> list[Icon]:
    return [Icon(src=src, mimeType=_MEDIA_TYPES[kind], sizes=[sizes], theme=theme)
            for kind, theme, src, sizes in _sources(name)]


@functools.cache
def _sources(name: str) -> tuple[tuple[str, str, str, str], ...]:
    """(kind, theme, data URI, size) of each file of the icon: the SVGs first, then the PNGs."""
    folder = resources.files("mcp_server") / "icons"
    found = []
    for kind in ("svg", "png"):
        for theme in THEMES:
            content = (folder / f"{name}-{theme}.{kind}").read_bytes()
            src = f"data:{_MEDIA_TYPES[kind]};base64,{base64.b64encode(content).decode('ascii')}"
            found.append((kind, theme, src, "any" if kind == "svg" else _png_size(content)))
    return tuple(found)


def _png_size(content: bytes) -> str:
    """`48x48`: the width and height of the PNG's header (IHDR)."""
    width, height = struct.unpack(">II", content[16:24])
    return f"{width}x{height}"
