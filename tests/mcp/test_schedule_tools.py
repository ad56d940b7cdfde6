"""The schedule tools over MCP: `create_invoice_schedule` and `cancel_invoice_schedule` ask the person
first, in words that say what will happen (the amount, the customer, the recurrence in words, the mode and
the first run), and act only on what was shown (a customer renamed meanwhile makes the "yes" stale: the
person is asked again); `list_invoice_schedules` reads; pausing and resuming act at once (reversible, no
money moves and nobody is told). Errors are REST's for the same input."""

from __future__ import annotations

import json

import pytest

from tests.api.invoicing import adhoc, customer
from tests.mcp.jsonrpc import call, error_of, post, structured
from tests.mcp.test_assistant_experience import APPS, initialize
from tests.mcp.test_confirmations_bound import call_in, confirm
from tests.mcp.test_payment_tools import Person, ask

VIEW = "ui://invoicing/invoice-view.html"
ITEMS = [adhoc("Retainer", 250000)]
MONTHLY = {"interval": "month", "start_date": "2027-01-01", "count": 12}


def body(customer_id: str, **fields) -> dict:
    """What both REST and the tool take: 2,500.00 EUR a month from January 2027, in Berlin."""
    return {"customer": customer_id, "invoice": {"items": ITEMS, "currency": "EUR"}, "recurrence": MONTHLY,
            "time_zone": "Europe/Berlin", **fields}


def globex(tenant, **fields) -> dict:
    return customer(tenant, name="Globex Corp", email="ap@globex.example", **fields)


def schedules_of(tenant, **params) -> list[dict]:
    return tenant.get("/invoice-schedules", params=params).json()["data"]


def created(tenant, **fields) -> dict:
    response = tenant.post("/invoice-schedules", json=body(globex(tenant)["id"], **fields), idem=True)
    assert response.status_code == 201, response.text
    return response.json()["data"]


QUESTION = ("Schedule invoices of 2,500.00 EUR to Globex Corp on the 1st of every month, from 2027-01-01, 12 times, "
            "{mode}? The first is made on 1 Jan 2027 at 08:00 (Europe/Berlin), for 1 Jan 2027 to 31 Jan 2027, due "
            "31 Jan 2027. Each run acts with this connection's permissions; the schedule can be paused or cancelled "
            "later.")


# --- the tools as listed ---------------------------------------------------------------------------

def test_the_schedule_tools_are_listed_with_annotations_and_scopes(client, tenant):
    tools = {tool["name"]: tool for tool in post(client, "tools/list", key=tenant.key).json()["result"]["tools"]}
    names = ("list_invoice_schedules", "create_invoice_schedule", "pause_invoice_schedule", "resume_invoice_schedule",
             "cancel_invoice_schedule")
    hints = {name: tuple(tools[name]["annotations"][hint] for hint in (
        "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")) for name in names}
    assert hints == {"list_invoice_schedules": (True, False, True, False),
                     "create_invoice_schedule": (False, False, False, False),  # the worker sends, later
                     "pause_invoice_schedule": (False, False, False, False),
                     "resume_invoice_schedule": (False, False, False, False),
                     "cancel_invoice_schedule": (False, True, False, False)}
    assert "get_invoice_schedule" not in tools  # list_invoice_schedules gives each schedule whole
    create = tools["create_invoice_schedule"]
    assert create["inputSchema"]["required"] == ["customer", "invoice", "recurrence"]
    assert {"mode", "time_zone", "catch_up", "max_attempts", "idempotency_key"} <= set(create["inputSchema"]["properties"])
    for name in ("pause_invoice_schedule", "resume_invoice_schedule", "cancel_invoice_schedule"):
        assert tools[name]["inputSchema"]["required"] == ["schedule"]
    # Asking first: the result, the person's "no", or the view's question.
    for name in ("create_invoice_schedule", "cancel_invoice_schedule"):
        assert len(tools[name]["outputSchema"]["anyOf"]) == 3 and tools[name]["_meta"]["ui"]["resourceUri"] == VIEW
    for name in ("pause_invoice_schedule", "resume_invoice_schedule", "list_invoice_schedules"):
        assert "anyOf" not in tools[name]["outputSchema"] and "_meta" not in tools[name]
    for name in names:
        scope = "invoices:read" if name.startswith("list") else "invoices:write"
        assert tools[name]["description"].endswith(f"Needs the scope {scope}.")


