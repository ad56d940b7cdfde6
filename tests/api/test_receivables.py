"""GET /receivables: what customers owe on open invoices, per currency and per customer, aged by days
past due; only open invoices count, and only what remains of them; pages of customers; and, over random
rows written straight into the database, the same sums as Python's."""

from __future__ import annotations

import random
import uuid
from datetime import date, timedelta
from typing import NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.base import db
from core.base.clock import today
from core.billing.receivables import bucket_of
from core.models import Customer, Invoice
from tests import hostile
from tests.api.invoicing import adhoc, customer, draft, open_invoice, paid_part, pay, void
from tests.conftest import make_tenant

BUCKETS = ["current", "days_1_30", "days_31_60", "days_61_90", "days_over_90"]


def receivables(tenant, **params) -> dict:
    response = tenant.get("/receivables", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def owed(tenant, amount: int = 1000, *, days_past_due: int | None = 10, currency: str = "USD",
         customer_id: str | None = None) -> dict:
    """An open invoice of `amount` (no tax), due `days_past_due` days before today (None: no due date)."""
    on = today()
    due = None if days_past_due is None else on - timedelta(days=days_past_due)
    issued = min(on, due) if due is not None else on
    return open_invoice(tenant, customer_id=customer_id or customer(tenant)["id"], currency=currency,
                        issue_date=issued.isoformat(), due_date=due.isoformat() if due else None,
                        items=[adhoc("Work", amount)])


def bucket_figures(row: dict) -> dict[str, tuple[int, int]]:
    return {b["bucket"]: (b["amount"], b["invoices"]) for b in row["buckets"]}


def only_currency(answer: dict) -> dict:
    (row,) = answer["data"]["currencies"]
    return row


# --- the shape -----------------------------------------------------------------------------------


def test_an_account_without_open_invoices_has_empty_lists(tenant):
    answer = receivables(tenant)
    assert answer == {"data": {"object": "receivables", "as_of": today().isoformat(), "currencies": [],
                               "customers": []}, "next_cursor": None}


def test_every_bucket_is_listed_youngest_first_with_zeros(tenant):
    owed(tenant, 1000, days_past_due=45)
    row = only_currency(receivables(tenant))
    assert [b["bucket"] for b in row["buckets"]] == BUCKETS
    assert bucket_figures(row) == {"current": (0, 0), "days_1_30": (0, 0), "days_31_60": (1000, 1),
                                   "days_61_90": (0, 0), "days_over_90": (0, 0)}


# --- ages ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("days, bucket", [
    (None, "current"), (-3, "current"), (0, "current"), (1, "days_1_30"), (30, "days_1_30"), (31, "days_31_60"),
    (60, "days_31_60"), (61, "days_61_90"), (90, "days_61_90"), (91, "days_over_90"), (400, "days_over_90"),
])
def test_an_invoice_falls_in_the_bucket_of_its_days_past_due(tenant, days, bucket):
    owed(tenant, 1234, days_past_due=days)
    row = only_currency(receivables(tenant))
    assert {name for name, (amount, _) in bucket_figures(row).items() if amount} == {bucket}
    assert bucket_figures(row)[bucket] == (1234, 1)


@pytest.mark.parametrize("days, bucket", [(None, "current"), (-1, "current"), (0, "current"), (1, "days_1_30"),
                                          (30, "days_1_30"), (31, "days_31_60"), (90, "days_61_90"),
                                          (91, "days_over_90")])
def test_bucket_of_names_an_invoices_bucket_as_the_sums_do(days, bucket):
    as_of = date(2026, 3, 1)
    assert bucket_of(None if days is None else as_of - timedelta(days=days), as_of) == bucket


@pytest.mark.parametrize("days, overdue", [(None, False), (0, False), (1, True), (91, True)])
def test_overdue_is_what_is_past_its_due_date(tenant, days, overdue):
    owed(tenant, 700, days_past_due=days)
    row = only_currency(receivables(tenant))
    assert (row["outstanding"], row["invoices"]) == (700, 1)
    assert (row["overdue"], row["overdue_invoices"]) == ((700, 1) if overdue else (0, 0))


# --- what counts ---------------------------------------------------------------------------------


