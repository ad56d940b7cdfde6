"""`invoicing-cli`: the Invoicing API from a terminal, on `invoicing_client`.

Tables for people, `--json` for scripts (the API's objects, on stdout); confirmations go to stderr.
Exit codes: 0 done; 1 the API refused (its code and message on stderr) or sign-in failed; 2 wrong
usage, a key or token that would go over http:// to another host without `--insecure` among them
(`cleartext`); 3 the server could not be reached.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from invoicing_client import InvoicingClient, __version__
from invoicing_client._http import DEFAULT_BASE_URL, api_base
from invoicing_client.cli import cleartext, credentials, oauth
from invoicing_client.cli import output as show
from invoicing_client.cli.items import (
    CREDIT_LINE_FORMAT,
    ITEM_FORMAT,
    parse_amount,
    parse_credit_line,
    parse_item,
    read_json,
)
from invoicing_client.errors import APIConnectionError, AuthenticationError, InvoicingError
from invoicing_client.models import (
    Business,
    CreditNote,
    Customer,
    CustomerReceivables,
    EInvoiceExport,
    Invitation,
    Invoice,
    InvoiceSchedule,
    InvoicingObject,
    Member,
    Payment,
    Price,
    Product,
    ReceivableFigures,
    Receivables,
    ReminderPolicy,
    ReminderStep,
    ScheduleRun,
    WebhookEndpoint,
)
from invoicing_client.pagination import Pager

# Typer's usage errors (click's, vendored by recent Typer): shown as click shows them, exit code 2.
UsageProblem = next(kind for kind in typer.BadParameter.__mro__ if kind.__name__ == "ClickException")
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
EXIT_REFUSED, EXIT_USAGE, EXIT_UNREACHABLE = 1, 2, 3


def _group(help_text: str) -> typer.Typer:
    return typer.Typer(help=help_text, no_args_is_help=True, context_settings=CONTEXT, rich_markup_mode="markdown")


app = _group("The Invoicing API from your terminal: customers, products, prices, invoices, credit notes, payments, "
             "receivables, invoice schedules, payment reminders, webhooks, e-invoice exports, and the business's members "
             "and invitations.\n\n"
             "Start with `invoicing-cli login`, or put an API key in the environment (`export "
             "INVOICING_API_KEY=inv_live_…`, never on the command line), then for example `invoicing-cli invoices list`.")
customers_app = _group("Customers: the people and companies you invoice.")
products_app = _group("Products: what you sell, by name.")
prices_app = _group("Prices: a product's amount in one currency.")
invoices_app = _group("Invoices: draft, finalize, send, remind, record payment, void, download.")
credit_notes_app = _group("Credit notes: correct an open or paid invoice with a document of its own (CN-0001): "
                          "preview, issue, void, send, download.")
payments_app = _group("Payments: money received for an invoice outside the service, in part or in full: record, "
                      "list, show, reverse.")
schedules_app = _group("Invoice schedules: a recurring invoice made for a customer once per period (week, month, "
                        "quarter or year): create, list, show, pause, resume, cancel, run now, and its runs.")
reminders_app = _group("Payment reminders: the account's policy (whether reminders are on, the steps e-mailed before "
                       "and after an invoice's due date, the late fee). A reminder now, and pausing one invoice's "
                       "reminders: `invoicing-cli invoices remind|pause-reminders|resume-reminders`.")
webhooks_app = _group("Webhook endpoints: where invoice, credit note and payment events are delivered.")
e_invoices_app = _group("E-invoices of a period for your accountant: every finalized invoice and credit note issued "
                        "in it as Peppol BIS 3.0, CII or Factur-X, in one ZIP with a manifest. One invoice's or "
                        "credit note's e-invoice: `invoicing-cli invoices e-invoice`, `invoicing-cli credit-notes "
                        "e-invoice`.")
members_app = _group("Members: the people of the business, each with a role (owner, admin, accountant, sales or viewer) "
                     "that bounds everything they, their API keys and their apps do in it: list, change a role, "
                     "remove, hand ownership over. Invite people with `invoicing-cli invitations send`.")
invitations_app = _group("Invitations to join the business: send, list, resend, revoke. Each e-mailed link works "
                         "once, for its address only, for 14 days.")
app.add_typer(customers_app, name="customers")
app.add_typer(products_app, name="products")
app.add_typer(prices_app, name="prices")
app.add_typer(invoices_app, name="invoices")
app.add_typer(credit_notes_app, name="credit-notes")
app.add_typer(payments_app, name="payments")
app.add_typer(schedules_app, name="schedules")
app.add_typer(reminders_app, name="reminders")
app.add_typer(webhooks_app, name="webhooks")
app.add_typer(e_invoices_app, name="e-invoices")
app.add_typer(members_app, name="members")
app.add_typer(invitations_app, name="invitations")


@dataclass
class Options:
    base_url: str | None = None
    api_key: str | None = None
    json: bool = False
    insecure: bool = False


OPTIONS = Options()
Json = Annotated[bool, typer.Option("--json", help="Print the API's JSON (for scripts) instead of a table.")]
Limit = Annotated[int, typer.Option("--limit", min=1, help="Show at most this many (newest first).")]
All = Annotated[bool, typer.Option("--all", help="Show every one, page after page.")]
Force = Annotated[bool, typer.Option("--force", help="Overwrite the file if it exists.")]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"invoicing-cli {__version__}")
        raise typer.Exit()


@app.callback()
def options(
    base_url: Annotated[str | None, typer.Option(
        "--base-url", envvar="INVOICING_BASE_URL", show_envvar=True,
        help=f"The API, such as https://invoices.example/api/v1 (default: the last server you signed in to, "
             f"else {DEFAULT_BASE_URL}).")] = None,
    api_key: Annotated[str | None, typer.Option(
        "--api-key", envvar="INVOICING_API_KEY", show_envvar=True,
        help="An API key (inv_live_…) instead of `login`. Set INVOICING_API_KEY rather than this option: "
             "a key on the command line is seen by other users in `ps` and kept in your shell history.")] = None,
    insecure: Annotated[bool, typer.Option(
        "--insecure", help="Send the key or token even over http:// to a host other than this computer, "
                           "in clear text (refused without it; https, and http to this computer, always work).")] = False,
    json_output: Json = False,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    OPTIONS.base_url, OPTIONS.api_key, OPTIONS.json, OPTIONS.insecure = base_url, api_key, json_output, insecure


def api_url() -> str:
    return api_base(OPTIONS.base_url or credentials.default_server() or DEFAULT_BASE_URL)


@contextmanager
def client() -> Iterator[InvoicingClient]:
    """The API with the key, else the sign-in's token; neither goes over http:// to another host
    without --insecure, nor through a proxy to this computer (`cleartext.http_client`)."""
    api = api_url()
    if OPTIONS.api_key:
        cleartext.check(api, "your API key", insecure=OPTIONS.insecure)
        key = OPTIONS.api_key
    else:
        key = oauth.access_token(api, insecure=OPTIONS.insecure)
        if not key:
            raise AuthenticationError(f"Not signed in to {api}. Run `invoicing-cli login`, or set INVOICING_API_KEY.")
    with cleartext.http_client(api) as http, InvoicingClient(api_key=key, base_url=api, http_client=http) as invoicing:
        yield invoicing


def call(action: Callable[[InvoicingClient], Any]) -> Any:
    with client() as api:
        return action(api)


def present(obj: InvoicingObject, as_json: bool, render: Callable[[Any], None]) -> None:
    if as_json or OPTIONS.json:
        show.print_json(obj.to_dict())
    else:
        render(obj)


def present_list(fetch: Callable[[InvoicingClient, int], Pager[Any]], columns: list[show.Column], *, limit: int,
                 every: bool, as_json: bool, noun: str) -> None:
    """The newest `limit` objects (every one with `every`), as a table or a JSON array."""
    shown: list[Any] = []
    more = False
    with client() as api:
        for page in fetch(api, 100 if every else min(limit, 100)).pages():
            room = len(page.data) if every else limit - len(shown)
            shown.extend(page.data[:room])
            if not every and len(shown) >= limit:
                more = len(page.data) > room or page.has_more
                break
    if as_json or OPTIONS.json:
        show.print_json(show.as_json(shown))
        return
    show.table(shown, columns, empty=f"No {noun}.")
    if more:
        show.say(f"The newest {limit} {noun}; --limit N for more, --all for every one.")


def examples(*lines: str) -> str:
    return "**Examples**\n\n" + "\n\n".join(f"`{line}`" for line in lines)


# --- columns and details ------------------------------------------------------------------------------

CUSTOMER_COLUMNS: list[show.Column] = [("ID", lambda c: c.id), ("Name", lambda c: c.name),
                                       ("Email", lambda c: c.email), ("Created", lambda c: show.when(c.created))]
PRODUCT_COLUMNS: list[show.Column] = [("ID", lambda p: p.id), ("Name", lambda p: p.name),
                                      ("Active", lambda p: p.active), ("Created", lambda p: show.when(p.created))]
PRICE_COLUMNS: list[show.Column] = [
    ("ID", lambda p: p.id), ("Product", lambda p: p.product), ("Nickname", lambda p: p.nickname),
    ("Unit amount", lambda p: show.money(p.unit_amount, p.currency)), ("Type", lambda p: p.type),
    ("Active", lambda p: p.active)]
INVOICE_COLUMNS: list[show.Column] = [
    ("ID", lambda i: i.id), ("Number", lambda i: i.number or "(draft)"), ("Status", lambda i: i.status),
    ("Customer", lambda i: i.customer_details.name), ("Total", lambda i: show.money(i.total, i.currency)),
    ("Due", lambda i: show.when(i.due_date))]
CREDIT_NOTE_COLUMNS: list[show.Column] = [
    ("ID", lambda n: n.id), ("Number", lambda n: n.number), ("Status", lambda n: n.status),
    ("Invoice", lambda n: n.invoice_number), ("Customer", lambda n: n.customer_details.name),
    ("Total", lambda n: show.money(n.total, n.currency)), ("Issued", lambda n: show.when(n.issue_date))]
PAYMENT_COLUMNS: list[show.Column] = [
    ("ID", lambda p: p.id), ("Status", lambda p: p.status), ("Invoice", lambda p: p.invoice_number),
    ("Amount", lambda p: show.money(p.amount, p.currency)), ("Method", lambda p: p.method),
    ("Paid on", lambda p: show.when(p.paid_on)), ("Reference", lambda p: p.reference)]
WEBHOOK_COLUMNS: list[show.Column] = [("ID", lambda w: w.id), ("URL", lambda w: w.url),
                                      ("Events", lambda w: w.events or "all"), ("Active", lambda w: w.active)]


def _address(address: Any) -> str:
    parts = [address.line1, address.line2, address.city, getattr(address, "state", None), address.postal_code,
             address.country]
    return ", ".join(part for part in parts if part)


def show_customer(customer: Customer) -> None:
    show.fields(customer, [("ID", lambda c: c.id), ("Name", lambda c: c.name), ("Email", lambda c: c.email),
                           ("Phone", lambda c: c.phone), ("Tax ID", lambda c: c.tax_id),
                           ("Address", lambda c: _address(c.address)), ("Archived", lambda c: c.deleted or None),
                           ("Created", lambda c: show.when(c.created))])


def show_product(product: Product) -> None:
    show.fields(product, [("ID", lambda p: p.id), ("Name", lambda p: p.name), ("Description", lambda p: p.description),
                          ("Active", lambda p: p.active), ("Created", lambda p: show.when(p.created))])


def show_price(price: Price) -> None:
    show.fields(price, [("ID", lambda p: p.id), ("Product", lambda p: p.product), ("Nickname", lambda p: p.nickname),
                        ("Unit amount", lambda p: show.money(p.unit_amount, p.currency)), ("Type", lambda p: p.type),
                        ("Every", lambda p: p.recurring and f"{p.recurring.interval_count} {p.recurring.interval}"),
                        ("Tax rate", lambda p: f"{p.tax_rate}%"), ("Active", lambda p: p.active)])


def show_invoice(invoice: Invoice) -> None:
    money = lambda amount: show.money(amount, invoice.currency)  # noqa: E731
    show.fields(invoice, [
        ("ID", lambda i: i.id), ("Number", lambda i: i.number or "(draft: numbered when finalized)"),
        ("Status", lambda i: i.status), ("Customer", lambda i: f"{i.customer_details.name} ({i.customer})"),
        ("Issued", lambda i: show.when(i.issue_date)), ("Due", lambda i: show.when(i.due_date)),
        ("Subtotal", lambda i: money(i.subtotal)), ("Discount", lambda i: money(i.discount) if i.discount else None),
        ("Tax", lambda i: money(i.tax)), ("Total", lambda i: money(i.total)),
        ("Credited", lambda i: money(i.amount_credited) if i.amount_credited else None),
        ("Paid", _paid),
        ("Amount due", lambda i: money(i.amount_due)),
        ("Paid at", lambda i: show.when(i.paid_at)), ("Voided", lambda i: i.voided_at and f"{show.when(i.voided_at)} "
                                                      f"{i.void_reason or ''}"),
        ("Reminders", lambda i: "paused" if i.reminders_paused else None),
        ("Late fee for", lambda i: i.late_fee_for),
        ("Public page", lambda i: i.public_url)])
    if invoice.lines is not None:
        show.out.print()
        show.table(invoice.lines.data, [  # the line ids are what `credit-notes create --line` takes
            ("Line", lambda line: line.id), ("Description", lambda line: line.description),
            ("Quantity", lambda line: line.quantity),
            ("Unit amount", lambda line: money(line.unit_amount)), ("Tax", lambda line: f"{line.tax_rate}%"),
            ("Amount", lambda line: money(line.amount))], empty="No lines yet.")


def _paid(invoice: Invoice) -> str | None:
    """What was paid: the payments recorded and the customer's balance applied when it was finalized
    (part of `amount_paid`; before payments, a server sent only `balance_applied`)."""
    paid = max(invoice.amount_paid, invoice.balance_applied)
    if not paid:
        return None
    text = show.money(paid, invoice.currency)
    if invoice.balance_applied:
        text += f", {show.money(invoice.balance_applied, invoice.currency)} of it from the customer's credit balance"
    return text


def show_credit_note(note: CreditNote) -> None:
    money = lambda amount: show.money(amount, note.currency)  # noqa: E731
    show.fields(note, [
        ("ID", lambda n: n.id), ("Number", lambda n: n.number or "(preview: numbered when issued)"),
        ("Status", lambda n: n.status if n.id else "preview"),
        ("Invoice", lambda n: f"{n.invoice_number} ({n.invoice}), issued {show.when(n.invoice_issue_date)}"),
        ("Customer", lambda n: f"{n.customer_details.name} ({n.customer})"), ("Issued", lambda n: show.when(n.issue_date)),
        ("Reason", lambda n: n.reason), ("Memo", lambda n: n.memo),
        ("Subtotal", lambda n: money(n.subtotal)), ("Tax", lambda n: money(n.tax)), ("Total", lambda n: money(n.total)),
        ("Credited", lambda n: f"{money(n.credit_amount)} off what is due on {n.invoice_number}"
                               if n.credit_amount else None),
        ("Refunded", lambda n: " ".join(part for part in (
            money(n.refund_amount), n.refund and n.refund.reference,
            n.refund and f"on {show.when(n.refund.refunded_on)}") if part) if n.refund_amount else None),
        ("To balance", lambda n: f"{money(n.balance_amount)} to the customer's credit "
                                 f"({money(n.balance_remaining)} not yet applied)" if n.balance_amount else None),
        ("Voided", lambda n: show.when(n.voided_at)), ("Public page", lambda n: n.public_url)])
    show.out.print()
    show.table(note.lines.data, [
        ("Description", lambda line: line.description), ("Quantity", lambda line: line.quantity),
        ("Tax", lambda line: f"{line.tax_rate}%"), ("Tax amount", lambda line: money(line.tax_amount)),
        ("Amount", lambda line: money(line.amount))], empty="No lines.")


def show_payment(payment: Payment) -> None:
    money = lambda amount: show.money(amount, payment.currency)  # noqa: E731
    show.fields(payment, [
        ("ID", lambda p: p.id), ("Status", lambda p: p.status),
        ("Invoice", lambda p: f"{p.invoice_number} ({p.invoice})"), ("Customer", lambda p: p.customer),
        ("Amount", lambda p: money(p.amount)),
        ("Applied", lambda p: f"{money(p.amount_applied)} off what {p.invoice_number} had due"),
        ("To balance", lambda p: None if not p.balance_amount else
         f"{money(p.balance_amount)} to the customer's credit, taken back by the reversal" if p.status == "reversed"
         else f"{money(p.balance_amount)} to the customer's credit ({money(p.balance_remaining)} not yet applied)"),
        ("Paid on", lambda p: show.when(p.paid_on)), ("Method", lambda p: p.method),
        ("Reference", lambda p: p.reference), ("Note", lambda p: p.note),
        ("Reversed", lambda p: p.reversed_at and f"{show.when(p.reversed_at)}: {p.reversal_reason or ''}"),
        ("Recorded", lambda p: show.when(p.created))])


def show_webhook(endpoint: WebhookEndpoint) -> None:
    show.fields(endpoint, [("ID", lambda w: w.id), ("URL", lambda w: w.url), ("Events", lambda w: w.events or "all"),
                           ("Active", lambda w: w.active), ("Signing secret", lambda w: w.secret)])


# --- sign-in ------------------------------------------------------------------------------------------

@app.command(epilog=examples("invoicing-cli login", "invoicing-cli --base-url https://invoices.example login --no-browser",
                             "invoicing-cli login --scope 'invoices:read invoices:write'",
                             "invoicing-cli login --business acct_…"))
def login(
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Print the address to open instead of opening it.")]
    = False,
    scope: Annotated[str | None, typer.Option(help="Ask only for these scopes (space-separated); "
                                                   "default: every scope, each of which you can untick.")] = None,
    business: Annotated[str | None, typer.Option(help="acct_…: the business to pre-select on the consent page (you "
                                                      "may choose another there); the token acts for the one "
                                                      "chosen. Default: the one you act for in the dashboard.")]
    = None,
    timeout: Annotated[int, typer.Option(min=10, help="Seconds to wait for the browser.")] = 300,
) -> None:
    """Sign in with your browser (OAuth 2.1 with PKCE); the tokens are kept in your config directory.

    The sign-in acts for one of your businesses, chosen on the consent page, and never does more than your
    role there allows."""
    if business is not None and not business.startswith("acct_"):
        raise typer.BadParameter(f"--business is a business's id, acct_…, not {business!r} (`invoicing-cli whoami` "
                                 "shows the one a credential acts for).")
    api = api_url()
    token = oauth.login(api, scope=scope, open_browser=not no_browser, timeout=timeout, say=show.say,
                        insecure=OPTIONS.insecure, business=business)
    acting = _business_of(api, token["access_token"])
    show.done(f"Signed in to {api}{_acting_for(acting)}, allowed: {token.get('scope', '')}")
    if business and acting is not None and acting.account and acting.account != business:
        show.say(f"The sign-in acts for {acting.account}, chosen on the consent page instead of {business} "
                 "(which is not one of your businesses, or was changed there).")


def _business_of(api: str, token: str) -> Business | None:
    """The business a fresh token acts for; None when it cannot tell (no business:read, onboarding
    unfinished, an older server, the server gone): the sign-in stands all the same."""
    try:
        with cleartext.http_client(api) as http, \
                InvoicingClient(api_key=token, base_url=api, http_client=http) as invoicing:
            return invoicing.business.retrieve()
    except InvoicingError:
        return None


def _acting_for(business: Business | None) -> str:
    """` for Acme (acct_…) as owner`: which business a credential acts for, and the person's role there."""
    if business is None:
        return ""
    name = business.trade_name or business.legal_name
    where = f" for {name} ({business.account})" if business.account else f" for {name}"
    return where + (f" as {business.role}" if business.role else "")


