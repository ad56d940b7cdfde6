"""Payment reminders in the dashboard: Settings → Reminders (the default steps while never set, saved whole
through the same operation as PUT /reminder-policy, a step added or removed without saving, errors
beside their fields, CSRF); an open invoice's page (the next reminder the policy will send, a reminder
sent now after a confirmation, pause and resume, the history's reminder events, a late fee's invoice
naming the overdue one); another account's invoice is 404. tests/api/test_reminders.py covers the rules."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from core.base.clock import today
from core.schedules import reminders
from tests.api.invoicing import adhoc, open_invoice, pay
from tests.api.test_reminders import invoice_due, on, set_policy, step, text_of
from tests.smtp import mail_settings, smtp_server
from tests.web.test_dashboard_invoices import KEY_FIELD

PAGE = "/settings/reminders"


@pytest.fixture
def mailbox():
    with smtp_server() as (handler, url), mail_settings(smtp_url=url):
        yield handler


def policy_of(tenant) -> dict:
    return tenant.get("/reminder-policy").json()["data"]


def form(*steps: dict, active: bool = True, kind: str = "none", amount: str = "", rate: str = "") -> dict:
    """The settings form as a person fills it: `steps` as {days, subject, body, late_fee}."""
    fields: dict = {"step_count": str(len(steps)), "late_fee.kind": kind, "late_fee.amount": amount,
                    "reference_rate": rate, "step": "save"}
    if active:
        fields["active"] = "true"
    for index, one in enumerate(steps):
        fields |= {f"steps.{index}.days": str(one.get("days", "")), f"steps.{index}.subject": one.get("subject", ""),
                   f"steps.{index}.body": one.get("body", "")}
        if one.get("late_fee"):
            fields[f"steps.{index}.late_fee"] = "true"
    return fields


def a_step(days, **fields) -> dict:
    return {"days": days, "subject": f"Invoice {{number}}: day {days}", "body": "Hello {customer}, {amount_due}. {link}",
            **fields}


def error_at(html: str, field_id: str) -> str:
    match = re.search(rf'<p class="error" id="{field_id}-error">([^<]*)</p>', html)
    assert match, f"no error at {field_id}"
    return match.group(1)


def submit_keyed(person, path: str, fields: dict, page: str):
    key = KEY_FIELD.search(person.get(page).text).group(1)
    return person.submit(path, {**fields, "idempotency_key": key}, page=page)


# --- Settings → Reminders -------------------------------------------------------------------------


def test_the_settings_page_shows_the_default_steps_off_and_is_linked(person, other_browser):
    response = other_browser.get(PAGE)
    assert response.status_code == 303 and response.headers["location"].startswith("/login?next=")
    page = person.get(PAGE)
    assert page.status_code == 200
    html = page.text
    assert '<a href="/settings/reminders" aria-current="page">Reminders</a>' in html
    assert 'href="/settings/reminders"' in person.get("/").text
    assert "Not set yet: these are the default steps, and reminders are off." in html
    assert re.search(r'id="f-active" name="active" value="true"(?! checked)', html)
    assert [int(days) for days in re.findall(r'name="steps\.\d+\.days" type="text" value="(-?\d+)"', html)] == [-3, 7, 30]
    assert 'name="step_count" value="3"' in html
    for placeholder in ("{number}", "{amount_due}", "{due_date}", "{days_overdue}", "{link}", "{customer}",
                        "{business}"):
        assert f"<code>{placeholder}</code>" in html
    assert "Directive 2011/7/EU" in html and "8 percentage points a year" in html and "40.00 EUR" in html
    assert 'id="f-late_fee-none" name="late_fee.kind" value="none" checked' in html


def test_saving_the_policy_applies_it_as_the_api_would(person, tenant):
    response = person.submit(PAGE, form(a_step(-2), a_step(14, late_fee=True), kind="fixed", amount="25.50"))
    assert response.status_code == 303 and response.headers["location"] == f"{PAGE}?notice=saved"
    saved = policy_of(tenant)
    assert saved["active"] is True and [s["days"] for s in saved["steps"]] == [-2, 14]
    assert [s["late_fee"] for s in saved["steps"]] == [False, True]
    assert saved["steps"][1]["body"] == "Hello {customer}, {amount_due}. {link}"
    assert saved["late_fee"] == {"kind": "fixed", "amount": 2550} and saved["updated"]
    html = person.get(response.headers["location"]).text
    assert "The reminder policy is saved." in html and "Last saved" in html
    assert 'id="f-active" name="active" value="true" checked' in html
    assert 'name="late_fee.amount" type="text" value="25.50"' in html
    assert 'id="f-steps-1-late_fee" name="steps.1.late_fee" value="true" checked' in html


def test_a_statutory_fee_with_its_rate_and_turning_reminders_off(person, tenant):
    assert person.submit(PAGE, form(a_step(30, late_fee=True), kind="statutory", rate="4.15")).status_code == 303
    saved = policy_of(tenant)
    assert saved["late_fee"] == {"kind": "statutory", "amount": None}
    assert float(saved["reference_rate"]) == 4.15
    assert person.submit(PAGE, form(a_step(30), active=False, rate="4.15")).status_code == 303
    saved = policy_of(tenant)
    assert saved["active"] is False and saved["late_fee"] is None


def test_adding_and_removing_a_step_saves_nothing(person, tenant):
    added = person.submit(PAGE, {**form(a_step(7)), "step": "add"})
    assert added.status_code == 200 and 'name="step_count" value="2"' in added.text
    assert 'name="steps.1.days"' in added.text
    removed = person.submit(PAGE, {**form(a_step(7), a_step(30)), "step": "remove:0"})
    assert removed.status_code == 200 and 'name="step_count" value="1"' in removed.text
    assert re.findall(r'name="steps\.\d+\.days" type="text" value="(-?\d+)"', removed.text) == ["30"]
    assert policy_of(tenant)["updated"] is None
    # an empty row is left out when saving
    assert person.submit(PAGE, form(a_step(7), {"days": "", "subject": "", "body": ""})).status_code == 303
    assert [s["days"] for s in policy_of(tenant)["steps"]] == [7]


@pytest.mark.parametrize(("fields", "field_id", "words"), [
    (form(a_step(7), a_step(14, body="Pay {amount} now")), "f-steps-1-body", "unknown placeholder {amount}"),
    (form(a_step("soon")), "f-steps-0-days", ""),
    (form(a_step(400)), "f-steps-0-days", ""),
    (form(a_step(7, subject="")), "f-steps-0-subject", ""),
    (form(a_step(7), a_step(7)), "f-steps", "two steps on the same day"),
    (form(a_step(0, late_fee=True), kind="fixed", amount="5"), "f-steps", "only after the due date"),
    (form(a_step(7, late_fee=True)), "f-late_fee", "must be set"),
    (form(a_step(7), kind="fixed"), "f-late_fee-amount", "needs an amount"),
    (form(a_step(7), kind="fixed", amount="five"), "f-late_fee-amount", "must be an amount in USD"),
    (form(a_step(7), kind="statutory"), "f-reference_rate", "needs the reference rate"),
    (form(a_step(7), kind="statutory", rate="lots"), "f-reference_rate", ""),
])
def test_a_refused_policy_shows_each_error_at_its_field(person, tenant, fields, field_id, words):
    response = person.submit(PAGE, fields)
    assert response.status_code == 422, response.text[:2000]
    assert words in error_at(response.text, field_id)
    assert 'id="form-errors"' in response.text
    assert policy_of(tenant)["updated"] is None  # nothing saved
    assert 'name="step_count" value="{}"'.format(fields["step_count"]) in response.text  # the form as sent


def test_an_error_of_a_step_after_an_empty_row_is_beside_its_own_row(person):
    response = person.submit(PAGE, form({"days": "", "subject": "", "body": ""}, a_step(7, body="{nope}")))
    assert response.status_code == 422
    assert "unknown placeholder {nope}" in error_at(response.text, "f-steps-1-body")
    assert 'aria-invalid="true" aria-describedby="f-steps-1-body-error"' in response.text


def test_the_settings_form_without_its_csrf_token_is_refused(person, tenant):
    response = person.client.post(PAGE, data=form(a_step(7)), follow_redirects=False)
    assert response.status_code == 403 and "This form has expired" in response.text
    assert policy_of(tenant)["updated"] is None


# --- an invoice's page -----------------------------------------------------------------------------


def test_an_open_invoice_shows_the_next_reminder_and_pauses_and_resumes(person, tenant):
    set_policy(tenant, [step(-3), step(7, late_fee=True)], late_fee={"kind": "fixed", "amount": 500})
    due = today() + timedelta(days=10)
    invoice = open_invoice(tenant, items=[adhoc("Consulting", 100000)], due_date=due.isoformat())
    path = f"/invoices/{invoice['id']}"
    html = person.get(path).text
    expected = f"Next reminder on {(due - timedelta(days=3)).isoformat()} (3 days before the due date)."
    assert expected in html
    assert f'href="{path}/remind">Send a reminder…</a>' in html and "Pause reminders" in html

    response = person.submit(f"{path}/reminders", {"paused": "true"}, page=path)
    assert response.status_code == 303 and response.headers["location"] == f"{path}?notice=reminders_paused"
    assert tenant.get(path).json()["data"]["reminders_paused"] is True
    html = person.get(response.headers["location"]).text
    assert "<strong>Reminders paused</strong>" in html and "Resume reminders" in html
    assert "Next reminder on" not in html

    response = person.submit(f"{path}/reminders", {"paused": "false"}, page=path)
    assert response.headers["location"] == f"{path}?notice=reminders_resumed"
    assert tenant.get(path).json()["data"]["reminders_paused"] is False
    assert expected in person.get(path).text


def test_the_next_reminder_says_when_the_policy_is_off_or_has_nothing_left(person, tenant):
    invoice = open_invoice(tenant, items=[adhoc("Consulting", 100000)], due_date=today().isoformat())
    path = f"/invoices/{invoice['id']}"
    assert "Payment reminders are off" in person.get(path).text
    set_policy(tenant, [step(-3)])
    assert "has no further reminder for this invoice" in person.get(path).text
    set_policy(tenant, [step(0), step(7)])
    assert (f"Next reminder on {today().isoformat()} (on the due date)." in person.get(path).text)


def test_a_draft_or_paid_invoice_has_no_reminders(person, tenant):
    from tests.api.invoicing import draft
    drafted = draft(tenant)
    assert 'id="reminders-h"' not in person.get(f"/invoices/{drafted['id']}").text
    paid = open_invoice(tenant)
    pay(tenant, paid["id"])
    html = person.get(f"/invoices/{paid['id']}").text
    assert 'id="reminders-h"' not in html and "Send a reminder…" not in html
    assert person.get(f"/invoices/{paid['id']}/remind").status_code == 303  # back to the invoice


def test_a_reminder_sent_now_after_its_confirmation(person, tenant, mailbox):
    invoice = invoice_due(tenant)
    path = f"/invoices/{invoice['id']}"
    confirm = person.get(f"{path}/remind")
    assert confirm.status_code == 200
    assert "Send a reminder of INV-" in confirm.text
    assert "will be e-mailed now to jane@example.com" in confirm.text and "1,000.00 EUR due" in confirm.text
    assert mailbox.received == []  # nothing sent by showing the page

    response = submit_keyed(person, f"{path}/remind", {"message": "Any news about this one?"}, f"{path}/remind")
    assert response.status_code == 303 and response.headers["location"] == f"{path}?notice=reminded"
    assert [m.rcpt_tos for m in mailbox.received] == [["jane@example.com"]]
    assert text_of(mailbox, 0).startswith("Any news about this one?")
    html = person.get(response.headers["location"]).text
    assert "The payment reminder is e-mailed to the customer." in html
    history = html.split('id="history-h"')[1].split("</section>")[0]
    assert "<strong>payment reminder sent</strong>" in history
    assert "(dashboard)" in history and "to jane@example.com" in history and "sent by request" in history


def test_the_same_reminder_form_sent_twice_emails_once(person, tenant, mailbox):
    invoice = invoice_due(tenant)
    path = f"/invoices/{invoice['id']}"
    key = KEY_FIELD.search(person.get(f"{path}/remind").text).group(1)
    for _ in range(2):
        response = person.submit(f"{path}/remind", {"message": "", "idempotency_key": key}, page=f"{path}/remind")
        assert response.status_code == 303
    assert len(mailbox.received) == 1


def test_a_refused_reminder_is_shown_on_its_confirmation(person, tenant, mailbox):
    invoice = open_invoice(tenant, items=[adhoc("Consulting", 100000)],
                           customer_id=tenant.post("/customers", json={"name": "No Mail"}).json()["data"]["id"])
    path = f"/invoices/{invoice['id']}"
    assert "has no e-mail address to remind" in person.get(f"{path}/remind").text
    response = submit_keyed(person, f"{path}/remind", {"message": ""}, f"{path}/remind")
    assert response.status_code == 422 and "has no e-mail address to remind" in response.text
    assert mailbox.received == []


def test_a_late_fee_names_its_overdue_invoice_and_the_policys_reminders_are_in_the_history(person, tenant, mailbox):
    set_policy(tenant, [step(7, late_fee=True)], late_fee={"kind": "fixed", "amount": 1500})
    invoice = invoice_due(tenant)
    assert reminders.send_due(on("2027-03-17")).sent == 1
    [fee] = [i for i in tenant.get("/invoices").json()["data"] if i["late_fee_for"] == invoice["id"]]
    html = person.get(f"/invoices/{fee['id']}").text
    assert (f'Late fee for invoice <a href="/invoices/{invoice["id"]}">{invoice["number"]}</a>.') in html
    history = person.get(f"/invoices/{invoice['id']}").text.split('id="history-h"')[1].split("</section>")[0]
    assert "<strong>payment reminder sent</strong> · Your reminder policy (automatic)" in history
    assert "the policy&#39;s step 7 days after the due date" in history
    assert f'late fee charged by <a href="/invoices/{fee["id"]}">its own invoice</a>' in history


def test_another_accounts_invoice_is_404(person, other_tenant):
    invoice = invoice_due(other_tenant)
    path = f"/invoices/{invoice['id']}"
    assert person.get(f"{path}/remind").status_code == 404
    assert person.submit(f"{path}/remind", {"message": "x"}, page="/invoices").status_code == 404
    response = person.submit(f"{path}/reminders", {"paused": "true"}, page="/invoices")
    assert response.status_code == 404 and "belongs to another account" in response.text
    assert other_tenant.get(path).json()["data"]["reminders_paused"] is False
