"""POST /e-invoice-exports, GET /e-invoice-exports/{id} and its ZIP: the REST binding of the export
the MCP tool runs (the rules themselves: tests/api/test_e_invoice_exports.py)."""

from __future__ import annotations

import csv
import io
import zipfile
from datetime import date, timedelta

from core.base.clock import now
from core.documents import e_invoice_exports
from tests.api.invoicing import adhoc, customer, open_invoice

BRITISH_BUYER = {"name": "Northwind Ltd", "tax_id": "GB987654321", "address": {"city": "Leeds", "country": "GB"}}
JUNE = {"period_start": "2026-06-01", "period_end": "2026-06-30", "format": "peppol"}


def issued(tenant, issue_date: date) -> dict:
    return open_invoice(tenant, customer_id=customer(tenant, **BRITISH_BUYER)["id"],
                        items=[adhoc("Design", 1000, tax_rate=20)], issue_date=issue_date.isoformat())


def test_an_export_is_created_read_and_downloaded(tenant):
    first, second = issued(tenant, date(2026, 6, 1)), issued(tenant, date(2026, 6, 30))
    issued(tenant, date(2026, 7, 1))  # the day after the period

    created = tenant.post("/e-invoice-exports", json=JUNE)

    assert created.status_code == 201, created.text
    made = created.json()["data"]
    assert made["id"].startswith("exp_") and made["object"] == "e_invoice_export"
    assert (made["format"], made["period"], made["documents"], made["skipped"]) == (
        "peppol", {"start": "2026-06-01", "end": "2026-06-30"}, 2, [])
    assert made["filename"] == "e-invoices-2026-06-01-2026-06-30-peppol.zip"
    assert made["uri"] == f"e-invoice-export://{made['id']}"
    read = tenant.get(f"/e-invoice-exports/{made['id']}")
    assert read.status_code == 200 and read.json()["data"] == made

    download = tenant.get(f"/e-invoice-exports/{made['id']}/zip")

    assert download.status_code == 200
    assert download.headers["content-type"] == "application/zip"
    assert download.headers["content-disposition"] == f'attachment; filename="{made["filename"]}"'
    assert len(download.content) == made["size"]
    with zipfile.ZipFile(io.BytesIO(download.content)) as archive:
        assert archive.namelist() == [f"{first['number']}-peppol.xml", f"{second['number']}-peppol.xml", "manifest.csv"]
        assert archive.read(f"{first['number']}-peppol.xml").startswith(b"<?xml")
        manifest = list(csv.DictReader(io.StringIO(archive.read("manifest.csv").decode("utf-8"))))
    assert [(row["number"], row["file"]) for row in manifest] == [
        (first["number"], f"{first['number']}-peppol.xml"), (second["number"], f"{second['number']}-peppol.xml")]


def test_without_a_key_each_request_makes_an_export_and_with_one_a_retry_answers_the_same(tenant):
    issued(tenant, date(2026, 6, 10))
    one, other = tenant.post("/e-invoice-exports", json=JUNE), tenant.post("/e-invoice-exports", json=JUNE)
    assert one.status_code == other.status_code == 201
    assert one.json()["data"]["id"] != other.json()["data"]["id"]

    first = tenant.post("/e-invoice-exports", json=JUNE, idem="june-once")
    again = tenant.post("/e-invoice-exports", json=JUNE, idem="june-once")

    assert first.status_code == again.status_code == 201
    assert again.headers["idempotent-replayed"] == "true" and "idempotent-replayed" not in first.headers
    assert again.json() == first.json()
    reused = tenant.post("/e-invoice-exports", json={**JUNE, "format": "cii"}, idem="june-once")
    assert reused.status_code == 422 and reused.json()["code"] == "idempotency_mismatch"


def test_a_period_the_wrong_way_round_or_too_long_is_422_at_period_end(tenant):
    for body in ({**JUNE, "period_start": "2026-07-01"}, {**JUNE, "period_start": "2025-06-29"}):
        refused = tenant.post("/e-invoice-exports", json=body)
        assert refused.status_code == 422, refused.text
        assert refused.headers["content-type"] == "application/problem+json"
        assert [error["path"] for error in refused.json()["errors"]] == ["period_end"]
    unknown = tenant.post("/e-invoice-exports", json={**JUNE, "format": "xrechnung"})
    assert unknown.status_code == 422 and [e["path"] for e in unknown.json()["errors"]] == ["format"]


def test_it_needs_invoices_read(tenant):
    made = tenant.post("/e-invoice-exports", json=JUNE).json()["data"]
    narrow = tenant.as_key(tenant.key_with(["clients:read", "clients:write", "products:read", "webhooks:manage"]))
    for response in (narrow.post("/e-invoice-exports", json=JUNE), narrow.get(f"/e-invoice-exports/{made['id']}"),
                     narrow.get(f"/e-invoice-exports/{made['id']}/zip")):
        assert response.status_code == 403, response.text
        assert response.json()["code"] == "forbidden" and "invoices:read" in response.json()["detail"]
        assert 'scope="invoices:read"' in response.headers["www-authenticate"]


def test_another_accounts_export_is_not_found(tenant, other_tenant):
    theirs = other_tenant.post("/e-invoice-exports", json=JUNE).json()["data"]
    for path in (f"/e-invoice-exports/{theirs['id']}", f"/e-invoice-exports/{theirs['id']}/zip",
                 f"/e-invoice-exports/{theirs['uri']}", "/e-invoice-exports/exp_0000", "/e-invoice-exports/in_1/zip"):
        response = tenant.get(path)
        assert response.status_code == 404, (path, response.text)
        assert response.json()["code"] == "not_found"
    assert other_tenant.get(f"/e-invoice-exports/{theirs['id']}/zip").status_code == 200


def test_after_24_hours_it_is_not_found(tenant, monkeypatch):
    issued(tenant, date(2026, 6, 1))
    made = tenant.post("/e-invoice-exports", json=JUNE).json()["data"]
    later = now()
    monkeypatch.setattr(e_invoice_exports, "now", lambda: later + timedelta(hours=23, minutes=59))
    assert tenant.get(f"/e-invoice-exports/{made['id']}").status_code == 200
    assert tenant.get(f"/e-invoice-exports/{made['id']}/zip").status_code == 200
    monkeypatch.setattr(e_invoice_exports, "now", lambda: later + timedelta(hours=24, seconds=1))
    for path in (f"/e-invoice-exports/{made['id']}", f"/e-invoice-exports/{made['id']}/zip"):
        expired = tenant.get(path)
        assert expired.status_code == 404 and expired.json()["code"] == "not_found"
        assert "24 hours" in expired.json()["detail"]