@app.command(epilog=examples("invoicing-cli logout"))
def logout() -> None:
    """Revoke this tool's sign-in to the server and forget its tokens."""
    api = api_url()
    if oauth.logout(api, insecure=OPTIONS.insecure):
        show.done(f"Signed out of {api}.")
    else:
        show.say(f"Not signed in to {api}.")


@app.command(epilog=examples("invoicing-cli whoami", "invoicing-cli whoami --json"))
def whoami(as_json: Json = False) -> None:
    """Which server, which credential, and whose business."""
    api = api_url()
    kept = credentials.server(api)
    if OPTIONS.api_key:
        credential = {"kind": "api_key", "key": "…" + OPTIONS.api_key[-4:]}
    elif kept.get("access_token"):
        credential = {"kind": "oauth", "scope": kept.get("scope", ""), "client_id": kept.get("client_id")}
    else:
        raise AuthenticationError(f"Not signed in to {api}. Run `invoicing-cli login`, or set INVOICING_API_KEY.")
    try:
        business = call(lambda c: c.business.retrieve())
    except InvoicingError as exc:
        if isinstance(exc, (AuthenticationError, APIConnectionError, cleartext.ClearTextRefused)):
            raise
        business = None
    answer = {"base_url": api, "credential": credential, "business": business.to_dict() if business else None}
    if as_json or OPTIONS.json:
        show.print_json(answer)
        return
    how = (f"API key {credential['key']}" if credential["kind"] == "api_key"
           else f"signed in (OAuth), allowed: {credential['scope']}")
    show.out.print(f"{api}\n{how}", markup=False, highlight=False)
    show.out.print(_business_lines(business) if business
                   else "Business: not readable with this credential (business:read), or onboarding unfinished.",
                   markup=False, highlight=False)


def _business_lines(business: Business) -> str:
    """`Business: Acme (acct_…; DE, EUR)` and the person's role there, when the server says them."""
    name = business.trade_name or business.legal_name
    where = f"{business.account}; " if business.account else ""
    text = f"Business: {name} ({where}{business.country_code}, {business.currency})"
    return text + (f"\nRole: {business.role}" if business.role else "")


# --- catalog: customers, products, prices ---------------------------------------------------------------

def catalog(group: typer.Typer, noun: str, pick: Callable[[InvoicingClient], Any], render: Callable[[Any], None],
            sample_id: str) -> None:
    """`get`, `archive` and `restore` for one catalog resource."""

    @group.command("get", epilog=examples(f"invoicing-cli {noun} get {sample_id}",
                                          f"invoicing-cli {noun} get {sample_id} --json"))
    def get(id: Annotated[str, typer.Argument(help="Its id.")], as_json: Json = False) -> None:
        """Show one."""
        present(call(lambda c: pick(c).retrieve(id)), as_json, render)

    @group.command("archive", epilog=examples(f"invoicing-cli {noun} archive {sample_id}"))
    def archive(id: Annotated[str, typer.Argument(help="Its id.")], as_json: Json = False) -> None:
        """Archive one: hidden from lists and new invoices, kept on existing ones; `restore` undoes it."""
        present(call(lambda c: pick(c).archive(id)), as_json, render)
        show.done(f"Archived {id}.")

    @group.command("restore", epilog=examples(f"invoicing-cli {noun} restore {sample_id}"))
    def restore(id: Annotated[str, typer.Argument(help="Its id.")], as_json: Json = False) -> None:
        """Bring an archived one back."""
        present(call(lambda c: pick(c).restore(id)), as_json, render)
        show.done(f"Restored {id}.")


catalog(customers_app, "customers", lambda c: c.customers, show_customer, "cus_…")
catalog(products_app, "products", lambda c: c.products, show_product, "prod_…")
catalog(prices_app, "prices", lambda c: c.prices, show_price, "price_…")