def test_drafts_paid_and_void_invoices_owe_nothing(tenant):
    who = customer(tenant)["id"]
    draft(tenant, customer_id=who, items=[adhoc("Draft", 100)])
    pay(tenant, owed(tenant, 200, customer_id=who)["id"])
    void(tenant, owed(tenant, 400, customer_id=who)["id"])
    owed(tenant, 800, customer_id=who)
    row = only_currency(receivables(tenant))
    assert (row["outstanding"], row["invoices"]) == (800, 1)


def test_a_partly_credited_invoice_counts_what_remains(tenant):
    invoice = owed(tenant, 1000, days_past_due=5)
    note = tenant.post("/credit-notes", json={"invoice": invoice["id"], "credit_amount": 300,
                                              "lines": [{"description": "Discount", "amount": 300}]}, idem=True)
    assert note.status_code == 201, note.text
    row = only_currency(receivables(tenant))
    assert (row["outstanding"], row["overdue"]) == (700, 700)
    assert bucket_figures(row)["days_1_30"] == (700, 1)


def test_a_partly_paid_invoice_counts_what_remains(tenant):
    invoice = owed(tenant, 1000, days_past_due=None)
    paid_part(tenant, invoice["id"], 250)
    answer = receivables(tenant)
    assert only_currency(answer)["outstanding"] == 750
    assert answer["data"]["customers"][0]["outstanding"] == 750


def test_currencies_are_never_added_together(tenant):
    who = customer(tenant)["id"]
    owed(tenant, 1000, currency="USD", customer_id=who)
    owed(tenant, 3000, currency="USD", customer_id=who, days_past_due=None)
    owed(tenant, 500, currency="JPY", customer_id=who)
    rows = {row["currency"]: row for row in receivables(tenant)["data"]["currencies"]}
    assert [row for row in rows] == ["JPY", "USD"]
    assert (rows["USD"]["outstanding"], rows["USD"]["overdue"], rows["USD"]["invoices"]) == (4000, 1000, 2)
    assert (rows["JPY"]["outstanding"], rows["JPY"]["invoices"]) == (500, 1)


def test_other_accounts_invoices_are_never_counted(tenant, other_tenant):
    owed(other_tenant, 9999)
    owed(tenant, 100)
    answer = receivables(tenant)["data"]
    assert only_currency({"data": answer})["outstanding"] == 100
    assert [row["outstanding"] for row in answer["customers"]] == [100]


def test_the_currency_filter_narrows_currencies_and_customers(tenant):
    who = customer(tenant)["id"]
    owed(tenant, 1000, currency="USD", customer_id=who)
    owed(tenant, 500, currency="EUR", customer_id=who)
    answer = receivables(tenant, currency="eur")["data"]
    assert [row["currency"] for row in answer["currencies"]] == ["EUR"]
    assert [(row["currency"], row["outstanding"]) for row in answer["customers"]] == [("EUR", 500)]


def test_an_unknown_currency_is_422_at_currency(tenant):
    response = tenant.get("/receivables", params={"currency": "ZZZ"})
    assert response.status_code == 422
    assert [error["path"] for error in response.json()["errors"]] == ["currency"]


# --- customers -------------------------------------------------------------------------------------


def test_a_customer_row_has_its_id_name_and_figures(tenant):
    who = customer(tenant, name="Northwind Traders")
    owed(tenant, 1000, customer_id=who["id"], days_past_due=None)
    owed(tenant, 400, customer_id=who["id"], days_past_due=70)
    (row,) = receivables(tenant)["data"]["customers"]
    assert (row["customer"], row["name"], row["currency"]) == (who["id"], "Northwind Traders", "USD")
    assert (row["outstanding"], row["overdue"], row["invoices"], row["overdue_invoices"]) == (1400, 400, 2, 1)
    assert bucket_figures(row)["days_61_90"] == (400, 1)


def test_customers_come_largest_outstanding_first_then_by_id(tenant):
    small, large = customer(tenant)["id"], customer(tenant)["id"]
    tied = sorted([customer(tenant)["id"], customer(tenant)["id"]], key=lambda i: uuid.UUID(i[4:]))
    owed(tenant, 100, customer_id=small)
    owed(tenant, 5000, customer_id=large)
    for who in reversed(tied):
        owed(tenant, 700, customer_id=who)
    order = [row["customer"] for row in receivables(tenant)["data"]["customers"]]
    assert order == [large, *tied, small]


