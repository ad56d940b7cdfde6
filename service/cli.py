"""The `invoicing` command: serve, background worker, migrations, accounts, keys and a demo.

Every command that touches the database applies pending migrations first (cheap when up to date).
Mistakes (a domain error, a bad file) print a message to stderr and exit 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import logging.config
import os
import sys
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.exc import ArgumentError, OperationalError

from config.settings import get_settings, set_settings
from core.access import accounts, apikeys, memberships
from core.access.roles import manages
from core.access.scopes import PRESETS
from core.base.clock import iso
from core.base.db import transaction
from core.base.errors import DomainError
from core.base.validation import parse
from core.billing.business import BusinessInput, set_profile
from service import backup, demo, migrate, observability, tracing, worker
from service.health import IN_PROCESS_WORKER

EXIT_USAGE = 2
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000

class UsageError(Exception):
    """A mistake on the command line or in an input file, outside the domain rules."""


# --- serving and background work ------------------------------------------------------------

GRACEFUL_SHUTDOWN_SECONDS = 10


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    _derive_origin(args.host, args.port)
    observability.prepare_metrics_dir()  # before anything is recorded; inherited by uvicorn's processes
    migrate.upgrade()
    demo.record_serving(get_settings().origin.rstrip("/"))
    _ = get_settings().signing_key  # create var/secret.key once, before several processes race for it
    stop = threading.Event()
    worker.stop_on_signals(stop)  # uvicorn re-raises the signal that stopped it: this sees it too
    thread = None
    if not args.no_worker:
        worker_id = worker.this_worker()
        os.environ[IN_PROCESS_WORKER] = worker_id  # readiness looks for this worker's heartbeat
        thread = worker.start_in_thread(stop, worker_id)
    try:
        # An import string lets uvicorn start several processes; each builds its own app.
        # Forwarded headers only from the proxies the operator names (uvicorn would trust 127.0.0.1).
        proxies = get_settings().forwarded_allow_ips.strip()
        uvicorn.run("service.app:create_app", factory=True, host=args.host, port=args.port,
                    workers=args.workers, log_config=observability.log_config("INFO"), access_log=False,
                    proxy_headers=bool(proxies), forwarded_allow_ips=proxies or None,
                    # MCP listen streams stay open until their client leaves: a stop waits this long for them.
                    timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS)
    finally:
        stop.set()
        if thread is not None:
            thread.join(timeout=30)
        observability.forget_this_process()
    return 0


def _derive_origin(host: str, port: int) -> None:
    """Without INVOICING_ORIGIN, links and the OAuth issuer follow the address being served."""
    if os.environ.get("INVOICING_ORIGIN") or (host, port) == (DEFAULT_HOST, DEFAULT_PORT):
        return
    shown = DEFAULT_HOST if host in ("0.0.0.0", "::", "") else host
    if ":" in shown:
        shown = f"[{shown}]"
    os.environ["INVOICING_ORIGIN"] = f"http://{shown}:{port}"  # inherited by uvicorn's workers
    set_settings(None)


def cmd_worker(_args: argparse.Namespace) -> int:
    observability.prepare_metrics_dir()
    tracing.configure()
    migrate.upgrade()
    get_settings().warn_if_unsafe()  # `serve` warns when it builds the app; this runs without one
    stop = threading.Event()
    worker.stop_on_signals(stop)
    try:
        worker.run_forever(stop)
    finally:
        observability.forget_this_process()
    return 0


def cmd_db_upgrade(_args: argparse.Namespace) -> int:
    migrate.upgrade()
    print("Database schema is up to date.")
    return 0


def cmd_db_backup(args: argparse.Namespace) -> int:
    size = backup.backup(get_settings().database_url, Path(args.file))
    print(f"Backed up to {args.file} ({size:,} bytes). Serve it with "
          f"INVOICING_DATABASE_URL=sqlite:///{Path(args.file).resolve()}")
    return 0


# --- accounts and business profile ----------------------------------------------------------

def cmd_accounts_create(args: argparse.Namespace) -> int:
    migrate.upgrade()
    with transaction() as session:
        _, account = accounts.create_account(session, email=args.email, password=args.password, name=args.name)
    print(account.id)
    return 0


def cmd_accounts_verify_email(args: argparse.Namespace) -> int:
    migrate.upgrade()
    with transaction() as session:
        user = accounts.user_by_email(session, args.email)
        accounts.mark_email_verified(session, user)
    print(f"E-mail {user.email} is verified.")
    return 0


def cmd_business_set(args: argparse.Namespace) -> int:
    data = parse(BusinessInput, _read_json(args.file))
    migrate.upgrade()
    with transaction() as session:
        business = _business(session, args, managing=True)
        set_profile(session, business.account_id, data, by=business.user_id)
    print(f"Business profile saved: {data.legal_name}.")
    return 0


def _read_json(file: str) -> object:
    try:
        text = sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {file}: {exc.strerror}") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{file} is not valid JSON: {exc}") from None


@dataclass(frozen=True)
class _Chosen:
    account_id: uuid.UUID
    user_id: uuid.UUID


def _business(session, args: argparse.Namespace, *, managing: bool = False) -> _Chosen:
    """The business of the person `--email` that `--account` names, or their only one; `managing`: one
    the person is an owner or admin of (its profile and keys are theirs to manage)."""
    user = accounts.user_by_email(session, args.email)
    if args.account:
        try:
            chosen = memberships.find_business(session, user.id, args.account)
        except DomainError as missing:
            raise UsageError(missing.detail) from None
    else:
        chosen = _only_business(memberships.businesses_of(session, user.id), user.email)
    if managing and not manages(chosen.role):
        raise UsageError(f"{user.email} is {chosen.role} of {chosen.public_id}: only its owners and admins manage "
                         "its profile and keys.")
    return _Chosen(chosen.account_id, user.id)


def _only_business(found: list, email: str):
    if len(found) == 1:
        return found[0]
    if not found:
        raise UsageError(f"{email} is a member of no business.")
    listed = ", ".join(f"{b.public_id} ({b.name}, {b.role})" for b in found)
    raise UsageError(f"{email} is a member of {len(found)} businesses: choose one with --account ({listed}).")


# --- API keys ---------------------------------------------------------------------------------

def cmd_keys_create(args: argparse.Namespace) -> int:
    scopes = apikeys.resolve_scopes(preset=args.preset, scopes=args.scopes.split(",") if args.scopes else None)
    migrate.upgrade()
    with transaction() as session:
        business = _business(session, args, managing=True)
        created = apikeys.create_key(session, business.account_id, created_by=business.user_id, name=args.name,
                                     scopes=scopes, expires_in_days=args.expires_days)
    if args.json:
        print(json.dumps({"id": str(created.row.id), "key": created.key, "scopes": created.row.scopes}))
    else:
        print(created.key)
        print(f"Key {created.row.id} ({', '.join(created.row.scopes)}). "
              "It is shown only this once: store it now.", file=sys.stderr)
    return 0


def cmd_keys_list(args: argparse.Namespace) -> int:
    migrate.upgrade()
    with transaction() as session:
        keys = apikeys.list_keys(session, _business(session, args, managing=True).account_id)
    rows = [{
        "id": str(key.id), "key": f"inv_live_{key.lookup_id}_…", "name": key.name, "scopes": key.scopes,
        "created_at": iso(key.created_at), "expires_at": iso(key.expires_at),
        "revoked_at": iso(key.revoked_at), "last_used_at": iso(key.last_used_at),
    } for key in keys]
    if args.json:
        print(json.dumps(rows, indent=2))
    elif not rows:
        print(f"No API keys for {args.email}.")
    else:
        for row in rows:
            state = f"revoked {row['revoked_at']}" if row["revoked_at"] else (
                f"expires {row['expires_at']}" if row["expires_at"] else "never expires")
            print(f"{row['id']}  {row['key']}  {row['name']!r}  created {row['created_at']}  {state}  "
                  f"last used {row['last_used_at'] or 'never'}\n    scopes: {' '.join(row['scopes'])}")
    return 0


def cmd_keys_revoke(args: argparse.Namespace) -> int:
    migrate.upgrade()
    with transaction() as session:
        business = _business(session, args, managing=True)
        key = apikeys.revoke_key(session, business.account_id, args.key_id, by=business.user_id)
    print(f"Key {key.id} revoked; it stops working on the next request.")
    return 0


# --- the parser -------------------------------------------------------------------------------

def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="invoicing", description="Invoicing service: REST API, MCP server and OAuth 2.1 on one origin.",
        epilog="Configuration comes from INVOICING_* environment variables (see README.md).")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser("serve", help="apply migrations, then serve REST, MCP, OAuth and web pages")
    serve.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST})")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    serve.add_argument("--workers", type=_positive, default=1, help="server processes (default 1)")
    serve.add_argument("--no-worker", action="store_true",
                       help="do not run the background work in this process (run `invoicing worker` instead)")
    serve.set_defaults(handler=cmd_serve)

    commands.add_parser("worker", help="run the background work alone (webhook delivery, invoice schedules, payment "
                                       "reminders, cleanup)") \
        .set_defaults(handler=cmd_worker)

    db = commands.add_parser("db", help="database schema").add_subparsers(dest="db_command", required=True,
                                                                           metavar="ACTION")
    db.add_parser("upgrade", help="apply pending migrations").set_defaults(handler=cmd_db_upgrade)
    backup_ = db.add_parser("backup", help="copy the SQLite database while the service runs (online backup)")
    backup_.add_argument("file", help="the new file to write (must not exist)")
    backup_.set_defaults(handler=cmd_db_backup)

    accounts_ = commands.add_parser("accounts", help="users and their accounts").add_subparsers(
        dest="accounts_command", required=True, metavar="ACTION")
    create = accounts_.add_parser("create", help="create a user and the account it owns; prints the account id")
    create.add_argument("--email", required=True)
    create.add_argument("--password", required=True, help="at least 8 characters")
    create.add_argument("--name")
    create.set_defaults(handler=cmd_accounts_create)
    verify = accounts_.add_parser("verify-email", help="mark the user's e-mail address verified")
    verify.add_argument("--email", required=True)
    verify.set_defaults(handler=cmd_accounts_verify_email)

    business = commands.add_parser("business", help="the business profile").add_subparsers(
        dest="business_command", required=True, metavar="ACTION")
    set_ = business.add_parser("set", help="write the business profile from a JSON file")
    set_.add_argument("--email", required=True, help="the e-mail of a member (an owner or admin)")
    set_.add_argument("--account", help="acct_… of the business, when the person has several")
    set_.add_argument("--file", required=True, help="JSON with the Business fields (id and created_at excluded); - reads stdin")
    set_.set_defaults(handler=cmd_business_set)

    keys = commands.add_parser("keys", help="API keys").add_subparsers(dest="keys_command", required=True,
                                                                       metavar="ACTION")
    key_create = keys.add_parser("create", help="create a key and print it (shown only once)")
    key_create.add_argument("--email", required=True, help="the e-mail of a member (an owner or admin)")
    key_create.add_argument("--account", help="acct_… of the business, when the person has several")
    key_create.add_argument("--name", required=True)
    scopes = key_create.add_mutually_exclusive_group(required=True)
    scopes.add_argument("--preset", choices=list(PRESETS))
    scopes.add_argument("--scopes", help="comma-separated scopes, e.g. clients:read,invoices:read")
    key_create.add_argument("--expires-days", type=int, default=0, help="0 (default) never expires")
    key_create.add_argument("--json", action="store_true", help='print {"id", "key", "scopes"}')
    key_create.set_defaults(handler=cmd_keys_create)
    key_list = keys.add_parser("list", help="list an account's keys (never the secrets)")
    key_list.add_argument("--email", required=True)
    key_list.add_argument("--account", help="acct_… of the business, when the person has several")
    key_list.add_argument("--json", action="store_true")
    key_list.set_defaults(handler=cmd_keys_list)
    key_revoke = keys.add_parser("revoke", help="revoke a key; it stops working on the next request")
    key_revoke.add_argument("--email", required=True)
    key_revoke.add_argument("--account", help="acct_… of the business, when the person has several")
    key_revoke.add_argument("key_id", metavar="KEY_ID", help="the id shown by `keys list` (or the key's 8-character part)")
    key_revoke.set_defaults(handler=cmd_keys_revoke)

    demo.add_parser(commands)
    return parser


def _configure_logging(command: str) -> None:
    long_running = command in ("serve", "worker")
    # `db upgrade` shows each migration it applies; elsewhere they are noise.
    logging.config.dictConfig(observability.log_config("INFO" if long_running else "WARNING",
                                                       quiet_migrations=command != "db"))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _configure_logging(args.command)
    try:
        return args.handler(args)
    except DomainError as exc:
        print(f"invoicing: {'invalid input:' if exc.errors else exc.detail}", file=sys.stderr)
        for error in exc.errors:
            print(f"  {error.path}: {error.message}", file=sys.stderr)
        return EXIT_USAGE
    except (UsageError, demo.DemoRefused, backup.BackupRefused) as exc:
        print(f"invoicing: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ArgumentError:
        # The message would repeat the URL, password included.
        print("invoicing: INVOICING_DATABASE_URL is not a usable database URL.", file=sys.stderr)
        return EXIT_USAGE
    except OperationalError as exc:
        print(f"invoicing: cannot use the database: {str(exc.orig).strip().splitlines()[0]}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