def _given(**values: Any) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not None}


def _address_fields(line1: str | None, line2: str | None, city: str | None, state: str | None,
                    postal_code: str | None, country: str | None) -> dict[str, Any]:
    address = _given(line1=line1, line2=line2, city=city, state=state, postal_code=postal_code, country=country)
    return {"address": address} if address else {}


Line1 = Annotated[str | None, typer.Option(help="Address, first line.", rich_help_panel="Address")]
Line2 = Annotated[str | None, typer.Option(help="Address, second line.", rich_help_panel="Address")]
City = Annotated[str | None, typer.Option(rich_help_panel="Address")]
State = Annotated[str | None, typer.Option(help="State, county or region.", rich_help_panel="Address")]
PostalCode = Annotated[str | None, typer.Option(rich_help_panel="Address")]
Country = Annotated[str | None, typer.Option(help="ISO 3166 code, such as DE.", rich_help_panel="Address")]


@customers_app.command("list", epilog=examples("invoicing-cli customers list", "invoicing-cli customers list --query globex",
                                               "invoicing-cli customers list --all --json"))
def customers_list(query: Annotated[str | None, typer.Option(help="Only those whose name or e-mail contains this.")] = None,
                   include_archived: Annotated[bool, typer.Option("--include-archived")] = False,
                   limit: Limit = 25, every: All = False, as_json: Json = False) -> None:
    """List customers, newest first."""
    present_list(lambda c, size: c.customers.list(limit=size, query=query, include_deleted=include_archived or None),
                 CUSTOMER_COLUMNS, limit=limit, every=every, as_json=as_json, noun="customers")


@customers_app.command("create", epilog=examples(
    "invoicing-cli customers create --name 'Globex Corp' --email ap@globex.example",
    "invoicing-cli customers create --name 'Müller GmbH' --email rechnung@mueller.example --city Berlin --country DE"))
def customers_create(name: Annotated[str, typer.Option(help="Name on invoices.")],
                     email: Annotated[str | None, typer.Option(help="Where invoices are e-mailed.")] = None,
                     phone: str | None = None, tax_id: Annotated[str | None, typer.Option(help="VAT or tax number.")] = None,
                     line1: Line1 = None, line2: Line2 = None, city: City = None, state: State = None,
                     postal_code: PostalCode = None, country: Country = None, as_json: Json = False) -> None:
    """Create a customer."""
    fields = {**_given(name=name, email=email, phone=phone, tax_id=tax_id),
              **_address_fields(line1, line2, city, state, postal_code, country)}
    customer = call(lambda c: c.customers.create(**fields))
    present(customer, as_json, show_customer)
    show.done(f"Created customer {customer.id}.")


@customers_app.command("update", epilog=examples("invoicing-cli customers update cus_… --email billing@globex.example"))
def customers_update(id: Annotated[str, typer.Argument(help="The customer's id.")],
                     name: str | None = None, email: str | None = None, phone: str | None = None,
                     tax_id: str | None = None, line1: Line1 = None, line2: Line2 = None, city: City = None,
                     state: State = None, postal_code: PostalCode = None, country: Country = None,
                     as_json: Json = False) -> None:
    """Change a customer (only the options given; drafts pick the change up, finalized invoices keep theirs)."""
    fields = {**_given(name=name, email=email, phone=phone, tax_id=tax_id),
              **_address_fields(line1, line2, city, state, postal_code, country)}
    if not fields:
        raise typer.BadParameter("Give at least one option to change, such as --email.")
    present(call(lambda c: c.customers.update(id, **fields)), as_json, show_customer)
    show.done(f"Updated customer {id}.")


@products_app.command("list", epilog=examples("invoicing-cli products list", "invoicing-cli products list --inactive"))
def products_list(query: Annotated[str | None, typer.Option(help="Only those whose name contains this.")] = None,
                  active: Annotated[bool | None, typer.Option("--active/--inactive", help="Only active (or archived) ones.")]
                  = None, limit: Limit = 25, every: All = False, as_json: Json = False) -> None:
    """List products, newest first."""
    present_list(lambda c, size: c.products.list(limit=size, query=query, active=active), PRODUCT_COLUMNS,
                 limit=limit, every=every, as_json=as_json, noun="products")


@products_app.command("create", epilog=examples("invoicing-cli products create --name 'Design work' --description 'Per day'"))
def products_create(name: Annotated[str, typer.Option(help="Its name on invoices.")], description: str | None = None,
                    as_json: Json = False) -> None:
    """Create a product (give it prices with `prices create`)."""
    product = call(lambda c: c.products.create(**_given(name=name, description=description)))
    present(product, as_json, show_product)
    show.done(f"Created product {product.id}.")


@products_app.command("update", epilog=examples("invoicing-cli products update prod_… --name 'Design day'"))
def products_update(id: Annotated[str, typer.Argument(help="The product's id.")], name: str | None = None,
                    description: str | None = None, as_json: Json = False) -> None:
    """Change a product's name or description."""
    fields = _given(name=name, description=description)
    if not fields:
        raise typer.BadParameter("Give --name or --description.")
    present(call(lambda c: c.products.update(id, **fields)), as_json, show_product)
    show.done(f"Updated product {id}.")


@prices_app.command("list", epilog=examples("invoicing-cli prices list --product prod_…",
                                            "invoicing-cli prices list --currency EUR"))
def prices_list(product: str | None = None, currency: str | None = None,
                type: Annotated[str | None, typer.Option(help="one_time or recurring")] = None,
                active: Annotated[bool | None, typer.Option("--active/--inactive")] = None,
                limit: Limit = 25, every: All = False, as_json: Json = False) -> None:
    """List prices, newest first."""
    present_list(lambda c, size: c.prices.list(limit=size, product=product, currency=currency, type=type, active=active),
                 PRICE_COLUMNS, limit=limit, every=every, as_json=as_json, noun="prices")


@prices_app.command("create", epilog=examples(
    "invoicing-cli prices create --product prod_… --unit-amount 80000 --currency EUR",
    "invoicing-cli prices create --product prod_… --unit-amount 4900 --currency USD --every month"))
def prices_create(product: Annotated[str, typer.Option(help="The product's id.")],
                  unit_amount: Annotated[int, typer.Option(min=0, help="In minor units: 80000 is 800.00 (JPY: 800 yen).")],
                  currency: Annotated[str, typer.Option(help="ISO 4217, such as EUR.")],
                  nickname: str | None = None,
                  tax_rate: Annotated[str | None, typer.Option(help="Percent, such as 19 or 7.5.")] = None,
                  every: Annotated[str | None, typer.Option(help="Recurring: day, week, month or year.")] = None,
                  as_json: Json = False) -> None:
    """Create a price for a product."""
    fields = _given(product=product, unit_amount=unit_amount, currency=currency, nickname=nickname, tax_rate=tax_rate)
    if every:
        fields.update(type="recurring", recurring={"interval": every})
    price = call(lambda c: c.prices.create(**fields))
    present(price, as_json, show_price)
    show.done(f"Created price {price.id}.")


@prices_app.command("update", epilog=examples("invoicing-cli prices update price_… --nickname 'Day rate'"))
def prices_update(id: Annotated[str, typer.Argument(help="The price's id.")], nickname: str | None = None,
                  unit_amount: Annotated[int | None, typer.Option(min=0)] = None, tax_rate: str | None = None,
                  as_json: Json = False) -> None:
    """Change a price (lines already on invoices keep what they were)."""
    fields = _given(nickname=nickname, unit_amount=unit_amount, tax_rate=tax_rate)
    if not fields:
        raise typer.BadParameter("Give --nickname, --unit-amount or --tax-rate.")
    present(call(lambda c: c.prices.update(id, **fields)), as_json, show_price)
    show.done(f"Updated price {id}.")


# --- invoices -------------------------------------------------------------------------------------------

@invoices_app.command("list", epilog=examples("invoicing-cli invoices list", "invoicing-cli invoices list --status open",
                                              "invoicing-cli invoices list --customer cus_… --all --json"))
def invoices_list(status: Annotated[str | None, typer.Option(help="draft, open, paid, overdue or void")] = None,
                  customer: str | None = None,
                  from_: Annotated[str | None, typer.Option("--from", help="Issued on or after (YYYY-MM-DD).")] = None,
                  to: Annotated[str | None, typer.Option(help="Issued on or before (YYYY-MM-DD).")] = None,
                  number: str | None = None, limit: Limit = 25, every: All = False, as_json: Json = False) -> None:
    """List invoices, newest first."""
    present_list(lambda c, size: c.invoices.list(limit=size, status=status, customer=customer, from_=from_, to=to,
                                                 number=number),
                 INVOICE_COLUMNS, limit=limit, every=every, as_json=as_json, noun="invoices")


@invoices_app.command("get", epilog=examples("invoicing-cli invoices get in_…", "invoicing-cli invoices get in_… --json"))
def invoices_get(id: Annotated[str, typer.Argument(help="The invoice's id.")], as_json: Json = False) -> None:
    """Show an invoice with its lines."""
    present(call(lambda c: c.invoices.retrieve(id)), as_json, show_invoice)


@invoices_app.command("create", epilog=examples(
    "invoicing-cli invoices create --customer cus_… --item 'Design:2x80000' --item 'Hosting:1500'",
    "invoicing-cli invoices create --customer cus_… --item price_…:3 --days-until-due 14",
    "invoicing-cli invoices create --file invoice.json",
    "invoicing-cli invoices create --customer cus_… --item 'Design:2x80000' --preview"))
def invoices_create(
    customer: Annotated[str | None, typer.Option(help="The customer's id (or in --file).")] = None,
    item: Annotated[list[str] | None, typer.Option("--item", "-i", help=f"A line, repeatable: {ITEM_FORMAT}.")] = None,
    file: Annotated[str | None, typer.Option(help="JSON: an array of lines, or the whole request "
                                                  "(customer, items, currency, …); - reads standard input.")] = None,
    currency: Annotated[str | None, typer.Option(help="Default: the business's.")] = None,
    issue_date: Annotated[str | None, typer.Option(help="YYYY-MM-DD; default today.")] = None,
    due_date: Annotated[str | None, typer.Option(help="YYYY-MM-DD.")] = None,
    days_until_due: Annotated[int | None, typer.Option(min=0)] = None,
    description: str | None = None, footer: str | None = None,
    preview: Annotated[bool, typer.Option("--preview", help="Show what would be created, and create nothing.")] = False,
    as_json: Json = False,
) -> None:
    """Draft an invoice. It stays a draft (editable, unnumbered) until you finalize or send it."""
    body: dict[str, Any] = {}
    if file is not None:
        content = read_json(file)
        if isinstance(content, list):
            body["items"] = content
        elif isinstance(content, dict):
            body.update(content)
        else:
            raise typer.BadParameter(f"{file} must hold a JSON array of lines or an object.")
    body.update(_given(customer=customer, currency=currency, issue_date=issue_date, due_date=due_date,
                       days_until_due=days_until_due, description=description, footer=footer))
    if item:
        body["items"] = [*body.get("items", []), *(parse_item(text) for text in item)]
    if not body.get("customer"):
        raise typer.BadParameter("Name the customer: --customer cus_… (or \"customer\" in --file).")
    if preview:
        present(call(lambda c: c.invoices.preview(**body)), as_json, show_invoice)
        show.say("A preview: nothing was created.")
        return
    invoice = call(lambda c: c.invoices.create(**body))
    present(invoice, as_json, show_invoice)
    show.done(f"Drafted {invoice.id} ({show.money(invoice.total, invoice.currency)}). "
              f"Next: invoicing-cli invoices finalize {invoice.id}")


