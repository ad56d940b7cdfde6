"""Routes of `authz`, mounted by service/app.py on the service origin."""

from starlette.routing import BaseRoute


def routes() -> list[BaseRoute]:
    return []
