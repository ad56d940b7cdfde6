"""The web pages' templates: this package's `templates/`, then the shared layout of `pages`; `ops`, the
operations whose actions pages offer."""

from pathlib import Path
from types import SimpleNamespace

from starlette.responses import Response

from core.base.money import format_money
from operations import credit_notes, customers, invoices, payments, products, reminders, schedules
from operations.pipeline import Operation
from pages.render import Templates
from pages.routing import Visit

# The operations a page may offer, by name: a page asks `may(ops.send_invoice)` of the operation its
# action runs, so what that operation declares (its scope) decides whether the action is shown.
OFFERED = (credit_notes, customers, invoices, payments, products, reminders, schedules)
ops = SimpleNamespace(**{value.name: value for module in OFFERED for value in vars(module).values()
                         if isinstance(value, Operation)})

templates = Templates(Path(__file__).parent / "templates")
templates.environment.filters["money"] = format_money
templates.environment.globals["ops"] = ops
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
