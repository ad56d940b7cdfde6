"""GET /invoices: newest first, without lines, filtered by status, customer, issue dates and number."""

import uuid
from datetime import timedelta

import pytest
from sqlmodel import select

from core.base import db
from core.base.clock import today
from core.models import Invoice
from tests.api.invoicing import customer, draft, finalize, open_invoice, pay, void

UNKNOWN = "0123456789abcdef0123456789abcdef"  # a well-formed id of nothing (fixed: xdist collects alike)


def ids_of(response) -> list[str]:
    assert response.status_code == 200, response.text
    return [invoice["id"] for invoice in response.json()["data"]]


def make_overdue(invoice_id: str) -> None:
    with db.transaction() as session:
        row = session.exec(select(Invoice).where(Invoice.id == uuid.UUID(invoice_id[3:]))).one()
        row.due_date = today() - timedelta(days=1)
        session.add(row)


@pytest.fixture
def one_of_each(tenant) -> dict[str, str]:
    made = {"draft": draft(tenant)["id"], "open": open_invoice(tenant)["id"]}
    made["overdue"] = open_invoice(tenant)["id"]
    make_overdue(made["overdue"])
    made["paid"] = open_invoice(tenant)["id"]
    pay(tenant, made["paid"])
    made["void"] = open_invoice(tenant)["id"]
    void(tenant, made["void"])
    return made


def test_list_is_newest_first_without_lines(tenant):
    made = [draft(tenant)["id"] for _ in range(3)]
    response = tenant.get("/invoices")
    assert ids_of(response) == made[::-1]
    assert all("lines" not in invoice for invoice in response.json()["data"])
    assert response.json()["next_cursor"] is None


@pytest.mark.parametrize("status", ["draft", "open", "overdue", "paid", "void"])
def test_status_filter(tenant, one_of_each, status):
    response = tenant.get("/invoices", params={"status": status})
    assert ids_of(response) == [one_of_each[status]]
    assert response.json()["data"][0]["status"] == status


@pytest.mark.parametrize("status", ["unknown", "OPEN", ""])
def test_unknown_status_is_ignored(tenant, one_of_each, status):
    assert len(ids_of(tenant.get("/invoices", params={"status": status}))) == 5


def test_customer_filter(tenant):
    alice, bob = customer(tenant, name="Alice"), customer(tenant, name="Bob")
    mine = draft(tenant, customer_id=alice["id"])["id"]
    draft(tenant, customer_id=bob["id"])
    assert ids_of(tenant.get("/invoices", params={"customer": alice["id"]})) == [mine]
    assert ids_of(tenant.get("/invoices", params={"customer": str(uuid.UUID(alice["id"][4:]))})) == [mine]


def test_customer_filter_includes_archived_customers(tenant):
    alice = customer(tenant)
    mine = draft(tenant, customer_id=alice["id"])["id"]
    tenant.delete(f"/customers/{alice['id']}")
    assert ids_of(tenant.get("/invoices", params={"customer": alice["id"]})) == [mine]


@pytest.mark.parametrize("value", ["cus_nope", f"cus_{UNKNOWN}"])
def test_customer_filter_naming_no_customer_is_404(tenant, value):
    response = tenant.get("/invoices", params={"customer": value})
    assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_customer_filter_of_another_account_is_404(tenant, other_tenant):
    assert tenant.get("/invoices", params={"customer": customer(other_tenant)["id"]}).status_code == 404


def test_from_and_to_are_inclusive_bounds_on_issue_date(tenant):
    made = {day: draft(tenant, issue_date=f"2026-03-{day:02d}", due_date="")["id"] for day in (1, 2, 3, 4)}
    assert ids_of(tenant.get("/invoices", params={"from": "2026-03-02", "to": "2026-03-03"})) == [made[3], made[2]]
    assert ids_of(tenant.get("/invoices", params={"from": "2026-03-04"})) == [made[4]]
    assert ids_of(tenant.get("/invoices", params={"to": "2026-03-01"})) == [made[1]]


@pytest.mark.parametrize("param, value", [("from", "2026-02-30"), ("to", "03/01/2026"), ("from", "yesterday")])
def test_bad_dates_are_422(tenant, param, value):
    response = tenant.get("/invoices", params={param: value})
    assert response.status_code == 422 and response.json()["errors"][0]["path"] == param


def test_filters_combine(tenant, one_of_each):
    alice = customer(tenant)
    mine = open_invoice(tenant, customer_id=alice["id"], issue_date="2026-01-10", due_date="")["id"]
    params = {"status": "open", "customer": alice["id"], "from": "2026-01-10", "to": "2026-01-10"}
    assert ids_of(tenant.get("/invoices", params=params)) == [mine]


def test_pagination_with_filters(tenant):
    made = [open_invoice(tenant)["id"] for _ in range(3)]
    draft(tenant)
    first = tenant.get("/invoices", params={"status": "open", "limit": 2}).json()
    second = tenant.get("/invoices", params={"status": "open", "limit": 2, "cursor": first["next_cursor"]}).json()
    assert [i["id"] for i in first["data"] + second["data"]] == made[::-1]
    assert second["next_cursor"] is None


