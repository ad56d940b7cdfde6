"""The web pages' templates: this package's `templates/`, then the shared layout of `pages`."""

from pathlib import Path

from starlette.responses import Response

from core.base.money import format_money
from pages.render import Templates
from pages.routing import Visit

templates = Templates(Path(__file__).parent / "templates")
templates.environment.filters["money"] = format_money
render = templates.render


def not_found(visit: Visit, what: str, back: str) -> Response:
    """404 for an id that does not exist or belongs to another account (never telling which)."""
    return render(visit.request, "error.html", status_code=404, title=f"No such {what}",
                  message=f"This {what} does not exist, or belongs to another account.",
                  back_url=back, back_label="Back to the list")


def notice_of(visit: Visit, notices: dict[str, str]) -> str | None:
    """The message a page shows after an action, chosen by the `notice` code in its query string
    (a code, never reflected text)."""
    return notices.get(visit.request.query_params.get("notice", ""))
