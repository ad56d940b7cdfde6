"""Receivables: what customers owe, per currency and per customer, by age."""

from operations import receivables as operations
from rest.framework import Api

api = Api(tag="Invoices")
api.endpoint("GET", "/receivables", operations.get_receivables, summary="Summarize receivables",
             description="What customers owe on open invoices (`amount_due`: total − amount_credited − amount_paid; "
                         "drafts, paid and void invoices owe nothing), as of today (UTC, `as_of`), in minor units. "
                         "`currencies`: per currency (amounts are never added across currencies), the `outstanding` "
                         "total, what is `overdue` (past the due date), how many invoices, and the aging `buckets` "
                         "by days past due: `current` (not yet due, due today, or no due date), `days_1_30`, "
                         "`days_31_60`, `days_61_90`, `days_over_90` (91 days or more). `customers`: the same "
                         "figures per customer and currency (a customer owing in two currencies has two rows), "
                         "largest outstanding first, paginated with `limit` and `cursor`; every page carries all "
                         "the currencies. `currency` narrows both to one currency.")
