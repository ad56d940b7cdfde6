"""The invoice and the credit note as PDFs (fpdf2), drawn from their API shapes (`invoice_to_api(...,
with_lines=True)`, `credit_note_to_api`), on one layout: the issuer and the document's facts, the customer,
the lines, the totals, then what each kind adds (an invoice's notes and payment details; a credit note's
invoice it corrects, its reason and memo, and where its money went).

Text is set in DejaVu Sans, vendored in core/billing/fonts (no package on PyPI ships it without heavy or
unrelated dependencies), so Latin-extended, Greek and Cyrillic names print; CJK does not: every printed
text first goes through `printable`, which prints a character the fonts lack as U+FFFD (and drops
invisible ones), so no text can make rendering fail. Any text wraps at spaces, and a word wider than its
column is broken between characters (fpdf2's own word wrapping); only a line description is cut (with
"…") so that its table row fits one page.
Drafts carry a large diagonal DRAFT mark on every page, void credit notes a VOID mark; the lines table
repeats its headings on every page it spans.
"""

from __future__ import annotations

import functools
import io
import unicodedata
from pathlib import Path

from fpdf import FPDF, FontFace
from fpdf.enums import Align, MethodReturnValue, TableBordersLayout, WrapMode, XPos, YPos

from core.base.money import format_money
from core.billing import payment_qr
from core.billing.invoice_lines import exemption_notes
from core.billing.presentation import (
    CREDIT_NOTE_STATUS_LABELS,
    UNIT_NAMES,
    address_lines,
    bank_rows,
    corrects_text,
    credit_note_url,
    discount_note,
    document_locale,
    exact_number,
    period_text,
    plain_text,
    public_url,
    readable_date,
    reason_text,
    settlement_rows,
    status_label,
    total_rows,
    void_text,
)

FONTS = Path(__file__).parent / "fonts"
FONT = "DejaVu"
FONT_FILES = {"": "DejaVuSans.ttf", "B": "DejaVuSans-Bold.ttf"}
PAGE_MARGIN = 15
LINE_DESCRIPTION_SHOWN = 1200  # characters of a line description printed at most
LINE_DESCRIPTION_LINES = 40  # printed (wrapped) lines at most: 40 x 4.2 mm, so a table row always fits a page
TABLE_FONT_SIZE = 8
TABLE_LINE_HEIGHT = 4.2
TABLE_PADDING = (1, 1)
MISSING_GLYPH = "\ufffd"  # printed for a character the fonts lack
QR_SIZE = 30  # millimetres: the payment QR code with its quiet zone
QR_GAP = 8  # between the bank details and the code
QR_CAPTION_HEIGHT = 7  # two lines of the caption under the code


COLUMNS = ("#", "Description", "Qty", "Unit", "Unit price", "Disc.", "Tax", "Tax amount", "Amount")
COLUMN_WIDTHS = (7, 52, 12, 15, 24, 12, 12, 21, 25)  # millimetres; the sum is the usable width of A4
COLUMN_ALIGN = ("RIGHT", "LEFT", "RIGHT", "LEFT", "RIGHT", "RIGHT", "RIGHT", "RIGHT", "RIGHT")


NOT_APPLICABLE = "—"  # a cell with nothing to say: the quantity of a line credited by amount

def is_credit_note(view: dict) -> bool:
    return view.get("object") == "credit_note"


def filename_for(view: dict) -> str:
    """`INV-0001.pdf`, `credit-note-CN-0001.pdf`, or `draft-in_….pdf` for a draft (safe in a
    Content-Disposition header)."""
    if is_credit_note(view):
        stem = f"credit-note-{view.get('number') or 'preview'}"
    else:
        stem = view.get("number") or f"draft-{view['id']}"
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in stem) + ".pdf"


