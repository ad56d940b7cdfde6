"""The OpenAPI document as client generators see it: openapi-python-client generates a client with
no warning, and that client runs an invoice's life against the live server; openapi-typescript
(npm) accepts the document too."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import make_tenant

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
GENERATOR_CONFIG = ROOT / "docs" / "guide" / "openapi-python-client.yml"
OPENAPI_TYPESCRIPT = ["npx", "--yes", "openapi-typescript@7.13.0"]
TIMEOUT = 300


@pytest.fixture(scope="module")
def origin(live_server_pair) -> str:
    return live_server_pair[0]


@pytest.fixture(scope="module")
def document_path(origin, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("openapi") / "openapi.json"
    path.write_bytes(httpx.get(f"{origin}/api/v1/openapi.json").raise_for_status().content)
    return path


@pytest.fixture(scope="module")
def generation(document_path) -> tuple[subprocess.CompletedProcess, Path]:
    output = document_path.parent / "client"
    bin_dir = Path(sys.executable).parent  # the generator formats its output with ruff, found on PATH
    result = subprocess.run(
        [str(bin_dir / "openapi-python-client"), "generate", "--path", str(document_path),
         "--output-path", str(output), "--config", str(GENERATOR_CONFIG)],
        capture_output=True, text=True, timeout=TIMEOUT,
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"})
    return result, output


def test_openapi_python_client_generates_without_a_warning(generation):
    result, _ = generation
    assert result.returncode == 0, result.stdout + result.stderr
    assert "warning" not in (result.stdout + result.stderr).lower(), result.stdout + result.stderr


@pytest.fixture(scope="module")
def generated(generation):
    _, output = generation
    sys.path.insert(0, str(output))
    try:
        yield importlib.import_module("invoicing_api_client")
    finally:
        sys.path.remove(str(output))


def test_the_generated_client_drafts_finalizes_and_downloads_an_invoice(generated, origin):
    from invoicing_api_client.api.customers import create_customer
    from invoicing_api_client.api.invoices import create_invoice, finalize_invoice, get_invoice, invoice_pdf
    from invoicing_api_client.models import CustomerCreate, Invoice, InvoiceCreate, InvoiceItemInput, InvoiceStatus

    tenant = make_tenant(None)
    client = generated.AuthenticatedClient(base_url=f"{origin}/api/v1", token=tenant.key)
    customer = create_customer.sync(client=client, body=CustomerCreate(name="Northwind Traders",
                                                                       email="ap@northwind.example")).data
    draft = create_invoice.sync(
        client=client, idempotency_key="generated-client-1",
        body=InvoiceCreate(customer=customer.id, items=[
            InvoiceItemInput(description="Consulting", unit_amount=80000, quantity=3, discount_percent=10)])).data
    assert draft.status == InvoiceStatus.DRAFT and draft.total == 216000
    assert draft.issue_date.year >= 2026  # a real `date`, thanks to `format: date`

    finalized = finalize_invoice.sync(client=client, id=draft.id, idempotency_key="generated-client-2").data
    assert isinstance(finalized, Invoice) and finalized.number == "INV-0001"
    assert finalized.finalized_at.tzinfo is not None  # a real `datetime`, thanks to `format: date-time`
    assert finalized.public_url.startswith(origin)

    pdf = invoice_pdf.sync(client=client, id=draft.id)
    assert pdf.payload.read().startswith(b"%PDF-")
    again = get_invoice.sync(client=client, id=draft.id).data
    assert again.lines.data[0].amount == 216000


def test_a_problem_comes_back_typed(generated, origin):
    from invoicing_api_client.api.invoices import get_invoice
    from invoicing_api_client.models import Problem

    client = generated.AuthenticatedClient(base_url=f"{origin}/api/v1", token=make_tenant(None).key)
    problem = get_invoice.sync(client=client, id="in_0123456789abcdef0123456789abcdef")
    assert isinstance(problem, Problem) and problem.code.value == "not_found"


@pytest.mark.skipif(shutil.which("npx") is None and os.environ.get("CI") != "true", reason="node/npx is not installed")
def test_openapi_typescript_accepts_the_document(document_path):
    output = document_path.parent / "api.d.ts"
    result = subprocess.run([*OPENAPI_TYPESCRIPT, str(document_path), "-o", str(output)],
                            capture_output=True, text=True, timeout=TIMEOUT, cwd=document_path.parent)
    if result.returncode != 0 and "npm error" in result.stderr + result.stdout:
        pytest.skip(f"npx could not install openapi-typescript:\n{(result.stderr + result.stdout)[-2000:]}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "⚠" not in result.stdout + result.stderr, result.stdout + result.stderr
    types = output.read_text()
    assert '"/invoices/{id}/finalize"' in types and "webhooks" in types
    assert "InvoiceWithLines: {" in types
