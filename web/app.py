"""Routes of `web`, mounted by service/app.py on the service origin."""

from starlette.routing import BaseRoute

from web import auth_pages, onboarding, settings_pages, public


def routes() -> list[BaseRoute]:
    return [
        *public.routes(),
        *auth_pages.routes(),
        *onboarding.routes(),
        *settings_pages.routes(),
    ]