@invoices_app.command("finalize", epilog=examples("invoicing-cli invoices finalize in_…"))
def invoices_finalize(id: Annotated[str, typer.Argument(help="The draft's id.")], as_json: Json = False) -> None:
    """Finalize a draft: it gets the next number and can no longer be edited."""
    invoice = call(lambda c: c.invoices.finalize(id))
    present(invoice, as_json, show_invoice)
    show.done(f"Finalized {invoice.number} ({show.money(invoice.total, invoice.currency)}, due {show.when(invoice.due_date)}).")


@invoices_app.command("send", epilog=examples("invoicing-cli invoices send in_…",
                                              "invoicing-cli invoices send in_… --to ap@globex.example --cc me@example.com"))
def invoices_send(id: Annotated[str, typer.Argument(help="The invoice's id.")],
                  to: Annotated[str | None, typer.Option(help="Default: the customer's e-mail.")] = None,
                  cc: Annotated[list[str] | None, typer.Option(help="Repeatable.")] = None,
                  message: Annotated[str | None, typer.Option(help="A note above the invoice in the e-mail.")] = None,
                  as_json: Json = False) -> None:
    """E-mail an invoice with its PDF (a draft is finalized first)."""
    invoice = call(lambda c: c.invoices.send(id, to=to, cc=cc or None, message=message))
    present(invoice, as_json, show_invoice)
    show.done(f"Sent {invoice.number} to {invoice.emailed_to}.")


@invoices_app.command("pay", epilog=examples("invoicing-cli invoices pay in_…",
                                             "invoicing-cli invoices pay in_… --paid-on 2026-11-20 --reference 'BACS 7'"))
def invoices_pay(id: Annotated[str, typer.Argument(help="The invoice's id.")],
                 paid_on: Annotated[str | None, typer.Option(help="YYYY-MM-DD; default today.")] = None,
                 reference: Annotated[str | None, typer.Option(help="Your payment reference.")] = None,
                 as_json: Json = False) -> None:
    """Record that an open invoice was paid: one payment of all it has due (no money moves).

    For part of it, or a method other than `other`: `invoicing-cli payments record`."""
    invoice = call(lambda c: c.invoices.pay(id, paid_on=paid_on, reference=reference))
    present(invoice, as_json, show_invoice)
    show.done(f"Marked {invoice.number} paid.")


@invoices_app.command("void", epilog=examples("invoicing-cli invoices void in_… --reason 'Issued twice'"))
def invoices_void(id: Annotated[str, typer.Argument(help="The invoice's id.")],
                  reason: str | None = None, as_json: Json = False) -> None:
    """Void an open invoice: it keeps its number and can no longer be paid."""
    invoice = call(lambda c: c.invoices.void(id, reason=reason))
    present(invoice, as_json, show_invoice)
    show.done(f"Voided {invoice.number}.")


@invoices_app.command("delete", epilog=examples("invoicing-cli invoices delete in_…"))
def invoices_delete(id: Annotated[str, typer.Argument(help="The draft's id.")], as_json: Json = False) -> None:
    """Delete a draft (finalized invoices are voided instead)."""
    deleted = call(lambda c: c.invoices.delete(id))
    if as_json or OPTIONS.json:
        show.print_json(deleted.to_dict())
    show.done(f"Deleted draft {id}.")


@invoices_app.command("pdf", epilog=examples("invoicing-cli invoices pdf in_…", "invoicing-cli invoices pdf in_… -o march.pdf"))
def invoices_pdf(id: Annotated[str, typer.Argument(help="The invoice's id.")],
                 output: Annotated[Path | None, typer.Option("--output", "-o", help="Default: NUMBER.pdf here.")] = None,
                 force: Force = False, as_json: Json = False) -> None:
    """Download an invoice's PDF."""
    with client() as api:
        if output is None:
            invoice = api.invoices.retrieve(id)
            output = Path(f"{invoice.number or 'draft-' + invoice.id}.pdf")
        _writable(output, force)
        document = api.invoices.pdf(id)
    try:
        output.write_bytes(document)
    except OSError as exc:
        raise typer.BadParameter(f"Cannot write {output}: {exc.strerror}.") from None
    if as_json or OPTIONS.json:
        show.print_json({"invoice": id, "path": str(output.resolve()), "bytes": len(document)})
    size = f"{len(document) / 1024:.0f} KB" if len(document) >= 1024 else f"{len(document)} bytes"
    show.done(f"Saved the PDF to {output} ({size}).")


def _writable(target: Path, force: bool) -> None:
    if target.is_dir():
        raise typer.BadParameter(f"{target} is a folder: give a file name, such as {target / 'invoice.pdf'}.")
    if target.exists() and not force:
        raise typer.BadParameter(f"{target} exists; --force overwrites it, or choose another with --output.")
    if not target.resolve().parent.is_dir():
        raise typer.BadParameter(f"The folder {target.resolve().parent} does not exist.")


@invoices_app.command("e-invoice", epilog=examples("invoicing-cli invoices e-invoice in_… --format peppol",
                                                   "invoicing-cli invoices e-invoice in_… --format facturx -o INV-0001.pdf"))
def invoices_e_invoice(id: Annotated[str, typer.Argument(help="The finalized invoice's id.")],
                       format: Annotated[str, typer.Option(help="peppol (UBL XML), cii (XML) or facturx (PDF/A-3).")]
                       = "peppol",
                       output: Annotated[Path | None, typer.Option("--output", "-o", help="Default: NUMBER-FORMAT.xml "
                                                                   "(.pdf for facturx) here.")] = None,
                       force: Force = False, as_json: Json = False) -> None:
    """Download a finalized invoice as an EN 16931 e-invoice (Peppol BIS 3.0, CII or Factur-X)."""
    with client() as api:
        if output is None:
            number = api.invoices.retrieve(id).number or id
            output = Path(f"{number}-{format}.{'pdf' if format == 'facturx' else 'xml'}")
        _writable(output, force)
        document = api.invoices.e_invoice(id, format=format)
    try:
        output.write_bytes(document)
    except OSError as exc:
        raise typer.BadParameter(f"Cannot write {output}: {exc.strerror}.") from None
    if as_json or OPTIONS.json:
        show.print_json({"invoice": id, "format": format, "path": str(output.resolve()), "bytes": len(document)})
    show.done(f"Saved the {format} e-invoice to {output}.")


@invoices_app.command("events", epilog=examples("invoicing-cli invoices events in_…"))
def invoices_events(id: Annotated[str, typer.Argument(help="The invoice's id.")], limit: Limit = 25,
                    every: All = False, as_json: Json = False) -> None:
    """What happened to an invoice, newest first."""
    present_list(lambda c, size: c.invoices.events(id, limit=size),
                 [("When", lambda e: show.when(e.created_at)), ("Event", lambda e: e.type),
                  ("By", lambda e: (e.meta or {}).get("actor"))], limit=limit, every=every, as_json=as_json, noun="events")


InvoiceId = Annotated[str, typer.Argument(help="The invoice's id.")]


@invoices_app.command("remind", epilog=examples("invoicing-cli invoices remind in_…",
                                                "invoicing-cli invoices remind in_… --message 'Any news on this one?'"))
def invoices_remind(id: InvoiceId,
                    message: Annotated[str | None, typer.Option(help="A note put before the reminder's text.")] = None,
                    as_json: Json = False) -> None:
    """E-mail the customer a payment reminder of an open invoice now, in the reminder policy's words for its days
    overdue (`invoicing-cli reminders policy`). Counts as a send."""
    invoice = call(lambda c: c.invoices.remind(id, message=message))
    present(invoice, as_json, show_invoice)
    show.done(f"Reminded {invoice.customer_details.name} of {invoice.number} "
              f"({show.money(invoice.amount_due, invoice.currency)} due) at {invoice.emailed_to}.")


@invoices_app.command("pause-reminders", epilog=examples("invoicing-cli invoices pause-reminders in_…"))
def invoices_pause_reminders(id: InvoiceId, as_json: Json = False) -> None:
    """Stop the reminder policy's e-mails for one invoice (a dispute, an agreed delay) until resumed."""
    invoice = call(lambda c: c.invoices.pause_reminders(id))
    present(invoice, as_json, show_invoice)
    show.done(f"Paused the reminders of {invoice.number or invoice.id}. Resume them with: "
              f"invoicing-cli invoices resume-reminders {invoice.id}")


@invoices_app.command("resume-reminders", epilog=examples("invoicing-cli invoices resume-reminders in_…"))
def invoices_resume_reminders(id: InvoiceId, as_json: Json = False) -> None:
    """Let the reminder policy's e-mails go for one invoice again."""
    invoice = call(lambda c: c.invoices.resume_reminders(id))
    present(invoice, as_json, show_invoice)
    show.done(f"Resumed the reminders of {invoice.number or invoice.id}.")


# --- credit notes ---------------------------------------------------------------------------------------

REASONS = ("duplicate", "order_change", "product_unsatisfactory", "fraudulent")
CreditInvoice = Annotated[str | None, typer.Option(help="The invoice's id, open or paid (or in --file).")]
CreditLine = Annotated[list[str] | None, typer.Option("--line", "-l", help=f"A line, repeatable: {CREDIT_LINE_FORMAT}. "
                                                                          "None: all that remains of the invoice.")]
CreditFile = Annotated[str | None, typer.Option(help="JSON: an array of lines, or the whole request (invoice, lines, "
                                                     "reason, credit_amount, …); - reads standard input.")]
Reason = Annotated[str | None, typer.Option(help="duplicate, order_change, product_unsatisfactory or fraudulent.")]
Memo = Annotated[str | None, typer.Option(help="Printed on the credit note.")]
MONEY_PANEL = "Where the money goes (minor units; adding up to the total)"
CreditAmount = Annotated[int | None, typer.Option(min=0, rich_help_panel=MONEY_PANEL,
                                                  help="Off what is due on an open invoice (all of it when none is "
                                                       "given on an open invoice).")]
RefundAmount = Annotated[int | None, typer.Option(min=0, rich_help_panel=MONEY_PANEL,
                                                  help="Refunded to the customer outside the service (with "
                                                       "--balance-amount, at most what the invoice was paid).")]
RefundReference = Annotated[str | None, typer.Option(rich_help_panel=MONEY_PANEL, help="The refund's reference.")]
RefundedOn = Annotated[str | None, typer.Option(rich_help_panel=MONEY_PANEL, help="YYYY-MM-DD; default today.")]
BalanceAmount = Annotated[int | None, typer.Option(min=0, rich_help_panel=MONEY_PANEL,
                                                   help="To the customer's credit, taken off their next invoice in "
                                                        "this currency.")]


def _credit_note_body(invoice: str | None, line: list[str] | None, file: str | None, reason: str | None,
                      memo: str | None, credit_amount: int | None, refund_amount: int | None,
                      refund_reference: str | None, refunded_on: str | None, balance_amount: int | None) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if file is not None:
        content = read_json(file)
        if isinstance(content, list):
            body["lines"] = content
        elif isinstance(content, dict):
            body.update(content)
        else:
            raise typer.BadParameter(f"{file} must hold a JSON array of lines or an object.")
    if reason is not None and reason not in REASONS:
        raise typer.BadParameter(f"--reason is one of {', '.join(REASONS)}, not {reason!r}.")
    body.update(_given(invoice=invoice, reason=reason, memo=memo, credit_amount=credit_amount,
                       refund_amount=refund_amount, refund_reference=refund_reference, refunded_on=refunded_on,
                       balance_amount=balance_amount))
    if line:
        body["lines"] = [*body.get("lines", []), *(parse_credit_line(text) for text in line)]
    if not body.get("invoice"):
        raise typer.BadParameter("Name the invoice: --invoice in_… (or \"invoice\" in --file).")
    return body


def _preview_credit_note(body: dict[str, Any], as_json: bool) -> None:
    present(call(lambda c: c.credit_notes.preview(**body)), as_json, show_credit_note)
    show.say("A preview: nothing was issued.")


