"""A period's e-invoices as one ZIP: what an accountant or a tax adviser is handed for a month, a
quarter or a year.

What is in it: every document the business issued in the period, by issue date, both days included,
in one format (`peppol`, `cii`, `facturx`):

- every finalized invoice, whatever became of it since (`open`, `paid` and `void`): a void invoice
  keeps its number and its e-invoice, and an accountant checks the number series without gaps;
  drafts are not documents and are never in it;
- every credit note, `issued` or `void`, for the same reason.

Oldest first (issue date, then the moment each was numbered). Each is made by
`core.documents.export.e_invoice`, as the single downloads are, and named as they are
(`INV-0007-peppol.xml`, `credit-note-CN-0001-peppol.xml`). A document EN 16931 or Peppol would refuse
(the `ValidationFailed` of `e_invoice`: what it lacks, with the business term) is left out and listed
in `skipped` with why; it never fails the export. `manifest.csv` lists every document of the period,
the skipped ones with their reason. A period without documents is a ZIP holding only the manifest.

The ZIP is kept in `e_invoice_exports` for 24 hours (`read_export` finds it until then; the worker's
cleanup forgets it after). Making it reports progress through `core.mechanisms.progress` before each
document; a runner stopping it (`progress.Stopped`) leaves nothing stored.
"""

from __future__ import annotations

import csv
import io
import uuid
import zipfile
from datetime import date, datetime, timedelta
from typing import Literal

from pydantic import BaseModel, Field, model_validator
from sqlmodel import Session, delete, select

from core.base import executor, ids
from core.base.api_types import Timestamp
from core.base.clock import iso, now
from core.base.db import transaction
from core.base.errors import NotFound, ValidationFailed
from core.base.money import to_major
from core.base.validation import CalendarDate, FieldValueError, Input
from core.billing import credit_notes, invoices
from core.documents.export import FORMAT_NAMES, Format, e_invoice
from core.mechanisms import progress
from core.models import CreditNote, EInvoiceExport, Invoice

# The exports' public ids, `exp_<32 hex>` (registered beside the others of core.base.ids).
KIND = "e_invoice_export"

KEPT_FOR = timedelta(hours=24)
MAX_DAYS = 366  # a leap year, both ends included
MAX_DOCUMENTS = 1000  # one ZIP is built in memory and kept as one row: a busy year is exported in parts
URI_SCHEME = "e-invoice-export"
MEDIA_TYPE = "application/zip"
MANIFEST = "manifest.csv"
MANIFEST_COLUMNS = ("number", "document", "issue_date", "status", "currency", "total", "corrects", "file",
                    "skipped_because")


class ExportInput(Input):
    """A period, both days included, and the format of its e-invoices."""

    period_start: CalendarDate = Field(description="First issue date of the period, YYYY-MM-DD")
    period_end: CalendarDate = Field(description="Last issue date of the period, YYYY-MM-DD, included; "
                                                 f"at most {MAX_DAYS} days after the first counting both")
    format: Format = Field(description="peppol: UBL 2.1 in the Peppol BIS Billing 3.0 profile; cii: UN/CEFACT CII "
                                       "D16B, EN 16931 profile; facturx: the PDF as PDF/A-3 with the CII embedded")

    @model_validator(mode="after")
    def _a_period(self) -> ExportInput:
        if self.period_end < self.period_start:
            raise FieldValueError("period_end", "must not be before period_start")
        if (self.period_end - self.period_start).days + 1 > MAX_DAYS:
            raise FieldValueError("period_end", f"a period is at most {MAX_DAYS} days, both ends included")
        return self


class ExportPeriod(BaseModel):
    """The issue dates exported, both included."""

    start: date = Field(description="First day, YYYY-MM-DD")
    end: date = Field(description="Last day, YYYY-MM-DD")


class SkippedOut(BaseModel):
    """A document of the period left out of the ZIP, and why."""

    number: str = Field(description="The invoice's or credit note's number, such as INV-0007 or CN-0001")
    detail: str = Field(description="What EN 16931 (or Peppol) needs that the document lacks, with the business term")


