"""Receivables in the dashboard: per currency the outstanding and overdue totals and the aging buckets
(bars with their figures and counts beside them), per customer largest first, a page at a time, each
linking to their invoices; the empty state. Read through the same operation as `GET /receivables`
(tests/api/test_receivables.py covers the sums themselves)."""

from __future__ import annotations

import re
from datetime import timedelta

from core.base.clock import today
from tests.api.invoicing import adhoc, customer, draft, open_invoice, paid_part, pay
from tests.conftest import make_tenant


def owed(tenant, amount: int, days_past_due: int | None, *, currency: str = "USD",
         customer_id: str | None = None) -> dict:
    """An open invoice of `amount` (no tax), due `days_past_due` days before today (None: no due date)."""
    due = None if days_past_due is None else today() - timedelta(days=days_past_due)
    issued = min(today(), due) if due is not None else today()
    return open_invoice(tenant, customer_id=customer_id or customer(tenant)["id"], currency=currency,
                        issue_date=issued.isoformat(), due_date=due.isoformat() if due else None,
                        items=[adhoc("Work", amount)])


def aging(page: str, currency: str) -> dict[str, tuple[str, str, str, int]]:
    """The chart of `currency` as shown: bucket label → (bar width, percent, amount, invoices)."""
    section = page.split(f'id="currency-{currency}-h"')[1].split("</section>")[0]
    rows = re.findall(r'<th scope="row">([^<]+)</th>\s*<td class="share">(.*?)</td>\s*<td class="num">([^<]+)</td>'
                      r'\s*<td class="num count">(\d+)</td>', section, re.S)
    shown = {}
    for label, bar, amount, invoices in rows:
        width = re.search(r'<rect class="bar-(?!track)[a-z0-9_]+" width="([^"]+)"', bar)
        percent = re.search(r"<span>(\d+) %</span>", bar).group(1)
        shown[label] = (width.group(1) if width else "0", percent, amount, int(invoices))
    return shown


def customer_rows(page: str) -> list[str]:
    return re.findall(r'<td data-label="Customer"><a href="/invoices\?customer=(cus_[0-9a-f]+)">', page)


def test_the_page_needs_sign_in_and_is_in_the_navigation(person, other_browser):
    response = other_browser.get("/receivables")
    assert response.status_code == 303 and response.headers["location"].startswith("/login?next=")
    page = person.get("/receivables").text
    assert '<a href="/receivables" aria-current="page">Receivables</a>' in page
    assert '<a href="/receivables">Receivables</a>' in person.get("/invoices").text


def test_nothing_owed_is_said_plainly(person, tenant):
    draft(tenant)  # drafts, paid and void invoices owe nothing
    pay(tenant, open_invoice(tenant)["id"])
    response = person.get("/receivables")
    assert response.status_code == 200
    assert "Nothing is owed: no invoice is open." in response.text
    assert 'class="aging"' not in response.text and "By customer" not in response.text


def test_the_buckets_show_their_figures_and_counts(person, tenant):
    owed(tenant, 1000, -5)  # not yet due
    part = owed(tenant, 2000, 10)
    paid_part(tenant, part["id"], 500)  # 15.00 of it remains
    owed(tenant, 3000, 30)
    owed(tenant, 4000, 45)
    owed(tenant, 5000, 100)
    owed(tenant, 600, None)  # no due date: not yet due
    pay(tenant, owed(tenant, 9900, 70)["id"])  # paid: not owed
    page = person.get("/receivables").text
    section = page.split('id="currency-USD-h"')[1].split("</section>")[0]
    assert "Owed in USD" in page
    assert "<strong>151.00 USD</strong> on 6 invoices" in section
    assert "135.00 USD on 4 invoices" in section  # overdue
    assert aging(page, "USD") == {
        "Not yet due": ("10.6", "11", "16.00 USD", 2),
        "1–30 days overdue": ("29.8", "30", "45.00 USD", 2),
        "31–60 days overdue": ("26.49", "26", "40.00 USD", 1),
        "61–90 days overdue": ("0", "0", "0.00 USD", 0),
        "Over 90 days overdue": ("33.11", "33", "50.00 USD", 1),
    }
    assert 'aria-hidden="true" focusable="false"' in section  # the bars are drawing; the figures say it


def test_customers_are_listed_largest_first_linking_to_their_invoices(person, tenant):
    small, large = customer(tenant, name="Small Shop"), customer(tenant, name="Large Corp")
    owed(tenant, 1000, 5, customer_id=small["id"])
    owed(tenant, 7000, 40, customer_id=large["id"])
    owed(tenant, 2000, -1, customer_id=large["id"])
    page = person.get("/receivables").text
    assert customer_rows(page) == [large["id"], small["id"]]
    row = page.split(f'customer={large["id"]}">Large Corp</a>')[1].split("</tr>")[0]
    assert "<strong>90.00 USD</strong><small class=\"muted\">2 invoices</small>" in row
    assert "70.00 USD<small" in row  # overdue
    assert re.search(r'data-label="Not yet due" class="num"><span>20\.00<small', row)
    assert re.search(r'data-label="31–60 days overdue" class="num"><span>70\.00<small', row)
    listed = person.get(f"/invoices?customer={large['id']}").text
    assert listed.count('data-label="Number"') == 2


def test_the_customers_page_with_the_cursor(person, tenant):
    for amount in range(1000, 1026):  # 26 customers, one invoice each: 25 a page
        owed(tenant, amount, 3)
    first = person.get("/receivables").text
    assert len(customer_rows(first)) == 25
    next_link = re.search(r'href="(/receivables\?cursor=[^"]+)"', first).group(1).replace("&amp;", "&")
    second = person.get(next_link)
    assert second.status_code == 200
    assert len(customer_rows(second.text)) == 1 and "10.00 USD" in second.text.split("By customer")[1]
    assert '<a href="/receivables">First page</a>' in second.text
    assert 'href="/receivables?cursor=' not in second.text  # the last page
    assert "<strong>263.25 USD</strong> on 26 invoices" in second.text  # every page has the totals


def test_a_currency_is_chosen_and_each_is_charted_apart(person, tenant):
    owed(tenant, 1000, 5)
    owed(tenant, 2500, 95, currency="EUR")
    page = person.get("/receivables").text
    assert aging(page, "EUR")["Over 90 days overdue"] == ("100.0", "100", "25.00 EUR", 1)
    assert aging(page, "USD")["1–30 days overdue"] == ("100.0", "100", "10.00 USD", 1)
    assert '<a href="/receivables?currency=EUR">Only customers who owe in EUR</a>' in page
    only = person.get("/receivables?currency=EUR").text
    assert 'id="currency-EUR-h"' in only and 'id="currency-USD-h"' not in only
    assert len(customer_rows(only)) == 1 and '<a href="/receivables">Every currency</a>' in only


def test_a_bad_cursor_or_currency_is_explained_not_a_crash(person, tenant):
    owed(tenant, 1000, 5)
    for query in ("cursor=nope", "currency=XYZ"):
        response = person.get(f"/receivables?{query}")
        assert response.status_code == 200 and 'role="alert"' in response.text
    assert "is not a cursor of this list" in person.get("/receivables?cursor=nope").text


def test_only_the_accounts_own_invoices_count(client, person, tenant):
    owed(make_tenant(client), 99900, 10)
    owed(tenant, 1000, 10)
    page = person.get("/receivables").text
    assert "999.00" not in page and len(customer_rows(page)) == 1