@credit_notes_app.command("list", epilog=examples("invoicing-cli credit-notes list",
                                                  "invoicing-cli credit-notes list --invoice in_…",
                                                  "invoicing-cli credit-notes list --customer cus_… --all --json"))
def credit_notes_list(invoice: Annotated[str | None, typer.Option(help="Only this invoice's.")] = None,
                      customer: Annotated[str | None, typer.Option(help="Only this customer's.")] = None,
                      limit: Limit = 25, every: All = False, as_json: Json = False) -> None:
    """List credit notes, newest first."""
    present_list(lambda c, size: c.credit_notes.list(limit=size, invoice=invoice, customer=customer),
                 CREDIT_NOTE_COLUMNS, limit=limit, every=every, as_json=as_json, noun="credit notes")


@credit_notes_app.command("create", epilog=examples(
    "invoicing-cli credit-notes create --invoice in_…",
    "invoicing-cli credit-notes create --invoice in_… --line ii_…:1 --reason order_change --memo 'One hour less'",
    "invoicing-cli credit-notes create --invoice in_… --line 'Goodwill:700@20' --balance-amount 840",
    "invoicing-cli credit-notes create --invoice in_… --refund-amount 4100 --refund-reference 'SEPA 77'",
    "invoicing-cli credit-notes create --file credit-note.json",
    "invoicing-cli credit-notes create --invoice in_… --line ii_…:amount=2500 --preview"))
def credit_notes_create(
    invoice: CreditInvoice = None, line: CreditLine = None, file: CreditFile = None, reason: Reason = None,
    memo: Memo = None, credit_amount: CreditAmount = None, refund_amount: RefundAmount = None,
    refund_reference: RefundReference = None, refunded_on: RefundedOn = None, balance_amount: BalanceAmount = None,
    preview: Annotated[bool, typer.Option("--preview", help="Show what would be issued, and issue nothing.")] = False,
    as_json: Json = False,
) -> None:
    """Issue a credit note on an open or paid invoice, numbered in a series of its own (CN-0001).

    Without --line it credits all that remains of the invoice. On an open invoice the credit comes off what is due
    unless you say where the money goes; a paid invoice takes only --refund-amount and --balance-amount."""
    body = _credit_note_body(invoice, line, file, reason, memo, credit_amount, refund_amount, refund_reference,
                             refunded_on, balance_amount)
    if preview:
        _preview_credit_note(body, as_json)
        return
    note = call(lambda c: c.credit_notes.create(**body))
    present(note, as_json, show_credit_note)
    show.done(f"Issued {note.number} ({show.money(note.total, note.currency)}) on {note.invoice_number}.")


@credit_notes_app.command("preview", epilog=examples(
    "invoicing-cli credit-notes preview --invoice in_…",
    "invoicing-cli credit-notes preview --invoice in_… --line ii_…:2 --json"))
def credit_notes_preview(
    invoice: CreditInvoice = None, line: CreditLine = None, file: CreditFile = None, reason: Reason = None,
    memo: Memo = None, credit_amount: CreditAmount = None, refund_amount: RefundAmount = None,
    refund_reference: RefundReference = None, refunded_on: RefundedOn = None, balance_amount: BalanceAmount = None,
    as_json: Json = False,
) -> None:
    """Show the credit note `create` would issue with the same options, computed exactly so; nothing is issued."""
    _preview_credit_note(_credit_note_body(invoice, line, file, reason, memo, credit_amount, refund_amount,
                                           refund_reference, refunded_on, balance_amount), as_json)


@credit_notes_app.command("show", epilog=examples("invoicing-cli credit-notes show cn_…",
                                                  "invoicing-cli credit-notes show cn_… --json"))
def credit_notes_show(id: Annotated[str, typer.Argument(help="The credit note's id.")], as_json: Json = False) -> None:
    """Show a credit note with its lines and where its money went."""
    present(call(lambda c: c.credit_notes.retrieve(id)), as_json, show_credit_note)


@credit_notes_app.command("get", epilog=examples("invoicing-cli credit-notes get cn_…",
                                                 "invoicing-cli credit-notes get cn_… --json"))
def credit_notes_get(id: Annotated[str, typer.Argument(help="The credit note's id.")], as_json: Json = False) -> None:
    """Show a credit note (the same as `show`, named as the other groups' `get`)."""
    credit_notes_show(id, as_json)


@credit_notes_app.command("void", epilog=examples("invoicing-cli credit-notes void cn_…"))
def credit_notes_void(id: Annotated[str, typer.Argument(help="The credit note's id.")], as_json: Json = False) -> None:
    """Void a credit note: what it took off the invoice is due again (an invoice it settled reopens) and its
    balance leaves the customer's. Refused once its balance was applied to another invoice."""
    note = call(lambda c: c.credit_notes.void(id))
    present(note, as_json, show_credit_note)
    show.done(f"Voided {note.number}; its effects on {note.invoice_number} are undone.")


@credit_notes_app.command("send", epilog=examples(
    "invoicing-cli credit-notes send cn_…",
    "invoicing-cli credit-notes send cn_… --to ap@globex.example --cc me@example.com --message 'As agreed'"))
def credit_notes_send(id: Annotated[str, typer.Argument(help="The credit note's id.")],
                      to: Annotated[str | None, typer.Option(help="Default: the customer's e-mail.")] = None,
                      cc: Annotated[list[str] | None, typer.Option(help="Repeatable.")] = None,
                      message: Annotated[str | None, typer.Option(help="A note above the credit note in the e-mail.")]
                      = None,
                      as_json: Json = False) -> None:
    """E-mail a credit note with its PDF."""
    note = call(lambda c: c.credit_notes.send(id, to=to, cc=cc or None, message=message))
    present(note, as_json, show_credit_note)
    show.done(f"Sent {note.number} to {note.emailed_to}.")


@credit_notes_app.command("pdf", epilog=examples("invoicing-cli credit-notes pdf cn_…",
                                                 "invoicing-cli credit-notes pdf cn_… -o refund.pdf"))
def credit_notes_pdf(id: Annotated[str, typer.Argument(help="The credit note's id.")],
                     output: Annotated[Path | None, typer.Option("--output", "-o", help="Default: NUMBER.pdf here.")]
                     = None,
                     force: Force = False, as_json: Json = False) -> None:
    """Download a credit note's PDF."""
    with client() as api:
        if output is None:
            output = Path(f"{api.credit_notes.retrieve(id).number}.pdf")
        _writable(output, force)
        document = api.credit_notes.pdf(id)
    _save(output, document)
    if as_json or OPTIONS.json:
        show.print_json({"credit_note": id, "path": str(output.resolve()), "bytes": len(document)})
    size = f"{len(document) / 1024:.0f} KB" if len(document) >= 1024 else f"{len(document)} bytes"
    show.done(f"Saved the PDF to {output} ({size}).")


@credit_notes_app.command("e-invoice", epilog=examples(
    "invoicing-cli credit-notes e-invoice cn_… --format peppol",
    "invoicing-cli credit-notes e-invoice cn_… --format facturx -o CN-0001.pdf"))
def credit_notes_e_invoice(id: Annotated[str, typer.Argument(help="The credit note's id.")],
                           format: Annotated[str, typer.Option(help="peppol (UBL XML), cii (XML) or facturx "
                                                                    "(PDF/A-3).")] = "peppol",
                           output: Annotated[Path | None, typer.Option("--output", "-o", help="Default: NUMBER-FORMAT"
                                                                       ".xml (.pdf for facturx) here.")] = None,
                           force: Force = False, as_json: Json = False) -> None:
    """Download a credit note as an EN 16931 e-invoice naming the invoice it corrects."""
    with client() as api:
        if output is None:
            number = api.credit_notes.retrieve(id).number
            output = Path(f"{number}-{format}.{'pdf' if format == 'facturx' else 'xml'}")
        _writable(output, force)
        document = api.credit_notes.e_invoice(id, format=format)
    _save(output, document)
    if as_json or OPTIONS.json:
        show.print_json({"credit_note": id, "format": format, "path": str(output.resolve()), "bytes": len(document)})
    show.done(f"Saved the {format} e-invoice to {output}.")


def _save(output: Path, document: bytes) -> None:
    try:
        output.write_bytes(document)
    except OSError as exc:
        raise typer.BadParameter(f"Cannot write {output}: {exc.strerror}.") from None


# --- payments -------------------------------------------------------------------------------------------

METHODS = ("bank_transfer", "card", "cash", "cheque", "direct_debit", "other")
OVERPAYMENTS = ("refuse", "balance")
PaymentId = Annotated[str, typer.Argument(help="The payment's id (py_…).")]


def _one_of(option: str, value: str | None, allowed: tuple[str, ...]) -> str | None:
    if value is not None and value not in allowed:
        raise typer.BadParameter(f"{option} is one of {', '.join(allowed)}, not {value!r}.")
    return value


@payments_app.command("list", epilog=examples("invoicing-cli payments list",
                                              "invoicing-cli payments list --invoice in_…",
                                              "invoicing-cli payments list --customer cus_… --all --json"))
def payments_list(invoice: Annotated[str | None, typer.Option(help="Only this invoice's.")] = None,
                  customer: Annotated[str | None, typer.Option(help="Only this customer's.")] = None,
                  limit: Limit = 25, every: All = False, as_json: Json = False) -> None:
    """List payments, newest first, reversed ones included."""
    present_list(lambda c, size: c.payments.list(limit=size, invoice=invoice, customer=customer),
                 PAYMENT_COLUMNS, limit=limit, every=every, as_json=as_json, noun="payments")


@payments_app.command("get", epilog=examples("invoicing-cli payments get py_…", "invoicing-cli payments get py_… --json"))
def payments_get(id: PaymentId, as_json: Json = False) -> None:
    """Show a payment: what it took off its invoice, any excess put on the customer's balance, any reversal."""
    present(call(lambda c: c.payments.retrieve(id)), as_json, show_payment)


@payments_app.command("record", epilog=examples(
    "invoicing-cli payments record --invoice in_… --amount 50000",
    "invoicing-cli payments record --invoice in_… --amount 50000 --method bank_transfer --reference 'BACS 7' "
    "--paid-on 2026-11-20",
    "invoicing-cli payments record --invoice in_… --amount 200000 --overpayment balance --json"))
def payments_record(
    invoice: Annotated[str, typer.Option(help="The open (or overdue) invoice's id.")],
    amount: Annotated[str, typer.Option(help="What was received, in minor units of the invoice's currency: 50000 is "
                                             "500.00 (JPY: 50000 yen).")],
    currency: Annotated[str | None, typer.Option(help="The invoice's currency, to be sure of the unit (another is "
                                                      "refused).")] = None,
    paid_on: Annotated[str | None, typer.Option(help="When it was received: YYYY-MM-DD or a timestamp; default "
                                                     "now.")] = None,
    method: Annotated[str | None, typer.Option(help=f"{', '.join(METHODS[:-1])} or other (the default).")] = None,
    reference: Annotated[str | None, typer.Option(help="The payment's reference, such as the transfer's.")] = None,
    note: Annotated[str | None, typer.Option(help="An internal note, never shown to the customer.")] = None,
    overpayment: Annotated[str | None, typer.Option(help="More than is due: refuse (the default) or balance (the "
                                                         "excess to the customer's credit, taken off their next "
                                                         "invoice).")] = None,
    as_json: Json = False,
) -> None:
    """Record money received for an open invoice, in part or in full (no money moves).

    It comes off what the invoice has due; the payment that brings that to 0 makes the invoice paid. For all that is
    due in one go, `invoicing-cli invoices pay` does the same."""
    fields = _given(invoice=invoice, amount=parse_amount(amount, "--amount"), currency=currency, paid_on=paid_on,
                    method=_one_of("--method", method, METHODS), reference=reference, note=note,
                    overpayment=_one_of("--overpayment", overpayment, OVERPAYMENTS))
    with client() as api:
        payment = api.payments.create(**fields)
        try:
            after: Invoice | None = api.invoices.retrieve(payment.invoice)
        except InvoicingError:  # recorded all the same: only the invoice's state is left unsaid
            after = None
    present(payment, as_json, show_payment)
    message = f"Recorded {show.money(payment.amount, payment.currency)} on {payment.invoice_number} ({payment.id})."
    if payment.balance_amount:
        message += f" {show.money(payment.balance_amount, payment.currency)} beyond what was due went to the " \
                   "customer's credit balance."
    if after is not None:
        message += f" {payment.invoice_number} is paid." if after.status == "paid" else \
            f" {show.money(after.amount_due, after.currency)} still due."
    show.done(message)


