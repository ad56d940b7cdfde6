"""`invoicing demo`: a verified demo account with a business profile and a new key, for a local trial.

The key only helps if it reaches the server the user is running, so the command (1) prints links
for that server's origin: `--origin`, else the origin `serve` recorded for this database, else the
configured one; (2) refuses to create a SQLite database that does not exist yet — run elsewhere, it
would otherwise make a second, empty database whose keys the server rejects; (3) asks the server
whether it accepts the new key, and fails loudly when it does not.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import httpx
from sqlalchemy.engine import make_url

from config.settings import get_settings
from core.access import accounts, apikeys
from core.access.scopes import PRESETS
from core.base.db import transaction
from core.base.errors import DomainError
from core.billing.business import BusinessInput, find_profile, set_profile
from service import migrate

DEMO_EMAIL = "demo@example.com"
DEMO_PASSWORD = "demo-password"
DEMO_BUSINESS = {
    "legal_name": "Demo Trading Ltd", "trade_name": "Demo Trading", "country_code": "GB",
    "currency": "GBP", "tax_id": "GB123456789", "email": "billing@demo-trading.example",
    "phone": "+44 20 7946 0000",
    "address": {"line1": "1 High Street", "city": "London", "postal_code": "EC1A 1AA",
                "country_code": "GB", "country": "United Kingdom"},
    "bank": {"bank_name": "Demo Bank", "account_name": "Demo Trading Ltd", "account_number": "12345678",
             "routing_number": "12-34-56"},
    "invoice_prefix": "INV",
}
SERVING_RECORD = "serving.json"
PROBE_SECONDS = 5


class DemoRefused(Exception):
    """The demo cannot help here; the message says what to do instead."""


def record_serving(origin: str) -> None:
    """Called by `serve`: the origin it serves this database on, for `demo` to print."""
    settings = get_settings()
    path = settings.data_dir / SERVING_RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"origin": origin, "database": _database_identity(settings.database_url)}))


def _recorded_origin() -> str | None:
    settings = get_settings()
    try:
        record = json.loads((settings.data_dir / SERVING_RECORD).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("database") != _database_identity(settings.database_url):
        return None
    return record.get("origin") if isinstance(record.get("origin"), str) else None


def _database_identity(url: str) -> str:
    """The database a URL names, without its password; SQLite files by absolute path."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        return f"sqlite:{Path(parsed.database).resolve()}"
    return parsed.render_as_string(hide_password=True)


def _missing_sqlite_file(url: str) -> Path | None:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    path = Path(parsed.database)
    return None if path.exists() else path.resolve()


def _create_demo_key() -> str:
    with transaction() as session:
        try:
            user = accounts.user_by_email(session, DEMO_EMAIL)
            account = accounts.account_of(session, user)
        except DomainError:
            user, account = accounts.create_account(session, email=DEMO_EMAIL, password=DEMO_PASSWORD,
                                                    name="Demo User")
        accounts.mark_email_verified(session, user)
        if find_profile(session, account.id) is None:
            set_profile(session, account.id, BusinessInput.model_validate(DEMO_BUSINESS))
        return apikeys.create_key(session, account.id, created_by=user.id, name="demo", scopes=list(PRESETS["full_access"])).key


def _server_check(base_url: str, key: str) -> str:
    """What the server at `base_url` says of the key: a line for the user, or DemoRefused."""
    try:
        response = httpx.get(f"{base_url}/business", headers={"Authorization": f"Bearer {key}"},
                             timeout=PROBE_SECONDS)
    except httpx.HTTPError:
        return f"No server answers at {base_url} yet: start `invoicing serve` (same folder and settings) to use the key."
    if response.status_code == 200:
        return f"Checked: the server at {base_url} accepts this key."
    raise DemoRefused(
        f"the server at {base_url} answered {response.status_code} to the new key: it serves another "
        f"database. Run `invoicing demo` with the same INVOICING_DATABASE_URL (or in the same folder) "
        f"as `invoicing serve`, or pass the right --origin.")


def cmd_demo(args: argparse.Namespace) -> int:
    settings = get_settings()
    if (missing := _missing_sqlite_file(settings.database_url)) is not None:
        raise DemoRefused(
            f"no database at {missing}. Run `invoicing demo` in the folder where `invoicing serve` runs "
            f"(or with its INVOICING_DATABASE_URL); to start a new database here, run `invoicing db upgrade` first.")
    migrate.upgrade()
    origin = (args.origin or _recorded_origin() or settings.origin).rstrip("/")
    base_url = f"{origin}/api/v1"
    key = _create_demo_key()
    check = _server_check(base_url, key)
    print(f"""Demo account ready (a new full_access key is made on every run; keys are shown only once).

  Sign in:        {origin}/login  as {DEMO_EMAIL} / {DEMO_PASSWORD}
  API key:        {key}
  API reference:  {base_url}/docs

{check}

Try it:

  export INVOICING_URL={origin} API_KEY={key}
  curl -H "Authorization: Bearer $API_KEY" $INVOICING_URL/api/v1/customers""")
    return 0


def add_parser(commands: argparse._SubParsersAction) -> None:
    demo = commands.add_parser("demo", help="create (once) a demo account with a business profile and print a new key")
    demo.add_argument("--origin", help="the running server's origin, e.g. http://127.0.0.1:8601 "
                                       "(default: the origin `invoicing serve` recorded, else INVOICING_ORIGIN)")
    demo.set_defaults(handler=cmd_demo)