def test_a_customer_owing_in_two_currencies_has_a_row_for_each(tenant):
    who = customer(tenant)["id"]
    owed(tenant, 1000, currency="USD", customer_id=who)
    owed(tenant, 3000, currency="EUR", customer_id=who)
    rows = receivables(tenant)["data"]["customers"]
    assert [(row["customer"], row["currency"], row["outstanding"]) for row in rows] == [
        (who, "EUR", 3000), (who, "USD", 1000)]


def test_customer_pages_follow_the_cursor_to_the_end(tenant):
    for amount in (500, 400, 300, 200, 100):
        owed(tenant, amount)
    seen, cursor, pages = [], None, 0
    while True:
        answer = receivables(tenant, limit=2, **({"cursor": cursor} if cursor else {}))
        pages += 1
        assert len(answer["data"]["currencies"]) == 1  # every page carries the currencies
        seen += [row["outstanding"] for row in answer["data"]["customers"]]
        cursor = answer["next_cursor"]
        if cursor is None:
            break
    assert (seen, pages) == ([500, 400, 300, 200, 100], 3)


def test_the_limit_defaults_to_25(tenant):
    who = customer(tenant)["id"]
    tenant_customers = [who] + [customer(tenant)["id"] for _ in range(25)]
    with db.transaction() as session:  # 26 open invoices, written directly: the API would take long
        for n, customer_id in enumerate(tenant_customers):
            session.add(_invoice(tenant.account_id, uuid.UUID(customer_id[4:]), "open", "USD", None, 100 + n))
    answer = receivables(tenant)
    assert len(answer["data"]["customers"]) == 25 and answer["next_cursor"] is not None


def test_a_limit_below_one_is_422_at_limit(tenant):
    response = tenant.get("/receivables", params={"limit": 0})
    assert response.status_code == 422
    assert [error["path"] for error in response.json()["errors"]] == ["limit"]


@pytest.mark.parametrize("cursor", ["nonsense", "eyJhbGciOiJIUzI1NiJ9.e30.AAAA", "x" * 2000])
def test_a_cursor_not_of_this_list_is_422_at_cursor(tenant, cursor):
    response = tenant.get("/receivables", params={"cursor": cursor})
    assert response.status_code == 422
    assert [error["path"] for error in response.json()["errors"]] == ["cursor"]


def test_a_cursor_is_bound_to_its_currency_filter(tenant):
    owed(tenant, 200)
    owed(tenant, 100)
    cursor = receivables(tenant, limit=1)["next_cursor"]
    response = tenant.get("/receivables", params={"cursor": cursor, "currency": "USD"})
    assert response.status_code == 422
    assert response.json()["errors"][0]["path"] == "cursor"


def test_a_cursor_is_bound_to_its_account(tenant, other_tenant):
    owed(tenant, 200)
    owed(tenant, 100)
    cursor = receivables(tenant, limit=1)["next_cursor"]
    response = other_tenant.get("/receivables", params={"cursor": cursor})
    assert response.status_code == 422
    assert response.json()["errors"][0]["path"] == "cursor"


def test_a_cursor_of_another_list_is_refused(tenant):
    for _ in range(2):
        owed(tenant, 100)
    invoices_cursor = tenant.get("/invoices", params={"limit": 1}).json()["next_cursor"]
    response = tenant.get("/receivables", params={"cursor": invoices_cursor})
    assert response.status_code == 422


# --- access ----------------------------------------------------------------------------------------


def test_reading_needs_the_invoices_read_scope(tenant):
    refused = tenant.as_key(tenant.key_with(["clients:read"])).get("/receivables")
    assert refused.status_code == 403
    assert "invoices:read" in refused.json()["detail"]
    assert tenant.as_key(tenant.key_with(["invoices:read"])).get("/receivables").status_code == 200


def test_without_a_credential_it_is_401(client):
    assert client.get("/api/v1/receivables").status_code == 401


# --- the same sums as Python's, over random rows ------------------------------------------------------


def _invoice(account_id: uuid.UUID, customer_id: uuid.UUID, status: str, currency: str, due_date: date | None,
             total: int, credited: int = 0, paid: int = 0) -> Invoice:
    return Invoice(account_id=account_id, customer_id=customer_id, status=status, currency=currency,
                   issue_date=date(2020, 1, 1), due_date=due_date, subtotal=total, taxable=total, total=total,
                   amount_credited=credited, amount_paid=paid)


def _expected_bucket(due_date: date | None, as_of: date) -> str:
    if due_date is None or due_date >= as_of:
        return "current"
    days = (as_of - due_date).days
    return "days_1_30" if days <= 30 else "days_31_60" if days <= 60 else "days_61_90" if days <= 90 \
        else "days_over_90"


