"""GET /invoices: on PostgreSQL each item's JSON is kept under the version of its rows
(`invoice_reads.LISTED`); any list and filter, every page of it (hypothesis), reads byte for byte as
it renders afresh, read again from the JSON kept and after changes underneath; refusals and counts.
On SQLite every page renders afresh, and these hold as well."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import update

from core.base import db, ids
from core.base.clock import today
from core.billing import invoice_reads
from core.models import BusinessProfile, Invoice
from tests import hostile
from tests.api.invoicing import adhoc, customer, draft, finalize, open_invoice, pay, void
from tests.conftest import make_tenant


def listed(tenant, query: str = "", **headers):
    return tenant.get(f"/invoices{'?' + query if query else ''}", headers=headers)


def afresh(tenant, query: str, monkeypatch) -> bytes:
    """The same list rendered afresh: nothing kept."""
    with monkeypatch.context() as patched:
        patched.setattr(invoice_reads, "LISTED", invoice_reads.Rendered(limit=0))
        response = listed(tenant, query)
    assert response.status_code == 200, response.text
    return response.content


def remaining(tenant) -> int:
    return int(tenant.get("/business").headers["ratelimit-remaining"])


def _some_invoices(tenant, statuses: list[str]) -> None:
    buyers = [customer(tenant, name=name)["id"] for name in ("Ada", "Grace")]
    for n, status in enumerate(statuses):
        fields = {"customer_id": buyers[n % 2], "items": [adhoc(f"Item {n}", 1000 + n)]}
        if status == "overdue":
            fields.update(issue_date=(today() - timedelta(days=40)).isoformat(),
                          due_date=(today() - timedelta(days=10)).isoformat())
        invoice = draft(tenant, **fields)
        if status != "draft":
            assert finalize(tenant, invoice["id"]).status_code == 200
        if status == "paid":
            assert pay(tenant, invoice["id"]).status_code == 200
        if status == "void":
            assert void(tenant, invoice["id"]).status_code == 200


@settings(max_examples=max(hostile.EXAMPLES // 4, 5), deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(statuses=st.lists(st.sampled_from(["draft", "open", "paid", "void", "overdue"]), min_size=0, max_size=7),
       status=st.sampled_from([None, "draft", "open", "paid", "void", "overdue", "bogus", ""]),
       limit=st.sampled_from([None, 1, 2, 3, 100, 500]),
       issued=st.sampled_from([None, ("from", 0), ("to", 0), ("from", -20), ("to", -20)]))
def test_every_page_of_any_list_reads_byte_for_byte_as_it_renders_afresh(client, monkeypatch, statuses, status,
                                                                                limit, issued):
    from config.settings import get_settings
    monkeypatch.setattr(get_settings(), "rate_limit_requests", 10**6)
    tenant = make_tenant(client)
    _some_invoices(tenant, statuses)
    query = "&".join(part for part in (
        f"status={status}" if status is not None else "", f"limit={limit}" if limit is not None else "",
        f"{issued[0]}={(today() + timedelta(days=issued[1])).isoformat()}" if issued else "") if part)
    pages = 0
    while True:
        response = listed(tenant, query)
        assert response.status_code == 200, response.text
        assert response.content == afresh(tenant, query, monkeypatch)
        assert listed(tenant, query).content == response.content  # again: the items' JSON kept
        pages += 1
        cursor = response.json()["next_cursor"]
        if cursor is None or pages > 8:
            break
        query = f"{query}&cursor={cursor}" if "cursor=" not in query else \
            query.rsplit("&cursor=", 1)[0] + f"&cursor={cursor}"


@pytest.mark.parametrize("status", ["draft", "open", "paid", "void", "overdue", "bogus"])
def test_each_status_filter_lists_its_invoices(tenant, monkeypatch, status):
    _some_invoices(tenant, ["draft", "open", "paid", "void", "overdue"])
    response = listed(tenant, f"status={status}")
    assert response.content == afresh(tenant, f"status={status}", monkeypatch)
    shown = {item["status"] for item in response.json()["data"]}
    assert shown == ({status} if status != "bogus" else {"draft", "open", "paid", "void", "overdue"})


def test_a_page_of_an_empty_account(tenant, monkeypatch):
    assert listed(tenant).content == afresh(tenant, "", monkeypatch) == b'{"data":[],"next_cursor":null}'


def test_the_headers(tenant):
    draft(tenant)
    response = listed(tenant, **{"X-Request-Id": "list-7"})
    assert response.headers["content-type"] == "application/json"
    assert response.headers["x-request-id"] == "list-7"
    assert int(response.headers["ratelimit-remaining"]) < int(response.headers["ratelimit-limit"])


def _changed(table, where, **values) -> None:
    with db.transaction() as session:
        session.execute(update(table.__table__).where(where).values(**values))


def _listed_then_changed(tenant, change, monkeypatch) -> dict:
    assert listed(tenant).status_code == 200
    assert listed(tenant).content == afresh(tenant, "", monkeypatch)
    change()
    response = listed(tenant)
    assert response.content == afresh(tenant, "", monkeypatch)
    return response.json()["data"][0]


def test_a_drafts_customer_renamed_is_listed_at_once(tenant, monkeypatch):
    invoice = draft(tenant)
    item = _listed_then_changed(tenant, lambda: tenant.patch(f"/customers/{invoice['customer']}",
                                                             json={"name": "Renamed"}), monkeypatch)
    assert item["customer_details"]["name"] == "Renamed"


def test_a_business_profile_changed_is_listed_at_once(tenant, monkeypatch):
    draft(tenant)
    item = _listed_then_changed(tenant, lambda: _changed(BusinessProfile, BusinessProfile.account_id == tenant.account_id,
                                                         legal_name="Renamed Ltd"), monkeypatch)
    assert item["issuer"]["legal_name"] == "Renamed Ltd"


def test_an_invoice_changed_underneath_is_listed_at_once(tenant, monkeypatch):
    invoice = open_invoice(tenant)
    item = _listed_then_changed(tenant, lambda: _changed(Invoice, Invoice.id == ids.parse("invoice", invoice["id"]),
                                                         footer="Written by hand"), monkeypatch)
    assert item["footer"] == "Written by hand"


def test_a_draft_deleted_leaves_the_list_at_once(tenant):
    kept, deleted = draft(tenant), draft(tenant)
    assert len(listed(tenant).json()["data"]) == 2
    assert tenant.delete(f"/invoices/{deleted['id']}").status_code == 200
    assert [item["id"] for item in listed(tenant).json()["data"]] == [kept["id"]]


def test_an_open_invoice_listed_yesterday_is_overdue_today(tenant, monkeypatch):
    invoice = open_invoice(tenant, due_date=today().isoformat())
    assert listed(tenant).json()["data"][0]["status"] == "open"
    assert listed(tenant, "status=overdue").json()["data"] == []
    monkeypatch.setattr(invoice_reads, "today", lambda: today() + timedelta(days=1))
    monkeypatch.setattr("core.billing.invoices.today", lambda: today() + timedelta(days=1))
    monkeypatch.setattr("core.billing.invoice_render.utc_today", lambda: today() + timedelta(days=1))
    assert listed(tenant).json()["data"][0]["status"] == "overdue"
    assert [item["id"] for item in listed(tenant, "status=overdue").json()["data"]] == [invoice["id"]]
    assert listed(tenant, "status=open").json()["data"] == []


def test_another_accounts_invoices_are_not_listed(tenant, other_tenant):
    draft(tenant)
    assert listed(tenant).json()["data"] and listed(other_tenant).json()["data"] == []


def test_an_unknown_key_is_refused_before_anything_is_counted(tenant):
    before = remaining(tenant)
    response = tenant.client.get("/api/v1/invoices", headers={"Authorization": f"Bearer {tenant.key[:-4]}zzzz"})
    assert response.status_code == 401 and response.json()["code"] == "unauthorized"
    assert remaining(tenant) == before - 1


@pytest.mark.parametrize("query", ["limit=0", "limit=many", "from=2026-02-30", "customer=cus_nobody",
                                   "number=INV", "cursor=not-a-cursor"])
def test_other_filters_and_odd_queries_are_counted_once(tenant, query):
    draft(tenant)
    before = remaining(tenant)
    response = listed(tenant, query)
    assert response.status_code in (200, 404, 422)
    assert remaining(tenant) == before - 2  # this request and the /business read


def test_a_cursor_of_other_filters_is_refused_and_counted_once(tenant):
    draft(tenant), draft(tenant)
    cursor = listed(tenant, "limit=1").json()["next_cursor"]
    before = remaining(tenant)
    response = listed(tenant, f"limit=1&status=draft&cursor={cursor}")
    assert response.status_code == 422 and response.json()["errors"][0]["path"] == "cursor"
    assert remaining(tenant) == before - 2


def test_a_cursor_of_another_account_is_refused(tenant, other_tenant):
    draft(tenant), draft(tenant)
    cursor = listed(tenant, "limit=1").json()["next_cursor"]
    response = listed(other_tenant, f"limit=1&cursor={cursor}")
    assert response.status_code == 422 and response.json()["code"] == "validation"


def test_the_limit_refuses_with_retry_after(client, monkeypatch):
    from config.settings import get_settings
    monkeypatch.setattr(get_settings(), "rate_limit_requests", 2)
    tenant = make_tenant(client)
    statuses = [listed(tenant).status_code for _ in range(3)]
    refused = listed(tenant)
    assert 429 in statuses and refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1


def test_a_list_of_invoices_already_read_costs_two_statements_on_postgresql(tenant, monkeypatch):
    if db.get_engine().dialect.name != "postgresql":
        pytest.skip("the items' versions are PostgreSQL's")
    from core.base import raw
    for _ in range(3):
        draft(tenant)
    tenant.get("/business")  # the key's first use notes its use
    statements: list[str] = []
    fetchrow, fetch = raw.Connections.fetchrow, raw.Connections.fetch

    async def counted(connections, sql, arguments):
        statements.append(sql.split()[0])
        return await fetchrow(connections, sql, arguments)

    async def counted_all(connections, sql, arguments):
        statements.append(sql.split()[0])
        return await fetch(connections, sql, arguments)
    monkeypatch.setattr(raw.Connections, "fetchrow", counted)
    monkeypatch.setattr(raw.Connections, "fetch", counted_all)
    listed(tenant)
    assert statements == ["WITH", "SELECT", "SELECT"]  # the key and the count; the versions; the page read whole
    statements.clear()
    listed(tenant)
    assert statements == ["WITH", "SELECT"]


def test_a_pages_plan_reads_the_accounts_index_whatever_the_statistics_said_when_it_was_made(tenant):
    """The plan PostgreSQL keeps for the page's statement is made at its first executions, maybe on an
    account of one invoice, and kept while no ANALYZE runs (the bench's database, autovacuum off, kept
    a plan that read every invoice of the account for each page: 229 pages a second instead of 1,214).
    The executor's connections rule out full scans and sorts wherever an index serves."""
    if db.get_engine().dialect.name != "postgresql":
        pytest.skip("PostgreSQL's plans")
    import asyncio

    from core.base import raw
    from core.billing import invoices
    statement, _ = invoices._page_statement((None, False, False, False, False, False, 101), "versions")
    text = raw.postgres_text(statement)

    async def plan() -> tuple[str, str]:
        connections = raw.Connections(1, raw._connect)
        try:
            settings = await connections.fetchrow(
                "SELECT current_setting('enable_seqscan') || current_setting('enable_sort')", [])
            await connections.fetchrow("SET plan_cache_mode = force_generic_plan", [])
            await connections.fetchrow(f"PREPARE page_plan AS {text.sql}", [])
            rows = await connections.fetch("EXPLAIN EXECUTE page_plan(" + ", ".join(["NULL"] * len(text.names)) + ")", [])
            return settings[0], "\n".join(row[0] for row in rows)
        finally:
            await connections.close()
    settings, shown = asyncio.run(plan())
    assert settings == "offoff"
    assert "Scan Backward using ix_invoices_account_created" in shown and "Seq Scan on invoices" not in shown, shown
