"""`invoicing-cli` as people and scripts run it: a real process against a live server, with its JSON
and table output, exit codes and messages, `--help` with examples everywhere, and `login
--no-browser` through the real consent page (`--business` pre-selecting one), refresh and `logout`."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from tests.conftest import second_business
from tests.e2e.conftest import free_port, wait_for
from tests.members import join
from tests.oauth_flow import csrf_token, form_action, sign_in, ticked_scopes

pytestmark = pytest.mark.e2e

CLI = shutil.which("invoicing-cli", path=str(Path(sys.executable).parent)) or "invoicing-cli"
TIMEOUT = 60


@pytest.fixture
def home(tmp_path) -> Path:
    return tmp_path


@pytest.fixture
def env(origin, account, home) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("INVOICING_")}
    return {**clean, "INVOICING_BASE_URL": origin, "INVOICING_API_KEY": account.key, "XDG_CONFIG_HOME": str(home / "config"),
            "COLUMNS": "200"}


@pytest.fixture
def cli(env, home):
    def run(*args: str, environment: dict[str, str] | None = None, stdin: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([CLI, *args], env=environment or env, cwd=home, input=stdin, capture_output=True,
                              text=True, timeout=TIMEOUT)
    return run


def data(result: subprocess.CompletedProcess):
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def refused(result: subprocess.CompletedProcess, exit_code: int = 1) -> str:
    assert result.returncode == exit_code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    return result.stderr


def customer(cli) -> str:
    return data(cli("customers", "create", "--name", "Globex Corp", "--email", "ap@globex.example", "--json"))["id"]


# --- people and scripts -------------------------------------------------------------------------------

def test_json_is_the_apis_objects(cli):
    made = data(cli("customers", "create", "--name", "Globex Corp", "--email", "ap@globex.example",
                    "--city", "Springfield", "--country", "US", "--json"))
    assert made["object"] == "customer" and made["address"]["city"] == "Springfield"
    assert [c["id"] for c in data(cli("customers", "list", "--json"))] == [made["id"]]
    assert data(cli("--json", "customers", "get", made["id"]))["created"] == made["created"]


def test_tables_are_for_people(cli):
    made = customer(cli)
    listed = cli("customers", "list")
    assert listed.returncode == 0 and "ID" in listed.stdout and made in listed.stdout and "Globex Corp" in listed.stdout
    shown = cli("customers", "get", made)
    assert re.search(r"Email\s+ap@globex.example", shown.stdout)


def test_from_draft_to_pdf(cli, home):
    draft = data(cli("invoices", "create", "--customer", customer(cli), "--item", "Design:2x80000",
                     "--item", "Hosting:1500", "--days-until-due", "14", "--json"))
    assert draft["status"] == "draft" and draft["total"] == 161500
    assert [line["quantity"] for line in draft["lines"]["data"]] == [2, 1]
    final = cli("invoices", "finalize", draft["id"])
    assert final.returncode == 0 and "Finalized INV-" in final.stderr and "1,615.00" in final.stderr
    saved = cli("invoices", "pdf", draft["id"], "--output", "out.pdf")
    assert saved.returncode == 0 and "Saved the PDF to out.pdf" in saved.stderr
    assert (home / "out.pdf").read_bytes().startswith(b"%PDF-")
    assert "exists" in refused(cli("invoices", "pdf", draft["id"], "--output", "out.pdf"), 2)
    number = data(cli("invoices", "get", draft["id"], "--json"))["number"]
    assert cli("invoices", "pdf", draft["id"]).returncode == 0 and (home / f"{number}.pdf").exists()
    kinds = [e["type"] for e in data(cli("invoices", "events", draft["id"], "--json"))]
    assert kinds[-2:] == ["invoice.finalized", "invoice.created"]


def test_send_pay_and_void(cli, mailbox):
    who = customer(cli)
    first = data(cli("invoices", "create", "--customer", who, "--item", "Design:80000", "--json"))["id"]
    sent = cli("invoices", "send", first, "--message", "Thank you")
    assert sent.returncode == 0 and "Sent INV-" in sent.stderr and "ap@globex.example" in sent.stderr
    wait_for(lambda: mailbox[0].received)
    assert data(cli("invoices", "pay", first, "--reference", "BACS 7", "--json"))["status"] == "paid"
    second = data(cli("invoices", "create", "--customer", who, "--item", "Design:80000", "--json"))["id"]
    cli("invoices", "finalize", second)
    assert data(cli("invoices", "void", second, "--reason", "Twice", "--json"))["void_reason"] == "Twice"
    assert [i["id"] for i in data(cli("invoices", "list", "--status", "void", "--json"))] == [second]


def test_lines_from_a_json_file_and_a_preview_that_creates_nothing(cli, home):
    (home / "lines.json").write_text(json.dumps([{"description": "Design", "quantity": 1.5, "unit_amount": 1000}]))
    who = customer(cli)
    preview = data(cli("invoices", "create", "--customer", who, "--file", "lines.json", "--preview", "--json"))
    assert preview["id"] is None and preview["total"] == 1500
    assert data(cli("invoices", "list", "--json")) == []
    (home / "invoice.json").write_text(json.dumps({"customer": who, "items": [{"description": "A", "unit_amount": 1}]}))
    assert data(cli("invoices", "create", "--file", "invoice.json", "--json"))["total"] == 1
    assert data(cli("invoices", "create", "--customer", who, "--file", "-", "--json",
                    stdin='[{"description": "B", "unit_amount": 2}]'))["total"] == 2


def open_invoice(cli, who: str | None = None) -> dict:
    """A finalized invoice with its lines: Design 2 × 800.00 and Hosting 15.00 (1,615.00)."""
    draft = data(cli("invoices", "create", "--customer", who or customer(cli), "--item", "Design:2x80000",
                     "--item", "Hosting:1500", "--json"))
    cli("invoices", "finalize", draft["id"])
    return data(cli("invoices", "get", draft["id"], "--json"))


def test_a_credit_note_from_preview_to_void(cli, home):
    invoice = open_invoice(cli)
    design = invoice["lines"]["data"][0]["id"]
    asked = ("--invoice", invoice["id"], "--line", f"{design}:1", "--reason", "order_change", "--memo", "One day less")
    preview = data(cli("credit-notes", "preview", *asked, "--json"))
    assert (preview["id"], preview["number"], preview["total"]) == (None, None, 80000)
    assert data(cli("credit-notes", "create", *asked, "--preview", "--json"))["total"] == 80000
    assert "A preview: nothing was issued" in cli("credit-notes", "preview", *asked).stderr
    assert data(cli("credit-notes", "list", "--json")) == []

    made = cli("credit-notes", "create", *asked, "--json")
    note = data(made)
    assert note["number"] == "CN-0001" and note["lines"]["data"][0]["invoice_line"] == design
    assert f"Issued CN-0001 (800.00 USD) on {invoice['number']}" in made.stderr
    listed = cli("credit-notes", "list")
    assert note["id"] in listed.stdout and "CN-0001" in listed.stdout and "800.00 USD" in listed.stdout
    assert [n["id"] for n in data(cli("credit-notes", "list", "--invoice", invoice["id"], "--json"))] == [note["id"]]
    shown = cli("credit-notes", "show", note["id"]).stdout
    assert re.search(r"Credited\s+800.00 USD off what is due", shown) and "order_change" in shown and "Design" in shown
    assert "Refunded" not in shown and "To balance" not in shown  # nothing went there
    assert data(cli("credit-notes", "get", note["id"], "--json")) == note

    credited = cli("invoices", "get", invoice["id"]).stdout
    assert re.search(r"Credited\s+800.00 USD", credited) and re.search(r"Amount due\s+815.00 USD", credited)
    assert design in credited  # the line ids a --line names

    saved = cli("credit-notes", "pdf", note["id"])
    assert saved.returncode == 0 and (home / "CN-0001.pdf").read_bytes().startswith(b"%PDF-")
    assert "exists" in refused(cli("credit-notes", "pdf", note["id"]), 2)

    voided = cli("credit-notes", "void", note["id"], "--json")
    assert data(voided)["status"] == "void" and "Voided CN-0001" in voided.stderr
    assert "Error (invalid_state)" in refused(cli("credit-notes", "void", note["id"]))
    assert data(cli("invoices", "get", invoice["id"], "--json"))["amount_due"] == invoice["total"]


def test_a_paid_invoice_refunded_and_to_balance_with_lines_of_its_own(cli, home):
    invoice = open_invoice(cli)
    cli("invoices", "pay", invoice["id"])
    (home / "credit.json").write_text(json.dumps([{"description": "Goodwill", "amount": 700, "tax_rate": 0}]))
    made = cli("credit-notes", "create", "--invoice", invoice["id"], "--file", "credit.json", "--line", "Extra:100@0",
               "--refund-amount", "500", "--refund-reference", "SEPA-RET-77", "--refunded-on", "2026-11-20",
               "--balance-amount", "300", "--json")
    note = data(made)
    assert [(line["type"], line["amount"], line["tax_amount"]) for line in note["lines"]["data"]] == \
        [("custom", 700, 0), ("custom", 100, 0)]
    assert note["refund"] == {"reference": "SEPA-RET-77", "refunded_on": "2026-11-20"} and note["balance_amount"] == 300
    shown = cli("credit-notes", "show", note["id"]).stdout
    assert re.search(r"Refunded\s+5.00 USD SEPA-RET-77 on 2026-11-20", shown)
    assert re.search(r"To balance\s+3.00 USD to the customer's credit \(3.00 USD not yet applied\)", shown)
    (home / "whole.json").write_text(json.dumps({"invoice": invoice["id"], "lines": [{"description": "A", "amount": 1}],
                                                 "balance_amount": 1}))
    assert data(cli("credit-notes", "create", "--file", "whole.json", "--json"))["number"] == "CN-0002"
    # A paid invoice has nothing due to take a credit off: only refund and balance.
    refusal = refused(cli("credit-notes", "create", "--invoice", invoice["id"], "--line", "B:1", "--credit-amount", "1"))
    assert "Error (validation)" in refusal and "credit_amount" in refusal


def test_a_credit_note_sent_and_saved_as_an_e_invoice(cli, home, mailbox):
    buyer = data(cli("customers", "create", "--name", "Northwind Ltd", "--email", "ap@northwind.example",
                     "--tax-id", "GB987654321", "--country", "GB", "--json"))["id"]
    note = data(cli("credit-notes", "create", "--invoice", open_invoice(cli, buyer)["id"], "--json"))
    sent = cli("credit-notes", "send", note["id"], "--message", "As agreed")
    assert sent.returncode == 0 and "Sent CN-0001 to ap@northwind.example" in sent.stderr
    wait_for(lambda: mailbox[0].received)
    saved = cli("credit-notes", "e-invoice", note["id"], "--format", "cii")
    assert saved.returncode == 0 and (home / "CN-0001-cii.xml").read_bytes().startswith(b"<?xml")
    assert data(cli("credit-notes", "e-invoice", note["id"], "-o", "cn.xml", "--json"))["format"] == "peppol"


@pytest.mark.parametrize(("args", "message"), [
    (("--invoice", "in_x", "--line", "Goodwill:7.00"), "800.00 is 80000"),
    (("--invoice", "in_x", "--line", "ii_x:0"), "must be above 0"),
    (("--invoice", "in_x", "--line", "Goodwill:700@120"), "0 to 100"),
    (("--invoice", "in_x", "--reason", "changed_mind"), "--reason is one of"),
    (("--line", "Goodwill:700",), "Name the invoice"),
])
def test_credit_note_options_that_cannot_be_sent_exit_2(cli, args, message):
    assert message in refused(cli("credit-notes", "create", *args), 2)


def test_payments_recorded_in_part_listed_shown_and_reversed(cli):
    invoice = open_invoice(cli)  # 1,615.00 USD
    made = cli("payments", "record", "--invoice", invoice["id"], "--amount", "61500", "--method", "bank_transfer",
               "--reference", "BACS 7", "--paid-on", "2026-11-20", "--note", "First instalment")
    assert made.returncode == 0, made.stderr
    assert f"Recorded 615.00 USD on {invoice['number']} (py_" in made.stderr and "1,000.00 USD still due" in made.stderr
    assert re.search(rf"Applied\s+615.00 USD off what {invoice['number']} had due", made.stdout)
    assert re.search(r"Paid on\s+2026-11-20", made.stdout) and re.search(r"Method\s+bank_transfer", made.stdout)
    [first] = data(cli("payments", "list", "--json"))
    assert (first["amount"], first["reference"], first["note"], first["status"]) == (61500, "BACS 7", "First instalment",
                                                                                     "recorded")
    listed = cli("payments", "list", "--invoice", invoice["id"]).stdout
    assert first["id"] in listed and "615.00 USD" in listed and "bank_transfer" in listed and "2026-11-20" in listed
    assert data(cli("payments", "get", first["id"], "--json")) == first
    shown = cli("invoices", "get", invoice["id"]).stdout
    assert re.search(r"Paid\s+615.00 USD", shown) and re.search(r"Amount due\s+1,000.00 USD", shown)

    rest = cli("payments", "record", "--invoice", invoice["id"], "--amount", "100000", "--json")
    assert data(rest)["amount_applied"] == 100000 and f"{invoice['number']} is paid." in rest.stderr
    assert data(cli("invoices", "get", invoice["id"], "--json"))["status"] == "paid"
    reversed_ = cli("payments", "reverse", data(rest)["id"], "--reason", "The transfer bounced")
    assert reversed_.returncode == 0 and re.search(r"Reversed\s+\S+ \S+: The transfer bounced", reversed_.stdout)
    assert f"1,000.00 USD is due again on {invoice['number']}" in reversed_.stderr
    assert data(cli("invoices", "get", invoice["id"], "--json"))["amount_due"] == 100000
    assert [p["status"] for p in data(cli("payments", "list", "--customer", invoice["customer"], "--json"))] == \
        ["reversed", "recorded"]
    assert "Error (invalid_state)" in refused(cli("payments", "reverse", data(rest)["id"], "--reason", "Again"))


def test_an_overpayment_is_refused_unless_it_goes_to_the_balance(cli):
    invoice = open_invoice(cli)
    refusal = refused(cli("payments", "record", "--invoice", invoice["id"], "--amount", "161501"))
    assert "Error (validation)" in refusal and "amount" in refusal and "overpayment" in refusal
    over = cli("payments", "record", "--invoice", invoice["id"], "--amount", "161600", "--overpayment", "balance")
    assert over.returncode == 0 and "1.00 USD beyond what was due went to the customer's credit balance" in over.stderr
    assert re.search(r"To balance\s+1.00 USD to the customer's credit \(1.00 USD not yet applied\)", over.stdout)


@pytest.mark.parametrize(("args", "message"), [
    (("--amount", "615.00"), "800.00 is 80000"),
    (("--amount", "0"), "must be above 0"),
    (("--amount", "100", "--method", "wire"), "--method is one of"),
    (("--amount", "100", "--overpayment", "keep"), "--overpayment is one of"),
    ((), "Missing option '--amount'"),
])
def test_payment_options_that_cannot_be_sent_exit_2(cli, args, message):
    assert message in refused(cli("payments", "record", "--invoice", "in_x", *args), 2)


def test_receivables_as_a_table_and_as_json(cli):
    assert "Nothing is owed" in cli("receivables").stdout
    globex = customer(cli)
    initech = data(cli("customers", "create", "--name", "Initech", "--json"))["id"]
    today = datetime.now(UTC).date()

    def owed(who: str, item: str, days_past_due: int, *currency: str) -> str:
        due = today - timedelta(days=days_past_due)
        made = data(cli("invoices", "create", "--customer", who, "--item", item, "--issue-date",
                        min(due, today).isoformat(), "--due-date", due.isoformat(), *currency, "--json"))
        cli("invoices", "finalize", made["id"])
        return made["id"]
    owed(globex, "Design:10000", -5)
    late = owed(globex, "Design:20000", 10)
    cli("payments", "record", "--invoice", late, "--amount", "5000")
    owed(initech, "Design:40000", 45)
    owed(initech, "Design:700", 100, "--currency", "EUR")

    shown = cli("receivables")
    assert shown.returncode == 0, shown.stderr
    assert f"Owed on open invoices on {today.isoformat()}" in shown.stdout
    table = re.sub(r"[│┃]", " ", shown.stdout)  # the cells, without the tables' rules
    assert re.search(r"\s+EUR\s+USD", table)  # a column per currency, by code
    assert re.search(r"Outstanding\s+7.00 \(1\)\s+650.00 \(3\)", table)
    assert re.search(r"Overdue\s+7.00 \(1\)\s+550.00 \(2\)", table)
    assert re.search(r"Current\s+–\s+100.00 \(1\)", table) and re.search(r"1–30 days\s+–\s+150.00 \(1\)", table)
    assert re.search(r"31–60 days\s+–\s+400.00 \(1\)", table) and re.search(r"Over 90 days\s+7.00 \(1\)\s+–", table)
    rows = [line for line in table.splitlines() if initech in line or globex in line]
    assert [row.split()[0] for row in rows] == ["Initech", "Globex", "Initech"]  # owing most first
    assert re.search(rf"Globex Corp\s+{globex}\s+USD\s+250.00 \(2\)\s+150.00 \(1\)\s+100.00 \(1\)\s+150.00 \(1\)",
                     rows[1])

    answer = data(cli("receivables", "--json"))
    assert answer["object"] == "receivables" and answer["as_of"] == today.isoformat() and "next_cursor" not in answer
    assert [row["currency"] for row in answer["currencies"]] == ["EUR", "USD"]
    assert [(row["name"], row["outstanding"]) for row in answer["customers"]] == \
        [("Initech", 40000), ("Globex Corp", 25000), ("Initech", 700)]
    limited = cli("receivables", "--limit", "1")
    assert "Globex" not in limited.stdout and "--all" in limited.stderr
    assert len(data(cli("receivables", "--limit", "2", "--all", "--json"))["customers"]) == 3
    eur = data(cli("receivables", "--currency", "eur", "--json"))
    assert [row["currency"] for row in eur["currencies"]] == ["EUR"] and [row["customer"] for row in eur["customers"]] \
        == [initech]


def first_of_a_later_month(months: int = 2) -> str:
    """The 1st of a month at least a month away (YYYY-MM-DD): no run of the live worker falls due."""
    today = datetime.now(UTC).date()
    month = today.month - 1 + months
    return today.replace(year=today.year + month // 12, month=month % 12 + 1, day=1).isoformat()


def test_a_schedule_created_shown_paused_resumed_run_and_cancelled(cli):
    who, start = customer(cli), first_of_a_later_month()
    made = cli("schedules", "create", "--customer", who, "--item", "Retainer:250000", "--item", "Hosting:2x1500",
               "--currency", "EUR", "--start", start, "--count", "3", "--day", "1", "--time-zone", "Europe/Berlin",
               "--run-at", "09:30", "--days-until-due", "14")
    assert made.returncode == 0, made.stderr
    schedule_id = re.search(r"Created (sched_\w+): on the 1st of every month", made.stderr).group(1)
    assert f"from {start}, 3 times. The first run: {start}" in made.stderr
    assert re.search(rf"Runs\s+on the 1st of every month, from {start}, 3 times, at 09:30 Europe/Berlin", made.stdout)
    assert re.search(r"Mode\s+draft", made.stdout) and re.search(r"Due\s+14 days after issue", made.stdout)
    lines = re.sub(r"[│┃]", " ", made.stdout)  # the cells, without the table's rules
    assert re.search(r"Retainer\s+1\s+2,500.00 EUR", lines) and re.search(r"Remaining\s+3", made.stdout)

    schedule = data(cli("schedules", "get", schedule_id, "--json"))
    assert (schedule["object"], schedule["status"], schedule["customer"], schedule["time_zone"]) == \
        ("invoice_schedule", "active", who, "Europe/Berlin")
    assert schedule["recurrence"] == {"interval": "month", "interval_count": 1, "day_of_month": 1, "start_date": start,
                                      "end_date": None, "count": 3, "run_at": "09:30"}
    # The API's JSON as it came: the lines' quantities are sent as strings ("2"), the model reads Decimals.
    assert [(i["description"], Decimal(str(i["quantity"])), i["unit_amount"]) for i in schedule["invoice"]["items"]] \
        == [("Retainer", 1, 250000), ("Hosting", 2, 1500)]
    assert [s["id"] for s in data(cli("schedules", "list", "--json"))] == [schedule_id]
    listed = cli("schedules", "list", "--customer", who).stdout
    assert schedule_id in listed and "active" in listed and "on the 1st of every month" in listed

    paused = cli("schedules", "pause", schedule_id, "--reason", "Client away")
    assert paused.returncode == 0 and re.search(r"Status\s+paused", paused.stdout) and "Client away" in paused.stdout
    assert f"Paused {schedule_id}" in paused.stderr
    assert [s["id"] for s in data(cli("schedules", "list", "--status", "paused", "--json"))] == [schedule_id]
    assert "Error (invalid_state)" in refused(cli("schedules", "run", schedule_id))
    resumed = data(cli("schedules", "resume", schedule_id, "--skip-missed", "--json"))
    assert resumed["status"] == "active" and resumed["next_period"]["start"] == start

    ran = cli("schedules", "run", schedule_id)
    assert ran.returncode == 0, ran.stderr
    invoice_id = re.search(r"Made (in_\w+) for " + start, ran.stderr).group(1)
    assert re.search(rf"Invoice\s+{invoice_id}", ran.stdout) and re.search(r"Status\s+invoiced", ran.stdout)
    invoice = data(cli("invoices", "get", invoice_id, "--json"))
    assert (invoice["schedule"], invoice["period"]["start"], invoice["status"], invoice["total"]) == \
        (schedule_id, start, "draft", 253000)
    [run] = data(cli("schedules", "runs", schedule_id, "--json"))
    assert (run["object"], run["invoice"], run["status"], run["period_index"]) == ("schedule_run", invoice_id,
                                                                                   "invoiced", 0)
    runs = cli("schedules", "runs", schedule_id).stdout
    assert run["id"] in runs and invoice_id in runs and f"{start} – " in runs
    assert data(cli("schedules", "run", schedule_id, "--json"))["period_index"] == 1

    cancelled = cli("schedules", "cancel", schedule_id)
    assert cancelled.returncode == 0 and f"Cancelled {schedule_id} (2 invoices made)" in cancelled.stderr
    assert re.search(r"Status\s+cancelled", cancelled.stdout)
    assert "Error (invalid_state)" in refused(cli("schedules", "cancel", schedule_id))


def test_a_weekly_schedule_by_price_in_finalize_mode(cli):
    product = data(cli("products", "create", "--name", "Support", "--json"))
    price = data(cli("prices", "create", "--product", product["id"], "--unit-amount", "5000", "--currency", "EUR",
                     "--json"))
    start = first_of_a_later_month()
    schedule = data(cli("schedules", "create", "--customer", customer(cli), "--item", f"{price['id']}:2",
                        "--interval", "week", "--every", "2", "--start", start, "--end", first_of_a_later_month(4),
                        "--mode", "finalize", "--currency", "EUR", "--json"))
    assert (schedule["recurrence"]["interval"], schedule["recurrence"]["interval_count"], schedule["mode"]) == \
        ("week", 2, "finalize")
    assert schedule["recurrence"]["end_date"] == first_of_a_later_month(4) and schedule["periods_remaining"] is None
    [line] = schedule["invoice"]["items"]
    assert (line["price"], Decimal(str(line["quantity"]))) == (price["id"], 2)
    run = data(cli("schedules", "run", schedule["id"], "--json"))
    invoice = data(cli("invoices", "get", run["invoice"], "--json"))
    assert (invoice["status"], invoice["total"], invoice["currency"]) == ("open", 10000, "EUR")


def test_a_schedule_from_a_file_with_the_options_winning(cli, home):
    (home / "schedule.json").write_text(json.dumps({
        "customer": customer(cli), "invoice": {"items": [{"description": "Retainer", "unit_amount": 100}],
                                               "currency": "EUR"},
        "recurrence": {"interval": "quarter", "start_date": first_of_a_later_month()}, "mode": "finalize"}))
    schedule = data(cli("schedules", "create", "--file", "schedule.json", "--mode", "draft", "--day", "last", "--json"))
    assert (schedule["recurrence"]["interval"], schedule["recurrence"]["day_of_month"], schedule["mode"]) == \
        ("quarter", "last", "draft")


def test_an_invalid_schedule_is_refused_at_its_fields(cli):
    who = customer(cli)
    refusal = refused(cli("schedules", "create", "--customer", who, "--item", "Retainer:100", "--start", "2020-01-01",
                          "--time-zone", "Mars/Olympus"))
    assert "Error (validation)" in refusal and "time_zone" in refusal
    refusal = refused(cli("schedules", "create", "--customer", who, "--item", "Retainer:100", "--start",
                          first_of_a_later_month(), "--run-at", "25:00"))
    assert "Error (validation)" in refusal and "recurrence.run_at" in refusal
    assert "Error (not_found)" in refused(cli("schedules", "get", "sched_" + "0" * 32))


@pytest.mark.parametrize(("args", "message"), [
    (("--item", "Retainer:100", "--start", "2027-01-01"), "Name the customer"),
    (("--customer", "cus_x", "--start", "2027-01-01"), "Give the invoice's lines"),
    (("--customer", "cus_x", "--item", "Retainer:100"), "Say when it starts"),
    (("--customer", "cus_x", "--item", "Retainer:1.00", "--start", "2027-01-01"), "800.00 is 80000"),
    (("--customer", "cus_x", "--item", "Retainer:100", "--start", "2027-01-01", "--interval", "day"),
     "--interval is one of"),
    (("--customer", "cus_x", "--item", "Retainer:100", "--start", "2027-01-01", "--mode", "send"), "--mode is one of"),
    (("--customer", "cus_x", "--item", "Retainer:100", "--start", "2027-01-01", "--day", "32"), "--day is a day"),
    (("--customer", "cus_x", "--item", "Retainer:100", "--start", "2027-01-01", "--every", "0"), "--every"),
])
def test_schedule_options_that_cannot_be_sent_exit_2(cli, args, message):
    assert message in refused(cli("schedules", "create", *args), 2)


# --- payment reminders ----------------------------------------------------------------------------------

def reminder_step(days: int, **fields) -> dict:
    return {"days": days, "subject": f"Step {days}: invoice {{number}}",
            "body": "Hello {customer},\n{amount_due} was due on {due_date}.\n{link}", **fields}


def test_the_reminder_policy_shown_set_from_a_file_and_turned_off_and_on(cli, home):
    shown = cli("reminders", "policy")
    assert shown.returncode == 0, shown.stderr
    assert re.search(r"Reminders\s+off", shown.stdout) and "never (the default steps, off)" in shown.stdout
    assert "3 days before the due date" in shown.stdout and "7 days after" in shown.stdout
    assert "30 days after" in shown.stdout and "Invoice {number} is overdue" in shown.stdout
    defaults = data(cli("reminders", "policy", "--json"))
    assert (defaults["object"], defaults["active"], defaults["updated"]) == ("reminder_policy", False, None)
    assert [step["days"] for step in defaults["steps"]] == [-3, 7, 30]

    # What `policy --json` printed, edited, is a file `set` takes (its object and updated left aside).
    edited = {**defaults, "steps": [reminder_step(-1), reminder_step(14, late_fee=True)],
              "late_fee": {"kind": "statutory"}, "reference_rate": "2.15"}
    (home / "policy.json").write_text(json.dumps(edited))
    made = cli("reminders", "set", "--file", "policy.json", "--on")
    assert made.returncode == 0, made.stderr
    assert "Reminders are on: 2 steps." in made.stderr
    assert re.search(r"Reminders\s+on", made.stdout) and re.search(r"Reference rate\s+2.15 % a year", made.stdout)
    assert re.search(r"Late fee\s+statutory", made.stdout)
    assert "1 day before the due date" in made.stdout and "14 days after" in made.stdout
    assert "Hello {customer}, {amount_due} was due" in made.stdout  # a step's text on one line
    policy = data(cli("reminders", "policy", "--json"))
    assert policy["active"] is True and policy["updated"]
    assert [(step["days"], step["late_fee"]) for step in policy["steps"]] == [(-1, False), (14, True)]
    assert (policy["late_fee"]["kind"], Decimal(str(policy["reference_rate"]))) == ("statutory", Decimal("2.15"))

    off = cli("reminders", "set", "--off", "--json")
    assert off.returncode == 0 and "Reminders are off (2 steps kept)." in off.stderr
    turned_off = json.loads(off.stdout)
    assert turned_off["active"] is False
    assert (turned_off["steps"], turned_off["late_fee"]) == (policy["steps"], policy["late_fee"])
    assert Decimal(str(turned_off["reference_rate"])) == Decimal("2.15")
    assert data(cli("reminders", "set", "--on", "--json"))["active"] is True

    fixed = {"active": False, "steps": [reminder_step(7, late_fee=True)], "late_fee": {"kind": "fixed", "amount": 2500}}
    replaced = data(cli("reminders", "set", "--file", "-", "--json", stdin=json.dumps(fixed)))
    assert (replaced["active"], replaced["late_fee"], replaced["reference_rate"]) == \
        (False, {"kind": "fixed", "amount": 2500}, None)
    assert re.search(r"Late fee\s+fixed: 2500 in minor units", cli("reminders", "policy").stdout)


def test_an_invalid_policy_is_refused_at_its_field(cli, home):
    (home / "policy.json").write_text(json.dumps({"active": True, "steps": [reminder_step(7, body="Pay {foo} now")]}))
    refusal = refused(cli("reminders", "set", "--file", "policy.json"))
    assert "Error (validation)" in refusal and "steps.0.body" in refusal and "{foo}" in refusal
    assert data(cli("reminders", "policy", "--json"))["updated"] is None  # nothing changed


@pytest.mark.parametrize(("content", "args", "message"), [
    (None, (), "Give --file policy.json"),
    ([], ("--file", "policy.json"), "must hold a JSON object"),
    ({"steps": []}, ("--file", "policy.json"), "Say whether reminders are on"),
    ({"active": True, "steps": {"days": 7}}, ("--file", "policy.json"), "must be a JSON array"),
    (None, ("--file", "missing.json"), "Cannot read missing.json"),
])
def test_reminder_options_that_cannot_be_sent_exit_2(cli, home, content, args, message):
    if content is not None:
        (home / "policy.json").write_text(json.dumps(content))
    assert message in refused(cli("reminders", "set", *args), 2)


def test_an_invoice_reminded_now_and_its_reminders_paused_and_resumed(cli):
    who = customer(cli)
    draft = data(cli("invoices", "create", "--customer", who, "--item", "Design:80000", "--json"))["id"]
    assert "Error (invalid_state)" in refused(cli("invoices", "remind", draft))  # a draft is never reminded
    invoice = data(cli("invoices", "finalize", draft, "--json"))

    reminded = cli("invoices", "remind", draft, "--message", "Any news on this one?")
    assert reminded.returncode == 0, reminded.stderr
    assert f"Reminded Globex Corp of {invoice['number']} (800.00 USD due) at ap@globex.example." in reminded.stderr
    assert re.search(r"Status\s+open", reminded.stdout)
    answer = data(cli("invoices", "remind", draft, "--json"))
    assert (answer["id"], answer["emailed_to"]) == (draft, "ap@globex.example")
    events = [e["type"] for e in data(cli("invoices", "events", draft, "--json"))]
    assert events.count("invoice.reminder_sent") == 2

    paused = cli("invoices", "pause-reminders", draft)
    assert paused.returncode == 0, paused.stderr
    assert re.search(r"Reminders\s+paused", paused.stdout)
    assert f"Paused the reminders of {invoice['number']}. Resume them with: invoicing-cli invoices " \
           f"resume-reminders {draft}" in paused.stderr
    assert data(cli("invoices", "get", draft, "--json"))["reminders_paused"] is True
    resumed = cli("invoices", "resume-reminders", draft, "--json")
    assert resumed.returncode == 0 and json.loads(resumed.stdout)["reminders_paused"] is False
    assert f"Resumed the reminders of {invoice['number']}." in resumed.stderr
    assert "Reminders" not in cli("invoices", "get", draft).stdout
    assert "Error (not_found)" in refused(cli("invoices", "pause-reminders", "in_" + "0" * 32))


def test_catalog_commands(cli):
    product = data(cli("products", "create", "--name", "Design day", "--json"))
    price = data(cli("prices", "create", "--product", product["id"], "--unit-amount", "80000", "--currency", "EUR",
                     "--json"))
    assert price["unit_amount"] == 80000
    assert "800.00 EUR" in cli("prices", "list", "--product", product["id"]).stdout
    assert data(cli("customers", "update", customer(cli), "--email", "new@globex.example", "--json"))["email"] == \
        "new@globex.example"
    assert data(cli("products", "archive", product["id"], "--json"))["active"] is False
    assert data(cli("products", "list", "--inactive", "--json"))[0]["id"] == product["id"]


def test_webhook_endpoints(cli, hooks):
    made = data(cli("webhooks", "create", "--url", hooks.url, "--event", "invoice.paid", "--json"))
    assert made["secret"].startswith("whsec_") and made["events"] == ["invoice.paid"]
    assert [w["id"] for w in data(cli("webhooks", "list", "--json"))] == [made["id"]]
    assert data(cli("webhooks", "delete", made["id"], "--json"))["deleted"] is True


def test_a_limit_shows_the_newest_and_says_there_are_more(cli):
    for n in range(3):
        cli("customers", "create", "--name", f"Customer {n}")
    shown = cli("customers", "list", "--limit", "2")
    assert "Customer 2" in shown.stdout and "Customer 0" not in shown.stdout and "--all" in shown.stderr
    assert len(data(cli("customers", "list", "--all", "--json"))) == 3


# --- members and invitations ----------------------------------------------------------------------------

def member_id(cli, email: str) -> str:
    return next(m["id"] for m in data(cli("members", "list", "--json")) if m["email"] == email)


def test_members_listed_as_json_and_as_a_table(cli, account):
    accountant = join(account, "accountant")
    listed = data(cli("members", "list", "--json"))
    assert [(m["object"], m["email"], m["role"]) for m in listed] == [
        ("member", account.user_email, "owner"), ("member", accountant.user_email, "accountant")]
    assert all(m["id"].startswith("mem_") for m in listed)
    table = cli("members", "list")
    assert table.returncode == 0 and "Role" in table.stdout and listed[1]["id"] in table.stdout
    assert re.search(rf"{listed[1]['id']}.*accountant", table.stdout)


def test_a_role_changed_ownership_handed_over_and_a_member_removed(cli, account):
    sales = join(account, "sales")
    changed = cli("members", "role", member_id(cli, sales.user_email), "admin", "--json")
    assert data(changed)["role"] == "admin" and f"{sales.user_email}" in changed.stderr
    assert "ROLE is one of owner, admin" in refused(cli("members", "role", member_id(cli, sales.user_email), "boss"), 2)
    removed = cli("members", "remove", member_id(cli, sales.user_email), "--json")
    assert data(removed)["deleted"] is True and f"Removed {sales.user_email}" in removed.stderr
    assert [m["email"] for m in data(cli("members", "list", "--json"))] == [account.user_email]
    admin = join(account, "admin")
    handed = cli("members", "transfer-ownership", member_id(cli, admin.user_email))
    assert handed.returncode == 0 and "is now an owner" in handed.stderr and re.search(r"Role\s+owner", handed.stdout)
    assert {m["email"]: m["role"] for m in data(cli("members", "list", "--json"))} == {
        account.user_email: "admin", admin.user_email: "owner"}


def test_an_invitation_sent_listed_pending_resent_and_revoked(cli, mailbox):
    sent = cli("invitations", "send", "jane@example.com", "--role", "accountant", "--json")
    invitation = data(sent)
    assert invitation["id"].startswith("invite_") and (invitation["role"], invitation["status"]) == ("accountant",
                                                                                                      "pending")
    assert "Invited jane@example.com as accountant" in sent.stderr
    wait_for(lambda: any("jane@example.com" in mail.rcpt_tos for mail in mailbox[0].received))
    assert [(i["id"], i["status"]) for i in data(cli("invitations", "list", "--json"))] == [(invitation["id"], "pending")]
    table = cli("invitations", "list")
    assert table.returncode == 0 and re.search(rf"{invitation['id']}[\s│]+jane@example.com[\s│]+accountant[\s│]+pending",
                                               table.stdout)
    resent = cli("invitations", "resend", invitation["id"])
    assert resent.returncode == 0 and "again" in resent.stderr
    revoked = data(cli("invitations", "revoke", invitation["id"], "--json"))
    assert revoked["status"] == "revoked" and revoked["revoked_at"]
    assert [i["status"] for i in data(cli("invitations", "list", "--json"))] == ["revoked"]
    assert "--role is one of" in refused(cli("invitations", "send", "sam@example.com", "--role", "boss"), 2)
    assert "Missing option '--role'" in refused(cli("invitations", "send", "sam@example.com"), 2)


def test_a_viewer_is_refused_managing_members_with_the_reason(cli, env, account):
    viewer = join(account, "viewer")
    as_viewer = {**env, "INVOICING_API_KEY": viewer.key}
    assert len(data(cli("members", "list", "--json", environment=as_viewer))) == 2
    message = refused(cli("invitations", "send", "sam@example.com", "--role", "viewer", environment=as_viewer))
    assert "Error (forbidden)" in message and "members:manage" in message and "viewer" in message
    assert "Ask an owner or admin" in message and "API key with that scope" not in message


def test_a_refusal_beyond_any_scope_offers_no_other_credential(cli, env, account):
    admin = join(account, "admin")
    owner = next(m["id"] for m in data(cli("members", "list", "--json")) if m["role"] == "owner")
    message = refused(cli("members", "remove", owner, environment={**env, "INVOICING_API_KEY": admin.key}))
    assert "Error (forbidden)" in message and "owner" in message
    assert "API key with that scope" not in message and "Ask an owner or admin" not in message


def test_whoami_says_the_business_and_the_role(cli, account):
    business = data(cli("whoami", "--json"))["business"]
    assert business["account"].startswith("acct_") and business["role"] == "owner"
    shown = cli("whoami")
    assert shown.returncode == 0 and business["account"] in shown.stdout and re.search(r"Role: owner", shown.stdout)


# --- failures -------------------------------------------------------------------------------------------

def test_an_api_error_is_its_code_and_message_on_stderr(cli):
    message = refused(cli("customers", "get", "cus_00000000000000000000000000000000"))
    assert message.startswith("Error (not_found): No such customer") and "(request req_" in message


def test_a_validation_error_names_the_field(cli):
    message = refused(cli("invoices", "create", "--customer", customer(cli), "--item", "Design:0x100"), 2)
    assert "must be above 0" in message
    message = refused(cli("customers", "create", "--name", "Globex", "--email", "not-an-address"))
    assert "Error (validation)" in message and "email" in message


def test_a_line_in_major_units_is_explained(cli):
    assert "800.00 is 80000" in refused(cli("invoices", "create", "--customer", "cus_x", "--item", "Design:800.00"), 2)


def test_a_wrong_key_is_refused_with_what_to_do(cli, env):
    message = refused(cli("customers", "list", environment={**env, "INVOICING_API_KEY": "inv_live_wrong"}))
    assert "Error (unauthorized)" in message and "invoicing-cli login" in message


def test_a_missing_scope_says_how_to_get_it(cli, env):
    from tests.conftest import make_tenant
    reader = make_tenant(None, scopes=["clients:read"])
    message = refused(cli("customers", "create", "--name", "Globex", environment={**env, "INVOICING_API_KEY": reader.key}))
    assert "Error (forbidden)" in message and "clients:write" in message and "API key with that scope" in message


def test_without_any_credential_it_says_how_to_sign_in(cli, env):
    environment = {k: v for k, v in env.items() if k != "INVOICING_API_KEY"}
    assert "Not signed in" in refused(cli("customers", "list", environment=environment))


def test_an_unreachable_server_exits_3(cli, env):
    message = refused(cli("customers", "list", environment={**env, "INVOICING_BASE_URL": f"http://127.0.0.1:{free_port()}"}),
                      3)
    assert "could not be reached" in message


def test_wrong_usage_exits_2(cli):
    assert "Missing option" in refused(cli("customers", "create"), 2)


COMMANDS = [["login"], ["logout"], ["whoami"], ["receivables"], *[[group, command] for group, commands in {
    "customers": ["list", "get", "create", "update", "archive", "restore"],
    "products": ["list", "get", "create", "update", "archive", "restore"],
    "prices": ["list", "get", "create", "update", "archive", "restore"],
    "invoices": ["list", "get", "create", "finalize", "send", "pay", "void", "delete", "pdf", "e-invoice", "events",
                 "remind", "pause-reminders", "resume-reminders"],
    "credit-notes": ["list", "create", "preview", "show", "get", "void", "send", "pdf", "e-invoice"],
    "payments": ["list", "get", "record", "reverse"],
    "schedules": ["list", "get", "create", "pause", "resume", "cancel", "run", "runs"],
    "reminders": ["policy", "set"],
    "webhooks": ["list", "create", "delete"],
    "e-invoices": ["export"],
    "members": ["list", "role", "remove", "transfer-ownership"],
    "invitations": ["list", "send", "resend", "revoke"]}.items() for command in commands]]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help_with_examples(cli, command):
    shown = cli(*command, "--help")
    assert shown.returncode == 0 and "Examples" in shown.stdout and "invoicing-cli " + " ".join(command) in shown.stdout


def test_version(cli):
    assert re.fullmatch(r"invoicing-cli 0\.\d+\.\d+\n", cli("--version").stdout)


# --- login ----------------------------------------------------------------------------------------------

class LoginSession:
    """`invoicing-cli login --no-browser` running; the test plays the person at the browser."""

    def __init__(self, env: dict[str, str], cwd: Path, *args: str) -> None:
        self.process = subprocess.Popen([CLI, "login", "--no-browser", "--timeout", "60", *args], env=env, cwd=cwd,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.url = self._address()

    def _address(self) -> str:
        lines = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.process.stderr.readline()
            lines.append(line)
            if match := re.search(r"(https?://\S+/oauth/authorize\?\S+)", line):
                return match.group(1)
            if not line and self.process.poll() is not None:
                break
        raise AssertionError("no address printed:\n" + "".join(lines))

    def finish(self) -> tuple[int, str]:
        _, rest = self.process.communicate(timeout=TIMEOUT)
        return self.process.returncode, rest


def consent(origin: str, email: str, url: str, *, decision: str = "allow", extra: tuple[str, ...] = ()) -> httpx.Response:
    """Sign in, open the consent page, answer it as a browser does (the business pre-selected, the boxes
    ticked and `extra`), and follow the redirect to the CLI's loopback port."""
    with httpx.Client(base_url=origin, timeout=15) as browser:
        sign_in(browser, email)
        page = browser.get(url)
        assert page.status_code == 200, page.text
        scopes = [*ticked_scopes(page.text), *extra]
        business = re.search(r'name="business" value="([^"]+)" checked', page.text)
        answer = browser.post(form_action(page.text), data={"csrf_token": csrf_token(page.text), "decision": decision,
                                                            "scope": scopes, "business": business.group(1)})
        assert answer.status_code in (302, 303), answer.text
        return httpx.get(answer.headers["location"], timeout=15)