def render_invoice(view: dict, *, origin: str | None = None, compliance: str | None = None) -> bytes:
    """The PDF of an invoice given as its API dict with `lines` (a credit note's view renders as
    `render_credit_note`); the public link printed on it is on `origin` (default: the configured one).
    `compliance` "PDF/A-3B" makes the archival base of a Factur-X document (fonts embedded, an sRGB
    output intent, XMP metadata)."""
    if is_credit_note(view):
        return render_credit_note(view, origin=origin, compliance=compliance)
    document = _InvoiceDocument(view, compliance)
    document.add_page()
    document.title_block()
    document.parties()
    document.lines_table()
    document.totals()
    document.notes(origin)
    return bytes(document.output())


def render_credit_note(view: dict, *, origin: str | None = None, compliance: str | None = None) -> bytes:
    """The PDF of a credit note given as its API dict (`credit_note_to_api`), on the invoice's layout:
    titled "Credit note", naming the invoice it corrects, its reason and memo, and where its money went."""
    document = _CreditNoteDocument(view, compliance)
    document.add_page()
    document.title_block()
    document.parties()
    document.correction()
    document.lines_table()
    document.totals()
    document.settlement()
    document.notes(origin)
    return bytes(document.output())


# --- formatting ------------------------------------------------------------------------------


def _amount(minor: int, currency: str) -> str:
    """Without the currency code, for table cells: '2,500.00'."""
    return format_money(minor, currency).rsplit(" ", 1)[0]


@functools.cache
def _glyphs() -> frozenset[int]:
    """The code points both vendored fonts (regular and bold) draw, as fpdf2 reads them."""
    document = FPDF()
    for style, name in FONT_FILES.items():
        document.add_font(FONT, style, str(FONTS / name))
    return frozenset(set.intersection(*(set(font.cmap) for font in document.fonts.values())))


