"""The invoice as a PDF (fpdf2), drawn from the invoice's API shape (`invoice_to_api(..., with_lines=True)`).

Text is set in DejaVu Sans, vendored in core/billing/fonts (no package on PyPI ships it without heavy or
unrelated dependencies), so Latin-extended, Greek and Cyrillic names print; CJK does not.
Drafts carry a large diagonal DRAFT mark on every page; the lines table repeats its headings on
every page it spans.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

from fpdf import FPDF, FontFace
from fpdf.enums import Align, TableBordersLayout, XPos, YPos

from core.base.money import format_money
from core.billing.presentation import STATUS_LABELS, UNIT_NAMES, address_lines, bank_rows, exact_number, plain_text, public_url

FONTS = Path(__file__).parent / "fonts"
FONT = "DejaVu"
PAGE_MARGIN = 15
LINE_DESCRIPTION_SHOWN = 1200  # characters of a line description printed (a table row must fit a page)
LINE_DESCRIPTION_ROWS = 20


COLUMNS = ("#", "Description", "Qty", "Unit", "Unit price", "Disc.", "Tax", "Tax amount", "Amount")
COLUMN_WIDTHS = (7, 55, 14, 11, 24, 12, 12, 21, 24)  # millimetres; the sum is the usable width of A4
COLUMN_ALIGN = ("RIGHT", "LEFT", "RIGHT", "LEFT", "RIGHT", "RIGHT", "RIGHT", "RIGHT", "RIGHT")


def filename_for(view: dict) -> str:
    """`INV-0001.pdf`, or `draft-in_….pdf` for a draft (safe in a Content-Disposition header)."""
    stem = view.get("number") or f"draft-{view['id']}"
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in stem) + ".pdf"


def render_invoice(view: dict, *, origin: str | None = None) -> bytes:
    """The PDF of an invoice given as its API dict with `lines`; the public link printed on it is on
    `origin` (default: the configured one)."""
    document = _InvoiceDocument(view)
    document.add_page()
    document.title_block()
    document.parties()
    document.lines_table()
    document.totals()
    document.notes(origin)
    return bytes(document.output())


# --- formatting ------------------------------------------------------------------------------


def _date(value: object) -> str:
    if value is None or value == "":
        return "—"
    return value.isoformat() if isinstance(value, date) else str(value)[:10]


def _amount(minor: int, currency: str) -> str:
    """Without the currency code, for table cells: '2,500.00'."""
    return format_money(minor, currency).rsplit(" ", 1)[0]


def _shown_description(text: str) -> str:
    rows = text.splitlines() or [""]
    shown = "\n".join(rows[:LINE_DESCRIPTION_ROWS])
    if len(shown) > LINE_DESCRIPTION_SHOWN:
        shown = shown[:LINE_DESCRIPTION_SHOWN]
    return shown + ("…" if shown != text else "")


# --- the document ----------------------------------------------------------------------------


class _InvoiceDocument(FPDF):
    def __init__(self, view: dict):
        super().__init__(orientation="portrait", unit="mm", format="A4")
        self.view = view
        self.currency = view["currency"]
        self.is_draft = view.get("status") == "draft" or not view.get("number")
        self.add_font(FONT, "", str(FONTS / "DejaVuSans.ttf"))
        self.add_font(FONT, "B", str(FONTS / "DejaVuSans-Bold.ttf"))
        self.set_margins(PAGE_MARGIN, PAGE_MARGIN, PAGE_MARGIN)
        self.set_auto_page_break(True, margin=PAGE_MARGIN + 5)
        issuer = view.get("issuer") or {}
        label = view.get("number") or "Draft"
        self.set_title(f"Invoice {label}")
        self.set_author(plain_text(issuer.get("legal_name")))
        self.set_creator("invoicing")
        self.set_font(FONT, size=9)

    # Drawn first on every page, so the mark lies under the content.
    def header(self) -> None:
        if not self.is_draft:
            return
        with self.local_context(text_color=(225, 225, 225)):
            self.set_font(FONT, "B", 110)
            with self.rotation(45, x=self.w / 2, y=self.h / 2):
                width = self.get_string_width("DRAFT")
                self.text(self.w / 2 - width / 2, self.h / 2 + 15, "DRAFT")
        self.set_font(FONT, size=9)

    def footer(self) -> None:
        self.set_y(-PAGE_MARGIN)
        self.set_font(FONT, size=7)
        self.set_text_color(120)
        label = self.view.get("number") or "Draft invoice"
        self.cell(0, 4, f"{label} · page {self.page_no()} of {{nb}}", align="C")
        self.set_text_color(0)

    # --- blocks ---

    def _line(self, text: str, *, size: float = 9, bold: bool = False, width: float = 0, height: float = 4.5,
              align: str = "L") -> None:
        self.set_font(FONT, "B" if bold else "", size)
        self.multi_cell(width, height, text, align=align, new_x=XPos.LEFT, new_y=YPos.NEXT)

    def _column(self, x: float, y: float, width: float, rows: list[tuple[str, dict]]) -> float:
        """Rows of text at (x, y) within `width`; returns the y below them."""
        self.set_xy(x, y)
        for text, style in rows:
            self.set_x(x)
            self._line(text, width=width, **style)
        return self.get_y()

    def title_block(self) -> None:
        view, issuer = self.view, self.view.get("issuer") or {}
        top = self.get_y()
        name = plain_text(issuer.get("trade_name")) or plain_text(issuer.get("legal_name"))
        left: list[tuple[str, dict]] = [(name, {"size": 16, "bold": True, "height": 8})]
        legal = plain_text(issuer.get("legal_name"))
        if legal and legal != name:
            left.append((legal, {}))
        left += [(line, {}) for line in address_lines(issuer.get("address"))]
        if issuer.get("tax_id"):
            left.append((f"Tax ID: {plain_text(issuer['tax_id'])}", {}))
        for key in ("email", "phone"):
            if issuer.get(key):
                left.append((plain_text(issuer[key]), {}))
        status = STATUS_LABELS.get(view.get("status"), plain_text(view.get("status")))
        right: list[tuple[str, dict]] = [
            ("INVOICE", {"size": 16, "bold": True, "height": 8, "align": "R"}),
            (view.get("number") or "Draft", {"size": 11, "bold": True, "height": 6, "align": "R"}),
            (f"Issue date: {_date(view.get('issue_date'))}", {"align": "R"}),
            (f"Due date: {_date(view.get('due_date'))}", {"align": "R"}),
            (f"Status: {status}", {"align": "R"}),
            (f"Currency: {self.currency}", {"align": "R"}),
        ]
        usable = self.w - 2 * PAGE_MARGIN
        bottom_left = self._column(PAGE_MARGIN, top, usable * 0.6, left)
        bottom_right = self._column(PAGE_MARGIN + usable * 0.6, top, usable * 0.4, right)
        self.set_xy(PAGE_MARGIN, max(bottom_left, bottom_right) + 6)

    def parties(self) -> None:
        customer = self.view.get("customer_details") or {}
        rows: list[tuple[str, dict]] = [("Bill to", {"size": 8, "bold": True}),
                                        (plain_text(customer.get("name")), {"size": 10, "bold": True, "height": 5.5})]
        rows += [(line, {}) for line in address_lines(customer.get("address"))]
        if customer.get("email"):
            rows.append((plain_text(customer["email"]), {}))
        if customer.get("tax_id"):
            rows.append((f"Tax ID: {plain_text(customer['tax_id'])}", {}))
        bottom = self._column(PAGE_MARGIN, self.get_y(), (self.w - 2 * PAGE_MARGIN) * 0.6, rows)
        self.set_xy(PAGE_MARGIN, bottom + 6)

    def lines_table(self) -> None:
        lines = (self.view.get("lines") or {}).get("data", [])
        self.set_font(FONT, size=8)
        headings = FontFace(emphasis="BOLD", fill_color=(235, 235, 235))
        with self.table(col_widths=COLUMN_WIDTHS, width=sum(COLUMN_WIDTHS), text_align=COLUMN_ALIGN,
                        headings_style=headings, borders_layout=TableBordersLayout.HORIZONTAL_LINES,
                        line_height=4.2, padding=(1, 1), repeat_headings=1, align=Align.L) as table:
            table.row(COLUMNS)
            for index, line in enumerate(lines, start=1):
                table.row((
                    str(index), _shown_description(plain_text(line.get("description"))), exact_number(line["quantity"]),
                    UNIT_NAMES.get(line.get("unit"), plain_text(line.get("unit"))),
                    _amount(line["unit_amount"], self.currency), f"{exact_number(line['discount_percent'])}%",
                    f"{exact_number(line['tax_rate'])}%", _amount(line["tax_amount"], self.currency),
                    _amount(line["amount"], self.currency),
                ))
        self.ln(4)

    def totals(self) -> None:
        view, currency = self.view, self.currency
        rows = [("Subtotal", view["subtotal"]), ("Discount", -view["discount"] if view["discount"] else 0),
                ("Taxable amount", view["taxable"]), ("Tax", view["tax"]), ("Total", view["total"])]
        if not self.is_draft:
            rows.append(("Amount due", view["amount_due"]))
        label_width, value_width = 40, 40
        x = self.w - PAGE_MARGIN - label_width - value_width
        for label, amount in rows:
            bold = label in ("Total", "Amount due")
            if self.will_page_break(6):
                self.add_page()
            self.set_x(x)
            self.set_font(FONT, "B" if bold else "", 10 if bold else 9)
            self.cell(label_width, 6, label)
            self.cell(value_width, 6, format_money(amount, currency), align="R", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
        if view.get("amount_in_words"):
            self.ln(2)
            self._line(f"Amount in words: {view['amount_in_words']}", size=8)
        self.ln(4)

    def _section(self, heading: str, body: str) -> None:
        if self.will_page_break(14):
            self.add_page()
        self.set_x(PAGE_MARGIN)
        self._line(heading, size=8, bold=True)
        self.set_x(PAGE_MARGIN)
        self._line(body, size=9)
        self.ln(3)

    def notes(self, origin: str | None) -> None:
        view, issuer = self.view, self.view.get("issuer") or {}
        if view.get("description"):
            self._section("Notes", plain_text(view["description"]))
        bank = [f"{label}: {value}" for label, value in bank_rows(issuer.get("bank"))]
        if bank:
            self._section("Payment details", "\n".join(bank))
        if view.get("footer"):
            self._section("Terms", plain_text(view["footer"]))
        if view.get("public_url_token") and not self.is_draft:
            self._section("View this invoice online", public_url(view["public_url_token"], origin))