@pytest.fixture
def signed_out(env) -> dict[str, str]:
    return {k: v for k, v in env.items() if k != "INVOICING_API_KEY"}


def test_login_through_the_consent_page_then_refresh_and_logout(cli, signed_out, home, origin, account):
    login = LoginSession(signed_out, home)
    assert httpx.URL(login.url).params["resource"] == f"{origin}/api/v1"
    landing = consent(origin, account.user_email, login.url, extra=("invoices:finalize",))
    assert landing.status_code == 200 and "The answer reached invoicing-cli" in landing.text
    code, said = login.finish()
    assert code == 0 and "Signed in to" in said and "invoices:finalize" in said

    stored = home / "config" / "invoicing" / "credentials.json"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    kept = json.loads(stored.read_text())["servers"][f"{origin}/api/v1"]
    assert kept["access_token"].startswith("inv_oat_") and data(cli("whoami", "--json", environment=signed_out))[
        "credential"]["kind"] == "oauth"
    made = data(cli("customers", "create", "--name", "Made with OAuth", "--json", environment=signed_out))

    # An expiring token is refreshed (the refresh token rotates) before the next command.
    everything = json.loads(stored.read_text())
    everything["servers"][f"{origin}/api/v1"]["expires_at"] = 0
    stored.write_text(json.dumps(everything))
    assert data(cli("customers", "get", made["id"], "--json", environment=signed_out))["id"] == made["id"]
    renewed = json.loads(stored.read_text())["servers"][f"{origin}/api/v1"]
    assert renewed["refresh_token"] != kept["refresh_token"] and renewed["access_token"] != kept["access_token"]

    out = cli("logout", environment=signed_out)
    assert out.returncode == 0 and "Signed out" in out.stderr
    answer = httpx.get(f"{origin}/api/v1/customers", headers={"Authorization": f"Bearer {renewed['access_token']}"})
    assert answer.status_code == 401  # revoked on the server, not only forgotten here
    assert "Not signed in" in refused(cli("customers", "list", environment=signed_out))


