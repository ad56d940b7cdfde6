"""Name search of customers and products (`query`, a case-insensitive substring of the name), and
on SQLite its trigram index (issue 34): the index only narrows the rows the search reads; the
answer is the plain condition's, on both databases."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, event, func, select, update

from core.base import db
from core.catalog import name_search
from core.catalog.customers import CustomerListQuery, list_customers
from core.catalog.products import ProductListQuery, list_products
from core.models import Customer, Product


def create(tenant, path: str, name: str) -> str:
    response = tenant.post(path, json={"name": name})
    assert response.status_code == 201, response.text
    return response.json()["data"]["id"]


def found(tenant, path: str, query: str, **params) -> list[str]:
    response = tenant.get(path, params={"query": query, **params})
    assert response.status_code == 200, response.text
    return [row["name"] for row in response.json()["data"]]


# --- what a search finds (both databases) ----------------------------------------------------------


def test_a_query_finds_names_containing_it_across_words(tenant):
    for name in ("Acme Corporation", "ACME CO", "Acmeco", "Acme-Co"):
        create(tenant, "/customers", name)
    assert found(tenant, "/customers", "me co") == ["ACME CO", "Acme Corporation"]


def test_quotes_and_wildcards_in_a_query_are_literal(tenant):
    for name in ('The "Best" Co', "O'Brien & Sons", "100%_off", "1000 off", "a/b/c", "abc"):
        create(tenant, "/customers", name)
    assert found(tenant, "/customers", '"best"') == ['The "Best" Co']
    assert found(tenant, "/customers", "o'b") == ["O'Brien & Sons"]
    assert found(tenant, "/customers", "0%_") == ["100%_off"]
    assert found(tenant, "/customers", "%_o") == ["100%_off"]
    assert found(tenant, "/customers", "a/b") == ["a/b/c"]


def test_a_renamed_customer_is_found_by_its_new_name_not_its_old_one(tenant):
    customer = create(tenant, "/customers", "Old Name Ltd")
    assert tenant.patch(f"/customers/{customer}", json={"name": "Fresh Title Ltd"}).status_code == 200
    assert found(tenant, "/customers", "old name") == []
    assert found(tenant, "/customers", "fresh title") == ["Fresh Title Ltd"]


def test_an_archived_customer_is_found_only_with_include_deleted(tenant):
    customer = create(tenant, "/customers", "Archived Traders")
    assert tenant.delete(f"/customers/{customer}").status_code == 200
    assert found(tenant, "/customers", "traders") == []
    assert found(tenant, "/customers", "traders", include_deleted="true") == ["Archived Traders"]


def test_a_renamed_product_is_found_by_its_new_name_not_its_old_one(tenant):
    product = create(tenant, "/products", "Old Widget")
    assert tenant.patch(f"/products/{product}", json={"name": "Shiny Gadget"}).status_code == 200
    assert found(tenant, "/products", "old widget") == []
    assert found(tenant, "/products", "shiny gad") == ["Shiny Gadget"]


def test_another_accounts_names_are_not_found(tenant, other_tenant):
    create(tenant, "/customers", "Mine Holdings")
    create(other_tenant, "/customers", "Theirs Holdings")
    assert found(tenant, "/customers", "holdings") == ["Mine Holdings"]


def test_the_pages_of_a_search_follow_one_another_newest_first(tenant):
    made = []
    for n in range(12):
        made.append(create(tenant, "/customers", f"Match {n}"))
        create(tenant, "/customers", f"Other {n}")
    seen, cursor = [], None
    while True:
        params = {"query": "match", "limit": 5, **({"cursor": cursor} if cursor else {})}
        page = tenant.get("/customers", params=params).json()
        seen += [row["id"] for row in page["data"]]
        if not (cursor := page["next_cursor"]):
            break
    assert seen == made[::-1]


# --- SQLite: the index narrows, the plain condition decides ------------------------------------------


@pytest.fixture
def sqlite(test_settings):
    if db.get_engine().dialect.name != "sqlite":
        pytest.skip("the trigram index is SQLite's (PostgreSQL's is pg_trgm, migration 0004)")


def plain(session, model, account_id, typed: str) -> set:
    """The ids the search's condition alone selects, read without any index."""
    condition = func.lower(model.name).contains(typed.lower(), autoescape=True)
    return set(session.scalars(select(model.id).where(model.account_id == account_id, condition)))


