"""The client library's models, written by hand, checked against the OpenAPI document the server
serves: every field of every object the API answers, with a matching type and nullability; and the
package imports nothing of the server."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import tomllib
import types
import typing
from decimal import Decimal
from pathlib import Path

import pytest
from invoicing_client import models

SCHEMAS = {
    "Customer": models.Customer, "Address": models.Address, "Product": models.Product, "Price": models.Price,
    "Recurring": models.Recurring, "Business": models.Business, "BusinessAddress": models.BusinessAddress,
    "CallerBusiness": models.Business, "Member": models.Member, "Invitation": models.Invitation,
    "BankDetails": models.BankDetails, "CustomerDetails": models.CustomerDetails, "InvoiceItem": models.InvoiceItem,
    "InvoiceWithLines": models.Invoice, "Invoice": models.Invoice, "InvoiceLines": models.InvoiceLines,
    "InvoicePreview": models.InvoicePreview, "InvoicePreviewLine": models.InvoicePreviewLine,
    "InvoicePreviewLines": models.InvoicePreviewLines,
    "InvoiceEvent": models.InvoiceEvent, "DeletedInvoice": models.DeletedInvoice,
    "WebhookEndpoint": models.WebhookEndpoint, "WebhookEndpointWithSecret": models.WebhookEndpoint,
    "DeletedWebhookEndpoint": models.DeletedWebhookEndpoint,
    # One schema for an issued credit note and a preview (whose id, number and dates are null): checked
    # against the preview's model here, the issued one's below.
    "CreditNote": models.CreditNotePreview, "CreditNoteLines": models.CreditNotePreviewLines,
    "CreditNoteLine": models.CreditNotePreviewLine, "Refund": models.Refund,
    "Payment": models.Payment, "Receivables": models.Receivables, "AgingBucket": models.AgingBucket,
    "CurrencyReceivables": models.CurrencyReceivables, "CustomerReceivables": models.CustomerReceivables,
    "InvoicePeriod": models.InvoicePeriod, "InvoiceSchedule": models.InvoiceSchedule,
    "ScheduleInvoice": models.InvoiceTemplate, "ScheduleInvoiceItem": models.InvoiceTemplateItem,
    "Recurrence": models.Recurrence, "ScheduleFailure": models.ScheduleFailure,
    "ScheduleCreator": models.ScheduleCreator, "ScheduleRun": models.ScheduleRun,
    "ScheduleRunEmail": models.ScheduleRunEmail,
    "ReminderPolicy": models.ReminderPolicy, "ReminderStep": models.ReminderStep, "LateFee": models.LateFee,
    "EInvoiceExport": models.EInvoiceExport, "EInvoiceExportPeriod": models.EInvoiceExportPeriod,
    "EInvoiceExportSkipped": models.EInvoiceExportSkipped,
}
# Exact decimals the API sends as JSON strings, which the models read as Decimal: none (every one is a
# JSON number); timestamps its schema declares a plain string: none.
DECIMALS_AS_STRINGS: set[tuple[str, str]] = set()
TIMESTAMPS_AS_STRINGS: set[tuple[str, str]] = set()
PYTHON_TYPE = {("string", None): str, ("string", "email"): str, ("string", "uri"): str,
               ("string", "date-time"): dt.datetime, ("string", "date"): dt.date, ("integer", None): int,
               ("number", None): Decimal, ("boolean", None): bool, ("object", None): dict, ("array", None): list}
PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "python"


@pytest.fixture(scope="module")
def schemas(app):
    from starlette.testclient import TestClient
    with TestClient(app) as http:
        return http.get("/api/v1/openapi.json").json()["components"]["schemas"]


def _variants(prop: dict) -> list[dict]:
    return prop["anyOf"] if "anyOf" in prop else [prop]


def _expected(prop: dict) -> tuple[set, bool]:
    """The Python types a property may hold, and whether it may be null."""
    kinds, nullable = set(), False
    for variant in _variants(prop):
        if variant.get("type") == "null":
            nullable = True
        elif "$ref" in variant:
            kinds.add(variant["$ref"].rsplit("/", 1)[-1])
        elif "type" in variant:
            kinds.add(PYTHON_TYPE[(variant["type"], variant.get("format"))])
    return kinds, nullable


def _annotation_types(annotation) -> tuple[set, bool]:
    args = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, types.UnionType) else (annotation,)
    found, nullable = set(), False
    for arg in args:
        if arg is type(None):
            nullable = True
            continue
        arg = typing.get_args(arg)[0] if typing.get_origin(arg) is typing.Annotated else arg
        origin = typing.get_origin(arg) or arg
        found.add(origin)
    return found, nullable


@pytest.mark.parametrize("schema_name", sorted(SCHEMAS))
def test_every_field_of_the_schema_is_a_typed_model_field(schemas, schema_name):
    model = SCHEMAS[schema_name]
    for name, prop in schemas[schema_name]["properties"].items():
        assert name in model.model_fields, f"{model.__name__} lacks {name}"
        expected, nullable = _expected(prop)
        if (schema_name, name) in DECIMALS_AS_STRINGS:
            expected = {Decimal if kind is str else kind for kind in expected}
        if (schema_name, name) in TIMESTAMPS_AS_STRINGS:
            expected = {dt.datetime if kind is str else kind for kind in expected}
        found, model_nullable = _annotation_types(model.model_fields[name].annotation)
        named = {kind.__name__ if isinstance(kind, type) else kind for kind in found}
        wanted = {kind if isinstance(kind, str) else kind.__name__ for kind in expected}
        refs = {kind for kind in wanted if kind in SCHEMAS}
        plain = wanted - refs
        assert plain <= named, f"{model.__name__}.{name}: {named} for {wanted}"
        assert all(SCHEMAS[ref].__name__ in named for ref in refs), f"{model.__name__}.{name}: {named} for {wanted}"
        if nullable:
            assert model_nullable, f"{model.__name__}.{name} may be null in the API"


@pytest.mark.parametrize("schema_name", sorted(SCHEMAS))
def test_required_fields_the_api_always_sends_need_no_default_guess(schemas, schema_name):
    """A field the API always sends and never nulls must be required by the model, so a server bug
    that leaves it out is an error, not a silent default (ids and money above all)."""
    model, schema = SCHEMAS[schema_name], schemas[schema_name]
    for name in schema.get("required", []):
        _, nullable = _expected(schema["properties"][name])
        if not nullable and name in {"id", "total", "amount", "unit_amount", "currency", "status"}:
            assert model.model_fields[name].is_required(), f"{model.__name__}.{name}"


@pytest.mark.parametrize(("issued", "preview", "null_in_a_preview"), [
    (models.CreditNote, models.CreditNotePreview, {"id", "number", "created", "updated"}),
    (models.CreditNoteLine, models.CreditNotePreviewLine, {"id"}),
])
def test_an_issued_credit_note_has_what_only_a_preview_lacks(issued, preview, null_in_a_preview):
    """The API's schema allows null ids (a preview's); an issued credit note always has them, so its
    model requires them, and differs from the preview's in nothing else."""
    assert set(issued.model_fields) == set(preview.model_fields)
    for name in null_in_a_preview:
        assert issued.model_fields[name].is_required()
        assert not _annotation_types(issued.model_fields[name].annotation)[1], f"{issued.__name__}.{name}"
    differing = {name for name in issued.model_fields
                 if issued.model_fields[name].annotation != preview.model_fields[name].annotation}
    assert differing - {"lines"} == null_in_a_preview


def test_the_package_needs_none_of_the_servers_dependencies():
    declared = tomllib.loads((PACKAGE / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {dependency.split(">")[0].split("<")[0].split("=")[0].split("[")[0].strip().lower() for dependency in declared}
    assert names == {"httpx", "pydantic", "typing-extensions", "typer", "rich", "platformdirs"}


def test_importing_the_library_and_the_cli_loads_nothing_of_the_server():
    code = ("import sys, invoicing_client, invoicing_client.cli.main\n"
            "print(' '.join(sorted({name.split('.')[0] for name in sys.modules})))")
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                cwd=PACKAGE).stdout.split())
    server = {"starlette", "sqlmodel", "sqlalchemy", "authlib", "mcp", "fpdf", "uvicorn", "alembic", "psycopg",
              "jinja2", "babel", "config", "core", "operations", "rest", "service", "authz", "web"}
    assert not loaded & server