def business_of(origin: str, credential: str) -> dict:
    """GET /business with a key or token: the business it acts for."""
    answer = httpx.get(f"{origin}/api/v1/business", headers={"Authorization": f"Bearer {credential}"}, timeout=15)
    assert answer.status_code == 200, answer.text
    return answer.json()["data"]


def test_login_for_a_business_pre_selects_it_and_the_token_acts_for_it(cli, signed_out, home, origin, account):
    second = second_business(None, account)
    acct, first = (business_of(origin, key)["account"] for key in (second.key, account.key))
    assert acct != first
    login = LoginSession(signed_out, home, "--business", acct)
    assert httpx.URL(login.url).params["business"] == acct
    consent(origin, account.user_email, login.url)  # the business the page pre-selected, as a browser posts it
    code, said = login.finish()
    assert code == 0 and f"Signed in to {origin}/api/v1 for Second ({acct}) as owner" in said, said

    kept = json.loads((home / "config" / "invoicing" / "credentials.json").read_text())["servers"][f"{origin}/api/v1"]
    business = business_of(origin, kept["access_token"])
    assert (business["account"], business["trade_name"], business["role"]) == (acct, "Second", "owner")
    assert data(cli("whoami", "--json", environment=signed_out))["business"]["account"] == acct
    assert "--business is a business's id, acct_" in refused(cli("login", "--business", "Second",
                                                                environment=signed_out), 2)