def searched(session, model, account_id, typed: str) -> tuple[set, str]:
    """The ids the search selects, and its statement."""
    statement = name_search.of_account(session, model, account_id, typed)
    ids = {row.id for row in session.scalars(statement)}
    return ids, str(statement.compile(session.get_bind()))


# Letters SQLite's lower() folds (ASCII) and some it does not (which the index folds), LIKE's
# wildcards and escape, the FTS5 string's quote, and characters outside the BMP.
ALPHABET = "aAbBkK %_/\"'ÉéßẞİıIΣσς\u212aÅå\u212bǅǆﬀ😀-"
names = st.lists(st.text(alphabet=ALPHABET, min_size=1, max_size=12), min_size=1, max_size=8)


def _query_of(data, drawn_names: list[str]) -> str:
    """A query: a piece of one of the names, cased anyhow, or any text."""
    name = data.draw(st.sampled_from(drawn_names))
    start = data.draw(st.integers(0, len(name) - 1))
    piece = name[start:data.draw(st.integers(start + 1, len(name)))]
    cased = "".join(c.upper() if data.draw(st.booleans()) else c for c in piece)
    return data.draw(st.sampled_from([piece, cased, data.draw(st.text(alphabet=ALPHABET, min_size=1, max_size=5))]))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(drawn_names=names, data=st.data())
def test_the_search_finds_exactly_what_the_plain_condition_finds(sqlite, tenant, drawn_names, data):
    query = _query_of(data, drawn_names)
    try:
        with db.transaction() as session:
            session.add_all([Customer(account_id=tenant.account_id, name=name) for name in drawn_names])
        with db.transaction() as session:
            ids, statement = searched(session, Customer, tenant.account_id, query)
            assert ids == plain(session, Customer, tenant.account_id, query)
        assert ("MATCH" in statement) == (len(query.lower()) >= 3)
    finally:
        with db.transaction() as session:
            session.execute(delete(Customer).where(Customer.account_id == tenant.account_id))


@pytest.mark.parametrize("model", [Customer, Product])
def test_non_ascii_names_are_found_as_the_plain_condition_finds_them(sqlite, tenant, model):
    with db.transaction() as session:
        session.add_all([model(account_id=tenant.account_id, name=name)
                         for name in ("École Élan", "école élan", "STRASSE", "Straße", "KELVIN", "\u212aELVIN", "ΣΊΣΥΦΟΣ")])
    with db.transaction() as session:
        for query in ("école", "ÉCOLE", "élan", "straße", "kelvin", "σίσυφος", "ΣΊΣ"):
            ids, statement = searched(session, model, tenant.account_id, query)
            assert "MATCH" in statement
            assert ids == plain(session, model, tenant.account_id, query), query


def plan_of(read) -> list[str]:
    """EXPLAIN QUERY PLAN of the statement `read` runs on the searched table."""
    engine = db.get_engine()
    captured: list = []

    def capture(_conn, _cursor, statement, parameters, _context, _many):
        captured.append((statement, parameters))
    event.listen(engine, "before_cursor_execute", capture)
    try:
        with db.transaction() as session:
            read(session)
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    statement, parameters = next((s, p) for s, p in captured
                                 if "ORDER BY" in s and ("FROM customers" in s or "FROM products" in s))
    with engine.connect() as connection:
        rows = connection.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters).all()
    return [row[3] for row in rows]


READS = {
    "customers": lambda account_id, typed: lambda s: list_customers(s, account_id, CustomerListQuery(query=typed)),
    "products": lambda account_id, typed: lambda s: list_products(s, account_id, ProductListQuery(query=typed)),
}


