"""Settings → Connected apps: what each app may do, the limits the person set (editable), what it did.

An app's page (reached through any of its sign-ins) shows the app's limits in words, each with how
many actions it took in the last 24 hours, and a form to change them (the person owns the account:
they may lower, raise or remove a limit); saving changes them on every sign-in of the app. Below, the
app's recent consequential actions through any sign-in, refusals included. An app refused for a
limit links here with the action and the invoice, so the person can raise the limit or finish the
action themselves.
"""

from __future__ import annotations

import uuid
from functools import partial

from starlette.responses import Response
from starlette.routing import Route

from core.access import activity
from core.access.authorization_details import (
    MAX_PER_DAY,
    VERBS,
    InvoiceActions,
    as_typed,
    typed_amount,
    typed_count,
)
from core.access.connected_apps import ConnectedApps, Grant
from core.access.scopes import SCOPE_DESCRIPTIONS
from core.base import executor, ids
from core.base.db import transaction
from core.base.errors import NotFound
from core.base.money import format_money
from core.billing import delegated_actions
from core.models import Invoice
from pages.routing import Visit, page, redirect
from web.acting import principal_of
from web.rendering import not_found, notice_of, render

NOTICES = {
    "app_disconnected": "The app is disconnected. Its tokens stop working on its next request.",
    "limits_saved": "The limits are saved. They apply from the app's next request.",
}


def apps(visit: Visit, directory: ConnectedApps) -> Response:
    with transaction() as session:
        connected = list(directory.connected_apps(session, visit.user.id, visit.account_id))
    return render(visit.request, "apps.html", apps=connected, scope_descriptions=SCOPE_DESCRIPTIONS,
                  notice=notice_of(visit, NOTICES))


def disconnect_app(visit: Visit, directory: ConnectedApps) -> Response:
    client_id = visit.text("client_id", 2100)
    with transaction() as session:
        found = bool(client_id) and bool(directory.disconnect(session, visit.user.id, visit.account_id, client_id))
        if found:
            activity.record(session, principal_of(visit), "app.disconnected", f"Disconnected the app {client_id}")
    if not found:
        return not_found(visit, "connected app", "/settings/apps")
    return redirect("/settings/apps?notice=app_disconnected")


def _grant_id(visit: Visit) -> uuid.UUID | None:
    try:
        return uuid.UUID(visit.path_params["grant_id"])
    except ValueError:
        return None


def _asked(visit: Visit, session, account_id: uuid.UUID) -> dict | None:
    """The action an app was refused, when the page was opened from its refusal."""
    action, invoice_ref = visit.request.query_params.get("action"), visit.request.query_params.get("invoice")
    if action not in VERBS or not invoice_ref:
        return None
    try:
        row_id = ids.parse("invoice", invoice_ref, what="invoice")
    except NotFound:
        return None
    invoice = session.get(Invoice, row_id)
    if invoice is None or invoice.account_id != account_id:
        return None
    return {"verb": VERBS[action], "label": invoice.number or "a draft", "total": format_money(invoice.total, invoice.currency),
            "href": f"/invoices/{ids.public_id('invoice', invoice.id)}"}


def app_detail(visit: Visit, directory: ConnectedApps, *, errors: dict | None = None, status_code: int = 200) -> Response:
    grant_id = _grant_id(visit)
    with transaction() as session:
        grant = directory.grant(session, visit.user.id, grant_id) if grant_id else None
        if grant is None:
            return not_found(visit, "connected app", "/settings/apps")
        account_id = grant.account_id  # the business the person chose for it on the consent page
        actions = delegated_actions.recent(session, account_id, grant.client_id, visit.user.id)
        asked = _asked(visit, session, account_id)
        rows = _rows(session, grant, account_id, visit.user.id)
    return render(visit.request, "app.html", status_code=status_code, grant=grant, actions=actions, asked=asked,
                  rows=rows, errors=errors or {}, notice=notice_of(visit, NOTICES), money=format_money)


def _rows(session, grant: Grant, account_id: uuid.UUID, user_id: uuid.UUID) -> list[dict]:
    rows = []
    for index, detail in enumerate(grant.authorization_details or ()):
        amount, per_day = as_typed(detail)
        done = executor.within(session, delegated_actions.done_today, account_id, grant.client_id, user_id, detail.actions)
        rows.append({"index": index, "words": detail.words(), "currency": detail.currency or "",
                     "amount": amount, "per_day": per_day,
                     "today": f"{done} of {detail.max_per_day}" if detail.max_per_day is not None else str(done)})
    return rows


def update_limits(visit: Visit, directory: ConnectedApps) -> Response:
    grant_id = _grant_id(visit)
    with transaction() as session:
        grant = directory.grant(session, visit.user.id, grant_id) if grant_id else None
    if grant is None:
        return not_found(visit, "connected app", "/settings/apps")
    errors: dict[str, str] = {}
    details = [_detail(visit, index, detail, errors) for index, detail in enumerate(grant.authorization_details or ())]
    if errors:
        return app_detail(visit, directory, errors=errors, status_code=422)
    with transaction() as session:
        directory.set_limits(session, visit.user.id, grant.id, tuple(details) if details else None)
        # in the log of the business the app acts for, which its refusal's link may name while the
        # dashboard acts for another of the person's businesses
        activity.by_person(session, grant.account_id, visit.user.id, "app.limits_changed",
                           f"Changed the limits of {grant.app_name}")
    return redirect(f"/settings/apps/{grant.id}?notice=limits_saved")


def _detail(visit: Visit, index: int, detail: InvoiceActions, errors: dict[str, str]) -> InvoiceActions:
    amount_text = visit.text(f"detail{index}.amount", 40)
    currency = visit.text(f"detail{index}.currency", 3).upper() or detail.currency or ""
    per_day_text = visit.text(f"detail{index}.per_day", 10)
    max_amount = typed_amount(amount_text, currency) if amount_text else None
    if amount_text and max_amount is None:
        errors[f"detail{index}.amount"] = f"write an amount in {currency or 'a currency code'}, such as 1000.00"
    max_per_day = typed_count(per_day_text) if per_day_text else None
    if per_day_text and max_per_day is None:
        errors[f"detail{index}.per_day"] = (f"write a whole number up to {MAX_PER_DAY:,}, or leave it empty for no "
                                            "daily limit")
    return InvoiceActions(actions=detail.actions, max_amount=max_amount, max_per_day=max_per_day)


def routes(connected_apps: ConnectedApps) -> list[Route]:
    return [
        page("/settings/apps", get=partial(apps, directory=connected_apps)),
        page("/settings/apps/disconnect", post=partial(disconnect_app, directory=connected_apps)),
        page("/settings/apps/{grant_id}", get=partial(app_detail, directory=connected_apps),
             post=partial(update_limits, directory=connected_apps)),
    ]