def test_login_registers_once_per_server(cli, signed_out, home, origin, account):
    client_ids = []
    for _ in range(2):
        login = LoginSession(signed_out, home)
        client_ids.append(httpx.URL(login.url).params["client_id"])
        consent(origin, account.user_email, login.url)
        assert login.finish()[0] == 0
    stored = json.loads((home / "config" / "invoicing" / "credentials.json").read_text())
    assert client_ids[0] == client_ids[1] == stored["servers"][f"{origin}/api/v1"]["client_id"]


def test_denying_on_the_consent_page_keeps_nothing(signed_out, home, origin, account):
    login = LoginSession(signed_out, home)
    consent(origin, account.user_email, login.url, decision="deny")
    code, said = login.finish()
    assert code == 1 and "Access was denied" in said and "Traceback" not in said
    stored = json.loads((home / "config" / "invoicing" / "credentials.json").read_text())
    assert "access_token" not in stored["servers"][f"{origin}/api/v1"]


def test_a_server_that_forgot_this_tool_gets_it_registered_again(signed_out, home, origin, account):
    stored = home / "config" / "invoicing" / "credentials.json"
    stored.parent.mkdir(parents=True)
    stored.write_text(json.dumps({"default": f"{origin}/api/v1", "servers": {f"{origin}/api/v1": {
        "issuer": origin, "client_id": "forgotten-client"}}}))
    login = LoginSession(signed_out, home)
    assert httpx.URL(login.url).params["client_id"] != "forgotten-client"
    consent(origin, account.user_email, login.url)
    assert login.finish()[0] == 0