# --- create_invoice_schedule ------------------------------------------------------------------------

@pytest.mark.parametrize(("mode", "words"), [
    ("draft", "as drafts to review (nothing is sent)"),
    ("finalize", "each finalized with the next number (not e-mailed)"),
    ("finalize_and_send", "each finalized and e-mailed to ap@globex.example"),
])
def test_creating_asks_first_naming_the_amount_customer_recurrence_mode_and_first_run(client, app, tenant, mode,
                                                                                       words):
    person = Person("accept")
    result = ask(client, app, tenant.key, person, "create_invoice_schedule",
                 {**body(globex(tenant)["id"], mode=mode), "idempotency_key": f"sched-{mode}"})
    assert person.asked == [QUESTION.format(mode=words)]
    assert person.titles == ["Yes, schedule them"]
    assert not result.is_error, result.content
    schedule = result.structured_content
    assert schedule["id"].startswith("sched_") and (schedule["status"], schedule["mode"]) == ("active", mode)
    assert schedule["summary"] == "on the 1st of every month, from 2027-01-01, 12 times"
    assert [row["id"] for row in schedules_of(tenant)] == [schedule["id"]]


def test_a_customer_without_an_address_is_said_to_have_none(client, app, tenant):
    person = Person("decline")
    ask(client, app, tenant.key, person, "create_invoice_schedule",
        body(customer(tenant, name="Globex Corp", email=None)["id"], mode="finalize_and_send"))
    assert "each finalized and e-mailed to the customer, who has no e-mail address yet?" in person.asked[0]


def test_declining_creates_nothing(client, app, tenant):
    result = ask(client, app, tenant.key, Person("decline"), "create_invoice_schedule", body(globex(tenant)["id"]))
    assert result.structured_content == {
        "declined": True, "action": "schedule", "invoice": None,
        "detail": "The person declined: nothing changed (no invoice schedule was created). Ask them before trying "
                  "again."}
    assert schedules_of(tenant) == []


def test_a_customer_renamed_while_the_person_reads_makes_them_asked_again(client, app, tenant):
    buyer = globex(tenant)

    def meanwhile():
        assert tenant.patch(f"/customers/{buyer['id']}", json={"name": "Initech"}).status_code == 200

    person = Person("accept", meanwhile=meanwhile)
    result = ask(client, app, tenant.key, person, "create_invoice_schedule", body(buyer["id"]))
    assert [question.split(" on the 1st")[0] for question in person.asked] == [
        "Schedule invoices of 2,500.00 EUR to Globex Corp", "Schedule invoices of 2,500.00 EUR to Initech"]
    assert not result.is_error and len(schedules_of(tenant)) == 1


def test_declining_the_second_question_creates_nothing(client, app, tenant):
    buyer = globex(tenant)
    person = Person(answers=["accept", "decline"], meanwhile=lambda: tenant.patch(
        f"/customers/{buyer['id']}", json={"email": "new@globex.example"}))
    result = ask(client, app, tenant.key, person, "create_invoice_schedule", body(buyer["id"], mode="finalize_and_send"))
    assert len(person.asked) == 2 and "e-mailed to new@globex.example" in person.asked[1]
    assert result.structured_content["declined"] is True and schedules_of(tenant) == []


BAD = [
    ({"recurrence": {**MONTHLY, "start_date": "2020-01-01"}}, "validation"),
    ({"recurrence": {**MONTHLY, "interval": "week", "day_of_month": 3}}, "validation"),
    ({"recurrence": {**MONTHLY, "interval": "fortnight"}}, "validation"),
    ({"invoice": {"items": [], "currency": "EUR"}}, "validation"),
    ({"invoice": {"items": [{"price": "price_" + "0" * 32}], "currency": "EUR"}}, "not_found"),
    ({"invoice": {"items": ITEMS, "issue_date": "2027-01-01"}}, "validation"),
    ({"time_zone": "Mars/Olympus"}, "validation"),
    ({"customer": "cus_" + "0" * 32}, "not_found"),
]


