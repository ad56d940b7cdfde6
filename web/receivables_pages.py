"""Receivables in the dashboard: what customers owe on open invoices, per currency (the totals and the
aging buckets, drawn as bars beside their figures) and per customer (largest first, a page at a time),
read by the `get_receivables` operation as the signed-in person (web.acting), as `GET /receivables` reads
them."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from starlette.responses import Response
from starlette.routing import Route

from core.base.errors import ValidationFailed
from core.base.money import format_money
from operations import receivables as receivables_operations
from pages.routing import Visit, errors_by_field, page
from web.acting import act
from web.rendering import render

# How each aging bucket of core.billing.receivables reads, youngest first.
BUCKET_LABELS = {"current": "Not yet due", "days_1_30": "1–30 days overdue", "days_31_60": "31–60 days overdue",
                 "days_61_90": "61–90 days overdue", "days_over_90": "Over 90 days overdue"}
# The same as column headings of the table by customer, where the currency is said once, in the row.
COLUMN_LABELS = {"current": "Not yet due", "days_1_30": "1–30 days", "days_31_60": "31–60 days",
                 "days_61_90": "61–90 days", "days_over_90": "Over 90 days"}
# A bar of a bucket with something in it is drawn at least this wide (in % of the chart), so it shows.
THINNEST_BAR = 0.5


@dataclass(frozen=True)
class Bar:
    """One bucket of a currency's chart: its figures and the share of what is outstanding it holds."""

    bucket: str
    label: str
    amount: int
    invoices: int
    percent: int  # rounded, for the text beside the bar
    width: float  # of the bar, in % of the chart's width


def bars_of(figures: dict) -> list[Bar]:
    """The chart of a currency's (or a customer's) `buckets`: each bucket's share of `outstanding`."""
    outstanding = figures["outstanding"]
    bars = []
    for bucket in figures["buckets"]:
        share = bucket["amount"] * 100 / outstanding if outstanding else 0.0
        bars.append(Bar(bucket=bucket["bucket"], label=BUCKET_LABELS[bucket["bucket"]], amount=bucket["amount"],
                        invoices=bucket["invoices"], percent=round(share),
                        width=round(max(share, THINNEST_BAR) if bucket["amount"] else 0.0, 2)))
    return bars


def figure(amount: int, currency: str) -> str:
    """An amount as `format_money` writes it, without the currency code: `2,500.50`."""
    return format_money(amount, currency).removesuffix(f" {currency}")


def receivables(visit: Visit) -> Response:
    params = visit.request.query_params
    currency = params.get("currency", "")[:3].upper()
    cursor = params.get("cursor", "")[:2000]
    errors: dict[str, str] = {}
    try:
        result = act(visit, receivables_operations.get_receivables, query={"currency": currency, "cursor": cursor})
    except ValidationFailed as exc:
        errors = errors_by_field(exc.errors) if exc.errors else {"": exc.detail}
        result = {"data": {"as_of": None, "currencies": [], "customers": []}, "next_cursor": None}
    data = result["data"]
    chosen = {"currency": currency} if currency else {}
    next_url = "/receivables?" + urlencode(chosen | {"cursor": result["next_cursor"]}) if result["next_cursor"] else None
    first_url = "/receivables" + (f"?{urlencode(chosen)}" if chosen else "") if cursor else None
    return render(visit.request, "receivables.html", data=data, currencies=[(row, bars_of(row)) for row in data["currencies"]],
                  customers=data["customers"], currency=currency, errors=errors, bucket_labels=BUCKET_LABELS,
                  column_labels=COLUMN_LABELS, figure=figure,
                  next_url=next_url, first_url=first_url, paged=bool(cursor))


def routes() -> list[Route]:
    return [page("/receivables", get=receivables)]