def test_a_stray_request_to_the_loopback_port_does_not_end_the_login(signed_out, home, origin, account):
    login = LoginSession(signed_out, home)
    redirect = httpx.URL(login.url).params["redirect_uri"]
    assert httpx.get(redirect, params={"code": "forged", "state": "not-this-one"}).status_code == 400
    consent(origin, account.user_email, login.url)
    assert login.finish()[0] == 0


def test_brackets_in_names_are_printed_as_written(cli):
    name = "Foo [/] Bar [red]x[/red] [link=https://evil.example]y"
    made = data(cli("customers", "create", "--name", name, "--json"))
    assert name in cli("customers", "get", made["id"]).stdout
    listed = cli("customers", "list")
    assert listed.returncode == 0 and "Foo [/] Bar" in listed.stdout
    assert "[/x]" in refused(cli("customers", "get", "[/x]"))


def _signed_in_file(home: Path, origin: str, **entry) -> Path:
    stored = home / "config" / "invoicing" / "credentials.json"
    stored.parent.mkdir(parents=True, exist_ok=True)
    closed = f"http://127.0.0.1:{free_port()}"
    stored.write_text(json.dumps({"default": f"{origin}/api/v1", "servers": {f"{origin}/api/v1": {
        "issuer": origin, "client_id": "cl_x", "access_token": "inv_oat_old", "refresh_token": "inv_ort_old",
        "expires_at": 0, "token_endpoint": f"{closed}/oauth/token", "revocation_endpoint": f"{closed}/oauth/revoke",
        **entry}}}))
    return stored


