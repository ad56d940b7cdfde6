"""Invoice lines: turning `items[]` input into lines, re-reading prices, and computing totals.

A line is either priced (it references a catalog price, and inherits unit_amount, tax_rate and
the product's name unless the caller overrides them) or ad-hoc (description and unit_amount
given). Priced lines re-read their price every time the draft is saved, so a draft always bills
the price's current amount; finalized invoices keep what they were issued with.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Annotated, Literal

from pydantic import Field, WithJsonSchema
from sqlalchemy import bindparam, select

from core.base import ids, money
from core.base.errors import FieldError, NotFound, ValidationFailed
from core.base.executor import Db
from core.base.validation import LINES_MAX, MAX_SAFE_INTEGER, MULTI_LINE, TEXT_MAX, Input, MinorUnits, Percent, failed
from core.models import Invoice, InvoiceLine, Price, Product

TaxCategory = Literal["S", "Z", "E", "AE", "K", "G", "O"]
EXEMPTION_REASON_MAX = 1000
# Each exempt category's standard wording (and its VATEX code), printed and sent when no reason is given.
EXEMPTION_DEFAULTS = {
    "E": ("VATEX-EU-132", "Exempt from VAT"),
    "AE": ("VATEX-EU-AE", "Reverse charge: VAT to be paid by the customer"),
    "K": ("VATEX-EU-IC", "Intra-community supply exempt from VAT"),
    "G": ("VATEX-EU-G", "Export outside the EU exempt from VAT"),
    "O": ("VATEX-EU-O", "Not subject to VAT"),
}
EXEMPT_CATEGORIES = tuple(EXEMPTION_DEFAULTS)  # a line of these bears no VAT for a stated reason


def given_exemption_reasons(lines: list[dict]) -> dict[str, str]:
    """The reason given for each exempt category, by the first of its lines that gives one (one
    reason per category is allowed: `check_tax_categories`)."""
    given: dict[str, str] = {}
    for line in lines:
        if line.get("tax_exemption_reason"):
            given.setdefault(line.get("tax_category"), line["tax_exemption_reason"])
    return given


def exemption_notes(lines: list[dict]) -> list[str]:
    """Why lines bear no VAT, once per category, as an invoice must state it: "Reverse charge: …"."""
    given = given_exemption_reasons(lines)
    categories = dict.fromkeys(line.get("tax_category") for line in lines if line.get("tax_category") in EXEMPTION_DEFAULTS)
    return [given.get(category) or EXEMPTION_DEFAULTS[category][1] for category in categories]
Unit = Literal["NOS", "PCS", "KGS", "GMS", "LTR", "MTR", "SQF", "SQM", "HRS", "DAY", "MON", "BOX", "SET", "OTH"]
UNIT_CODES: tuple[str, ...] = Unit.__args__
Quantity = Annotated[Decimal, Field(gt=0, max_digits=15, decimal_places=6),
                     WithJsonSchema({"type": "number", "exclusiveMinimum": 0, "default": 1,
                                     "description": "Above 0, at most 6 decimal places; default 1"})]


class ItemFields(Input):
    """One line as the caller describes it (an element of `items`, or POST /invoice-items)."""

    price: str | None = Field(default=None, description="price_ id or UUID; omit for an ad-hoc line",
                              examples=["price_3f9a1c0e5b7d4e2a8c6b4d2f0e1a3c5b"])
    description: Annotated[str | None, MULTI_LINE] = Field(default=None, max_length=TEXT_MAX,
                                    description="Required for ad-hoc lines; defaults to the product name")
    quantity: Quantity = 1  # an int default keeps the documented default a JSON number
    unit: Unit = Field(default="NOS", description="Unit code: NOS (count), HRS (hours), DAY, MON (months), KGS, …",
                       examples=["HRS"])
    unit_amount: MinorUnits | None = Field(
        default=None, examples=[250000, 5000],
        description="Price of one unit in the currency's minor unit (250000 is 2,500.00 USD; 5000 is 5,000 JPY, "
                    "which has no decimals); required for ad-hoc lines, omit to use the price amount")
    discount_percent: Percent = Field(default=Decimal(0), description="0 to 100")
    tax_rate: Percent | None = Field(default=None, description="0 to 100; default 0 for ad-hoc lines, "
                                                               "inherited from the price for priced lines")
    tax_category: TaxCategory | None = Field(
        default=None, description="VAT category for e-invoices (EN 16931 UNCL5305): S standard rate (tax_rate above "
                                  "0); for 0 %: Z zero-rated, E exempt, AE reverse charge, K intra-EU supply, G export, "
                                  "O not subject to VAT. Default: S above 0 %, else Z (O when the business has no "
                                  "VAT number)")
    tax_exemption_reason: Annotated[str | None, MULTI_LINE] = Field(
        default=None, max_length=EXEMPTION_REASON_MAX,
        description="Why the line bears no VAT, for categories E, AE, K, G and O (such as \"Exempt under Article 132 "
                    "of Directive 2006/112/EC\"); default a standard wording of the category")


PRICES, PRODUCTS = Price.__table__, Product.__table__
PRICED = (select(PRICES.c.id, PRICES.c.product_id, PRICES.c.active, PRICES.c.currency, PRICES.c.unit_amount,
                 PRICES.c.tax_rate, PRODUCTS.c.active.label("product_active"), PRODUCTS.c.name.label("product_name"))
          .select_from(PRICES.join(PRODUCTS, PRODUCTS.c.id == PRICES.c.product_id))
          .where(PRICES.c.id == bindparam("price_id"), PRICES.c.account_id == bindparam("account_id")))


def price_ids(items=(), lines=()) -> set[uuid.UUID]:
    """The prices that new lines from `items` and existing `lines` bill (malformed references left out)."""
    named = {ids.try_parse("price", item.price) for item in items if item.price is not None}
    return {price_id for price_id in named | {line.price_id for line in lines} if price_id is not None}


async def price_book(db: Db, account_id: uuid.UUID, wanted: set[uuid.UUID]) -> dict:
    """The account's prices among `wanted`, each with its product's name and whether it is active, by
    id: what pricing a draft's lines reads (a unit of `core.base.executor`)."""
    book = {}
    for price_id in wanted:
        if (row := await db.first(PRICED, {"price_id": price_id, "account_id": account_id})) is not None:
            book[price_id] = row
    return book