class ExportOut(BaseModel):
    """A ZIP of a period's e-invoices, kept for 24 hours."""

    id: str = Field(description="The export, `exp_…`")
    object: Literal["e_invoice_export"] = Field(description="Always e_invoice_export")
    format: Format = Field(description="peppol, cii or facturx")
    period: ExportPeriod = Field(description="The issue dates exported, both included")
    documents: int = Field(description="How many e-invoices the ZIP holds")
    skipped: list[SkippedOut] = Field(description="Documents of the period left out because they fail EN 16931 or "
                                                  "Peppol, each with why (also in manifest.csv)")
    filename: str = Field(description="A file name for the ZIP, such as e-invoices-2026-10-01-2026-12-31-peppol.zip")
    size: int = Field(description="The ZIP's size in bytes")
    created: Timestamp = Field(description="When it was made")
    expires_at: Timestamp = Field(description="When it is forgotten (24 hours after it was made)")
    uri: str = Field(description="The ZIP as a resource, e-invoice-export://exp_…")


def create_export(session: Session, account_id: uuid.UUID, inputs: ExportInput) -> dict:
    """Every document the account issued in the period (module docstring) as an e-invoice in one ZIP,
    stored for 24 hours; returns the `ExportOut` object. Reads with `session` and commits it (no
    transaction stays open while documents are made), then stores the ZIP in a transaction of its own
    (the session of a read operation is read-only). `progress.checkpoint` is called before each
    document; a `progress.Stopped` from the runner passes through and nothing is stored."""
    views = _documents(session, account_id, inputs.period_start, inputs.period_end)
    session.commit()
    if len(views) > MAX_DOCUMENTS:
        raise ValidationFailed.at("period_end", f"the period has {len(views)} documents; an export takes at most "
                                                f"{MAX_DOCUMENTS}: export a shorter period")
    buffer, rows, skipped, names = io.BytesIO(), [], [], set()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for done, view in enumerate(views):
            progress.checkpoint(done, len(views), view["number"])
            try:
                document = e_invoice(view, inputs.format)
            except ValidationFailed as refused:
                skipped.append({"number": view["number"], "detail": refused.detail})
                rows.append(_manifest_row(view, None, refused.detail))
                continue
            name = _unique(document.filename, names)
            archive.writestr(_entry(name, _issued(view)), document.content)
            rows.append(_manifest_row(view, name, None))
        progress.checkpoint(len(views), len(views), "writing the ZIP")
        made = now()
        archive.writestr(_entry(MANIFEST, made.date(), made), _manifest(rows))
    row = EInvoiceExport(account_id=account_id, format=inputs.format, period_start=inputs.period_start,
                         period_end=inputs.period_end, filename=export_filename(inputs), documents=len(views) - len(skipped),
                         content=buffer.getvalue(), created_at=made, expires_at=made + KEPT_FOR)
    with transaction() as writing:
        writing.add(row)
    return export_to_api(row, skipped=skipped)


def read_export(session: Session, account_id: uuid.UUID, export_ref: str) -> EInvoiceExport:
    """The account's export `exp_…` (or its bare UUID, or its `e-invoice-export://exp_…` URI) while it
    is kept; NotFound for another account's, an expired or a malformed one."""
    text = export_ref.removeprefix(f"{URI_SCHEME}://") if isinstance(export_ref, str) else export_ref
    export_id = ids.parse(KIND, text, what="e-invoice export")
    found = session.exec(select(EInvoiceExport).where(
        EInvoiceExport.id == export_id, EInvoiceExport.account_id == account_id,
        EInvoiceExport.expires_at > now())).first()
    if found is None:
        raise NotFound(f"No such e-invoice export: {export_ref!r} (exports are kept for 24 hours)")
    return found


def purge_expired(session: Session) -> None:
    """Forget the exports past their 24 hours (the worker's cleanup)."""
    session.exec(delete(EInvoiceExport).where(EInvoiceExport.expires_at <= now()))


def export_to_api(row: EInvoiceExport, *, skipped: list[dict] | None = None) -> dict:
    """The export as the API shows it; what was skipped is read back from its manifest unless given."""
    public = ids.public_id(KIND, row.id)
    return ExportOut(
        id=public, object="e_invoice_export", format=row.format,
        period=ExportPeriod(start=row.period_start, end=row.period_end), documents=row.documents,
        skipped=skipped if skipped is not None else skipped_of(row.content), filename=row.filename,
        size=len(row.content), created=iso(row.created_at), expires_at=iso(row.expires_at),
        uri=f"{URI_SCHEME}://{public}").model_dump(mode="json")