def test_a_refresh_that_cannot_reach_the_server_keeps_the_sign_in(cli, signed_out, home, origin):
    stored = _signed_in_file(home, origin)
    assert "could not be reached" in refused(cli("customers", "list", environment=signed_out), 3)
    assert json.loads(stored.read_text())["servers"][f"{origin}/api/v1"]["refresh_token"] == "inv_ort_old"


def test_a_refresh_the_server_refuses_ends_the_sign_in(cli, signed_out, home, origin):
    stored = _signed_in_file(home, origin, token_endpoint=f"{origin}/oauth/token")
    assert "Your sign-in has ended" in refused(cli("customers", "list", environment=signed_out))
    assert "refresh_token" not in json.loads(stored.read_text())["servers"][f"{origin}/api/v1"]


def test_a_logout_that_cannot_reach_the_server_keeps_the_tokens(cli, signed_out, home, origin):
    stored = _signed_in_file(home, origin, expires_at=int(time.time()) + 3600)
    assert "could not be reached" in refused(cli("logout", environment=signed_out), 3)
    assert json.loads(stored.read_text())["servers"][f"{origin}/api/v1"]["refresh_token"] == "inv_ort_old"


def test_an_unwritable_output_is_a_message_not_a_traceback(cli, home):
    draft = data(cli("invoices", "create", "--customer", customer(cli), "--item", "Design:100", "--json"))
    assert "does not exist" in refused(cli("invoices", "pdf", draft["id"], "-o", str(home / "missing" / "x.pdf")), 2)
    assert "is a folder" in refused(cli("invoices", "pdf", draft["id"], "-o", str(home), "--force"), 2)


