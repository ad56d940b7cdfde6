"""A period's e-invoices as one ZIP (core.documents.e_invoice_exports), run through the operation
pipeline as the MCP task runs it: which documents, named how, the manifest, what is skipped, the
period's checks, 24 hours kept, and a runner stopping it between documents."""

from __future__ import annotations

import csv
import io
import json
import uuid
import zipfile
from datetime import date, timedelta

import anyio
import pytest
from sqlmodel import select

from core.base import db, raw
from core.base.clock import now, today
from core.base.errors import NotFound
from core.documents import e_invoice_exports
from core.mechanisms import progress
from core.mechanisms.idempotency import StoredResponse
from core.models import EInvoiceExport
from operations import exports
from operations.pipeline import Invocation, Outcome, execute
from tests.api.invoicing import adhoc, customer, draft, open_invoice, void

BRITISH_BUYER = {"name": "Northwind Ltd", "tax_id": "GB987654321", "address": {"city": "Leeds", "country": "GB"}}
ITEMS = [adhoc("Design", 1000, tax_rate=20)]  # 10.00 + 20 % VAT: 12.00 USD
HEADER = ["number", "document", "issue_date", "status", "currency", "total", "corrects", "file", "skipped_because"]


class _Presenter:
    def success(self, result) -> StoredResponse:
        return StoredResponse(200, json.dumps(result), {})

    def failure(self, error) -> StoredResponse:
        return StoredResponse(error.status, json.dumps({"code": error.code}), {})


def run(tenant, operation, *, body: dict | None = None, params: dict | None = None, key: str | None = None,
        hook=None) -> Outcome:
    """The operation for the tenant's key, through the pipeline (a loop of its own), with `hook` watching."""
    invocation = Invocation(credential=f"Bearer {tenant.key}", resource="http://testserver/api/v1",
                            request_id="req_export", params=params or {},
                            body=json.dumps(body).encode() if body is not None else b"", idempotency_key=key,
                            idempotency_scope=("MCP", operation.name))

    async def on_a_loop_of_its_own() -> Outcome:
        try:
            return await execute(operation, invocation, _Presenter())
        finally:
            await raw.close_postgres_connections()
    with progress.watching(hook or (lambda done, total, message: None)):
        return anyio.run(on_a_loop_of_its_own)


def export(tenant, start: date, end: date, format: str = "peppol", **kw) -> dict:
    outcome = run(tenant, exports.export_e_invoices, body={"period_start": start.isoformat(),
                                                           "period_end": end.isoformat(), "format": format}, **kw)
    assert outcome.error is None, (outcome.error.code, outcome.error.detail)
    return outcome.result


def stored(export_id: str) -> EInvoiceExport:
    with db.transaction() as session:
        row = session.get(EInvoiceExport, uuid.UUID(export_id.removeprefix("exp_")))
        assert row is not None
        return row


def unzipped(export_id: str) -> tuple[dict[str, bytes], list[list[str]]]:
    with zipfile.ZipFile(io.BytesIO(stored(export_id).content)) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    manifest = list(csv.reader(io.StringIO(entries["manifest.csv"].decode("utf-8"))))
    assert manifest[0] == HEADER
    return entries, manifest[1:]


def issued(tenant, issue_date: date, buyer: dict = BRITISH_BUYER) -> dict:
    return open_invoice(tenant, customer_id=customer(tenant, **buyer)["id"], items=ITEMS,
                        issue_date=issue_date.isoformat())


