"""The dashboard offers a member only the actions their role allows: each page's links, buttons and forms
are shown to exactly the roles whose scopes (core.access.roles) allow the operation they run. A page
that is a form, opened by a role that cannot use it, says so at its top and has no form to submit (a
record's details stay readable, disabled). The operations still refuse what the role does not allow
(tests/web/test_member_pages.py)."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from jinja2 import UndefinedError

from core.access import accounts, memberships
from core.access.memberships import Business
from core.access.roles import ROLES, allows
from core.base import db
from pages.render import permissions
from tests.api.invoicing import adhoc, customer, draft, open_invoice, paid_part, price
from tests.members import join
from tests.web.test_dashboard_schedules import schedule_of
from tests.web.test_member_pages import _as
from web.rendering import ops, templates

TEMPLATES = Path(templates.environment.loader.loaders[0].searchpath[0])


def _browser(client, tenant, role: str):
    """The tenant's owner, or a new member with `role`, signed in to the dashboard."""
    return _as(client, tenant.user_email if role == "owner" else join(tenant, role).user_email)


def _business_name(tenant) -> str:
    with db.transaction() as session:
        owner = accounts.user_by_email(session, tenant.user_email)
        return next(b.name for b in memberships.businesses_of(session, owner.id) if b.account_id == tenant.account_id)


# --- what each page is made from ------------------------------------------------------------------

def _nothing(tenant) -> dict:
    return {}


def _a_customer(tenant) -> dict:
    return {"customer": customer(tenant)["id"]}


def _open(tenant) -> dict:
    """An open invoice, part paid (a payment to reverse), with something left to credit and to remind of."""
    invoice = open_invoice(tenant, items=[adhoc("Consulting", 10000)])
    return {"id": invoice["id"], "payment": paid_part(tenant, invoice["id"], 1000)["id"]}


def _draft(tenant) -> dict:
    invoice = draft(tenant)
    return {"id": invoice["id"], "line": invoice["lines"]["data"][0]["id"]}


def _product(tenant) -> dict:
    made = price(tenant)
    return {"product": made["product"], "price": made["id"]}


def _schedule(mode: str):
    def made(tenant) -> dict:
        return {"schedule": schedule_of(tenant, mode=mode)["id"]}
    return made


def _credit_note(tenant) -> dict:
    invoice = open_invoice(tenant, items=[adhoc("Consulting", 10000)])
    line = tenant.get(f"/invoices/{invoice['id']}").json()["data"]["lines"]["data"][0]["id"]
    note = tenant.post("/credit-notes", json={"invoice": invoice["id"], "lines": [{"invoice_line": line}]}, idem=True)
    assert note.status_code == 201, note.text
    return {"note": note.json()["data"]["id"]}


SCHEDULE_ACTIONS = ('action="/schedules/{schedule}/run"', 'action="/schedules/{schedule}/pause"',
                    'action="/schedules/{schedule}/cancel"')

