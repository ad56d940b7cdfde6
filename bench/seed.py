"""Seed the benchmark's data in the database INVOICING_DATABASE_URL names; each command prints JSON.

    python -m bench.seed account            migrate; a business, a full-access key, 50 customers
    python -m bench.seed drafts ACCOUNT N   N drafts of one line each (ids written to stdout)
    python -m bench.seed refresh ACCOUNT N RESOURCE
                                            N OAuth grants of one public client, one refresh token each
    python -m bench.seed oauth ACCOUNT RESOURCE...
                                            an access token with every scope for each resource (a grant
                                            each, of one public client): the assistant's credential
    python -m bench.seed grow ACCOUNT N     customers and invoices of the account up to N each
    python -m bench.seed tenants N ROWS     N more accounts with ROWS customers and drafts each
    python -m bench.seed receivables ACCOUNT OPEN TOTAL
                                            the account's invoices up to TOTAL, OPEN of them open
                                            (aged, part credited or paid) and the rest paid or void,
                                            among 1,000 customers: INSERT … SELECT over a series

Bulk rows are copies of one row made through `core`, written with executemany (fast on both
databases); ids, names and creation times differ, so pagination and search see realistic data.
"""

from __future__ import annotations

import json
import secrets
import sys
import uuid
from collections.abc import Iterable, Iterator
from datetime import timedelta
from itertools import islice

from sqlalchemy import BigInteger, Date, Integer, bindparam, func, insert, select, text

from authz import clients, tokens
from authz.models import OAuthGrant
from bench.names import customer_name
from core.access import accounts, apikeys
from core.access.principal import Principal
from core.access.scopes import PRESETS
from core.base import db, executor
from core.base.clock import now, today
from core.base.db import UTCDateTime
from core.billing import invoices
from core.billing.business import BusinessInput, set_profile
from core.billing.invoice_inputs import InvoiceCreate
from core.catalog import customers
from core.catalog.customers import CustomerCreate
from core.models import Account, BusinessProfile, Customer, Invoice, InvoiceLine, User
from service import migrate

BUSINESS = {"legal_name": "Bench Ltd", "country_code": "GB", "currency": "USD", "invoice_prefix": "BEN"}
BATCH = 5000


def _principal(account_id: uuid.UUID) -> Principal:
    return Principal(account_id=account_id, granted_scopes=frozenset(PRESETS["full_access"]), actor="api_key", role="owner",
                     credential_id="bench-seed")


def account() -> dict:
    migrate.upgrade()
    with db.transaction() as session:
        user, created = accounts.create_account(session, email=f"bench-{secrets.token_hex(4)}@example.com",
                                                password="benchmark password")
        set_profile(session, created.id, BusinessInput.model_validate(BUSINESS))
        key = apikeys.create_key(session, created.id, created_by=user.id, name="bench", scopes=list(PRESETS["full_access"]))
        first = [customers.create_customer(session, created.id, CustomerCreate(name=f"Customer {n:03d}"))
                 for n in range(50)][0]
    return {"key": key.key, "account": str(created.id), "user": str(user.id), "customer": "cus_" + first.id.hex}


def _rows_like(row: dict, count: int, vary) -> Iterator[dict]:
    """`count` copies of a table row, each changed by `vary(copy, n)`."""
    for n in range(count):
        copy = dict(row)
        vary(copy, n)
        yield copy


def _write(session, table, rows: Iterable[dict]) -> None:
    rows = iter(rows)
    while batch := list(islice(rows, BATCH)):
        session.execute(insert(table), batch)


def _one(session, table, column, value) -> dict:
    return dict(session.execute(select(table).where(column == value)).mappings().one())


def drafts(account_id: str, count: int) -> dict:
    """`count` drafts of one line each, as `POST /invoices` would leave them."""
    owner = uuid.UUID(account_id)
    with db.transaction() as session:
        customer = session.execute(select(Customer.id).where(Customer.account_id == owner).limit(1)).scalar_one()
        model = executor.within(session, invoices.create_invoice, _principal(owner), InvoiceCreate.model_validate(
            {"customer": "cus_" + customer.hex, "items": [{"description": "Consulting", "unit_amount": 1000}]}))
        session.flush()
        invoice_row = _one(session, Invoice.__table__, Invoice.__table__.c.id, model.id)
        line_row = _one(session, InvoiceLine.__table__, InvoiceLine.__table__.c.invoice_id, model.id)
        ids = [uuid.uuid4() for _ in range(count - 1)]

        def invoice_copy(row, n):
            row["id"] = ids[n]

        def line_copy(row, n):
            row["id"], row["invoice_id"] = uuid.uuid4(), ids[n]
        _write(session, Invoice.__table__, _rows_like(invoice_row, count - 1, invoice_copy))
        _write(session, InvoiceLine.__table__, _rows_like(line_row, count - 1, line_copy))
    return {"drafts": ["in_" + i.hex for i in [model.id, *ids]]}