@pytest.mark.parametrize("table", ["customers", "products"])
def test_a_query_of_three_characters_or_more_reads_the_trigram_index(sqlite, tenant, table):
    create(tenant, f"/{table}", "Northwind Traders")
    plan = plan_of(READS[table](tenant.account_id, "wind"))
    assert any(f"{table}_name_fts VIRTUAL TABLE" in step for step in plan), plan
    assert any(f"sqlite_autoindex_{table}_1 (id=?)" in step for step in plan), plan
    assert not any(f"ix_{table}_account_created" in step for step in plan), plan


@pytest.mark.parametrize("table", ["customers", "products"])
def test_a_query_of_two_characters_reads_the_account_newest_first(sqlite, tenant, table):
    create(tenant, f"/{table}", "Northwind Traders")
    plan = plan_of(READS[table](tenant.account_id, "wi"))
    assert any(f"ix_{table}_account_created (account_id=?)" in step for step in plan), plan
    assert not any("VIRTUAL TABLE" in step for step in plan), plan


def test_a_query_many_names_contain_reads_the_account_newest_first(sqlite, tenant, monkeypatch):
    monkeypatch.setattr(name_search, "MANY", 3)
    for n in range(3):
        create(tenant, "/customers", f"Common Name {n}")
    plan = plan_of(READS["customers"](tenant.account_id, "common"))
    assert any("ix_customers_account_created (account_id=?)" in step for step in plan), plan
    assert found(tenant, "/customers", "common") == [f"Common Name {n}" for n in (2, 1, 0)]


def test_a_query_fewer_names_contain_reads_the_trigram_index(sqlite, tenant, monkeypatch):
    monkeypatch.setattr(name_search, "MANY", 3)
    for n in range(2):
        create(tenant, "/customers", f"Common Name {n}")
    plan = plan_of(READS["customers"](tenant.account_id, "common"))
    assert any("customers_name_fts VIRTUAL TABLE" in step for step in plan), plan


def index_of(table: str) -> dict:
    """The trigram index's rows: the indexed row's id and the name indexed for it."""
    with db.get_engine().connect() as connection:
        check = f"INSERT INTO {table}_name_fts ({table}_name_fts) VALUES ('integrity-check')"
        connection.exec_driver_sql(check)  # raises if the index and its stored names differ
        return dict(connection.exec_driver_sql(
            f"SELECT k.id, f.name FROM {table}_name_keys k JOIN {table}_name_fts f ON f.rowid = k.key").all())


def rows_of(model) -> dict:
    with db.transaction() as session:
        return {row_id.hex: name for row_id, name in session.execute(select(model.id, model.name))}


@pytest.mark.parametrize("model", [Customer, Product])
def test_the_trigram_index_follows_inserts_renames_and_deletes(sqlite, tenant, model):
    table = model.__tablename__
    with db.transaction() as session:
        made = [model(account_id=tenant.account_id, name=f"Name {n}") for n in range(4)]
        session.add_all(made)
    assert index_of(table) == rows_of(model) and len(rows_of(model)) == 4
    with db.transaction() as session:
        session.execute(update(model).where(model.id == made[0].id).values(name="Renamed"))
        session.execute(update(model).where(model.id == made[1].id).values(name="Name 1"))  # unchanged
        session.execute(delete(model).where(model.id == made[2].id))
    assert index_of(table) == rows_of(model) and rows_of(model)[made[0].id.hex] == "Renamed"
    with db.transaction() as session:
        session.execute(delete(model))
    assert index_of(table) == {}


def test_a_database_without_the_index_searches_the_account(sqlite, tenant, monkeypatch):
    create(tenant, "/customers", "Northwind Traders")
    monkeypatch.setattr(name_search, "_indexed_tables", lambda _session: frozenset())
    plan = plan_of(READS["customers"](tenant.account_id, "wind"))
    assert any("ix_customers_account_created (account_id=?)" in step for step in plan), plan
    assert found(tenant, "/customers", "wind") == ["Northwind Traders"]