def test_an_e_invoice_is_saved_and_a_refusal_names_the_field(cli, home):
    buyer = data(cli("customers", "create", "--name", "Northwind Ltd", "--country", "GB", "--json"))["id"]
    invoice = data(cli("invoices", "create", "--customer", buyer, "--item", "Design:80000", "--json"))["id"]
    assert "draft" in refused(cli("invoices", "e-invoice", invoice, "--format", "cii"))
    number = data(cli("invoices", "finalize", invoice, "--json"))["number"]
    saved = cli("invoices", "e-invoice", invoice, "--format", "cii")
    assert saved.returncode == 0 and (home / f"{number}-cii.xml").read_bytes().startswith(b"<?xml")
    nowhere = data(cli("customers", "create", "--name", "Nowhere Ltd", "--json"))["id"]
    other = data(cli("invoices", "create", "--customer", nowhere, "--item", "Design:80000", "--json"))["id"]
    cli("invoices", "finalize", other)
    message = refused(cli("invoices", "e-invoice", other, "--format", "peppol", "-o", "x.xml"))
    assert "Error (validation)" in message and "customer.address.country" in message


def test_a_period_of_e_invoices_is_saved_as_a_zip(cli, home):
    buyer = data(cli("customers", "create", "--name", "Northwind Ltd", "--city", "Leeds", "--country", "GB",
                     "--json"))["id"]
    invoice = data(cli("invoices", "create", "--customer", buyer, "--item", "Design:80000", "--json"))["id"]
    number = data(cli("invoices", "finalize", invoice, "--json"))["number"]
    nowhere = data(cli("customers", "create", "--name", "Nowhere Ltd", "--json"))["id"]
    other = data(cli("invoices", "create", "--customer", nowhere, "--item", "Design:80000", "--json"))["id"]
    left_out = data(cli("invoices", "finalize", other, "--json"))["number"]
    today = datetime.now(UTC).date()
    period = ["--from", (today - timedelta(days=30)).isoformat(), "--to", today.isoformat()]

    saved = cli("e-invoices", "export", *period, "--format", "cii")

    assert saved.returncode == 0, saved.stderr
    name = f"e-invoices-{period[1]}-{period[3]}-cii.zip"
    assert f"Saved 1 e-invoice (cii, issued {period[1]} to {period[3]}) to {name}" in saved.stderr
    assert f"Left out {left_out}:" in saved.stderr and "1 left out" in saved.stderr
    with zipfile.ZipFile(home / name) as archive:
        assert archive.namelist() == [f"{number}-cii.xml", "manifest.csv"]
    assert "exists" in refused(cli("e-invoices", "export", *period, "--format", "cii"), 2)
    scripted = data(cli("e-invoices", "export", *period, "-o", "q.zip", "--json"))
    assert scripted["export"]["format"] == "peppol" and scripted["export"]["id"].startswith("exp_")
    assert scripted["path"] == str((home / "q.zip").resolve()) and scripted["bytes"] == scripted["export"]["size"]


def test_an_export_the_api_or_the_cli_refuses_writes_nothing(cli, home):
    message = refused(cli("e-invoices", "export", "--from", "2026-07-01", "--to", "2026-06-30", "-o", "x.zip"))
    assert "Error (validation)" in message and "period_end" in message
    assert "--format is one of peppol, cii, facturx" in refused(
        cli("e-invoices", "export", "--from", "2026-06-01", "--to", "2026-06-30", "--format", "xrechnung"), 2)
    assert not list(home.glob("*.zip"))


# --- keys and tokens never in clear text to another host ------------------------------------------------

