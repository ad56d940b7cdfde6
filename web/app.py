"""Routes of `web`, mounted by service/app.py on the service origin."""

from starlette.routing import BaseRoute

from core.access.connected_apps import ConnectedApps
from web import (
    activity_pages,
    app_pages,
    auth_pages,
    business_pages,
    catalog_pages,
    credit_note_pages,
    invoice_actions,
    invoice_lines,
    invoice_pages,
    member_pages,
    onboarding,
    public,
    receivables_pages,
    reminder_pages,
    schedule_pages,
    settings_pages,
)


def routes(connected_apps: ConnectedApps) -> list[BaseRoute]:
    return [
        *public.routes(),
        *auth_pages.routes(),
        *onboarding.routes(),
        *invoice_pages.routes(),
        *invoice_lines.routes(),
        *invoice_actions.routes(),
        *credit_note_pages.routes(),
        *receivables_pages.routes(),
        *schedule_pages.routes(),
        *catalog_pages.routes(),
        *settings_pages.routes(),
        *reminder_pages.routes(),
        *app_pages.routes(connected_apps),
        *business_pages.routes(),
        *member_pages.routes(),
        *activity_pages.routes(),
    ]