def skipped_of(content: bytes) -> list[dict]:
    """The documents a stored ZIP left out, with why, from its manifest."""
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        text = archive.read(MANIFEST).decode("utf-8")
    return [{"number": _unguarded(row["number"]), "detail": _unguarded(row["skipped_because"])}
            for row in csv.DictReader(io.StringIO(text)) if row["skipped_because"]]


def export_filename(inputs: ExportInput) -> str:
    """`e-invoices-2026-10-01-2026-12-31-peppol.zip`."""
    return f"e-invoices-{inputs.period_start.isoformat()}-{inputs.period_end.isoformat()}-{inputs.format}.zip"


def describe(inputs: ExportInput) -> str:
    """The export in words, for a task's status line: `Peppol BIS Billing 3.0 (UBL) e-invoices issued
    2026-10-01 to 2026-12-31`."""
    return f"{FORMAT_NAMES[inputs.format]} e-invoices issued {inputs.period_start} to {inputs.period_end}"


# --- the documents of a period --------------------------------------------------------------------

def _documents(session: Session, account_id: uuid.UUID, start: date, end: date) -> list[dict]:
    """The views of the period's finalized invoices and credit notes, oldest first."""
    issued = session.exec(select(Invoice.id, Invoice.issue_date, Invoice.finalized_at, Invoice.number).where(
        Invoice.account_id == account_id, Invoice.status != "draft", Invoice.number.is_not(None),
        Invoice.issue_date >= start, Invoice.issue_date <= end)).all()
    notes = session.exec(select(CreditNote.id, CreditNote.issue_date, CreditNote.created, CreditNote.number).where(
        CreditNote.account_id == account_id, CreditNote.issue_date >= start, CreditNote.issue_date <= end)).all()
    found = [(row.issue_date, row.finalized_at, row.number, "invoice", row.id) for row in issued]
    found += [(row.issue_date, row.created, row.number, "credit_note", row.id) for row in notes]
    found.sort(key=lambda item: (item[0], item[1] is None, item[1], item[2]))  # issued, numbered, number
    views = []
    for *_, kind, row_id in found:
        if kind == "invoice":
            views.append(executor.within(session, invoices.view_invoice, account_id, ids.public_id(kind, row_id)))
        else:
            views.append(credit_notes.e_invoice_view(session, account_id, ids.public_id(kind, row_id)))
    return views


# --- the ZIP ---------------------------------------------------------------------------------------

def _issued(view: dict) -> date:
    value = view["issue_date"]
    return value if isinstance(value, date) else date.fromisoformat(str(value))


def _entry(name: str, day: date, moment: datetime | None = None) -> zipfile.ZipInfo:
    """An entry dated by its document's issue date (the manifest by the export's moment), so the same
    documents make the same entries."""
    stamp = (day.year, day.month, day.day, *((moment.hour, moment.minute, moment.second) if moment else (0, 0, 0)))
    info = zipfile.ZipInfo(name, date_time=stamp)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    return info


def _unique(name: str, taken: set[str]) -> str:
    """`name`, or `name` with `-2`, `-3`… before its suffix when two numbers were made safe alike."""
    stem, dot, suffix = name.rpartition(".")
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{stem}-{n}{dot}{suffix}"
    taken.add(candidate)
    return candidate


def _manifest_row(view: dict, file: str | None, skipped_because: str | None) -> list[str]:
    credit_note = view.get("object") == "credit_note"
    corrects = (view.get("corrected_invoice") or {}).get("number") if credit_note else None
    return [_guarded(view["number"]), "credit_note" if credit_note else "invoice", _issued(view).isoformat(),
            view.get("status") or "", view["currency"], str(to_major(view["total"], view["currency"])),
            _guarded(corrects or ""), file or "", _guarded(skipped_because or "")]


def _manifest(rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(MANIFEST_COLUMNS)
    writer.writerows(rows)
    return out.getvalue().encode("utf-8")


_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _guarded(text: str) -> str:
    """Text a spreadsheet would take for a formula, quoted with an apostrophe (OWASP CSV injection)."""
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def _unguarded(text: str) -> str:
    return text[1:] if text.startswith("'") and text[1:].startswith(_FORMULA_STARTS) else text