def refresh(account_id: str, count: int, resource: str) -> dict:
    """`count` grants of one public client, each with a fresh refresh token: one chain per client
    connection of the load generator (a refresh token is single-use)."""
    owner = uuid.UUID(account_id)
    client_id = f"bench-{secrets.token_hex(6)}"
    chains = []
    with db.transaction() as session:
        user_id = session.execute(select(Account.owner_user_id).where(Account.id == owner)).scalar_one()
        clients.register(session, client_id=client_id, client_secret=None, metadata={
            "token_endpoint_auth_method": "none", "redirect_uris": ["http://127.0.0.1/callback"],
            "client_name": "Bench"})
        for _ in range(count):
            grant = OAuthGrant(client_id=client_id, user_id=user_id, account_id=owner, resource=resource,
                               scopes=["invoices:read"])
            session.add(grant)
            session.flush()
            refresh_token = tokens.new_refresh_token()
            tokens.store_pair(session, grant, {"access_token": tokens.new_access_token(),
                                               "refresh_token": refresh_token, "scope": "invoices:read"})
            chains.append(refresh_token)
    return {"client_id": client_id, "refresh_tokens": chains}


def oauth(account_id: str, *resources: str) -> dict:
    """An access token with every scope of the full-access preset for each resource (the REST API,
    the MCP endpoint), each of its own grant of one public client, as an assistant holds after consent."""
    owner = uuid.UUID(account_id)
    client_id = f"bench-assistant-{secrets.token_hex(6)}"
    scopes = sorted(PRESETS["full_access"])
    access = {}
    with db.transaction() as session:
        user_id = session.execute(select(Account.owner_user_id).where(Account.id == owner)).scalar_one()
        clients.register(session, client_id=client_id, client_secret=None, metadata={
            "token_endpoint_auth_method": "none", "redirect_uris": ["http://127.0.0.1/callback"],
            "client_name": "Bench assistant"})
        for resource in resources:
            grant = OAuthGrant(client_id=client_id, user_id=user_id, account_id=owner, resource=resource, scopes=scopes)
            session.add(grant)
            session.flush()
            access[resource] = tokens.new_access_token()
            tokens.store_pair(session, grant, {"access_token": access[resource], "scope": " ".join(scopes)})
    return {"client_id": client_id, "access_tokens": access}


def _count(session, model, owner: uuid.UUID) -> int:
    return session.execute(select(func.count()).select_from(model).where(model.account_id == owner)).scalar_one()


def grow(account_id: str, target: int, *, analyze: bool = True) -> dict:
    """Customers and invoices of the account up to `target` each; the newest rows are the copies,
    one second apart, the n-th customer named `bench.names.customer_name(n)`."""
    owner = uuid.UUID(account_id)
    customer_table, invoice_table = Customer.__table__, Invoice.__table__
    with db.transaction() as session:
        have = _count(session, Customer, owner)
        customer_row = dict(session.execute(select(customer_table).where(customer_table.c.account_id == owner)
                                            .limit(1)).mappings().one())
        invoice_row = dict(session.execute(select(invoice_table).where(
            invoice_table.c.account_id == owner, invoice_table.c.status == "draft").limit(1)).mappings().one())
        start = now()
        added = max(0, target - have)
        customer_ids = [uuid.uuid4() for _ in range(added)]

        def customer_copy(row, n):
            row.update(id=customer_ids[n], name=customer_name(have + n),
                       created=start + timedelta(seconds=have + n), updated=start)

        def invoice_copy(row, n):
            row.update(id=uuid.uuid4(), customer_id=customer_ids[n % len(customer_ids)] if customer_ids
                       else customer_row["id"], created=start + timedelta(seconds=have + n),
                       updated=start)
        _write(session, customer_table, _rows_like(customer_row, added, customer_copy))
        invoices_have = _count(session, Invoice, owner)
        _write(session, invoice_table, _rows_like(invoice_row, max(0, target - invoices_have), invoice_copy))
    if analyze:
        _analyze()
    return {"customers": max(have, target), "invoices": max(invoices_have, target)}


def _analyze() -> None:
    """Fresh planner statistics after a bulk load, as autovacuum would gather them a little later."""
    if db.get_engine().dialect.name != "postgresql":
        return
    with db.get_engine().connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.exec_driver_sql("VACUUM ANALYZE")  # also folds the trigram indexes' pending entries in