_LINE_BREAKS = ("\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
_INVISIBLE = frozenset({"Cc", "Cf", "Mn", "Me"})  # controls, format characters, combining marks
_MARKS = frozenset({"Mn", "Me"})
MARKS_PER_CHARACTER = 8  # combining marks kept on one character (Unicode's stream-safe format allows 30)


@functools.lru_cache(maxsize=4096)
def _shown(code: int) -> str | None:
    """What a character prints as: itself when the fonts draw it, else a space, nothing or U+FFFD."""
    char = chr(code)
    category = unicodedata.category(char)
    if char == "\n" or char == "\xad" or (code in _glyphs() and category != "Cf"):
        return char  # soft hyphens stay: fpdf2 breaks words there
    if char == "\t" or category == "Zs":
        return " "
    if category in _INVISIBLE:
        return None  # invisible: format characters (bidi, joiners: no shaping here) and marks the fonts lack
    return MISSING_GLYPH


class _Substitutes:
    """The `str.translate` table of `_shown` (bounded cache: callers choose the characters)."""

    def __getitem__(self, code: int) -> str | None:
        return _shown(code)


_SUBSTITUTES = _Substitutes()


def printable(value: object, *, multiline: bool = False) -> str:
    """`value` as the PDF prints it: NFC-composed, line breaks as "\n" (or spaces for one-line fields such
    as names and addresses), every character the fonts lack as U+FFFD, invisible ones dropped."""
    text = plain_text(value)
    if not text:
        return ""
    for line_break in _LINE_BREAKS:
        text = text.replace(line_break, "\n")
    if not multiline:
        text = " ".join(text.split("\n"))
    text = unicodedata.normalize("NFC", text).translate(_SUBSTITUTES)
    return (text if text.isascii() else _few_marks(text)).strip()


def _few_marks(text: str) -> str:
    """At most MARKS_PER_CHARACTER combining marks in a row: they take no width, so an endless run of them
    is one endless "word" that fpdf2 measures again with every mark added."""
    kept, run = [], 0
    for char in text:
        run = run + 1 if unicodedata.category(char) in _MARKS else 0
        if run <= MARKS_PER_CHARACTER:
            kept.append(char)
    return "".join(kept)


# --- the documents ---------------------------------------------------------------------------


class _Document(FPDF):
    """What every document prints alike: the issuer, the customer, the lines, the totals, the sections
    under them, the page footer and a diagonal mark (DRAFT, VOID) under the content."""

    NOUN = "Invoice"  # in the metadata's title and an unnumbered document's footer
    HEADING = "INVOICE"
    PARTY = "Bill to"

    def __init__(self, view: dict, compliance: str | None = None):
        super().__init__(orientation="portrait", unit="mm", format="A4", enforce_compliance=compliance)
        self.view = view
        self.currency = view["currency"]
        self.number = printable(view.get("number"))
        self.locale = document_locale(view)
        self.mark = self.mark_text()
        for style, name in FONT_FILES.items():
            self.add_font(FONT, style, str(FONTS / name))
        self.set_margins(PAGE_MARGIN, PAGE_MARGIN, PAGE_MARGIN)
        self.set_auto_page_break(True, margin=PAGE_MARGIN + 5)
        issuer = view.get("issuer") or {}
        self.set_title(f"{self.NOUN} {self.number or 'Draft'}")
        self.set_author(printable(issuer.get("legal_name")))
        self.set_creator("invoicing")
        self.set_font(FONT, size=9)

    def mark_text(self) -> str | None:
        """The large diagonal word on every page, if any."""
        return None

    def facts(self) -> list[str]:
        """The lines under the document's heading and number, right-aligned beside the issuer."""
        return []

    def line_cells(self, line: dict) -> tuple[str, ...]:
        """One row of the lines table, but its position and description."""
        raise NotImplementedError

    # Drawn first on every page, so the mark lies under the content.
    def header(self) -> None:
        if not self.mark:
            return
        with self.local_context(text_color=MARK_COLORS.get(self.mark, (225, 225, 225))):
            self.set_font(FONT, "B", 110)
            with self.rotation(45, x=self.w / 2, y=self.h / 2):
                width = self.get_string_width(self.mark)
                self.text(self.w / 2 - width / 2, self.h / 2 + 15, self.mark)
        self.set_font(FONT, size=9)

    def footer(self) -> None:
        self.set_y(-PAGE_MARGIN)
        self.set_font(FONT, size=7)
        self.set_text_color(120)
        label = self.number or f"Draft {self.NOUN.lower()}"
        self.cell(0, 4, f"{label} · page {self.page_no()} of {{nb}}", align="C")
        self.set_text_color(0)

    # --- blocks ---

    def _line(self, text: str, *, size: float = 9, bold: bool = False, width: float = 0, height: float = 4.5,
              align: str = "L", fill: bool = False) -> None:
        """`text` (already `printable`) wrapped within `width`; a page break inside it keeps the column's x."""
        self.set_font(FONT, "B" if bold else "", size)
        self.multi_cell(width, height, text, align=align, new_x=XPos.LEFT, new_y=YPos.NEXT,
                        wrapmode=WrapMode.WORD, fill=fill)

    def _column(self, x: float, y: float, width: float, rows: list[tuple[str, dict]]) -> float:
        """Rows of text at (x, y) within `width`; returns the y below them (on the page they end on)."""
        self.set_xy(x, y)
        for text, style in rows:
            self.set_x(x)
            self._line(text, width=width, **style)
        return self.get_y()

    def title_block(self) -> None:
        issuer = self.view.get("issuer") or {}
        top, first_page = self.get_y(), self.page
        name = printable(issuer.get("trade_name")) or printable(issuer.get("legal_name"))
        left: list[tuple[str, dict]] = [(name, {"size": 16, "bold": True, "height": 8})]
        legal = printable(issuer.get("legal_name"))
        if legal and legal != name:
            left.append((legal, {}))
        left += [(printable(line), {}) for line in address_lines(issuer.get("address"))]
        if printable(issuer.get("tax_id")):
            left.append((f"Tax ID: {printable(issuer['tax_id'])}", {}))
        left += [(printable(issuer.get(key)), {}) for key in ("email", "phone") if printable(issuer.get(key))]
        right: list[tuple[str, dict]] = [
            (self.HEADING, {"size": 16, "bold": True, "height": 8, "align": "R"}),
            (self.number or "Draft", {"size": 11, "bold": True, "height": 6, "align": "R"}),
            *((fact, {"align": "R"}) for fact in self.facts()),
        ]
        usable = self.w - 2 * PAGE_MARGIN
        # The short right column first: the issuer's column may run on to the next page.
        bottom_right = self._column(PAGE_MARGIN + usable * 0.55, top, usable * 0.45, right)
        bottom_left = self._column(PAGE_MARGIN, top, usable * 0.55, left)
        bottom = max(bottom_left, bottom_right) if self.page == first_page else bottom_left
        self.set_xy(PAGE_MARGIN, bottom + 6)

    def parties(self) -> None:
        customer = self.view.get("customer_details") or {}
        rows: list[tuple[str, dict]] = [(self.PARTY, {"size": 8, "bold": True}),
                                        (printable(customer.get("name")), {"size": 10, "bold": True, "height": 5.5})]
        rows += [(printable(line), {}) for line in address_lines(customer.get("address"))]
        if printable(customer.get("email")):
            rows.append((printable(customer["email"]), {}))
        if printable(customer.get("tax_id")):
            rows.append((f"Tax ID: {printable(customer['tax_id'])}", {}))
        bottom = self._column(PAGE_MARGIN, self.get_y(), (self.w - 2 * PAGE_MARGIN) * 0.6, rows)
        self.set_xy(PAGE_MARGIN, bottom + 6)

    def _shown_description(self, value: object) -> str:
        """A line description cut so that its cell wraps to at most LINE_DESCRIPTION_LINES lines (and
        LINE_DESCRIPTION_SHOWN characters), ended with "…" when cut: a table row must fit one page."""
        text = printable(value, multiline=True)
        shown = text[:LINE_DESCRIPTION_SHOWN]
        width = COLUMN_WIDTHS[COLUMNS.index("Description")]
        lines = self.multi_cell(width, TABLE_LINE_HEIGHT, shown, dry_run=True, output=MethodReturnValue.LINES,
                                padding=TABLE_PADDING, wrapmode=WrapMode.WORD)
        if shown == text and len(lines) <= LINE_DESCRIPTION_LINES:
            return text
        lines = lines[:LINE_DESCRIPTION_LINES]
        last, room = lines[-1].rstrip(), width - 2 * TABLE_PADDING[1]
        while last and self.get_string_width(last + "…") > room:
            last = last[:-1].rstrip()
        return "\n".join([*lines[:-1], last + "…"])

    def lines_table(self) -> None:
        lines = (self.view.get("lines") or {}).get("data", [])
        self.set_font(FONT, size=TABLE_FONT_SIZE)
        headings = FontFace(emphasis="BOLD", fill_color=(235, 235, 235))
        rows = [(str(index), self._shown_description(line.get("description")), *self.line_cells(line))
                for index, line in enumerate(lines, start=1)]
        with self.table(col_widths=COLUMN_WIDTHS, width=sum(COLUMN_WIDTHS), text_align=COLUMN_ALIGN,
                        headings_style=headings, borders_layout=TableBordersLayout.HORIZONTAL_LINES,
                        line_height=TABLE_LINE_HEIGHT, padding=TABLE_PADDING, repeat_headings=1, align=Align.L,
                        wrapmode=WrapMode.WORD) as table:
            table.row(COLUMNS)
            for row in rows:
                table.row(row)
        self.ln(4)

    def totals(self) -> None:
        view, currency = self.view, self.currency
        rows = total_rows(view)
        shown = [(printable(row.label), format_money(row.amount, currency), row.strong) for row in rows]
        # Each column grows with its widest text (the amounts up to 9,007,199,254,740,991 JPY; labels such as
        # "Paid in advance (customer balance)"), so that a label never runs under its amount.
        self.set_font(FONT, "B", 10)
        label_width = max(40, *(self.get_string_width(label) + 2 * self.c_margin + 1 for label, _, _ in shown))
        value_width = max(40, *(self.get_string_width(value) + 2 * self.c_margin + 1 for _, value, _ in shown))
        x = self.w - PAGE_MARGIN - label_width - value_width
        for label, value, bold in shown:
            if self.will_page_break(6):
                self.add_page()
            self.set_x(x)
            self.set_font(FONT, "B" if bold else "", 10 if bold else 9)
            self.cell(label_width, 6, label)
            self.cell(value_width, 6, value, align="R", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
        self.ln(2)
        if note := discount_note(view, lambda minor: format_money(minor, currency)):
            self.set_x(PAGE_MARGIN)
            self._line(note, size=8)
        if printable(view.get("amount_in_words")):
            self.set_x(PAGE_MARGIN)
            self._line(f"Amount in words: {printable(view['amount_in_words'])}", size=8)
        self.ln(4)

    def _section(self, heading: str, body: str) -> None:
        if self.will_page_break(14):
            self.add_page()
        self.set_x(PAGE_MARGIN)
        self._line(heading, size=8, bold=True)
        self.set_x(PAGE_MARGIN)
        self._line(body, size=9)
        self.ln(3)

    def _vat(self) -> None:
        exemptions = exemption_notes((self.view.get("lines") or {}).get("data") or [])
        if exemptions:
            self._section("VAT", "\n".join(printable(note) for note in exemptions))


MARK_COLORS = {"DRAFT": (225, 225, 225), "VOID": (244, 214, 214)}


class _InvoiceDocument(_Document):
    def __init__(self, view: dict, compliance: str | None = None):
        self.is_draft = view.get("status") == "draft" or not view.get("number")
        super().__init__(view, compliance)

    def mark_text(self) -> str | None:
        return "DRAFT" if self.is_draft else None

    def facts(self) -> list[str]:
        view = self.view
        status = printable(status_label(view))
        period = period_text(view, self.locale)
        return [f"Issue date: {readable_date(view.get('issue_date'), self.locale, with_iso=True)}",
                f"Due date: {readable_date(view.get('due_date'), self.locale, with_iso=True)}",
                *([f"Period: {printable(period)}"] if period else []),
                f"Status: {status}", f"Currency: {printable(self.currency)}"]

    def line_cells(self, line: dict) -> tuple[str, ...]:
        return (exact_number(line["quantity"]), printable(UNIT_NAMES.get(line.get("unit"), line.get("unit"))),
                _amount(line["unit_amount"], self.currency), f"{exact_number(line['discount_percent'])}%",
                f"{exact_number(line['tax_rate'])}%", _amount(line["tax_amount"], self.currency),
                _amount(line["amount"], self.currency))

    def notes(self, origin: str | None) -> None:
        view, issuer = self.view, self.view.get("issuer") or {}
        description = printable(view.get("description"), multiline=True)
        if description:
            self._section("Notes", description)
        bank = [f"{label}: {printable(value)}" for label, value in bank_rows(issuer.get("bank")) if printable(value)]
        if bank:
            self.payment_details("\n".join(bank))
        footer = printable(view.get("footer"), multiline=True)
        if footer:
            self._section("Terms", footer)
        self._vat()
        if view.get("public_url_token") and not self.is_draft:
            self._section("View this invoice online", printable(public_url(view["public_url_token"], origin)))

    def payment_details(self, bank: str) -> None:
        """The bank details and, when the invoice has one, its payment QR code beside them (at the right
        margin, captioned); the two stay together on one page."""
        code = payment_qr.epc_qr(self.view)
        if code is None:
            self._section("Payment details", bank)
            return
        width = self.w - 2 * PAGE_MARGIN - QR_SIZE - QR_GAP
        self.set_font(FONT, size=9)
        text_height = 4.5 + self.multi_cell(width, 4.5, bank, dry_run=True, output=MethodReturnValue.HEIGHT,
                                            wrapmode=WrapMode.WORD)
        if self.will_page_break(max(text_height, QR_SIZE + QR_CAPTION_HEIGHT) + 3):
            self.add_page()
        top, x = self.get_y(), self.w - PAGE_MARGIN - QR_SIZE
        text_bottom = self._column(PAGE_MARGIN, top, width, [("Payment details", {"size": 8, "bold": True}),
                                                             (bank, {})])
        self.image(io.BytesIO(payment_qr.png(code)), x=x, y=top, w=QR_SIZE, h=QR_SIZE,
                   alt_text=f"Payment QR code: {payment_qr.CAPTION}")
        caption_bottom = self._column(x - QR_GAP / 2, top + QR_SIZE, QR_SIZE + QR_GAP,
                                      [(payment_qr.CAPTION, {"size": 7, "height": 3.2, "align": "C"})])
        self.set_xy(PAGE_MARGIN, max(text_bottom, caption_bottom) + 3)


class _CreditNoteDocument(_Document):
    NOUN = "Credit note"
    HEADING = "CREDIT NOTE"
    PARTY = "Customer"

    def mark_text(self) -> str | None:
        if self.view.get("status") == "void":
            return "VOID"
        return None if self.number else "DRAFT"  # a preview: nothing issued

    def facts(self) -> list[str]:
        view = self.view
        status = CREDIT_NOTE_STATUS_LABELS.get(view.get("status")) or printable(view.get("status"))
        return [f"Issue date: {readable_date(view.get('issue_date'), self.locale, with_iso=True)}",
                f"Corrects invoice: {printable(view.get('invoice_number'))}",
                f"Status: {status}", f"Currency: {printable(self.currency)}"]

    def correction(self) -> None:
        """The invoice it corrects on a shaded band, then why (its reason and memo), and that it is void."""
        usable = self.w - 2 * PAGE_MARGIN
        self.set_x(PAGE_MARGIN)
        with self.local_context(fill_color=(240, 240, 240)):
            self._line(printable(corrects_text(self.view)), size=10, bold=True, width=usable, height=7, fill=True)
        self.ln(1.5)
        if voided := void_text(self.view):
            self.set_x(PAGE_MARGIN)
            with self.local_context(text_color=(176, 32, 32)):
                self._line(printable(voided), bold=True, width=usable)
        if reason := reason_text(self.view):
            self.set_x(PAGE_MARGIN)
            self._line(f"Reason: {printable(reason)}", width=usable)
        if memo := printable(self.view.get("memo"), multiline=True):
            self.ln(1)
            self.set_x(PAGE_MARGIN)
            self._line(memo, width=usable)
        self.ln(4)

    def line_cells(self, line: dict) -> tuple[str, ...]:
        by_quantity = line.get("quantity") is not None
        unit = printable(UNIT_NAMES.get(line.get("unit"), line.get("unit"))) if by_quantity else ""
        unit_price = _amount(line["unit_amount"], self.currency) if line.get("unit_amount") is not None else ""
        discount = f"{exact_number(line['discount_percent'])}%" if line.get("type") != "custom" else ""
        return (exact_number(line["quantity"]) if by_quantity else NOT_APPLICABLE, unit, unit_price, discount,
                f"{exact_number(line['tax_rate'])}%", _amount(line["tax_amount"], self.currency),
                _amount(line["amount"], self.currency))

    def settlement(self) -> None:
        """Where the money went, one row per part, amounts right-aligned under the totals'."""
        rows = [(printable(label), format_money(amount, self.currency)) for label, amount in settlement_rows(self.view)]
        if not rows:
            return
        if self.will_page_break(14):
            self.add_page()
        heading = "Settlement (undone when it was voided)" if self.view.get("status") == "void" else "Settlement"
        self.set_x(PAGE_MARGIN)
        self._line(heading, size=8, bold=True)
        self.set_font(FONT, size=9)
        usable = self.w - 2 * PAGE_MARGIN
        value_width = max(40, *(self.get_string_width(value) + 2 * self.c_margin + 1 for _, value in rows))
        with self.table(col_widths=(usable - value_width, value_width), width=usable, text_align=("LEFT", "RIGHT"),
                        borders_layout=TableBordersLayout.NONE, first_row_as_headings=False,
                        line_height=5, padding=TABLE_PADDING, align=Align.L, wrapmode=WrapMode.WORD) as table:
            for row in rows:
                table.row(row)
        self.ln(5)

    def notes(self, origin: str | None) -> None:
        self._vat()
        link = plain_text(self.view.get("public_url"))
        if link:
            if origin:
                link = credit_note_url(link.rstrip("/").rsplit("/", 1)[-1], origin)
            self._section("View this credit note online", printable(link))