def quarter_of(day: date) -> tuple[date, date]:
    start = date(day.year, (day.month - 1) // 3 * 3 + 1, 1)
    following = date(start.year + 1, 1, 1) if start.month == 10 else date(start.year, start.month + 3, 1)
    return start, following - timedelta(days=1)


def test_a_quarter_with_invoices_and_a_credit_note(tenant):
    start, end = quarter_of(today())
    before = issued(tenant, start - timedelta(days=1))  # INV-0001, the quarter before
    first = issued(tenant, start)  # INV-0002
    second = issued(tenant, today())  # INV-0003, credited below
    third = issued(tenant, today())  # INV-0004, void
    assert void(tenant, third["id"]).status_code == 200
    draft(tenant, customer_id=customer(tenant, **BRITISH_BUYER)["id"], items=ITEMS, issue_date=start.isoformat())
    note = tenant.post("/credit-notes", json={"invoice": second["id"]}, idem=True)
    assert note.status_code == 201, note.text
    assert [before["number"], first["number"], second["number"], third["number"]] == [
        "INV-0001", "INV-0002", "INV-0003", "INV-0004"]
    heard = []

    made = export(tenant, start, end, hook=lambda done, total, message: heard.append((done, total, message)))

    assert made["id"].startswith("exp_") and made["object"] == "e_invoice_export"
    assert made["uri"] == f"e-invoice-export://{made['id']}"
    assert made["filename"] == f"e-invoices-{start.isoformat()}-{end.isoformat()}-peppol.zip"
    assert (made["format"], made["period"], made["documents"], made["skipped"]) == (
        "peppol", {"start": start.isoformat(), "end": end.isoformat()}, 4, [])
    assert made["size"] == len(stored(made["id"]).content)
    entries, manifest = unzipped(made["id"])
    assert list(entries) == ["INV-0002-peppol.xml", "INV-0003-peppol.xml", "INV-0004-peppol.xml",
                             "credit-note-CN-0001-peppol.xml", "manifest.csv"]
    day = today().isoformat()
    shown = tenant.get(f"/invoices/{first['id']}").json()["data"]["status"]  # open, or overdue as the API shows it
    assert manifest == [
        ["INV-0002", "invoice", start.isoformat(), shown, "USD", "12.00", "", "INV-0002-peppol.xml", ""],
        ["INV-0003", "invoice", day, "paid", "USD", "12.00", "", "INV-0003-peppol.xml", ""],
        ["INV-0004", "invoice", day, "void", "USD", "12.00", "", "INV-0004-peppol.xml", ""],
        ["CN-0001", "credit_note", day, "issued", "USD", "12.00", "INV-0003", "credit-note-CN-0001-peppol.xml", ""],
    ]
    # Each document is the one its own download serves.
    alone = tenant.get(f"/invoices/{second['id']}/e-invoice", params={"format": "peppol"})
    assert entries["INV-0003-peppol.xml"] == alone.content
    alone = tenant.get(f"/credit-notes/{note.json()['data']['id']}/e-invoice", params={"format": "peppol"})
    assert entries["credit-note-CN-0001-peppol.xml"] == alone.content
    assert heard == [(0, 4, "INV-0002"), (1, 4, "INV-0003"), (2, 4, "INV-0004"), (3, 4, "CN-0001"),
                     (4, 4, "writing the ZIP")]


def test_each_format_names_its_files(tenant):
    issued(tenant, date(2026, 2, 3))
    made = export(tenant, date(2026, 2, 1), date(2026, 2, 28), "cii")
    entries, _ = unzipped(made["id"])
    assert list(entries) == ["INV-0001-cii.xml", "manifest.csv"] and b"CrossIndustryInvoice" in entries["INV-0001-cii.xml"]
    made = export(tenant, date(2026, 2, 1), date(2026, 2, 28), "facturx")
    entries, _ = unzipped(made["id"])
    assert list(entries) == ["INV-0001-facturx.pdf", "manifest.csv"]
    assert entries["INV-0001-facturx.pdf"].startswith(b"%PDF-") and made["filename"].endswith("-facturx.zip")


def test_drafts_and_days_outside_the_period_are_left_out(tenant):
    issued(tenant, date(2026, 1, 31))
    issued(tenant, date(2026, 3, 1))
    draft(tenant, customer_id=customer(tenant, **BRITISH_BUYER)["id"], items=ITEMS, issue_date="2026-02-10")
    inside = issued(tenant, date(2026, 2, 28))
    made = export(tenant, date(2026, 2, 1), date(2026, 2, 28))
    entries, manifest = unzipped(made["id"])
    assert made["documents"] == 1 and [row[0] for row in manifest] == [inside["number"]]
    assert list(entries) == [f"{inside['number']}-peppol.xml", "manifest.csv"]


def test_another_accounts_documents_are_never_in_it(tenant, other_tenant):
    issued(other_tenant, date(2026, 5, 5))
    mine = issued(tenant, date(2026, 5, 6))
    made = export(tenant, date(2026, 5, 1), date(2026, 5, 31))
    _, manifest = unzipped(made["id"])
    assert made["documents"] == 1 and [row[0] for row in manifest] == [mine["number"]]
    theirs = export(other_tenant, date(2026, 5, 1), date(2026, 5, 31))
    assert theirs["documents"] == 1 and stored(theirs["id"]).account_id == other_tenant.account_id
    # Nor can another account read it back.
    refused = run(other_tenant, exports.get_e_invoice_export, params={"id": made["id"]})
    assert refused.error is not None and refused.error.code == "not_found"
    with db.transaction() as session, pytest.raises(NotFound):
        e_invoice_exports.read_export(session, other_tenant.account_id, made["id"])


def test_a_document_e_invoicing_refuses_is_listed_as_skipped(tenant):
    good = issued(tenant, date(2026, 4, 1))
    bad = issued(tenant, date(2026, 4, 2), buyer={"name": "Somewhere Ltd"})  # no address: BT-55 missing
    made = export(tenant, date(2026, 4, 1), date(2026, 4, 30))
    assert made["documents"] == 1
    [skipped] = made["skipped"]
    assert skipped["number"] == bad["number"] and "customer.address.country" in skipped["detail"]
    assert "BT-55" in skipped["detail"]
    entries, manifest = unzipped(made["id"])
    assert list(entries) == [f"{good['number']}-peppol.xml", "manifest.csv"]
    assert manifest[1] == [bad["number"], "invoice", "2026-04-02", "overdue", "USD", "12.00", "", "", skipped["detail"]]
    # Read back, the export says the same (what was skipped comes from its manifest).
    again = run(tenant, exports.get_e_invoice_export, params={"id": made["id"]})
    assert again.error is None and again.result == made


def test_a_period_without_documents_is_a_zip_of_the_manifest(tenant):
    made = export(tenant, date(2025, 1, 1), date(2025, 12, 31))
    entries, manifest = unzipped(made["id"])
    assert (made["documents"], made["skipped"], list(entries), manifest) == (0, [], ["manifest.csv"], [])


@pytest.mark.parametrize(("body", "path"), [
    ({"period_start": "2026-03-01", "period_end": "2026-02-28", "format": "peppol"}, "period_end"),
    ({"period_start": "2024-01-01", "period_end": "2025-01-01", "format": "peppol"}, "period_end"),
    ({"period_start": "2026-02-30", "period_end": "2026-03-31", "format": "peppol"}, "period_start"),
    ({"period_start": "2026-01-01", "period_end": "2026-03-31", "format": "xrechnung"}, "format"),
    ({"period_start": "2026-01-01", "period_end": "2026-03-31"}, "format"),
    ({"period_start": "2026-01-01", "period_end": "2026-03-31", "format": "cii", "extra": 1}, "extra"),
    (None, "body"),
])
def test_the_period_is_checked_at_its_field(tenant, body, path):
    outcome = run(tenant, exports.export_e_invoices, body=body)
    assert outcome.error is not None and outcome.error.code == "validation"
    assert [error.path for error in outcome.error.errors] == [path]


def test_a_whole_leap_year_is_one_period(tenant):
    made = export(tenant, date(2028, 1, 1), date(2028, 12, 31))
    assert made["period"] == {"start": "2028-01-01", "end": "2028-12-31"}


def test_it_is_kept_24_hours(tenant, monkeypatch):
    issued(tenant, date(2026, 6, 1))
    made = export(tenant, date(2026, 6, 1), date(2026, 6, 30))
    row = stored(made["id"])
    assert row.expires_at - row.created_at == timedelta(hours=24)
    later = now()
    monkeypatch.setattr(e_invoice_exports, "now", lambda: later + timedelta(hours=23, minutes=59))
    assert run(tenant, exports.get_e_invoice_export, params={"id": made["id"]}).result["id"] == made["id"]
    from service import worker
    worker.cleanup()
    assert stored(made["id"])
    monkeypatch.setattr(e_invoice_exports, "now", lambda: later + timedelta(hours=24, seconds=1))
    expired = run(tenant, exports.get_e_invoice_export, params={"id": made["id"]})
    assert expired.error is not None and expired.error.code == "not_found"
    worker.cleanup()
    with db.transaction() as session:
        assert session.exec(select(EInvoiceExport)).all() == []


def test_a_runner_stops_it_between_documents_and_nothing_is_stored(tenant):
    for day in (1, 2, 3):
        issued(tenant, date(2026, 7, day))
    heard = []

    def stop_at_the_second(done: int, total: int, message: str) -> None:
        heard.append((done, total, message))
        if done == 1:
            raise progress.Stopped

    with pytest.raises(progress.Stopped):
        run(tenant, exports.export_e_invoices, key="stopped-once", hook=stop_at_the_second,
            body={"period_start": "2026-07-01", "period_end": "2026-07-31", "format": "peppol"})
    assert heard == [(0, 3, "INV-0001"), (1, 3, "INV-0002")]
    with db.transaction() as session:
        assert session.exec(select(EInvoiceExport)).all() == []
    # The key was let go: asked again, it runs.
    made = export(tenant, date(2026, 7, 1), date(2026, 7, 31), key="stopped-once")
    assert made["documents"] == 3


def test_a_key_answers_a_retry_with_the_same_export(tenant):
    issued(tenant, date(2026, 8, 1))
    body = {"period_start": "2026-08-01", "period_end": "2026-08-31", "format": "peppol"}
    first = run(tenant, exports.export_e_invoices, body=body, key="once")
    again = run(tenant, exports.export_e_invoices, body=body, key="once")
    assert first.error is None and again.replayed
    assert json.loads(again.reply.body)["id"] == first.result["id"]
    with db.transaction() as session:
        assert len(session.exec(select(EInvoiceExport)).all()) == 1


def test_it_needs_invoices_read(tenant):
    narrow = tenant.as_key(tenant.key_with(["clients:read"]))
    outcome = run(narrow, exports.export_e_invoices,
                  body={"period_start": "2026-08-01", "period_end": "2026-08-31", "format": "peppol"})
    assert outcome.error is not None and outcome.error.code == "forbidden"


def test_checkpoint_without_a_runner_does_nothing_and_watching_restores():
    progress.checkpoint(0, 1, "INV-0001")
    heard = []
    with progress.watching(lambda *args: heard.append(args)):
        progress.checkpoint(0, 2, "a")
        with progress.watching(lambda *args: heard.append(("inner", *args))):
            progress.checkpoint(1, 2, "b")
        progress.checkpoint(2, 2, "c")
    progress.checkpoint(0, 1, "after")
    assert heard == [(0, 2, "a"), ("inner", 1, 2, "b"), (2, 2, "c")]
    assert not issubclass(progress.Stopped, Exception)


def test_a_period_of_more_documents_than_an_export_takes_is_refused_at_its_end(tenant, monkeypatch):
    monkeypatch.setattr(e_invoice_exports, "MAX_DOCUMENTS", 1)
    day = today()
    issued(tenant, day)
    issued(tenant, day)
    outcome = run(tenant, exports.export_e_invoices, body={"period_start": day.isoformat(),
                                                           "period_end": day.isoformat(), "format": "cii"})
    assert outcome.error is not None and [error.path for error in outcome.error.errors] == ["period_end"]
    assert "2 documents" in outcome.error.errors[0].message
    with db.transaction() as session:
        assert session.exec(select(EInvoiceExport)).all() == []