class Wire:
    """An HTTP proxy on the loopback interface that records every request reaching it and answers 404.
    The CLI runs with HTTP_PROXY naming it, so whatever it sends to an http:// host lands here instead of
    on the network (example.test and 10.0.0.5 are never contacted). It stands for a proxy elsewhere: what
    reaches it would have crossed the network."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        wire = self

        class Handler(BaseHTTPRequestHandler):
            def _record(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                wire.requests.append((self.command, self.path, dict(self.headers)))
                body = json.dumps({"status": 404, "code": "not_found", "detail": "Recorded by the test."}).encode()
                self.send_response(404)
                self.send_header("Content-Type", "application/problem+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PATCH = do_DELETE = do_CONNECT = _record  # CONNECT: an https tunnel, refused

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def wire() -> Iterator[Wire]:
    recorder = Wire()
    yield recorder
    recorder.close()


def through(environment: dict[str, str], wire: Wire, **changes: str) -> dict[str, str]:
    """`environment` with every http(s) request going to `wire`."""
    kept = {k: v for k, v in environment.items() if k.lower() not in ("no_proxy", "all_proxy", "https_proxy")}
    return {**kept, "HTTP_PROXY": wire.url, "http_proxy": wire.url, **changes}


CLEAR_TEXT_ELSEWHERE = ["http://example.test", "http://10.0.0.5:8000/api/v1"]


@pytest.mark.parametrize("url", CLEAR_TEXT_ELSEWHERE)
def test_a_key_is_not_sent_in_clear_text_to_another_host(cli, env, wire, account, url):
    message = refused(cli("customers", "list", environment=through(env, wire, INVOICING_BASE_URL=url)), 2)
    assert "clear text" in message and "--insecure" in message and "https://" in message
    message = refused(cli("--api-key", account.key, "--base-url", url, "whoami", environment=through(env, wire)), 2)
    assert "--insecure" in message and account.key not in message
    assert wire.requests == []


def test_insecure_sends_it_anyway(cli, env, wire, account):
    environment = through(env, wire, INVOICING_BASE_URL="http://example.test")
    assert "Recorded by the test" in refused(cli("--insecure", "customers", "list", environment=environment))
    [(method, target, headers)] = wire.requests  # what the proxy saw is what the network would have carried
    assert (method, target) == ("GET", "http://example.test/api/v1/customers?limit=25")
    assert headers["Authorization"] == f"Bearer {account.key}"


def test_a_sign_in_to_another_host_over_http_is_refused_before_anything_is_sent(signed_out, home, wire):
    result = subprocess.run([CLI, "--base-url", "http://example.test", "login", "--no-browser", "--timeout", "10"],
                            env=through(signed_out, wire), cwd=home, capture_output=True, text=True, timeout=TIMEOUT)
    message = refused(result, 2)
    assert "--insecure" in message and "Open this address" not in message
    assert wire.requests == []


def test_a_kept_token_is_not_sent_in_clear_text_to_another_host(cli, signed_out, home, wire):
    stored = home / "config" / "invoicing" / "credentials.json"
    stored.parent.mkdir(parents=True)
    stored.write_text(json.dumps({"default": "http://example.test/api/v1", "servers": {"http://example.test/api/v1": {
        "issuer": "http://example.test", "client_id": "cl_x", "access_token": "inv_oat_kept",
        "refresh_token": "inv_ort_kept", "expires_at": int(time.time()) + 3600,
        "token_endpoint": "http://example.test/oauth/token", "revocation_endpoint": "http://example.test/oauth/revoke"}}}))
    environment = through({k: v for k, v in signed_out.items() if k != "INVOICING_BASE_URL"}, wire)  # the kept default
    assert "access token" in refused(cli("customers", "list", environment=environment), 2)
    assert "refresh token" in refused(cli("logout", environment=environment), 2)
    assert wire.requests == []
    assert json.loads(stored.read_text())["servers"]["http://example.test/api/v1"]["refresh_token"] == "inv_ort_kept"


def test_a_refresh_token_is_not_sent_in_clear_text_to_another_host(cli, signed_out, home, origin, wire):
    stored = _signed_in_file(home, origin, token_endpoint="http://example.test/oauth/token",
                             revocation_endpoint="http://10.0.0.5/oauth/revoke")
    environment = through(signed_out, wire, INVOICING_BASE_URL=origin)
    assert "example.test" in refused(cli("customers", "list", environment=environment), 2)
    assert "10.0.0.5" in refused(cli("logout", environment=environment), 2)
    assert wire.requests == []
    assert json.loads(stored.read_text())["servers"][f"{origin}/api/v1"]["refresh_token"] == "inv_ort_old"


PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


def proxied(environment: dict[str, str], wire: Wire, *names: str) -> dict[str, str]:
    """`environment` with the proxy variables `names` (and no others) naming `wire`."""
    kept = {k: v for k, v in environment.items() if k.lower() not in PROXY_VARIABLES}
    return {**kept, **{name: wire.url for name in names}}


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"])
def test_a_key_for_this_computer_never_goes_through_a_proxy(cli, env, wire, account, origin, variable):
    results = [cli(*command, "--json", environment={**proxied(env, wire, variable), "INVOICING_BASE_URL": url})
               for url in (origin, origin.replace("127.0.0.1", "localhost"))
               for command in (("customers", "list"), ("whoami",))]
    assert wire.requests == []  # straight to this computer: the key never reached the proxy
    assert [data(result) for result in results[::2]] == [[], []]
    assert {data(result)["credential"]["kind"] for result in results[1::2]} == {"api_key"}


def test_a_sign_in_to_this_computer_never_goes_through_a_proxy(cli, signed_out, home, origin, account, wire):
    environment = proxied(signed_out, wire, "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
    login = LoginSession(environment, home)  # discovery, registration, the code for tokens
    consent(origin, account.user_email, login.url)
    assert login.finish()[0] == 0
    stored = home / "config" / "invoicing" / "credentials.json"
    everything = json.loads(stored.read_text())
    everything["servers"][f"{origin}/api/v1"]["expires_at"] = 0
    stored.write_text(json.dumps(everything))
    assert data(cli("customers", "list", "--json", environment=environment)) == []  # refreshed, then used
    out = cli("logout", environment=environment)  # the refresh token revoked
    assert out.returncode == 0 and "Signed out" in out.stderr
    assert wire.requests == []


@pytest.mark.parametrize(("variable", "url", "tunnel"), [
    ("HTTPS_PROXY", "https://example.test/api/v1", "example.test:443"),
    ("all_proxy", "https://localhost:8443/api/v1", "localhost:8443")])
def test_https_goes_through_the_proxy_as_configured(cli, env, wire, account, variable, url, tunnel):
    environment = {**proxied(env, wire, variable), "INVOICING_BASE_URL": url}
    assert "could not be reached" in refused(cli("customers", "list", environment=environment), 3)
    [(method, target, headers)] = wire.requests  # a tunnel asked for: the key would have gone inside it, encrypted
    assert (method, target) == ("CONNECT", tunnel)
    assert account.key not in json.dumps(headers)


def test_localhost_is_this_machine(cli, env, origin):
    local = origin.replace("127.0.0.1", "localhost")
    assert data(cli("customers", "list", "--json", environment={**env, "INVOICING_BASE_URL": local})) == []


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/api/v1", "http://127.8.0.1", "http://localhost:8000",
                                 "http://LOCALHOST.:8000", "http://[::1]:8000", "http://[::ffff:127.0.0.1]",
                                 "https://example.test", "https://10.0.0.5:8443/api/v1"])
def test_loopback_and_https_are_allowed(url):
    from invoicing_client.cli import cleartext
    assert not cleartext.exposed(url)


@pytest.mark.parametrize("url", ["http://example.test", "http://10.0.0.5", "http://[fe80::1]:8000", "http://0.0.0.0:8000",
                                 "http://localhost.example.test", "http://127.0.0.1.example.test", "http://127.1",
                                 "HTTP://example.test"])
def test_http_to_any_other_host_is_exposed(url):
    from invoicing_client.cli import cleartext
    assert cleartext.exposed(url)


@pytest.mark.parametrize(("url", "straight"), [
    ("http://127.0.0.1:8000/api/v1", True), ("http://LOCALHOST.:8000", True), ("http://[::1]:8000", True),
    ("https://localhost:8443", False), ("https://example.test", False), ("http://example.test", False)])
def test_only_http_to_this_computer_ignores_the_environments_proxies(url, straight):
    from invoicing_client.cli import cleartext
    assert cleartext.local(url) is straight
    with cleartext.http_client(url) as client:
        assert client.trust_env is not straight


def test_the_help_steers_keys_to_the_environment(cli):
    shown = re.sub(r"[│\s]+", " ", cli("--help").stdout)  # one line, whatever the wrapping
    assert "INVOICING_API_KEY" in shown and "shell history" in shown and "--insecure" in shown
