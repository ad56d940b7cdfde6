"""The plain-dict renderers of the read path give exactly what the documented response models give
(the OpenAPI document is built from the models)."""

from __future__ import annotations

from core.base import db, ids
from core.billing.business import BusinessOutModel, business_to_api, find_profile
from core.billing.invoice_render import InvoiceItemOut, _InvoiceFields, invoice_fields, line_to_api, lines_of
from core.models import Invoice
from tests.api.invoicing import adhoc, draft, open_invoice


def _rows(invoice_id: str):
    session = db.new_session()
    invoice = session.get(Invoice, ids.parse("invoice", invoice_id))
    return session, invoice


def test_an_invoices_fields_as_the_model_renders_them(tenant):
    for made in (draft(tenant, items=[adhoc("A", 1000, quantity="1.5", tax_rate=20, discount_percent="2.5")]),
                 open_invoice(tenant, items=[adhoc("B", 5)])):
        session, invoice = _rows(made["id"])
        fields = invoice_fields(invoice)
        assert list(fields) == list(_InvoiceFields.model_fields)
        assert _InvoiceFields(**fields).model_dump() == fields
        for line in lines_of(session, invoice):
            rendered = line_to_api(line)
            assert list(rendered) == list(InvoiceItemOut.model_fields)
            assert InvoiceItemOut(**rendered).model_dump() == rendered
        session.close()


def test_the_business_as_the_model_renders_it(tenant):
    with db.transaction() as session:
        rendered = business_to_api(find_profile(session, tenant.account_id))
    assert list(rendered) == list(BusinessOutModel.model_fields)
    assert BusinessOutModel(**rendered).model_dump() == rendered