@pytest.mark.parametrize(("changed", "code"), BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_input_is_refused_as_rest_refuses_it_without_a_question(client, app, tenant, changed, code):
    arguments = {**body(globex(tenant)["id"]), **changed}
    person = Person("accept")
    result = ask(client, app, tenant.key, person, "create_invoice_schedule", arguments)
    rest = tenant.post("/invoice-schedules", json=arguments, idem=True)
    assert person.asked == [] and result.is_error
    error = json.loads(result.content[0].text)
    assert error["code"] == rest.json()["code"] == code
    assert error.get("errors") == rest.json().get("errors")
    assert schedules_of(tenant) == []


def test_a_mode_beyond_the_keys_scopes_is_forbidden_as_over_rest(client, tenant):
    writer = tenant.key_with(["invoices:read", "invoices:write"])
    error = error_of(call(client, writer, "create_invoice_schedule", **body(globex(tenant)["id"], mode="finalize")))
    rest = tenant.post("/invoice-schedules", json=body(globex(tenant)["id"], mode="finalize"), idem=True,
                       headers={"Authorization": f"Bearer {writer}"})
    assert error["code"] == rest.json()["code"] == "forbidden"


def test_creating_without_invoices_write_is_a_403_step_up(client, tenant):
    response = post(client, "tools/call", {"name": "create_invoice_schedule", "arguments": body("cus_x")},
                    key=tenant.key_with(["invoices:read"]))
    assert response.status_code == 403 and 'scope="invoices:write"' in response.headers["www-authenticate"]


def test_in_the_view_the_first_invoice_is_shown_and_confirm_creates_once(client, tenant):
    session = initialize(client, tenant.key, APPS)
    asked = call_in(client, tenant, session, "create_invoice_schedule", **body(globex(tenant)["id"]))
    shown = asked["structuredContent"]
    assert shown["confirmation_required"] is True and shown["action"] == "schedule"
    assert shown["question"] == QUESTION.format(mode="as drafts to review (nothing is sent)")
    assert shown["invoice"].startswith("cus_")
    assert (shown["data"]["object"], shown["data"]["formatted"]["total"]) == ("invoice_preview", "2,500.00 EUR")
    assert schedules_of(tenant) == []
    done = confirm(client, tenant, session, asked)
    assert done["structuredContent"]["object"] == "invoice_schedule"
    assert len(schedules_of(tenant)) == 1
    again = confirm(client, tenant, session, asked)  # the token works once
    assert again["isError"] is True and len(schedules_of(tenant)) == 1


def test_a_retried_create_with_its_key_creates_once(client, tenant):
    arguments = {**body(globex(tenant)["id"]), "idempotency_key": "sched-retry"}
    first = structured(client, tenant.key, "create_invoice_schedule", **arguments)
    again = structured(client, tenant.key, "create_invoice_schedule", **arguments)
    assert again["id"] == first["id"] and len(schedules_of(tenant)) == 1


# --- list, pause, resume, cancel ------------------------------------------------------------------------

def test_list_filters_by_status_and_customer_and_pages(client, tenant):
    first, second = created(tenant), created(tenant)
    assert tenant.post(f"/invoice-schedules/{first['id']}/pause", json={}).status_code == 200
    reader = tenant.key_with(["invoices:read"])
    assert [s["id"] for s in structured(client, reader, "list_invoice_schedules")["data"]] == [second["id"], first["id"]]
    assert [s["id"] for s in structured(client, reader, "list_invoice_schedules", status="paused")["data"]] == [
        first["id"]]
    assert [s["id"] for s in structured(client, reader, "list_invoice_schedules",
                                        customer=second["customer"])["data"]] == [second["id"]]
    page = structured(client, reader, "list_invoice_schedules", limit=1)
    rest = structured(client, reader, "list_invoice_schedules", limit=1, cursor=page["next_cursor"])
    assert [s["id"] for s in page["data"] + rest["data"]] == [second["id"], first["id"]]
    error = error_of(call(client, reader, "list_invoice_schedules", status="sleeping"))
    assert error["code"] == "validation" and error["errors"][0]["path"] == "status"


def test_pausing_and_resuming_act_at_once_and_refuse_as_rest_does(client, app, tenant):
    schedule = created(tenant)
    person = Person("accept")
    paused = ask(client, app, tenant.key, person, "pause_invoice_schedule",
                 {"schedule": schedule["id"], "reason": "Client on holiday"}).structured_content
    assert person.asked == []  # reversible, no money moves, nobody is told: not asked
    assert (paused["status"], paused["pause_reason"], paused["next_run"]) == ("paused", "Client on holiday", None)
    again = error_of(call(client, tenant.key, "pause_invoice_schedule", schedule=schedule["id"]))
    rest = tenant.post(f"/invoice-schedules/{schedule['id']}/pause", json={}).json()
    assert again == {"code": rest["code"], "detail": rest["detail"]} and again["code"] == "invalid_state"
    resumed = structured(client, tenant.key, "resume_invoice_schedule", schedule=schedule["id"], skip_missed=True)
    assert (resumed["status"], resumed["pause_reason"], resumed["next_run"]) == ("active", None, schedule["next_run"])


def test_resuming_needs_the_scopes_of_the_schedules_mode(client, tenant):
    schedule = created(tenant, mode="finalize")
    assert tenant.post(f"/invoice-schedules/{schedule['id']}/pause", json={}).status_code == 200
    writer = tenant.key_with(["invoices:read", "invoices:write"])
    assert error_of(call(client, writer, "resume_invoice_schedule", schedule=schedule["id"]))["code"] == "forbidden"


def test_cancelling_asks_first_and_ends_the_schedule(client, app, tenant):
    schedule = created(tenant)
    person = Person("accept")
    result = ask(client, app, tenant.key, person, "cancel_invoice_schedule", {"schedule": schedule["id"]})
    assert person.asked == ["Cancel the invoice schedule for Globex Corp, on the 1st of every month, from 2027-01-01, "
                            "12 times (0 invoices made so far, the next on 1 Jan 2027)? No further invoices are made, "
                            "for good: it cannot be resumed. The invoices made stay."]
    assert person.titles == ["Yes, cancel it"]
    cancelled = result.structured_content
    assert (cancelled["status"], cancelled["next_run"]) == ("cancelled", None) and cancelled["cancelled_at"]
    # Cancelled already: no question, REST's refusal.
    person = Person("accept")
    result = ask(client, app, tenant.key, person, "cancel_invoice_schedule", {"schedule": schedule["id"]})
    rest = tenant.post(f"/invoice-schedules/{schedule['id']}/cancel", json={}).json()
    assert person.asked == [] and json.loads(result.content[0].text) == {"code": rest["code"], "detail": rest["detail"]}


def test_declining_a_cancel_leaves_the_schedule_active(client, app, tenant):
    schedule = created(tenant)
    result = ask(client, app, tenant.key, Person("decline"), "cancel_invoice_schedule", {"schedule": schedule["id"]})
    assert result.structured_content["declined"] is True and result.structured_content["action"] == "cancel_schedule"
    assert schedules_of(tenant)[0]["status"] == "active"


def test_a_schedule_paused_while_the_person_reads_is_asked_about_again(client, app, tenant):
    schedule = created(tenant)

    def meanwhile():
        assert tenant.post(f"/invoice-schedules/{schedule['id']}/pause", json={}).status_code == 200

    person = Person("accept", meanwhile=meanwhile)
    result = ask(client, app, tenant.key, person, "cancel_invoice_schedule", {"schedule": schedule["id"]})
    assert [question.split("(")[1].split(")")[0] for question in person.asked] == [
        "0 invoices made so far, the next on 1 Jan 2027", "0 invoices made so far, paused"]
    assert result.structured_content["status"] == "cancelled"


def test_in_the_view_a_cancel_shows_the_schedule(client, tenant):
    schedule = created(tenant)
    session = initialize(client, tenant.key, APPS)
    asked = call_in(client, tenant, session, "cancel_invoice_schedule", schedule=schedule["id"])
    shown = asked["structuredContent"]
    assert (shown["action"], shown["invoice"], shown["data"]["object"]) == ("cancel_schedule", schedule["id"],
                                                                            "invoice_schedule")
    assert confirm(client, tenant, session, asked)["structuredContent"]["status"] == "cancelled"


def test_another_accounts_schedule_is_not_found(client, tenant, other_tenant):
    theirs = created(other_tenant)
    for tool in ("pause_invoice_schedule", "resume_invoice_schedule", "cancel_invoice_schedule"):
        assert error_of(call(client, tenant.key, tool, schedule=theirs["id"]))["code"] == "not_found", tool