class Row(NamedTuple):
    customer_id: uuid.UUID
    status: str
    currency: str
    due_date: date | None
    total: int
    amount_credited: int
    amount_paid: int


def _brute_force(rows: list[Row], as_of: date) -> tuple[dict, list]:
    """Per currency and per (customer, currency): outstanding and count per bucket, from the rows."""
    per_currency: dict = {}
    per_customer: dict = {}
    for row in rows:
        if row.status != "open":
            continue
        remaining, bucket = row.total - row.amount_credited - row.amount_paid, _expected_bucket(row.due_date, as_of)
        for figures in (per_currency.setdefault(row.currency, {}),
                        per_customer.setdefault((row.customer_id, row.currency), {})):
            amount, count = figures.get(bucket, (0, 0))
            figures[bucket] = (amount + remaining, count + 1)

    def shown(figures: dict) -> dict:
        buckets = {name: figures.get(name, (0, 0)) for name in BUCKETS}
        outstanding = sum(amount for amount, _ in buckets.values())
        invoices = sum(count for _, count in buckets.values())
        return {"outstanding": outstanding, "overdue": outstanding - buckets["current"][0], "invoices": invoices,
                "overdue_invoices": invoices - buckets["current"][1], "buckets": buckets}

    currencies = {currency: shown(figures) for currency, figures in per_currency.items()}
    customers = sorted(((customer_id, currency, shown(figures)) for (customer_id, currency), figures
                        in per_customer.items()), key=lambda row: (-row[2]["outstanding"], row[0], row[1]))
    return currencies, customers


def _answered(row: dict) -> dict:
    return {"outstanding": row["outstanding"], "overdue": row["overdue"], "invoices": row["invoices"],
            "overdue_invoices": row["overdue_invoices"], "buckets": bucket_figures(row)}


ROWS = st.lists(st.tuples(
    st.integers(0, 5),  # customer
    st.sampled_from(["draft", "open", "open", "open", "paid", "void"]),
    st.sampled_from(["USD", "EUR", "JPY"]),
    st.one_of(st.none(), st.integers(-40, 130)),  # days past due
    st.integers(0, 10**9),  # total
    st.integers(0, 100), st.integers(0, 100),  # credited and paid, per cent of the total
), min_size=0, max_size=60)


@settings(max_examples=hostile.EXAMPLES, deadline=None, database=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(rows=ROWS, limit=st.integers(1, 7), seed=st.integers(0, 2**16))
def test_the_figures_are_the_sums_of_the_open_invoices(client, rows, limit, seed):
    tenant, other = make_tenant(client), make_tenant(client)
    on = today()
    customer_ids = [uuid.uuid4() for _ in range(6)]
    written = []
    for who, status, currency, days, total, credited, paid in rows:
        credited_amount = total * credited // 100
        due = None if days is None else on - timedelta(days=days)
        written.append(Row(customer_ids[who], status, currency, due, total, credited_amount,
                           (total - credited_amount) * paid // 100))
    with db.transaction() as session:
        stranger = Customer(account_id=other.account_id, name="Elsewhere")
        session.add_all([Customer(id=customer_id, account_id=tenant.account_id, name=f"Customer {n}")
                         for n, customer_id in enumerate(customer_ids)] + [stranger])
        session.flush()
        session.add_all([_invoice(tenant.account_id, *row) for row in written])
        # Some of the same invoices, open, in another account: never counted.
        session.add_all([_invoice(other.account_id, stranger.id, "open", row.currency, row.due_date, row.total)
                         for row in random.Random(seed).sample(written, k=min(5, len(written)))])
    first = receivables(tenant, limit=limit)
    as_of = date.fromisoformat(first["data"]["as_of"])
    currencies, customers_expected = _brute_force(written, as_of)
    assert {row["currency"]: _answered(row) for row in first["data"]["currencies"]} == currencies
    assert [row["currency"] for row in first["data"]["currencies"]] == sorted(currencies)
    listed, answer = [], first
    while True:
        listed += [(uuid.UUID(row["customer"][4:]), row["currency"], _answered(row))
                   for row in answer["data"]["customers"]]
        if answer["next_cursor"] is None:
            break
        answer = receivables(tenant, limit=limit, cursor=answer["next_cursor"])
    assert listed == customers_expected