def _active_price(book: dict, price_text: str, currency: str | None, path: str):
    """The price a new line bills: active, of an active product, in the invoice currency.
    A price of another account, or none at all, is 404 (as every body reference)."""
    price = book.get(ids.parse("price", price_text, what="price"))
    if price is None:
        raise NotFound(f"No such price: {price_text}")
    if not price.active:
        raise ValidationFailed.at(path, "is archived: restore it or choose another price")
    if not price.product_active:
        raise ValidationFailed.at(path, "belongs to an archived product: restore the product first")
    if price.currency != currency:
        raise ValidationFailed.at(path, f"is in {price.currency} but the invoice is in {currency}")
    return price


def build_line(book: dict, invoice: Invoice, item: ItemFields, *, prefix: str = "",
               line_type: type = InvoiceLine) -> InvoiceLine:
    """A new (unsaved) line of `invoice` (of `line_type`: `InvoiceLine` or its `models.plain`), its price
    found in `book` (`price_book`); field errors name paths under `prefix` (`items.0.`)."""
    line = line_type(account_id=invoice.account_id, invoice_id=invoice.id, quantity=item.quantity,
                       unit=item.unit, discount_percent=item.discount_percent, tax_category=item.tax_category,
                       tax_exemption_reason=item.tax_exemption_reason or None)
    description = item.description or None
    if item.price is not None:
        price = _active_price(book, item.price, invoice.currency, f"{prefix}price")
        line.price_id, line.product_id = price.id, price.product_id
        line.description_override = description
        line.unit_amount_override = item.unit_amount
        line.tax_rate_override = item.tax_rate
        return line
    missing = [FieldError(f"{prefix}{name}", "is required for a line without a price")
               for name, value in (("description", description), ("unit_amount", item.unit_amount)) if value is None]
    if missing:
        raise failed(missing)
    line.description, line.unit_amount = description, item.unit_amount
    line.tax_rate = item.tax_rate if item.tax_rate is not None else Decimal(0)
    return line