def tenants(count: int, rows: int) -> dict:
    """`count` more accounts, each with a business profile, `rows` customers and `rows` drafts:
    copies of one account made through `core`, written in bulk (no password hashing per account)."""
    with db.transaction() as session:
        _user, model = accounts.create_account(session, email=f"tenant-{secrets.token_hex(6)}@example.com",
                                               password="benchmark password")
        set_profile(session, model.id, BusinessInput.model_validate(BUSINESS))
        customers.create_customer(session, model.id, CustomerCreate(name=customer_name(0)))
    drafts(str(model.id), 1)
    tables = {model_class: model_class.__table__ for model_class in (User, Account, BusinessProfile, Customer, Invoice)}
    with db.transaction() as session:
        owner_id = session.execute(select(Account.owner_user_id).where(Account.id == model.id)).scalar_one()
        template = {
            User: _one(session, tables[User], tables[User].c.id, owner_id),
            Account: _one(session, tables[Account], tables[Account].c.id, model.id),
            BusinessProfile: _one(session, tables[BusinessProfile], tables[BusinessProfile].c.account_id, model.id),
            Customer: _one(session, tables[Customer], tables[Customer].c.account_id, model.id),
            Invoice: _one(session, tables[Invoice], tables[Invoice].c.account_id, model.id),
        }
        start = now()
        users = [uuid.uuid4() for _ in range(count - 1)]
        owners = [uuid.uuid4() for _ in range(count - 1)]
        _write(session, tables[User], _rows_like(template[User], count - 1, lambda row, n: row.update(
            id=users[n], email=f"tenant-{users[n].hex}@example.com")))
        _write(session, tables[Account], _rows_like(template[Account], count - 1, lambda row, n: row.update(
            id=owners[n], owner_user_id=users[n])))
        _write(session, tables[BusinessProfile], _rows_like(template[BusinessProfile], count - 1,
                                                             lambda row, n: row.update(id=uuid.uuid4(),
                                                                                       account_id=owners[n])))
        customer_ids = [uuid.uuid4() for _ in range((count - 1) * rows)]

        def customer_copy(row, n):
            row.update(id=customer_ids[n], account_id=owners[n // rows], name=customer_name(n % rows),
                       created=start + timedelta(seconds=n % rows), updated=start)

        def invoice_copy(row, n):
            row.update(id=uuid.uuid4(), account_id=owners[n // rows], customer_id=customer_ids[n],
                       created=start + timedelta(seconds=n % rows), updated=start)
        _write(session, tables[Customer], _rows_like(template[Customer], len(customer_ids), customer_copy))
        _write(session, tables[Invoice], _rows_like(template[Invoice], len(customer_ids), invoice_copy))
    _analyze()
    with db.transaction() as session:
        return {"accounts": session.execute(select(func.count()).select_from(Account)).scalar_one(),
                "users": session.execute(select(func.count()).select_from(User)).scalar_one()}


# --- receivables: open invoices among a history of paid and void ones -------------------------------

RECEIVABLE_CUSTOMERS = 1000
# The invoice `n` of the series, as SQL (its columns that have no default, each an expression of `n`):
# 60 % USD, 30 % EUR, 10 % GBP; due from 30 days ahead to 150 days past (none for one in 20); a total
# of 10.00 to 5,009.99; open: one in 7 credited a tenth, one in 5 paid a quarter; history: three in
# four paid in full, the rest void.
_TOTAL = "(1000 + (n * 7919) % 500000)"
_RECEIVABLE_COLUMNS = {
    "account_id": ":account_id", "customer_id": "c.id", "number": "'R-' || n",
    "currency": "CASE WHEN n % 10 < 6 THEN 'USD' WHEN n % 10 < 9 THEN 'EUR' ELSE 'GBP' END",
    "collection_method": "'send_invoice'", "issue_date": ":issued",
    "subtotal": _TOTAL, "discount": "0", "taxable": _TOTAL, "tax": "0", "total": _TOTAL,
    "created": ":start", "updated": ":start",
}
_OPEN_COLUMNS = {"status": "'open'", "amount_credited": f"CASE WHEN n % 7 = 0 THEN {_TOTAL} / 10 ELSE 0 END",
                 "amount_paid": f"CASE WHEN n % 5 = 0 THEN {_TOTAL} / 4 ELSE 0 END"}
_HISTORY_COLUMNS = {"status": "CASE WHEN n % 4 = 0 THEN 'void' ELSE 'paid' END", "amount_credited": "0",
                    "amount_paid": f"CASE WHEN n % 4 = 0 THEN 0 ELSE {_TOTAL} END"}


def _receivables_insert(dialect: str, *, history: bool):
    """`INSERT … SELECT` of the invoices `:first` to `:last` of the series (`n`), each of the customer
    `n` modulo 1,000 of the account (by id), due `:today` + (30 − n × 37 mod 181) days."""
    columns = {**_RECEIVABLE_COLUMNS, **(_HISTORY_COLUMNS if history else _OPEN_COLUMNS)}
    offset = "(30 - (n * 37) % 181)"
    if dialect == "postgresql":
        columns |= {"id": "gen_random_uuid()",
                    "due_date": f"CASE WHEN n % 20 = 0 THEN NULL ELSE CAST(:today AS date) + CAST({offset} AS integer) END"}
        series = "series AS (SELECT generate_series(:first, :last) AS n)"
    else:
        columns |= {"id": "lower(hex(randomblob(16)))",
                    "due_date": f"CASE WHEN n % 20 = 0 THEN NULL ELSE date(:today, {offset} || ' days') END"}
        series = "series(n) AS (SELECT :first UNION ALL SELECT n + 1 FROM series WHERE n < :last)"
    required = {column.name for column in Invoice.__table__.c if not column.nullable and column.server_default is None}
    assert required <= set(columns), f"a column of invoices has no value here: {required - set(columns)}"
    names = ", ".join(columns)
    return text(f"""WITH RECURSIVE {series},
        c AS (SELECT id, ROW_NUMBER() OVER (ORDER BY id) - 1 AS k FROM customers WHERE account_id = :account_id)
        INSERT INTO invoices ({names}) SELECT {", ".join(columns.values())}
        FROM series JOIN c ON c.k = n % :customers""").bindparams(
        bindparam("account_id", type_=Invoice.__table__.c.account_id.type), bindparam("start", type_=UTCDateTime()),
        bindparam("issued", type_=Date()), bindparam("today", type_=Date()), bindparam("first", type_=BigInteger()),
        bindparam("last", type_=BigInteger()), bindparam("customers", type_=Integer()))


def receivables(account_id: str, open_count: int, total: int) -> dict:
    """The account's customers up to 1,000 and its invoices up to `total`: `open_count` open, the rest
    paid or void (numbers `R-<n>` of one series). Written by the database itself, one statement each."""
    owner = uuid.UUID(account_id)
    customer_table = Customer.__table__
    with db.transaction() as session:
        have = _count(session, Customer, owner)
        customer_row = dict(session.execute(select(customer_table).where(customer_table.c.account_id == owner)
                                            .limit(1)).mappings().one())
        start = now()

        def customer_copy(row, n):
            row.update(id=uuid.uuid4(), name=customer_name(have + n), created=start + timedelta(seconds=have + n),
                       updated=start)
        _write(session, customer_table, _rows_like(customer_row, max(0, RECEIVABLE_CUSTOMERS - have), customer_copy))
        counts = dict(session.execute(select(Invoice.status, func.count()).where(Invoice.account_id == owner)
                                      .group_by(Invoice.status)).all())
        have_open, have_history = counts.pop("open", 0), sum(counts.values())
        dialect = session.get_bind().dialect.name
        common = {"account_id": owner, "start": start, "issued": today() - timedelta(days=200), "today": today(),
                  "customers": RECEIVABLE_CUSTOMERS}
        if open_count > have_open:
            session.execute(_receivables_insert(dialect, history=False),
                            {**common, "first": have_open, "last": open_count - 1})
        if total - open_count > have_history:
            session.execute(_receivables_insert(dialect, history=True),
                            {**common, "first": open_count + have_history, "last": total - 1})
    _analyze()
    with db.transaction() as session:
        counts = dict(session.execute(select(Invoice.status, func.count()).where(Invoice.account_id == owner)
                                      .group_by(Invoice.status)).all())
    return {"invoices": sum(counts.values()), **counts}


def main(argv: list[str]) -> None:
    command, *args = argv
    result = {
        "account": lambda: account(),
        "drafts": lambda: drafts(args[0], int(args[1])),
        "refresh": lambda: refresh(args[0], int(args[1]), args[2]),
        "oauth": lambda: oauth(args[0], *args[1:]),
        "grow": lambda: grow(args[0], int(args[1])),
        "tenants": lambda: tenants(int(args[0]), int(args[1])),
        "receivables": lambda: receivables(args[0], int(args[1]), int(args[2])),
    }[command]()
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