@payments_app.command("reverse", epilog=examples(
    "invoicing-cli payments reverse py_… --reason 'The transfer bounced'"))
def payments_reverse(id: PaymentId,
                     reason: Annotated[str, typer.Option(help="Why it is undone (a bounced transfer, a charge-back, "
                                                              "a mistake); kept with the payment.")],
                     as_json: Json = False) -> None:
    """Reverse a payment: what it paid is due again and a paid invoice reopens; the payment stays, reversed.
    Refused once its excess was applied to another invoice."""
    payment = call(lambda c: c.payments.reverse(id, reason=reason))
    present(payment, as_json, show_payment)
    show.done(f"Reversed {payment.id}: {show.money(payment.amount_applied, payment.currency)} is due again on "
              f"{payment.invoice_number}.")


# --- receivables ----------------------------------------------------------------------------------------

AGES = (("current", "Current"), ("days_1_30", "1–30 days"), ("days_31_60", "31–60 days"),
        ("days_61_90", "61–90 days"), ("days_over_90", "Over 90 days"))


def _owed(amount: int, invoices: int, currency: str) -> str:
    """`2,819.00 (3)`: an amount and on how many invoices; `–` for none."""
    return "–" if not amount and not invoices else f"{show.amount(amount, currency)} ({invoices})"


def _aging(row: ReceivableFigures) -> list[str]:
    """The figures of a row: outstanding, overdue, then each bucket."""
    return [_owed(row.outstanding, row.invoices, row.currency), _owed(row.overdue, row.overdue_invoices, row.currency),
            *(_owed(row.bucket(name).amount, row.bucket(name).invoices, row.currency) for name, _ in AGES)]


CUSTOMER_RECEIVABLE_COLUMNS: list[show.Column] = [
    ("Customer", lambda r: r.name), ("ID", lambda r: r.customer), ("Currency", lambda r: r.currency),
    *((title, lambda r, index=index: _aging(r)[index])
      for index, title in enumerate(("Outstanding", "Overdue", *(title for _, title in AGES))))]


def show_receivables(receivables: Receivables, customers: list[CustomerReceivables]) -> None:
    if not receivables.currencies:
        show.out.print(f"Nothing is owed on {show.when(receivables.as_of)}: no open invoices.", markup=False,
                       highlight=False)
        return
    show.out.print(f"Owed on open invoices on {show.when(receivables.as_of)}, by days past due (amount, and how many "
                   "invoices):", markup=False, highlight=False)
    figures = [_aging(row) for row in receivables.currencies]
    labels = ["Outstanding", "Overdue", *(title for _, title in AGES)]
    show.matrix(["", *(row.currency for row in receivables.currencies)],
                [[label, *(column[index] for column in figures)] for index, label in enumerate(labels)])
    show.out.print()
    show.table(customers, CUSTOMER_RECEIVABLE_COLUMNS, empty="No customers.")


@app.command("receivables", epilog=examples("invoicing-cli receivables", "invoicing-cli receivables --currency EUR",
                                            "invoicing-cli receivables --all --json"))
def receivables(currency: Annotated[str | None, typer.Option(help="Only this currency (ISO 4217, such as EUR).")] = None,
                limit: Annotated[int, typer.Option("--limit", min=1, help="Show at most this many customers (those "
                                                                          "owing most first).")] = 25,
                every: Annotated[bool, typer.Option("--all", help="Show every customer, page after page.")] = False,
                as_json: Json = False) -> None:
    """What customers owe on open invoices, by age: per currency, outstanding and overdue with the aging buckets
    (current, 1–30, 31–60, 61–90, over 90 days past due), then per customer, those owing most first."""
    customers: list[CustomerReceivables] = []
    more = False

    def size() -> int:
        return 100 if every else min(limit - len(customers), 100)
    with client() as api:
        summary = page = api.receivables.retrieve(currency=currency, limit=size())
        while True:
            room = len(page.customers) if every else limit - len(customers)
            customers.extend(page.customers[:room])
            if not every and len(customers) >= limit:
                more = len(page.customers) > room or page.has_more
                break
            if not page.has_more:
                break
            page = api.receivables.retrieve(currency=currency, limit=size(), cursor=page.next_cursor)
    if as_json or OPTIONS.json:
        answer = {name: value for name, value in summary.to_dict().items() if name != "next_cursor"}
        show.print_json({**answer, "customers": [row.to_dict() for row in customers]})
        return
    show_receivables(summary, customers)
    if more:
        show.say(f"The {limit} customers owing most; --limit N for more, --all for every one.")


# --- invoice schedules ----------------------------------------------------------------------------------

INTERVALS = ("week", "month", "quarter", "year")
MODES = ("draft", "finalize", "finalize_and_send")
CATCH_UPS = ("all", "latest")
SCHEDULE_STATUSES = ("active", "paused", "cancelled", "completed")
ScheduleId = Annotated[str, typer.Argument(help="The schedule's id (sched_…).")]


def _period(period: Any) -> str:
    return f"{show.when(period.start)} – {show.when(period.end)}" if period is not None else ""


def _utc(moment: Any) -> str:
    return f"{show.when(moment)} UTC" if moment is not None else ""


SCHEDULE_COLUMNS: list[show.Column] = [
    ("ID", lambda s: s.id), ("Status", lambda s: s.status), ("Customer ID", lambda s: s.customer),
    ("Recurrence", lambda s: s.summary), ("Mode", lambda s: s.mode), ("Made", lambda s: s.invoices_made),
    ("Next run", lambda s: _utc(s.next_run))]
RUN_COLUMNS: list[show.Column] = [
    ("ID", lambda r: r.id), ("Period", lambda r: _period(r.period)), ("Status", lambda r: r.status),
    ("Invoice", lambda r: r.invoice), ("Scheduled for", lambda r: _utc(r.scheduled_for)),
    ("E-mail", lambda r: r.email and (f"{r.email.status}: {r.email.error}" if r.email.error else r.email.status))]


def _acting_as(schedule: InvoiceSchedule) -> str:
    who = schedule.created_by
    named = who.api_key_id or who.client_id or who.user_id
    return f"{who.actor.replace('_', ' ')} {named}" if named else who.actor


def show_schedule(schedule: InvoiceSchedule) -> None:
    template = schedule.invoice
    currency = template.currency
    show.fields(schedule, [
        ("ID", lambda s: s.id), ("Status", lambda s: s.status), ("Customer", lambda s: s.customer),
        ("Runs", lambda s: f"{s.summary}, at {s.recurrence.run_at} {s.time_zone}"), ("Mode", lambda s: s.mode),
        ("Currency", lambda s: currency or "the business's"),
        ("Due", lambda s: f"{30 if template.days_until_due is None else template.days_until_due} days after issue"),
        ("Description", lambda s: template.description),
        ("Next run", lambda s: _utc(s.next_run)), ("Next period", lambda s: _period(s.next_period)),
        ("Invoices made", lambda s: s.invoices_made),
        ("Remaining", lambda s: s.periods_remaining),
        ("Catch-up", lambda s: s.catch_up), ("Last failure", lambda s: s.last_failure and (
            f"{s.last_failure.reason} ({s.last_failure.attempts} of {s.max_attempts} attempts, last "
            f"{show.when(s.last_failure.at)} UTC)")),
        ("Paused", lambda s: s.paused_at and f"{show.when(s.paused_at)} UTC{': ' + s.pause_reason if s.pause_reason else ''}"),
        ("Cancelled", lambda s: s.cancelled_at and _utc(s.cancelled_at)),
        ("Acting as", _acting_as), ("Created", lambda s: show.when(s.created))])
    show.out.print()
    show.table(template.items, [
        ("Description", lambda line: line.description or ""), ("Price", lambda line: line.price),
        ("Quantity", lambda line: line.quantity),
        ("Unit amount", lambda line: show.money(line.unit_amount, currency) if currency else line.unit_amount),
        ("Tax", lambda line: f"{line.tax_rate}%" if line.tax_rate is not None else "")], empty="No lines.")


def show_run(run: ScheduleRun) -> None:
    show.fields(run, [
        ("ID", lambda r: r.id), ("Schedule", lambda r: r.schedule), ("Status", lambda r: r.status),
        ("Period", lambda r: f"{_period(r.period)} (period {r.period_index + 1})"), ("Invoice", lambda r: r.invoice),
        ("E-mail", lambda r: r.email and (f"{r.email.status}: {r.email.error}" if r.email.error else r.email.status)),
        ("Scheduled for", lambda r: _utc(r.scheduled_for)), ("Made", lambda r: _utc(r.created))])


def _day_of_month(value: str | None) -> int | str | None:
    if value is None:
        return None
    text = value.strip().lower()
    if text == "last":
        return "last"
    if text.isdigit() and 1 <= int(text) <= 31:
        return int(text)
    raise typer.BadParameter(f"--day is a day of the month from 1 to 31, or last; not {value!r}.")


@schedules_app.command("list", epilog=examples("invoicing-cli schedules list",
                                               "invoicing-cli schedules list --status paused",
                                               "invoicing-cli schedules list --customer cus_… --all --json"))
def schedules_list(customer: Annotated[str | None, typer.Option(help="Only this customer's.")] = None,
                   status: Annotated[str | None, typer.Option(help=", ".join(SCHEDULE_STATUSES))] = None,
                   limit: Limit = 25, every: All = False, as_json: Json = False) -> None:
    """List invoice schedules, newest first."""
    status = _one_of("--status", status, SCHEDULE_STATUSES)
    present_list(lambda c, size: c.invoice_schedules.list(limit=size, customer=customer, status=status),
                 SCHEDULE_COLUMNS, limit=limit, every=every, as_json=as_json, noun="invoice schedules")


@schedules_app.command("get", epilog=examples("invoicing-cli schedules get sched_…",
                                              "invoicing-cli schedules get sched_… --json"))
def schedules_get(id: ScheduleId, as_json: Json = False) -> None:
    """Show a schedule: how often it runs, its next run and period, what it made, and its invoice's lines."""
    present(call(lambda c: c.invoice_schedules.retrieve(id)), as_json, show_schedule)


@schedules_app.command("create", epilog=examples(
    "invoicing-cli schedules create --customer cus_… --item 'Retainer:250000' --start 2027-01-01",
    "invoicing-cli schedules create --customer cus_… --item price_…:1 --interval month --day last --count 12 "
    "--mode finalize_and_send --time-zone Europe/Berlin --run-at 09:00",
    "invoicing-cli schedules create --customer cus_… --item 'Support:2x5000' --interval week --every 2 "
    "--start 2027-01-04 --end 2027-12-31 --days-until-due 14",
    "invoicing-cli schedules create --file schedule.json"))