# page: (what it is made from, its path, {what offers an action: the scope(s) the action takes})
PAGES = {
    "invoices": (_nothing, "/invoices", {'href="/invoices/new"': "invoices:write"}),
    "open invoice": (_open, "/invoices/{id}", {
        'href="/invoices/{id}/send"': "invoices:send",
        'href="/invoices/{id}/remind"': "invoices:send",
        'action="/invoices/{id}/reminders"': "invoices:send",
        'href="#record-payment"': "payments:write",
        'action="/invoices/{id}/payments"': "payments:write",
        'href="/invoices/{id}/pay"': "payments:write",
        'href="/invoices/{id}/payments/reverse?payment={payment}"': "payments:write",
        'href="/invoices/{id}/void"': "invoices:finalize",
        'href="/invoices/{id}/credit-note"': "credit_notes:write",
    }),
    "draft": (_draft, "/invoices/{id}", {
        'href="/invoices/{id}/finalize"': "invoices:finalize",
        'href="/invoices/{id}/send"': "invoices:send",
        'href="/invoices/{id}/delete"': "invoices:write",
        'action="/invoices/{id}/lines"': "invoices:write",
        'action="/invoices/{id}/lines/{line}"': "invoices:write",
        'action="/invoices/{id}/lines/{line}/remove"': "invoices:write",
        'action="/invoices/{id}"': "invoices:write",
    }),
    "credit note": (_credit_note, "/credit-notes/{note}", {
        'href="/credit-notes/{note}/send"': "invoices:send",
        'href="/credit-notes/{note}/void"': "credit_notes:write",
    }),
    "customers": (_nothing, "/customers", {'href="/customers/new"': "clients:write"}),
    "customer": (_a_customer, "/customers/{customer}", {
        'action="/customers/{customer}"': "clients:write",
        'action="/customers/{customer}/archive"': "clients:write",
        'href="/invoices/new?customer={customer}"': "invoices:write",
    }),
    "products": (_nothing, "/products", {'href="/products/new"': "products:write"}),
    "product": (_product, "/products/{product}", {
        'action="/products/{product}"': "products:write",
        'action="/products/{product}/prices"': "products:write",
        'action="/prices/{price}/archive"': "products:write",
        'action="/products/{product}/archive"': "products:write",
    }),
    "reminder settings": (_nothing, "/settings/reminders", {
        'action="/settings/reminders"': "invoices:send",
        ">Save reminders</button>": "invoices:send",
    }),
    "schedules": (_nothing, "/schedules", {'href="/schedules/new"': "invoices:write"}),
    "draft schedule": (_schedule("draft"), "/schedules/{schedule}",
                       dict.fromkeys(SCHEDULE_ACTIONS, ("invoices:write",))),
    "finalizing schedule": (_schedule("finalize"), "/schedules/{schedule}",
                            dict.fromkeys(SCHEDULE_ACTIONS, ("invoices:write", "invoices:finalize"))),
}


def _allowed(role: str, scopes: str | tuple[str, ...]) -> bool:
    return all(allows(role, scope) for scope in ((scopes,) if isinstance(scopes, str) else scopes))


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name", PAGES)
def test_a_page_offers_exactly_the_actions_the_role_allows(client, tenant, name, role):
    made_from, path, actions = PAGES[name]
    ids = made_from(tenant)
    page = _browser(client, tenant, role).get(path.format(**ids))
    assert page.status_code == 200
    offered = {marker for marker in actions if marker.format(**ids) in page.text}
    assert offered == {marker for marker, scopes in actions.items() if _allowed(role, scopes)}


# --- pages that are a form --------------------------------------------------------------------------

# page: (what it is made from, its path, the scope(s) its form takes, what the role would be doing, its form)
FORM_PAGES = {
    "new draft": (_a_customer, "/invoices/new", "invoices:write", "creating drafts", 'action="/invoices/new"'),
    "new customer": (_nothing, "/customers/new", "clients:write", "creating customers", 'action="/customers/new"'),
    "new product": (_nothing, "/products/new", "products:write", "creating products", 'action="/products/new"'),
    "new schedule": (_a_customer, "/schedules/new", "invoices:write", "making schedules", 'action="/schedules/new"'),
    "finalize": (_draft, "/invoices/{id}/finalize", "invoices:finalize", "finalizing invoices",
                 'action="/invoices/{id}/finalize"'),
    "delete draft": (_draft, "/invoices/{id}/delete", "invoices:write", "deleting drafts",
                     'action="/invoices/{id}/delete"'),
    "send": (_open, "/invoices/{id}/send", "invoices:send", "sending invoices", 'action="/invoices/{id}/send"'),
    "remind": (_open, "/invoices/{id}/remind", "invoices:send", "sending payment reminders",
               'action="/invoices/{id}/remind"'),
    "mark paid": (_open, "/invoices/{id}/pay", "payments:write", "marking invoices paid",
                  'action="/invoices/{id}/pay"'),
    "void": (_open, "/invoices/{id}/void", "invoices:finalize", "voiding invoices", 'action="/invoices/{id}/void"'),
    "reverse a payment": (_open, "/invoices/{id}/payments/reverse?payment={payment}", "payments:write",
                          "reversing payments", 'action="/invoices/{id}/payments/reverse"'),
    "credit note": (_open, "/invoices/{id}/credit-note", "credit_notes:write", "issuing credit notes",
                    'action="/invoices/{id}/credit-note"'),
    "void a credit note": (_credit_note, "/credit-notes/{note}/void", "credit_notes:write", "voiding credit notes",
                           'action="/credit-notes/{note}/void"'),
    "send a credit note": (_credit_note, "/credit-notes/{note}/send", "invoices:send", "sending credit notes",
                           'action="/credit-notes/{note}/send"'),
    "cancel a schedule": (_schedule("finalize"), "/schedules/{schedule}/cancel", ("invoices:write", "invoices:finalize"),
                          "cancelling this schedule", 'action="/schedules/{schedule}/cancel"'),
    "customer": (_a_customer, "/customers/{customer}", "clients:write", "changing customers",
                 'action="/customers/{customer}"'),
    "product": (_product, "/products/{product}", "products:write", "changing products and prices",
                'action="/products/{product}"'),
    "reminder settings": (_nothing, "/settings/reminders", "invoices:send", "changing the reminder policy",
                          'action="/settings/reminders"'),
}


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name", FORM_PAGES)
def test_a_form_page_says_plainly_when_the_role_does_not_allow_it(client, tenant, name, role):
    made_from, path, scopes, doing, form = FORM_PAGES[name]
    ids = made_from(tenant)
    page = _browser(client, tenant, role).get(path.format(**ids))
    assert page.status_code == 200
    said = f"Your role in {_business_name(tenant)} ({role}) does not allow {doing}."
    if _allowed(role, scopes):
        assert form.format(**ids) in page.text and "does not allow" not in page.text
    else:
        assert said in page.text and form.format(**ids) not in page.text and 'type="submit"' not in page.text.split(
            "<main", 1)[1]