def test_cursor_with_other_filters_is_422(tenant):
    for _ in range(2):
        draft(tenant)
    first = tenant.get("/invoices", params={"limit": 1}).json()
    response = tenant.get("/invoices", params={"limit": 1, "status": "draft", "cursor": first["next_cursor"]})
    assert response.status_code == 422 and response.json()["errors"][0]["path"] == "cursor"


@pytest.mark.parametrize("limit, status", [("0", 422), ("abc", 422), ("500", 200)])
def test_limit_rules(tenant, limit, status):
    assert tenant.get("/invoices", params={"limit": limit}).status_code == status


def test_list_needs_invoices_read(tenant):
    reader = tenant.as_key(tenant.key_with(["clients:read"]))
    response = reader.get("/invoices")
    assert response.status_code == 403 and "invoices:read" in response.json()["detail"]


def test_finalize_of_a_listed_draft_moves_it_to_open(tenant):
    invoice = draft(tenant)
    finalize(tenant, invoice["id"])
    assert ids_of(tenant.get("/invoices", params={"status": "draft"})) == []
    assert ids_of(tenant.get("/invoices", params={"status": "open"})) == [invoice["id"]]


def _statements_for(tenant, path: str) -> int:
    from sqlalchemy import event

    from core.base import db
    statements = []
    listener = lambda *args: statements.append(args[2])  # noqa: E731
    event.listen(db.get_engine(), "before_cursor_execute", listener)
    try:
        assert tenant.get(path).status_code == 200
    finally:
        event.remove(db.get_engine(), "before_cursor_execute", listener)
    return len(statements)


def test_a_page_of_drafts_costs_as_many_statements_as_a_page_of_one(tenant):
    from tests.api.invoicing import customer as new_customer
    from tests.api.invoicing import draft
    draft(tenant)
    one = _statements_for(tenant, "/invoices?limit=100")
    for _ in range(12):
        draft(tenant, customer_id=new_customer(tenant)["id"])
    assert _statements_for(tenant, "/invoices?limit=100") == one


def test_a_read_only_session_refuses_to_write(tenant):
    import pytest

    from core.base import db
    from core.models import Customer
    with db.new_session(read_only=True) as session:
        session.add(Customer(account_id=tenant.account_id, name="Sneaky"))
        with pytest.raises(RuntimeError, match="read-only"):
            session.flush()


def test_reads_take_no_write_lock_on_sqlite(tenant, monkeypatch):
    import contextlib

    import pytest

    from core.base import db, raw
    if db.get_engine().dialect.name != "sqlite":
        pytest.skip("the write lock is SQLite's")
    statements: list[str] = []
    opened = raw.sqlite_connection

    @contextlib.contextmanager
    def traced():  # every statement the fast path sends on its sqlite3 connection
        with opened() as connection:
            connection.set_trace_callback(statements.append)
            try:
                yield connection
            finally:
                connection.set_trace_callback(None)

    monkeypatch.setattr(raw, "sqlite_connection", traced)
    assert tenant.get("/invoices").status_code == 200
    # Only the request's count takes the write turn (the fast path reads the key first, then the page).
    assert [s for s in statements if s.startswith("BEGIN")] == ["BEGIN IMMEDIATE"]
    assert statements.index("COMMIT") < len(statements) - 1  # the page is read after the count's commit
    assert statements[-1].startswith("SELECT")


# --- number --------------------------------------------------------------------------------------

def test_number_filter_is_a_case_insensitive_prefix(tenant):
    first, second = open_invoice(tenant), open_invoice(tenant)  # INV-0001, INV-0002
    draft(tenant)  # no number: never matched
    assert ids_of(tenant.get("/invoices", params={"number": "inv-000"})) == [second["id"], first["id"]]
    assert ids_of(tenant.get("/invoices", params={"number": "INV-0002"})) == [second["id"]]
    assert ids_of(tenant.get("/invoices", params={"number": "0002"})) == []


@pytest.mark.parametrize("pattern", ["%", "_NV", "INV-000%"])
def test_number_filter_takes_wildcards_literally(tenant, pattern):
    open_invoice(tenant)
    assert ids_of(tenant.get("/invoices", params={"number": pattern})) == []


def test_number_filter_over_64_characters_is_422(tenant):
    response = tenant.get("/invoices", params={"number": "I" * 65})
    assert response.status_code == 422 and response.json()["errors"][0]["path"] == "number"


def test_pages_of_a_number_search_keep_the_filter(tenant):
    made = [open_invoice(tenant)["id"] for _ in range(3)]
    first = tenant.get("/invoices", params={"number": "INV", "limit": 2}).json()
    second = tenant.get("/invoices", params={"number": "INV", "limit": 2, "cursor": first["next_cursor"]}).json()
    assert [i["id"] for i in first["data"] + second["data"]] == made[::-1]
    other = tenant.get("/invoices", params={"number": "INV-1", "limit": 2, "cursor": first["next_cursor"]})
    assert other.status_code == 422 and other.json()["errors"][0]["path"] == "cursor"


def test_a_cursor_without_the_number_filter_stays_valid(tenant):
    for _ in range(2):
        draft(tenant)
    first = tenant.get("/invoices", params={"limit": 1}).json()
    assert tenant.get("/invoices", params={"limit": 1, "cursor": first["next_cursor"]}).status_code == 200