def schedules_create(
    customer: Annotated[str | None, typer.Option(help="The customer's id (or in --file).")] = None,
    item: Annotated[list[str] | None, typer.Option("--item", "-i", help=f"A line, repeatable: {ITEM_FORMAT}.")] = None,
    file: Annotated[str | None, typer.Option(help="JSON: the whole request (customer, invoice, recurrence, mode, "
                                                  "…), which the options complete; - reads standard input.")] = None,
    currency: Annotated[str | None, typer.Option(help="Default: the business's.")] = None,
    interval: Annotated[str | None, typer.Option(help="week, month (the default), quarter or year.")] = None,
    every: Annotated[int | None, typer.Option("--every", min=1, help="Every N intervals (default 1): --interval "
                                                                     "week --every 2 is fortnightly.")] = None,
    day: Annotated[str | None, typer.Option(help="Day of the month, 1 to 31 (the 29th to 31st fall on a shorter "
                                                 "month's last day), or last; default the start date's. Weeks run "
                                                 "on the start date's weekday.")] = None,
    start: Annotated[str | None, typer.Option(help="The first period's first day, YYYY-MM-DD (today or later, in "
                                                   "the time zone).")] = None,
    end: Annotated[str | None, typer.Option(help="No period starts after this day, YYYY-MM-DD.")] = None,
    count: Annotated[int | None, typer.Option(min=1, help="How many invoices in all.")] = None,
    mode: Annotated[str | None, typer.Option(help="draft (the default: each invoice waits for you to finalize "
                                                  "it), finalize, or finalize_and_send (e-mailed to the "
                                                  "customer).")] = None,
    time_zone: Annotated[str | None, typer.Option(help="IANA time zone of the run times and issue dates, such as "
                                                       "Europe/Berlin; default the business's country's.")] = None,
    run_at: Annotated[str | None, typer.Option(help="Local time of each run, HH:MM; default 08:00.")] = None,
    days_until_due: Annotated[int | None, typer.Option(min=0, help="Due this many days after issue; default "
                                                                   "30.")] = None,
    description: Annotated[str | None, typer.Option(help="The invoices' notes.")] = None,
    footer: Annotated[str | None, typer.Option(help="The invoices' payment terms.")] = None,
    catch_up: Annotated[str | None, typer.Option(help="Missed runs: all (the default) made in order, or only the "
                                                      "latest.")] = None,
    max_attempts: Annotated[int | None, typer.Option(min=1, help="Attempts of a failing run before the schedule "
                                                                 "pauses; default 3.")] = None,
    as_json: Json = False,
) -> None:
    """Create an invoice schedule: the invoice of --item lines made for --customer once per period from --start.

    Each run issues the invoice on its period's first day at --run-at, acting as your credential (its permissions
    are checked at every run). --mode draft leaves each invoice for you to finalize."""
    body: dict[str, Any] = {}
    if file is not None:
        content = read_json(file)
        if not isinstance(content, dict):
            raise typer.BadParameter(f"{file} must hold a JSON object: the whole request.")
        body.update(content)
    invoice = dict(body.pop("invoice", None) or {})
    recurrence = dict(body.pop("recurrence", None) or {})
    if item:
        invoice["items"] = [*invoice.get("items", []), *(parse_item(text) for text in item)]
    customer = customer or body.pop("customer", None)
    if not customer:
        raise typer.BadParameter("Name the customer: --customer cus_… (or \"customer\" in --file).")
    if not invoice.get("items"):
        raise typer.BadParameter(f"Give the invoice's lines: --item, repeatable ({ITEM_FORMAT}).")
    if not (start or recurrence.get("start_date")):
        raise typer.BadParameter("Say when it starts: --start YYYY-MM-DD.")
    if interval is None and "interval" not in recurrence:
        interval = "month"
    options = _given(currency=currency, interval=_one_of("--interval", interval, INTERVALS), interval_count=every,
                     day_of_month=_day_of_month(day), start_date=start, end_date=end, count=count, run_at=run_at,
                     days_until_due=days_until_due, description=description, footer=footer,
                     mode=_one_of("--mode", mode, MODES), time_zone=time_zone,
                     catch_up=_one_of("--catch-up", catch_up, CATCH_UPS), max_attempts=max_attempts)
    fields = {**body, **options}  # the options win over the file
    schedule = call(lambda c: c.invoice_schedules.create(customer=customer, invoice=invoice, recurrence=recurrence,
                                                         **fields))
    present(schedule, as_json, show_schedule)
    first = f" The first run: {_utc(schedule.next_run)}." if schedule.next_run else ""
    show.done(f"Created {schedule.id}: {schedule.summary}.{first}")


@schedules_app.command("pause", epilog=examples("invoicing-cli schedules pause sched_…",
                                                "invoicing-cli schedules pause sched_… --reason 'Client away in August'"))
def schedules_pause(id: ScheduleId,
                    reason: Annotated[str | None, typer.Option(help="Why, kept on the schedule.")] = None,
                    as_json: Json = False) -> None:
    """Pause a schedule: no run until it is resumed."""
    schedule = call(lambda c: c.invoice_schedules.pause(id, reason=reason))
    present(schedule, as_json, show_schedule)
    show.done(f"Paused {schedule.id}. Resume it with: invoicing-cli schedules resume {schedule.id}")


@schedules_app.command("resume", epilog=examples("invoicing-cli schedules resume sched_…",
                                                 "invoicing-cli schedules resume sched_… --skip-missed"))
def schedules_resume(id: ScheduleId,
                     skip_missed: Annotated[bool, typer.Option("--skip-missed", help="Skip the periods that began "
                                                               "while it was paused instead of making them.")] = False,
                     as_json: Json = False) -> None:
    """Resume a paused schedule; its runs act as your credential from now on."""
    schedule = call(lambda c: c.invoice_schedules.resume(id, skip_missed=skip_missed))
    present(schedule, as_json, show_schedule)
    next_run = f" Next run: {_utc(schedule.next_run)}." if schedule.next_run else ""
    show.done(f"Resumed {schedule.id}.{next_run}")


@schedules_app.command("cancel", epilog=examples("invoicing-cli schedules cancel sched_…"))
def schedules_cancel(id: ScheduleId, as_json: Json = False) -> None:
    """Cancel a schedule for good: no further runs; the invoices it made stay."""
    schedule = call(lambda c: c.invoice_schedules.cancel(id))
    present(schedule, as_json, show_schedule)
    show.done(f"Cancelled {schedule.id} ({schedule.invoices_made} invoices made).")


@schedules_app.command("run", epilog=examples("invoicing-cli schedules run sched_…",
                                              "invoicing-cli schedules run sched_… --json"))
def schedules_run(id: ScheduleId, as_json: Json = False) -> None:
    """Make the next period's invoice now (issued today); the schedule then moves on to the following period."""
    run = call(lambda c: c.invoice_schedules.run(id))
    present(run, as_json, show_run)
    show.done(f"Made {run.invoice} for {_period(run.period)}. See it with: invoicing-cli invoices get {run.invoice}"
              if run.invoice else f"Period {_period(run.period)}: {run.status}.")


@schedules_app.command("runs", epilog=examples("invoicing-cli schedules runs sched_…",
                                               "invoicing-cli schedules runs sched_… --all --json"))
def schedules_runs(id: ScheduleId, limit: Limit = 25, every: All = False, as_json: Json = False) -> None:
    """List a schedule's runs, newest first: each period made (its invoice and e-mail) or skipped."""
    present_list(lambda c, size: c.invoice_schedules.runs(id, limit=size), RUN_COLUMNS, limit=limit, every=every,
                 as_json=as_json, noun="runs")


# --- payment reminders ----------------------------------------------------------------------------------

POLICY_FILE_ONLY = ("object", "updated")  # what `reminders policy --json` shows and a policy to set has not


def _when(days: int) -> str:
    if days == 0:
        return "on the due date"
    count = f"{abs(days)} day{'' if abs(days) == 1 else 's'}"
    return f"{count} before the due date" if days < 0 else f"{count} after"


def _late_fee(policy: ReminderPolicy) -> str | None:
    fee = policy.late_fee
    if fee is None:
        return None
    if fee.kind == "fixed":
        return f"fixed: {fee.amount} in minor units of the overdue invoice's currency"
    if fee.kind == "statutory":
        return "statutory: the reference rate plus 8 points a year on what is due, for the days overdue (and 40 EUR " \
               "on EUR invoices)"
    return fee.kind


STEP_COLUMNS: list[show.Column] = [
    ("When", lambda step: _when(step.days) + (", with the late fee" if step.late_fee else "")),
    ("Subject", lambda step: step.subject), ("Text", lambda step: " ".join(step.body.split()))]


def show_policy(policy: ReminderPolicy) -> None:
    show.fields(policy, [
        ("Reminders", lambda p: "on" if p.active else "off"), ("Late fee", _late_fee),
        ("Reference rate", lambda p: None if p.reference_rate is None else f"{p.reference_rate} % a year"),
        ("Updated", lambda p: f"{show.when(p.updated)} UTC" if p.updated else "never (the default steps, off)")])
    show.out.print()
    steps: list[ReminderStep] = sorted(policy.steps, key=lambda step: step.days)
    show.table(steps, STEP_COLUMNS, empty="No steps: no reminder is sent.")


@reminders_app.command("policy", epilog=examples("invoicing-cli reminders policy",
                                                 "invoicing-cli reminders policy --json > policy.json"))
def reminders_policy(as_json: Json = False) -> None:
    """Show the reminder policy: on or off, the late fee, and each step (when, its subject and text)."""
    present(call(lambda c: c.reminders.policy()), as_json, show_policy)


@reminders_app.command("set", epilog=examples(
    "invoicing-cli reminders set --on", "invoicing-cli reminders set --off",
    "invoicing-cli reminders set --file policy.json",
    "invoicing-cli reminders policy --json > policy.json   # edit it, then:",
    "invoicing-cli reminders set --file policy.json --on"))
def reminders_set(
    file: Annotated[str | None, typer.Option(help="JSON: the whole policy (active, steps, late_fee, "
                                                  "reference_rate), which replaces the one before; what `reminders "
                                                  "policy --json` prints is taken as it is. - reads standard "
                                                  "input.")] = None,
    active: Annotated[bool | None, typer.Option("--on/--off", help="Turn reminders on or off; alone, the steps, "
                                                                   "late fee and rate stay as they are.")] = None,
    as_json: Json = False,
) -> None:
    """Set the reminder policy: --file replaces all of it, --on/--off alone turns it on or off.

    Each step is e-mailed once per open invoice with something due, from 08:00 on its day in the business's time
    zone. Placeholders in subjects and texts: {number}, {amount_due}, {due_date}, {days_overdue}, {link},
    {customer}, {business}. Needs the scope invoices:send."""
    if file is None:
        if active is None:
            raise typer.BadParameter("Give --file policy.json (the whole policy), or --on / --off.")
        policy = call(lambda c: c.reminders.set_active(active))
    else:
        content = read_json(file)
        if not isinstance(content, dict):
            raise typer.BadParameter(f"{file} must hold a JSON object: the whole policy.")
        body = {name: value for name, value in content.items() if name not in POLICY_FILE_ONLY}
        if active is not None:
            body["active"] = active  # the option wins over the file
        if "active" not in body:
            raise typer.BadParameter(f"Say whether reminders are on: \"active\" in {file}, or --on / --off.")
        steps = body.pop("steps", [])
        if not isinstance(steps, list):
            raise typer.BadParameter(f"\"steps\" in {file} must be a JSON array of steps.")
        policy = call(lambda c: c.reminders.set_policy(steps=steps, **body))
    present(policy, as_json, show_policy)
    steps_said = f"{len(policy.steps)} step{'' if len(policy.steps) == 1 else 's'}"
    show.done(f"Reminders are on: {steps_said}." if policy.active else f"Reminders are off ({steps_said} kept).")


# --- webhooks -------------------------------------------------------------------------------------------

@webhooks_app.command("list", epilog=examples("invoicing-cli webhooks list"))
def webhooks_list(limit: Limit = 25, every: All = False, as_json: Json = False) -> None:
    """List webhook endpoints."""
    present_list(lambda c, size: c.webhook_endpoints.list(limit=size), WEBHOOK_COLUMNS, limit=limit, every=every,
                 as_json=as_json, noun="webhook endpoints")