def refresh_prices(book: dict, invoice: Invoice, lines: list[InvoiceLine]) -> None:
    """Re-read the price of every priced line (a draft bills the price as it is now).

    An archived price still bills until its line is removed. A price whose currency was changed
    away from the invoice's cannot bill it: that is a validation failure at `lines.N.price`.
    """
    for index, line in enumerate(lines):
        if line.price_id is None:
            continue
        price = book[line.price_id]
        if price.currency != invoice.currency:
            raise ValidationFailed.at(f"lines.{index}.price",
                                      f"is now in {price.currency} but the invoice is in {invoice.currency}: "
                                      "remove the line or replace the items")
        line.product_id = price.product_id
        line.description = line.description_override if line.description_override is not None else price.product_name
        line.unit_amount = line.unit_amount_override if line.unit_amount_override is not None else price.unit_amount
        line.tax_rate = line.tax_rate_override if line.tax_rate_override is not None else price.tax_rate


def compute(invoice: Invoice, lines: list[InvoiceLine], *, path: str = "lines") -> None:
    """Line amounts and invoice totals by decisions.md's arithmetic, within the safe-integer range."""
    if len(lines) > LINES_MAX:
        raise ValidationFailed.at(path, f"an invoice holds at most {LINES_MAX} lines")
    check_tax_categories(lines, path)
    inputs = [money.LineInput(unit_amount=line.unit_amount, quantity=line.quantity,
                              discount_percent=line.discount_percent, tax_rate=line.tax_rate) for line in lines]
    amounts, totals = money.compute_totals(inputs)
    for index, (line, amount) in enumerate(zip(lines, amounts, strict=True)):
        if amount.gross + amount.tax_amount > MAX_SAFE_INTEGER:
            raise ValidationFailed.at(f"{path}.{index}.quantity", "makes the line amount too large")
        line.amount, line.tax_amount = amount.amount, amount.tax_amount
    if totals.subtotal + totals.tax > MAX_SAFE_INTEGER:
        raise ValidationFailed.at(path, "the invoice total is too large")
    invoice.subtotal, invoice.discount, invoice.taxable = totals.subtotal, totals.discount, totals.taxable
    invoice.tax, invoice.total = totals.tax, totals.total
    # Without a currency yet no words either.
    invoice.amount_in_words = money.amount_in_words(totals.total, invoice.currency) if invoice.currency else None


def check_tax_categories(lines: list[InvoiceLine], path: str = "lines") -> None:
    """A chosen VAT category agrees with the line's rate, an exemption reason goes with an exempt
    category, one reason per category, and "not subject to VAT" stands alone (EN 16931 BR-S, BR-O)."""
    errors: list[FieldError] = []
    reasons: dict[str, tuple[int, str]] = {}
    for index, line in enumerate(lines):
        category, rate, reason = line.tax_category, Decimal(line.tax_rate), line.tax_exemption_reason
        if category == "S" and rate == 0:
            errors.append(FieldError(f"{path}.{index}.tax_category", "S (standard rate) needs a tax_rate above 0"))
        elif category not in (None, "S") and rate != 0:
            errors.append(FieldError(f"{path}.{index}.tax_category",
                                     f"{category} is for lines without VAT: its tax_rate must be 0"))
        if reason and category not in EXEMPT_CATEGORIES:
            errors.append(FieldError(f"{path}.{index}.tax_exemption_reason",
                                     "is for lines of tax_category E, AE, K, G or O"))
        elif reason and category in reasons and reasons[category][1] != reason:
            errors.append(FieldError(f"{path}.{index}.tax_exemption_reason",
                                     f"differs from line {reasons[category][0]}'s: one reason per tax_category"))
        elif category in EXEMPT_CATEGORIES and reason:
            reasons.setdefault(category, (index, reason))
    if any(line.tax_category == "O" for line in lines) and any(
            line.tax_category not in (None, "O") or line.tax_rate for line in lines):
        index = next(i for i, line in enumerate(lines) if line.tax_category == "O")
        errors.append(FieldError(f"{path}.{index}.tax_category",
                                 "O (not subject to VAT) cannot share an invoice with lines of other categories"))
    if errors:
        raise failed(errors)


def renumber(lines: list[InvoiceLine]) -> None:
    for position, line in enumerate(lines):
        line.position = position