@pytest.mark.parametrize("path", ["/customers/{customer}", "/settings/reminders"])
def test_a_role_that_cannot_change_a_record_still_reads_it(client, tenant, path):
    ids = _a_customer(tenant)
    page = _browser(client, tenant, "viewer").get(path.format(**ids)).text
    read_only = page.split('<fieldset disabled class="read-only">', 1)
    assert len(read_only) == 2
    assert ('value="Jane Doe"' if "customers" in path else 'name="steps.0.subject"') in read_only[1]


@pytest.mark.parametrize(("role", "modes"), [("owner", {"draft", "finalize", "finalize_and_send"}),
                                             ("sales", {"draft"})])
def test_a_new_schedule_offers_the_modes_the_role_allows(client, tenant, role, modes):
    _a_customer(tenant)
    page = _browser(client, tenant, role).get("/schedules/new").text
    offered = {mode for mode in ("draft", "finalize", "finalize_and_send") if f'name="mode" value="{mode}"' in page}
    assert offered == modes


def test_the_operations_still_refuse_what_the_role_does_not_allow(client, tenant):
    ids = _open(tenant)
    viewer = _browser(client, tenant, "viewer")
    refused = viewer.submit(f"/invoices/{ids['id']}/reminders", {"paused": "true"}, page=f"/invoices/{ids['id']}")
    assert refused.status_code == 403 and "a role that does not allow invoices:send" in refused.text


def test_a_credit_note_previewed_by_a_role_that_cannot_issue_it_offers_no_issuing(client, tenant):
    invoice = open_invoice(tenant, items=[adhoc("Consulting", 10000)])
    viewer = _browser(client, tenant, "viewer")
    path = f"/invoices/{invoice['id']}/credit-note"
    preview = viewer.submit(path, {"step": "preview", "scope": "whole", "destination": "credit"}, page=path)
    assert preview.status_code == 200 and "Issue this credit note" in preview.text  # previewing is reading
    assert "does not allow issuing credit notes." in preview.text and 'value="issue"' not in preview.text


def test_every_operation_a_template_asks_about_exists():
    """A page asks `may(ops.<name>)` of the operation its action runs; a misspelt name would only fail
    when that branch renders, so every name the templates use is checked here."""
    asked = {name for template in TEMPLATES.glob("*.html") for name in re.findall(r"\bops\.(\w+)", template.read_text())}
    assert asked and asked <= set(vars(ops))


def test_may_follows_the_operation_and_fails_loudly_on_an_unknown_one():
    may = permissions(Business(account_id=uuid.uuid4(), name="Acme", role="sales"))
    assert may(ops.create_invoice) and not may(ops.send_invoice) and not may(ops.create_invoice, ops.send_invoice)
    with pytest.raises(UndefinedError):
        templates.environment.from_string("{{ may(ops.send_invoce) }}").render(may=may)