@webhooks_app.command("create", epilog=examples(
    "invoicing-cli webhooks create --url https://books.example/hooks",
    "invoicing-cli webhooks create --url https://books.example/hooks --event invoice.paid --event invoice.voided"))
def webhooks_create(url: Annotated[str, typer.Option(help="An https URL on the public internet.")],
                    event: Annotated[list[str] | None, typer.Option(help="An event type, repeatable; default every "
                                                                        "event, future ones included.")] = None,
                    as_json: Json = False) -> None:
    """Add a webhook endpoint; its signing secret is shown this once."""
    endpoint = call(lambda c: c.webhook_endpoints.create(url=url, events=event or None))
    present(endpoint, as_json, show_webhook)
    show.done(f"Created {endpoint.id}. Keep the signing secret now: it is not shown again.")


@webhooks_app.command("delete", epilog=examples("invoicing-cli webhooks delete we_…"))
def webhooks_delete(id: Annotated[str, typer.Argument(help="The endpoint's id.")], as_json: Json = False) -> None:
    """Delete a webhook endpoint (deliveries stop at once)."""
    deleted = call(lambda c: c.webhook_endpoints.delete(id))
    if as_json or OPTIONS.json:
        show.print_json(deleted.to_dict())
    show.done(f"Deleted {id}.")


# --- e-invoices of a period -----------------------------------------------------------------------------

E_INVOICE_FORMATS = ("peppol", "cii", "facturx")


@e_invoices_app.command("export", epilog=examples(
    "invoicing-cli e-invoices export --from 2026-10-01 --to 2026-12-31",
    "invoicing-cli e-invoices export --from 2026-01-01 --to 2026-12-31 --format cii -o 2026-cii.zip"))
def e_invoices_export(
    from_: Annotated[str, typer.Option("--from", help="First issue date of the period (YYYY-MM-DD).")],
    to: Annotated[str, typer.Option("--to", help="Last issue date, included (YYYY-MM-DD); at most 366 days after "
                                                 "--from, counting both.")],
    format: Annotated[str, typer.Option(help="peppol (UBL XML), cii (XML) or facturx (PDF/A-3).")] = "peppol",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Default: the export's name here, such as "
                                                "e-invoices-2026-10-01-2026-12-31-peppol.zip.")] = None,
    force: Force = False, as_json: Json = False,
) -> None:
    """Save every invoice and credit note issued in a period as e-invoices in one ZIP, with manifest.csv.

    Finalized invoices (open, paid and void) and credit notes are in it, drafts never. A document EN 16931 would
    refuse is left out, named on stderr with what it lacks, and listed in the manifest. Needs `invoices:read`."""
    _one_of("--format", format, E_INVOICE_FORMATS)
    if output is not None:
        _writable(output, force)
    with client() as api:
        export = api.e_invoice_exports.create(period_start=from_, period_end=to, format=format)
        if output is None:
            output = Path(export.filename)
            _writable(output, force)
        document = api.e_invoice_exports.download(export.id)
    _save(output, document)
    if as_json or OPTIONS.json:
        show.print_json({"export": export.to_dict(), "path": str(output.resolve()), "bytes": len(document)})
    _report_export(export, output, len(document))


def _report_export(export: EInvoiceExport, output: Path, size: int) -> None:
    for skipped in export.skipped:
        show.say(f"Left out {skipped.number}: {skipped.detail}")
    shown = f"{size / 1024:.0f} KB" if size >= 1024 else f"{size} bytes"
    count = f"{export.documents} e-invoice{'' if export.documents == 1 else 's'}"
    show.done(f"Saved {count} ({export.format}, issued {export.period.start} to {export.period.end}) to {output} "
              f"({shown}){f', {len(export.skipped)} left out' if export.skipped else ''}.")


# --- members and invitations ----------------------------------------------------------------------------

ROLES = ("owner", "admin", "accountant", "sales", "viewer")
MEMBER_COLUMNS: list[show.Column] = [
    ("ID", lambda m: m.id), ("Name", lambda m: m.name), ("Email", lambda m: m.email), ("Role", lambda m: m.role),
    ("Joined", lambda m: show.when(m.joined_at))]
INVITATION_COLUMNS: list[show.Column] = [
    ("ID", lambda i: i.id), ("Email", lambda i: i.email), ("Role", lambda i: i.role), ("Status", lambda i: i.status),
    ("Sent", lambda i: show.when(i.sent_at)), ("Expires", lambda i: show.when(i.expires_at))]
MemberId = Annotated[str, typer.Argument(help="The member's id, mem_… (`invoicing-cli members list` shows them).")]
InvitationId = Annotated[str, typer.Argument(help="The invitation's id, invite_… (`invoicing-cli invitations list` "
                                                  "shows them).")]


def show_member(member: Member) -> None:
    show.fields(member, [("ID", lambda m: m.id), ("Name", lambda m: m.name), ("Email", lambda m: m.email),
                         ("Role", lambda m: m.role), ("Joined", lambda m: f"{show.when(m.joined_at)} UTC")])


def show_invitation(invitation: Invitation) -> None:
    utc = lambda value: value and f"{show.when(value)} UTC"  # noqa: E731
    show.fields(invitation, [
        ("ID", lambda i: i.id), ("Email", lambda i: i.email), ("Role", lambda i: i.role), ("Status", lambda i: i.status),
        ("Sent", lambda i: utc(i.sent_at)), ("Expires", lambda i: utc(i.expires_at)),
        ("Accepted", lambda i: utc(i.accepted_at)), ("Revoked", lambda i: utc(i.revoked_at))])


def present_all(fetch: Callable[[InvoicingClient], Pager[Any]], columns: list[show.Column], *, as_json: bool,
                noun: str) -> None:
    """Every object of a list the API answers whole (one page), as a table or a JSON array."""
    with client() as api:
        shown = fetch(api).to_list()
    if as_json or OPTIONS.json:
        show.print_json(show.as_json(shown))
    else:
        show.table(shown, columns, empty=f"No {noun}.")


@members_app.command("list", epilog=examples("invoicing-cli members list", "invoicing-cli members list --json"))
def members_list(as_json: Json = False) -> None:
    """List the members of the business, oldest first, with their roles."""
    present_all(lambda c: c.members.list(), MEMBER_COLUMNS, as_json=as_json, noun="members")


@members_app.command("role", epilog=examples("invoicing-cli members role mem_… accountant",
                                             "invoicing-cli members role mem_… admin --json"))
def members_role(id: MemberId,
                 role: Annotated[str, typer.Argument(help="The new role: owner, admin, accountant, sales or viewer.")],
                 as_json: Json = False) -> None:
    """Change a member's role; it bounds their keys and apps from their next request on.

    Only an owner gives or takes `owner`, and the last owner keeps it. Needs `members:manage`."""
    _one_of("ROLE", role, ROLES)
    member = call(lambda c: c.members.update(id, role=role))
    present(member, as_json, show_member)
    show.done(f"{member.email} ({member.id}) is now {member.role}.")


@members_app.command("remove", epilog=examples("invoicing-cli members remove mem_…"))
def members_remove(id: MemberId, as_json: Json = False) -> None:
    """Remove a member: their API keys for the business are revoked and the apps they connected to it disconnected.

    It takes effect at once. The last owner cannot be removed. Needs `members:manage`."""
    removed = call(lambda c: c.members.remove(id))
    if as_json or OPTIONS.json:
        show.print_json(removed.to_dict())
    show.done(f"Removed {removed.email} ({removed.id}) from the business.")


@members_app.command("transfer-ownership", epilog=examples("invoicing-cli members transfer-ownership mem_…"))
def members_transfer_ownership(id: MemberId, as_json: Json = False) -> None:
    """Hand ownership over (an owner only): the member becomes an owner, and you become an admin."""
    member = call(lambda c: c.members.transfer_ownership(id))
    present(member, as_json, show_member)
    show.done(f"{member.email} ({member.id}) is now an owner of the business, and you an admin.")


@invitations_app.command("list", epilog=examples("invoicing-cli invitations list",
                                                 "invoicing-cli invitations list --json"))
def invitations_list(as_json: Json = False) -> None:
    """List the invitations, newest first, with their status: pending, accepted, revoked or expired."""
    present_all(lambda c: c.invitations.list(), INVITATION_COLUMNS, as_json=as_json, noun="invitations")


@invitations_app.command("send", epilog=examples("invoicing-cli invitations send jane@example.com --role accountant",
                                                 "invoicing-cli invitations send sam@example.com --role viewer --json"))
def invitations_send(email: Annotated[str, typer.Argument(help="Who to invite: only a sign-in with this address "
                                                               "can accept.")],
                     role: Annotated[str, typer.Option(help="The role they get on accepting: owner, admin, "
                                                            "accountant, sales or viewer.")],
                     as_json: Json = False) -> None:
    """Invite someone to the business: they are e-mailed a link that works once, for 14 days.

    Only an owner invites an owner. Needs `members:manage`."""
    _one_of("--role", role, ROLES)
    invitation = call(lambda c: c.invitations.create(email=email, role=role))
    present(invitation, as_json, show_invitation)
    show.done(f"Invited {invitation.email} as {invitation.role} ({invitation.id}); the link works until "
              f"{show.when(invitation.expires_at)} UTC.")


@invitations_app.command("resend", epilog=examples("invoicing-cli invitations resend invite_…"))
def invitations_resend(id: InvitationId, as_json: Json = False) -> None:
    """E-mail an invitation again: a new link, good for 14 days from now (the earlier one stops working)."""
    invitation = call(lambda c: c.invitations.resend(id))
    present(invitation, as_json, show_invitation)
    show.done(f"Sent the invitation to {invitation.email} again; the new link works until "
              f"{show.when(invitation.expires_at)} UTC.")


@invitations_app.command("revoke", epilog=examples("invoicing-cli invitations revoke invite_…"))
def invitations_revoke(id: InvitationId, as_json: Json = False) -> None:
    """Revoke an invitation: its link stops working. An accepted one cannot be revoked."""
    invitation = call(lambda c: c.invitations.revoke(id))
    present(invitation, as_json, show_invitation)
    show.done(f"Revoked the invitation of {invitation.email} ({invitation.id}).")


# --- entry point ----------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> None:
    """Run the command line; errors are one message on stderr and an exit code, never a traceback."""
    command = typer.main.get_command(app)
    try:
        code = command.main(args=argv, prog_name="invoicing-cli", standalone_mode=False)
    except UsageProblem as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        show.say("Interrupted.")
        sys.exit(130)
    except APIConnectionError as exc:
        _report(exc)
        sys.exit(EXIT_UNREACHABLE)
    except cleartext.ClearTextRefused as exc:
        _report(exc)
        sys.exit(EXIT_USAGE)
    except InvoicingError as exc:
        _report(exc)
        sys.exit(EXIT_REFUSED)
    except Exception as exc:  # a fault of this tool: one line, the details on request
        if os.environ.get("INVOICING_CLI_DEBUG"):
            raise
        show.say(f"Unexpected error ({type(exc).__name__}: {exc}). This is a bug of invoicing-cli; "
                 "INVOICING_CLI_DEBUG=1 shows the details.")
        sys.exit(EXIT_REFUSED)
    sys.exit(code if isinstance(code, int) else 0)


def _report(exc: InvoicingError) -> None:
    label = f"Error ({exc.code})" if exc.code else "Error"
    show.err.print(f"[red]{escape(label)}:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
    remediation = getattr(exc, "remediation_url", None)
    if remediation:
        show.say(f"The person can raise the limit or do it themselves at {remediation}")
    elif getattr(exc, "by_role", False):
        show.say("Ask an owner or admin of the business for a role that allows it."
                 if exc.role else "Ask an owner of the business to invite you again.")
    elif getattr(exc, "required_scope", None):
        show.say("Use an API key with that scope (Settings → API keys)." if OPTIONS.api_key else
                 "Sign in again with `invoicing-cli login` and tick that permission on the consent page.")


if __name__ == "__main__":
    main()
