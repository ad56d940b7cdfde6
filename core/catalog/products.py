"""The catalog: products (what is sold) and their prices (how much, once or per interval).

Products and prices are archived (`active: false`) rather than removed, so invoices that used
them keep their history. A price belongs to one product for life.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field, Strict, StrictBool, WithJsonSchema, field_validator
from pydantic.json_schema import SkipJsonSchema
from sqlmodel import Session, select

from core.base import ids
from core.base.api_types import Timestamp
from core.base.clock import iso, now
from core.base.errors import ValidationFailed
from core.base.lookup import owned
from core.base.validation import (
    MULTI_LINE,
    NAME_MAX,
    TEXT_MAX,
    Input,
    MinorUnits,
    PageQuery,
    Percent,
    empty_is_null,
    known_currency,
    not_null,
)
from core.catalog import name_search
from core.mechanisms.pagination import Page, paginate
from core.models import Price, Product

PriceType = Literal["one_time", "recurring"]
Interval = Literal["day", "week", "month", "year"]
IntervalCount = Annotated[int, Strict(), Field(ge=1, le=12)]


# --- shared input rules --------------------------------------------------------------------


def _true_or_false(value: object) -> object:
    """Query flags that take exactly `true` or `false` (anything else is refused)."""
    if isinstance(value, bool) or value is None:
        return value
    if value in ("true", "false"):
        return value == "true"
    raise ValueError("must be true or false")


ActiveFilter = Annotated[bool | None, BeforeValidator(_true_or_false)]




# --- products ------------------------------------------------------------------------------


class ProductCreate(Input):
    """A new product."""

    name: str = Field(min_length=1, max_length=NAME_MAX, description="Name; priced invoice lines take it")
    description: Annotated[str | None, MULTI_LINE] = Field(default=None, max_length=TEXT_MAX,
                                    description="Free text; null or the empty string clears it")
    active: StrictBool = Field(default=True, description="false creates it archived")

    _description = field_validator("description")(empty_is_null)


class ProductUpdate(Input):
    """Only the fields sent change."""

    name: str | None = Field(default=None, min_length=1, max_length=NAME_MAX, description="Name")
    description: Annotated[str | None, MULTI_LINE] = Field(default=None, max_length=TEXT_MAX,
                                    description="Free text; null or the empty string clears it")
    active: StrictBool | None = Field(default=None, description="false archives, true restores")

    _description = field_validator("description")(empty_is_null)
    _required = field_validator("name", "active")(not_null)


class ProductListQuery(PageQuery):
    query: str | None = Field(default=None, max_length=NAME_MAX, description="Case-insensitive substring of the name")
    active: ActiveFilter = Field(default=None, description="`true` or `false`; omitted lists both")


class ProductOut(BaseModel):
    """Something the business sells; its amounts live on prices. Archived products are `active: false`."""

    id: str = Field(description="Unique identifier, `prod_…`")
    object: Literal["product"] = Field("product", description="Always `product`")
    name: str = Field(description="Name; a priced invoice line takes it as its description")
    description: str | None = Field(description="Free text")
    active: bool = Field(description="False when archived; archived products keep their history")
    created: Timestamp = Field(description="When the product was created")
    updated: Timestamp = Field(description="When the product last changed")


def product_to_api(row: Product) -> dict:
    return ProductOut(
        id=ids.public_id("product", row.id), name=row.name, description=row.description,
        active=row.active, created=iso(row.created), updated=iso(row.updated),
    ).model_dump()


def get_product(session: Session, account_id: uuid.UUID, id_text: str, *, lock: bool = False) -> Product:
    return owned(session, Product, "product", account_id, id_text, noun="product", lock=lock)


def list_products(session: Session, account_id: uuid.UUID, q: ProductListQuery) -> Page:
    query = name_search.of_account(session, Product, account_id, q.query)
    if q.active is not None:
        query = query.where(Product.active == q.active)
    filters = {"query": q.query, "active": q.active}
    return paginate(session, query, Product, kind="products", account_id=account_id, filters=filters,
                    cursor=q.cursor, limit=q.limit)


def _save(session: Session, row: Product | Price, changes: dict[str, Any]) -> None:
    """Apply the changes; `updated` moves only when a value really changed (repeats are no-ops)."""
    changed = {k: v for k, v in changes.items() if getattr(row, k) != v}
    if changed:
        for key, value in changed.items():
            setattr(row, key, value)
        row.updated = now()
        session.add(row)
        session.flush()


def create_product(session: Session, account_id: uuid.UUID, data: ProductCreate) -> Product:
    row = Product(account_id=account_id, name=data.name, description=data.description, active=data.active)
    session.add(row)
    session.flush()
    return row


def update_product(session: Session, account_id: uuid.UUID, id_text: str, data: ProductUpdate) -> Product:
    row = get_product(session, account_id, id_text, lock=True)
    _save(session, row, data.model_dump(include=data.sent()))
    return row


def archive_product(session: Session, account_id: uuid.UUID, id_text: str) -> Product:
    row = get_product(session, account_id, id_text, lock=True)
    _save(session, row, {"active": False})
    return row


def restore_product(session: Session, account_id: uuid.UUID, id_text: str) -> Product:
    row = get_product(session, account_id, id_text, lock=True)
    _save(session, row, {"active": True})
    return row


# --- prices --------------------------------------------------------------------------------


class RecurringCreate(Input):
    """How often a recurring price repeats."""

    interval: Interval = Field(description="day, week, month or year")
    interval_count: IntervalCount = Field(default=1, description="Intervals between bills, 1 to 12")


class RecurringUpdate(Input):
    """Omitted members keep their stored values."""

    interval: Interval | None = Field(default=None, description="day, week, month or year")
    interval_count: IntervalCount | None = Field(default=None, description="Intervals between bills, 1 to 12")

    _required = field_validator("interval", "interval_count")(not_null)


class PriceFields(Input):
    nickname: str | None = Field(default=None, max_length=NAME_MAX,
                                 description="Internal label; null or the empty string clears it")

    _nickname = field_validator("nickname")(empty_is_null)


class PriceCreate(PriceFields):
    """A new price of an active product."""

    product: str = Field(description="prod_ id or UUID of an active product")
    unit_amount: MinorUnits = Field(description="Minor units of the currency")
    currency: str = Field(description="ISO 4217 code; input is uppercased")
    type: PriceType = Field(default="one_time", description="one_time (default) or recurring")
    recurring: RecurringCreate | None = Field(
        default=None, description="Required when type is recurring; must be omitted for one_time")
    tax_rate: Percent = Field(default=Decimal(0), description="Default tax percent, 0 to 100")

    _currency = field_validator("currency")(known_currency)


class PriceUpdate(PriceFields):
    """Only the fields sent change; the product cannot."""

    # Declared only to answer a clear 422 at `product` instead of "unknown field".
    product: SkipJsonSchema[Any] = None
    unit_amount: MinorUnits | None = Field(default=None, description="Minor units of the currency")
    currency: str | None = Field(default=None, description="ISO 4217 code; input is uppercased")
    type: PriceType | None = Field(default=None, description="one_time clears the interval")
    recurring: RecurringUpdate | None = Field(
        default=None, description="Switching to recurring needs recurring.interval unless one is stored")
    tax_rate: Percent | None = Field(default=None, description="Default tax percent, 0 to 100")
    active: StrictBool | None = Field(default=None, description="false archives, true restores")

    _required = field_validator("unit_amount", "currency", "type", "tax_rate", "active")(not_null)

    @field_validator("product", mode="before")
    @classmethod
    def _product_is_fixed(cls, value: object) -> None:
        raise ValueError("cannot be changed after creation")

    @field_validator("currency")
    @classmethod
    def _currency(cls, value: str) -> str:
        return known_currency(value)


class PriceListQuery(PageQuery):
    product: str | None = Field(default=None, description="prod_ id or UUID; a product not in the account is 404")
    active: ActiveFilter = Field(default=None, description="`true` or `false`; omitted lists both")
    currency: str | None = Field(default=None, description="ISO 4217 code, any case")
    type: PriceType | None = Field(default=None, description="one_time or recurring")

    @field_validator("currency")
    @classmethod
    def _currency(cls, value: str | None) -> str | None:
        return None if value is None else known_currency(value)


class RecurringOut(BaseModel):
    """How often a recurring price repeats (recorded only: nothing bills automatically)."""

    interval: Interval = Field(description="day, week, month or year")
    interval_count: int = Field(description="Number of intervals between bills, 1 to 12")


class PriceOut(BaseModel):
    """An amount and currency for a product; invoice lines can bill it."""

    id: str = Field(description="Unique identifier, `price_…`")
    object: Literal["price"] = Field("price", description="Always `price`")
    product: str = Field(description="The product, `prod_…`; fixed at creation")
    nickname: str | None = Field(description="Internal label, never printed")
    unit_amount: int = Field(description="Amount of one unit in the currency's minor unit (250000 is 2,500.00 USD)")
    currency: str = Field(description="ISO 4217 code, uppercase; must match the invoice currency when billed")
    billing_scheme: Literal["per_unit"] = Field("per_unit", description="Always `per_unit`")
    type: PriceType = Field(description="`one_time` or `recurring`")
    recurring: RecurringOut | None = Field(description="The interval of a recurring price; null for one_time")
    tax_rate: Annotated[Decimal, WithJsonSchema({"type": "number", "minimum": 0, "maximum": 100})] = Field(
        description="Default tax percent of lines billing this price")
    active: bool = Field(description="False when archived; archived prices cannot be added to invoices")
    created: Timestamp = Field(description="When the price was created")


def price_to_api(row: Price) -> dict:
    recurring = (RecurringOut(interval=row.recurring_interval, interval_count=row.recurring_interval_count)
                 if row.type == "recurring" else None)
    return PriceOut(
        id=ids.public_id("price", row.id), product=ids.public_id("product", row.product_id),
        nickname=row.nickname, unit_amount=row.unit_amount, currency=row.currency, type=row.type,
        recurring=recurring, tax_rate=row.tax_rate, active=row.active, created=iso(row.created),
    ).model_dump()


def get_price(session: Session, account_id: uuid.UUID, id_text: str, *, lock: bool = False) -> Price:
    return owned(session, Price, "price", account_id, id_text, noun="price", lock=lock)


def list_prices(session: Session, account_id: uuid.UUID, q: PriceListQuery) -> Page:
    query = select(Price).where(Price.account_id == account_id)
    product_id = None
    if q.product is not None:
        product_id = get_product(session, account_id, q.product).id
        query = query.where(Price.product_id == product_id)
    if q.active is not None:
        query = query.where(Price.active == q.active)
    if q.currency:
        query = query.where(Price.currency == q.currency)
    if q.type:
        query = query.where(Price.type == q.type)
    filters = {"product": product_id, "active": q.active, "currency": q.currency, "type": q.type}
    return paginate(session, query, Price, kind="prices", account_id=account_id, filters=filters,
                    cursor=q.cursor, limit=q.limit)


def _interval(price_type: str, recurring: RecurringCreate | RecurringUpdate | None,
              stored: tuple[str | None, int | None] = (None, None)) -> tuple[str | None, int | None]:
    """The (interval, interval_count) a price of `price_type` ends up with, or ValidationFailed."""
    if price_type == "one_time":
        if recurring is not None:
            raise ValidationFailed.at("recurring", "must be omitted when type is one_time")
        return None, None
    stored_interval, stored_count = stored
    sent = recurring.model_dump(exclude_none=True) if recurring is not None else {}
    interval = sent.get("interval", stored_interval)
    if interval is None:
        path = "recurring.interval" if recurring is not None else "recurring"
        raise ValidationFailed.at(path, "is required when type is recurring")
    return interval, sent.get("interval_count", stored_count or 1)


def create_price(session: Session, account_id: uuid.UUID, data: PriceCreate) -> Price:
    product = get_product(session, account_id, data.product)
    if not product.active:
        raise ValidationFailed.at("product", "is archived: restore it before adding prices")
    interval, interval_count = _interval(data.type, data.recurring)
    row = Price(
        account_id=account_id, product_id=product.id, nickname=data.nickname, unit_amount=data.unit_amount,
        currency=data.currency, type=data.type, recurring_interval=interval,
        recurring_interval_count=interval_count, tax_rate=data.tax_rate,
    )
    session.add(row)
    session.flush()
    return row


def update_price(session: Session, account_id: uuid.UUID, id_text: str, data: PriceUpdate) -> Price:
    row = get_price(session, account_id, id_text, lock=True)
    sent = data.sent()
    changes = {key: getattr(data, key)
               for key in ("nickname", "unit_amount", "currency", "type", "tax_rate", "active") if key in sent}
    if "type" in sent or "recurring" in sent:
        new_type = changes.get("type", row.type)
        if "recurring" in sent and data.recurring is None and new_type == "recurring":
            raise ValidationFailed.at("recurring", "cannot be null when type is recurring")
        stored = (row.recurring_interval, row.recurring_interval_count) if row.type == "recurring" else (None, None)
        changes["recurring_interval"], changes["recurring_interval_count"] = _interval(new_type, data.recurring, stored)
    _save(session, row, changes)
    return row


def archive_price(session: Session, account_id: uuid.UUID, id_text: str) -> Price:
    row = get_price(session, account_id, id_text, lock=True)
    _save(session, row, {"active": False})
    return row


def restore_price(session: Session, account_id: uuid.UUID, id_text: str) -> Price:
    row = get_price(session, account_id, id_text, lock=True)
    _save(session, row, {"active": True})
    return row
