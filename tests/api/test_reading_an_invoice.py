"""GET /invoices/{id}: any invoice (hypothesis) reads as every write answers it (`invoice_to_api`, from
the ORM), and its JSON kept under the version of its rows (PostgreSQL, `invoice_reads.SHOWN`) is never
stale, whatever changed the rows; the key checked and the request counted in one statement refuse
as `apikeys.verified` does (401 before counting, 403 and 404 after)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.exc import OperationalError

from core.base import db, executor, ids
from core.base.clock import now, today
from core.base.jsonout import dumps
from core.billing import invoice_reads, invoices
from core.billing.invoice_reads import view_invoice
from core.billing.invoice_render import invoice_to_api
from core.mechanisms import ratelimit
from core.models import BusinessProfile, Invoice, InvoiceLine
from tests import hostile
from tests.api.invoicing import adhoc, customer, draft, finalize, open_invoice, pay, void
from tests.conftest import make_tenant

texts = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40).filter(str.strip)
lines = st.fixed_dictionaries({
    "description": texts,
    "unit_amount": st.integers(min_value=0, max_value=10**9),
    "quantity": st.decimals(min_value=Decimal("0.000001"), max_value=Decimal(10**6), places=6).map(str),
    "discount_percent": st.decimals(min_value=0, max_value=100, places=2).map(str),
    "tax_rate": st.sampled_from(["0", "7", "19", "20", "5.5", "0.000001"]),
    "unit": st.sampled_from(["NOS", "HRS", "DAY", "KGS", "OTH"]),
})


def pipeline_bytes(tenant, invoice_id: str) -> bytes:
    """The invoice rendered afresh (a success body is `dumps({"data": …})`): its read (`view_invoice`,
    from Core rows) as every write answers it (`invoice_to_api`, from ORM objects)."""
    with db.transaction() as session:
        read = dumps({"data": executor.within(session, view_invoice, tenant.account_id, invoice_id)})
        written = invoice_to_api(session, invoices.get_invoice(session, tenant.account_id, invoice_id), with_lines=True)
        assert read == dumps({"data": written})
        return read.encode()


def read(tenant, invoice_id: str, **headers):
    return tenant.get(f"/invoices/{invoice_id}", headers=headers)


@settings(max_examples=hostile.EXAMPLES, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(items=st.lists(lines, min_size=0, max_size=6), status=st.sampled_from(["draft", "open", "paid", "void",
                                                                              "overdue"]),
       name=texts, with_address=st.booleans())
def test_any_invoice_reads_byte_for_byte_as_it_renders_afresh(tenant, monkeypatch, items, status, name,
                                                                   with_address):
    from config.settings import get_settings
    monkeypatch.setattr(get_settings(), "rate_limit_requests", 10**6)  # many examples, one key
    buyer = customer(tenant, name=name, **({"address": {"city": name, "country": "DE"}, "peppol_id": "0088:1"}
                                           if with_address else {}))
    fields = {"items": items or [adhoc()], "customer_id": buyer["id"]}
    if status == "overdue":
        fields["issue_date"] = (today() - timedelta(days=40)).isoformat()
        fields["due_date"] = (today() - timedelta(days=10)).isoformat()
    invoice = draft(tenant, **fields) if status == "draft" else open_invoice(tenant, **fields)
    if status == "paid":
        assert pay(tenant, invoice["id"]).status_code == 200
    if status == "void":
        assert void(tenant, invoice["id"]).status_code == 200
    response = read(tenant, invoice["id"])
    assert response.status_code == 200
    assert response.json()["data"]["status"] == status
    assert response.content == pipeline_bytes(tenant, invoice["id"])
    assert read(tenant, invoice["id"]).content == response.content  # read again: the JSON kept (PostgreSQL)


def test_the_headers(tenant):
    invoice = draft(tenant)
    response = read(tenant, invoice["id"], **{"X-Request-Id": "my-request-7"})
    assert response.headers["content-type"] == "application/json"
    assert response.headers["x-request-id"] == "my-request-7"
    assert int(response.headers["ratelimit-remaining"]) < int(response.headers["ratelimit-limit"])


def remaining(tenant) -> int:
    return int(tenant.get("/business").headers["ratelimit-remaining"])


def test_an_unknown_key_is_refused_before_anything_is_counted(tenant):
    invoice = draft(tenant)
    before = remaining(tenant)
    wrong = tenant.key[:-4] + "zzzz"
    response = tenant.client.get(f"/api/v1/invoices/{invoice['id']}", headers={"Authorization": f"Bearer {wrong}"})
    assert response.status_code == 401 and response.json()["code"] == "unauthorized"
    assert remaining(tenant) == before - 1  # only the /business read itself


def _key_changed(tenant, **fields) -> None:
    from core.models import ApiKey
    with db.transaction() as session:
        key = session.get(ApiKey, tenant.key_id)
        for name, value in fields.items():
            setattr(key, name, value)


def _uncounted_refusal(tenant, invoice_id: str, reason: str) -> None:
    with db.transaction() as session:
        subject = f"key:{tenant.key_id}"
        before = ratelimit.peek(session, ratelimit.api_requests(), subject).remaining
    response = read(tenant, invoice_id)
    assert response.status_code == 401 and reason in response.json()["detail"]
    with db.transaction() as session:
        assert ratelimit.peek(session, ratelimit.api_requests(), subject).remaining == before


def test_a_revoked_key_is_refused_on_its_next_read_and_not_counted(tenant):
    invoice = draft(tenant)
    assert read(tenant, invoice["id"]).status_code == 200
    _key_changed(tenant, revoked_at=now())
    _uncounted_refusal(tenant, invoice["id"], "revoked")


def test_an_expired_key_is_refused_and_not_counted(tenant):
    invoice = draft(tenant)
    _key_changed(tenant, expires_at=now() - timedelta(seconds=1))
    _uncounted_refusal(tenant, invoice["id"], "expired")


def test_a_limit_above_the_sliding_logs_counts_in_the_same_statement(client, monkeypatch):
    from config.settings import get_settings
    from core.mechanisms.ratelimit import EXACT_MAX
    monkeypatch.setattr(get_settings(), "rate_limit_requests", EXACT_MAX + 1)  # the sliding-window counter
    tenant = make_tenant(client)
    invoice = draft(tenant)
    before = remaining(tenant)
    response = read(tenant, invoice["id"])
    assert response.status_code == 200 and int(response.headers["ratelimit-remaining"]) == before - 1


def test_an_unknown_invoice_is_counted_then_not_found(tenant):
    before = remaining(tenant)
    response = read(tenant, "in_" + "0" * 32)
    assert response.status_code == 404 and response.json()["detail"] == "No such invoice: in_" + "0" * 32
    assert remaining(tenant) == before - 2  # the 404 and the /business read


def test_another_accounts_invoice_is_not_found(tenant, other_tenant):
    assert read(other_tenant, draft(tenant)["id"]).status_code == 404


def test_a_missing_scope_is_403_counted_once(client):
    reader = make_tenant(client, scopes=["business:read"])
    before = remaining(reader)
    response = read(reader, "in_" + "0" * 32)
    assert response.status_code == 403 and response.json()["code"] == "forbidden"
    assert remaining(reader) == before - 2


def test_a_malformed_request_id_is_422(tenant):
    response = read(tenant, draft(tenant)["id"], **{"X-Request-Id": "x" * 300})
    assert response.status_code == 422 and response.json()["errors"][0]["path"] == "X-Request-Id"


def test_a_malformed_id_is_404(tenant):
    assert read(tenant, "in_not-an-id").status_code == 404


def test_the_limit_refuses_with_retry_after(client, monkeypatch):
    from config.settings import get_settings
    monkeypatch.setattr(get_settings(), "rate_limit_requests", 3)
    tenant = make_tenant(client)
    invoice = draft(tenant)
    statuses = [read(tenant, invoice["id"]).status_code for _ in range(4)]
    assert 429 in statuses
    refused = read(tenant, invoice["id"])
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    assert refused.json()["code"] == "rate_limited"


def test_the_key_notes_its_last_use(tenant):
    from core.models import ApiKey
    invoice = draft(tenant)
    with db.transaction() as session:
        session.get(ApiKey, tenant.key_id).last_used_at = None
    assert read(tenant, invoice["id"]).status_code == 200
    with db.transaction() as session:
        assert session.get(ApiKey, tenant.key_id).last_used_at is not None


@pytest.mark.parametrize(("age", "written"), [(timedelta(seconds=30), False), (timedelta(seconds=61), True)])
def test_the_last_use_is_written_at_most_once_a_minute(tenant, age, written):
    from core.models import ApiKey
    invoice = draft(tenant)
    earlier = now() - age
    _key_changed(tenant, last_used_at=earlier)
    assert read(tenant, invoice["id"]).status_code == 200
    with db.transaction() as session:
        assert (session.get(ApiKey, tenant.key_id).last_used_at != earlier) is written


def test_a_finalized_invoice_reads_as_it_was_frozen(tenant):
    invoice = open_invoice(tenant)
    tenant.patch(f"/customers/{invoice['customer']}", json={"name": "Renamed"})
    response = read(tenant, invoice["id"])
    assert response.json()["data"]["customer_details"]["name"] != "Renamed"
    assert response.content == pipeline_bytes(tenant, invoice["id"])


@pytest.mark.parametrize("field", ["due_date", "description"])
def test_draft_fields_that_are_null(tenant, field):
    invoice = draft(tenant, **{field: None})
    with db.transaction() as session:
        assert getattr(session.get(Invoice, ids.parse("invoice", invoice["id"])), field) is None
    assert read(tenant, invoice["id"]).content == pipeline_bytes(tenant, invoice["id"])


# On PostgreSQL the JSON of an invoice is kept under the version of its rows: a change by any code
# path, to any row it shows, is read at once; on SQLite every read renders, and these hold as well.


def _rows_changed(table, where, **values) -> None:
    """An UPDATE as no operation of the service writes it: the rows changed underneath."""
    from sqlalchemy import update
    with db.transaction() as session:
        session.execute(update(table.__table__).where(where).values(**values))


def _read_twice_then_changed(tenant, invoice: dict, change) -> dict:
    assert read(tenant, invoice["id"]).status_code == 200
    assert read(tenant, invoice["id"]).content == pipeline_bytes(tenant, invoice["id"])
    change()
    response = read(tenant, invoice["id"])
    assert response.content == pipeline_bytes(tenant, invoice["id"])
    return response.json()["data"]


def test_a_drafts_customer_renamed_is_read_at_once(tenant):
    invoice = draft(tenant)
    data = _read_twice_then_changed(tenant, invoice, lambda: tenant.patch(
        f"/customers/{invoice['customer']}", json={"name": "Renamed"}))
    assert data["customer_details"]["name"] == "Renamed"


def test_a_business_profile_changed_is_read_at_once_on_a_draft(tenant):
    invoice = draft(tenant)
    data = _read_twice_then_changed(tenant, invoice, lambda: _rows_changed(
        BusinessProfile, BusinessProfile.account_id == tenant.account_id, legal_name="Renamed Ltd"))
    assert data["issuer"]["legal_name"] == "Renamed Ltd"


def test_a_line_changed_without_its_invoice_is_read_at_once(tenant):
    invoice = draft(tenant)
    data = _read_twice_then_changed(tenant, invoice, lambda: _rows_changed(
        InvoiceLine, InvoiceLine.invoice_id == ids.parse("invoice", invoice["id"]), description="Changed underneath"))
    assert data["lines"]["data"][0]["description"] == "Changed underneath"


def test_a_line_added_and_removed_is_read_at_once(tenant):
    invoice = draft(tenant)
    added = _read_twice_then_changed(tenant, invoice, lambda: tenant.post(
        "/invoice-items", json={"invoice": invoice["id"], **adhoc("Second")}, idem=True))
    assert [line["description"] for line in added["lines"]["data"]] == ["Consulting", "Second"]
    removed = _read_twice_then_changed(tenant, invoice, lambda: tenant.delete(
        f"/invoice-items/{added['lines']['data'][1]['id']}"))
    assert len(removed["lines"]["data"]) == 1


def test_an_invoice_row_changed_underneath_is_read_at_once(tenant):
    invoice = draft(tenant)
    data = _read_twice_then_changed(tenant, invoice, lambda: _rows_changed(
        Invoice, Invoice.id == ids.parse("invoice", invoice["id"]), footer="Written by hand"))
    assert data["footer"] == "Written by hand"


def test_an_invoice_finalized_paid_and_voided_is_read_at_each_step(tenant):
    invoice = draft(tenant)
    opened = _read_twice_then_changed(tenant, invoice, lambda: finalize(tenant, invoice["id"]))
    assert opened["status"] == "open" and opened["number"]
    voided = _read_twice_then_changed(tenant, invoice, lambda: void(tenant, invoice["id"]))
    assert voided["status"] == "void" and voided["amount_due"] == 0


def test_an_open_invoice_read_yesterday_is_overdue_today(tenant, monkeypatch):
    invoice = open_invoice(tenant, due_date=today().isoformat())
    assert read(tenant, invoice["id"]).json()["data"]["status"] == "open"
    monkeypatch.setattr(invoice_reads, "today", lambda: today() + timedelta(days=1))
    assert read(tenant, invoice["id"]).json()["data"]["status"] == "overdue"


def test_an_invoice_read_by_its_account_is_still_not_found_for_another(tenant, other_tenant):
    invoice = draft(tenant)
    assert read(tenant, invoice["id"]).status_code == 200
    assert read(other_tenant, invoice["id"]).status_code == 404


@pytest.mark.parametrize(("fault", "status", "code"), [
    (RuntimeError("boom"), 500, "internal_error"),
    (OperationalError("SELECT 1", {}, Exception("server closed the connection")), 502, "upstream_failed"),
])
def test_a_fault_of_the_read_is_answered_without_its_details(tenant, monkeypatch, fault, status, code):
    async def broken(*_arguments):
        raise fault

    invoice = draft(tenant)
    monkeypatch.setattr(invoice_reads, "shown_invoice", broken)
    response = tenant.get(f"/invoices/{invoice['id']}")
    assert response.status_code == status and response.json()["code"] == code
    assert response.json()["instance"] == response.headers["x-request-id"]
    assert "boom" not in response.text and "server closed" not in response.text
