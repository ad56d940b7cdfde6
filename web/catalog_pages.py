"""Customers, products and their prices in the dashboard: lists with search and an archived
filter, forms to create and edit, archive and restore. Every change runs an operation of
`operations.customers` / `operations.products` as the signed-in person (web.acting)."""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.responses import Response
from starlette.routing import Route

from core.base.db import transaction
from core.base.errors import DomainError, NotFound, ValidationFailed
from core.base.money import currency_exponent, from_major, is_known_currency
from core.billing.business import find_profile
from core.catalog.customers import ADDRESS_KEYS
from operations import customers as customer_operations
from operations import products as product_operations
from pages.routing import Visit, errors_of, page, redirect
from web.acting import act, new_form_key
from web.rendering import not_found, notice_of, render

CUSTOMER_FIELDS = ("name", "email", "phone", "tax_id", "peppol_id") + tuple(f"address.{key}" for key in ADDRESS_KEYS)
PRODUCT_FIELDS = ("name", "description")
PRICE_FIELDS = ("nickname", "unit_amount", "currency", "type", "interval", "interval_count", "tax_rate")
INTERVALS = (("day", "Day"), ("week", "Week"), ("month", "Month"), ("year", "Year"))
NOTICES = {
    "customer_created": "The customer is added.", "customer_saved": "The customer is saved.",
    "customer_archived": "The customer is archived: no new invoices can be made for them.",
    "customer_restored": "The customer is restored.",
    "product_created": "The product is added. Give it a price to bill it.", "product_saved": "The product is saved.",
    "product_archived": "The product is archived: its prices can no longer be billed.",
    "product_restored": "The product is restored.",
    "price_created": "The price is added.", "price_archived": "The price is archived.",
    "price_restored": "The price is restored.",
}


def _notice(visit: Visit) -> str | None:
    return notice_of(visit, NOTICES)


def _list_page(visit: Visit, operation, *, template: str, path: str, by_archived: dict[bool, dict]) -> Response:
    """A searchable, paged list; `by_archived` is the query for each state of the "show archived" box."""
    params = visit.request.query_params
    search = params.get("query", "")[:256]
    archived = params.get("archived") == "1"
    query = {"query": search, "cursor": params.get("cursor", "")[:2000]} | by_archived[archived]
    errors: dict[str, str] = {}
    try:
        result = act(visit, operation, query=query)
    except ValidationFailed as exc:
        result, errors = {"data": [], "next_cursor": None}, errors_of(exc)
    chosen = {name: value for name, value in (("query", search), ("archived", "1" if archived else "")) if value}
    next_url = f"{path}?" + urlencode(chosen | {"cursor": result["next_cursor"]}) if result["next_cursor"] else None
    return render(visit.request, template, rows=result["data"], search=search, archived=archived, errors=errors,
                  next_url=next_url, first_url=f"{path}?{urlencode(chosen)}" if params.get("cursor") else None,
                  notice=_notice(visit))


# --- customers -------------------------------------------------------------------------------

def _customer_values(customer: dict | None) -> dict[str, str]:
    if customer is None:
        return dict.fromkeys(CUSTOMER_FIELDS, "")
    address = customer.get("address") or {}
    return ({name: customer.get(name) or "" for name in ("name", "email", "phone", "tax_id", "peppol_id")}
            | {f"address.{key}": address.get(key) or "" for key in ADDRESS_KEYS})


def _customer_body(values: dict[str, str], *, creating: bool) -> dict:
    """The form as the API takes it: blanks are left out of a new customer and clear an existing one's."""
    body: dict = {}
    address: dict = {}
    for name, value in values.items():
        group, _, key = name.partition(".")
        target, field = (address, key) if key else (body, name)
        if value or name == "name":
            target[field] = value
        elif not creating:
            target[field] = None
    if address or not creating:
        body["address"] = address
    return body


def customer_list(visit: Visit) -> Response:
    return _list_page(visit, customer_operations.list_customers, template="customers.html", path="/customers",
                      by_archived={True: {"include_deleted": "true"}, False: {}})


def _customer_form(visit: Visit, *, customer: dict | None, values: dict, errors: dict, status_code: int = 200):
    return render(visit.request, "customer.html", status_code=status_code, customer=customer, values=values,
                  errors=errors, form_key=new_form_key(), notice=_notice(visit))


def new_customer(visit: Visit) -> Response:
    return _customer_form(visit, customer=None, values=_customer_values(None), errors={})


def create_customer(visit: Visit) -> Response:
    values = {name: visit.text(name, 300) for name in CUSTOMER_FIELDS}
    try:
        created = act(visit, customer_operations.create_customer, body=_customer_body(values, creating=True),
                      keyed=True)
    except DomainError as exc:
        return _customer_form(visit, customer=None, values=values, errors=errors_of(exc), status_code=exc.status)
    return redirect(f"/customers/{created['id']}?notice=customer_created")


def _load_customer(visit: Visit) -> dict:
    return act(visit, customer_operations.get_customer, params={"id": visit.path_params["customer_id"]})


def edit_customer(visit: Visit) -> Response:
    try:
        customer = _load_customer(visit)
    except NotFound:
        return not_found(visit, "customer", "/customers")
    return _customer_form(visit, customer=customer, values=_customer_values(customer), errors={})


def save_customer(visit: Visit) -> Response:
    try:
        customer = _load_customer(visit)
    except NotFound:
        return not_found(visit, "customer", "/customers")
    values = {name: visit.text(name, 300) for name in CUSTOMER_FIELDS}
    try:
        act(visit, customer_operations.update_customer, params={"id": customer["id"]},
            body=_customer_body(values, creating=False))
    except DomainError as exc:
        return _customer_form(visit, customer=customer, values=values, errors=errors_of(exc), status_code=exc.status)
    return redirect(f"/customers/{customer['id']}?notice=customer_saved")


# --- products and prices ---------------------------------------------------------------------

def product_list(visit: Visit) -> Response:
    return _list_page(visit, product_operations.list_products, template="products.html", path="/products",
                      by_archived={True: {}, False: {"active": "true"}})


def _product_page(visit: Visit, *, product: dict | None, values: dict, errors: dict, failed: str = "product",
                  status_code: int = 200) -> Response:
    prices = []
    default_currency = ""
    if product is not None:
        prices = act(visit, product_operations.list_prices, query={"product": product["id"], "limit": "100"})["data"]
    with transaction() as session:
        profile = find_profile(session, visit.account_id)
        default_currency = profile.currency if profile else ""
    price_values = values if failed == "price" else {"currency": default_currency, "type": "one_time",
                                                     "interval": "month", "interval_count": "1", "tax_rate": "0"}
    product_values = values if failed == "product" else {
        "name": product["name"] if product else "", "description": (product or {}).get("description") or ""}
    return render(visit.request, "product.html", status_code=status_code, product=product, prices=prices,
                  product_values=product_values, price_values=price_values,
                  product_errors=errors if failed == "product" else {},
                  price_errors=errors if failed == "price" else {}, intervals=INTERVALS,
                  form_key=new_form_key(), notice=_notice(visit))


def new_product(visit: Visit) -> Response:
    return _product_page(visit, product=None, values={"name": "", "description": ""}, errors={})


def create_product(visit: Visit) -> Response:
    values = {name: visit.text(name, 5001, strip=name != "description") for name in PRODUCT_FIELDS}
    try:
        created = act(visit, product_operations.create_product, body=values, keyed=True)
    except DomainError as exc:
        return _product_page(visit, product=None, values=values, errors=errors_of(exc), status_code=exc.status)
    return redirect(f"/products/{created['id']}?notice=product_created")


def _load_product(visit: Visit) -> dict:
    return act(visit, product_operations.get_product, params={"id": visit.path_params["product_id"]})


def edit_product(visit: Visit) -> Response:
    try:
        product = _load_product(visit)
    except NotFound:
        return not_found(visit, "product", "/products")
    return _product_page(visit, product=product, values={}, errors={}, failed="")


def save_product(visit: Visit) -> Response:
    try:
        product = _load_product(visit)
    except NotFound:
        return not_found(visit, "product", "/products")
    values = {name: visit.text(name, 5001, strip=name != "description") for name in PRODUCT_FIELDS}
    try:
        act(visit, product_operations.update_product, params={"id": product["id"]}, body=values)
    except DomainError as exc:
        return _product_page(visit, product=product, values=values, errors=errors_of(exc), status_code=exc.status)
    return redirect(f"/products/{product['id']}?notice=product_saved")


def _price_body(values: dict[str, str], product_id: str) -> dict:
    currency = values["currency"].upper()
    body: dict = {"product": product_id, "currency": currency, "type": values["type"] or "one_time",
                  "nickname": values["nickname"] or None, "tax_rate": values["tax_rate"] or "0"}
    if values["type"] == "recurring":
        count = values["interval_count"] or "1"
        body["recurring"] = {"interval": values["interval"], "interval_count": int(count) if count.isdigit() else count}
    if not is_known_currency(currency):
        raise ValidationFailed.at("currency", "must be an ISO 4217 code, such as USD, EUR or GBP")
    amount = from_major(values["unit_amount"], currency)
    if amount is None:
        raise ValidationFailed.at("unit_amount", f"must be an amount in {currency} with at most "
                                                 f"{currency_exponent(currency)} decimals")
    return body | {"unit_amount": amount}


def create_price(visit: Visit) -> Response:
    try:
        product = _load_product(visit)
    except NotFound:
        return not_found(visit, "product", "/products")
    values = {name: visit.text(name, 300) for name in PRICE_FIELDS}
    try:
        act(visit, product_operations.create_price, body=_price_body(values, product["id"]), keyed=True)
    except DomainError as exc:
        errors = {path.removeprefix("recurring."): message for path, message in errors_of(exc).items()}
        return _product_page(visit, product=product, values=values, errors=errors, failed="price",
                             status_code=exc.status)
    return redirect(f"/products/{product['id']}?notice=price_created")


def _switch(operation, *, what: str, param: str, notice: str):
    """A POST that archives or restores one row, then shows its page (a price: its product's)."""
    def handler(visit: Visit) -> Response:
        try:
            row = act(visit, operation, params={"id": visit.path_params[param]}, keyed=True)
        except NotFound:
            return not_found(visit, what, "/products" if what != "customer" else "/customers")
        place = {"customer": f"/customers/{row['id']}", "product": f"/products/{row['id']}",
                 "price": f"/products/{row.get('product')}"}[what]
        return redirect(f"{place}?notice={notice}")
    return handler


def routes() -> list[Route]:
    return [
        page("/customers", get=customer_list),
        page("/customers/new", get=new_customer, post=create_customer),
        page("/customers/{customer_id}", get=edit_customer, post=save_customer),
        page("/customers/{customer_id}/archive", post=_switch(customer_operations.archive_customer, what="customer",
                                                              param="customer_id", notice="customer_archived")),
        page("/customers/{customer_id}/restore", post=_switch(customer_operations.restore_customer, what="customer",
                                                              param="customer_id", notice="customer_restored")),
        page("/products", get=product_list),
        page("/products/new", get=new_product, post=create_product),
        page("/products/{product_id}", get=edit_product, post=save_product),
        page("/products/{product_id}/prices", post=create_price),
        page("/products/{product_id}/archive", post=_switch(product_operations.archive_product, what="product",
                                                            param="product_id", notice="product_archived")),
        page("/products/{product_id}/restore", post=_switch(product_operations.restore_product, what="product",
                                                            param="product_id", notice="product_restored")),
        page("/prices/{price_id}/archive", post=_switch(product_operations.archive_price, what="price",
                                                        param="price_id", notice="price_archived")),
        page("/prices/{price_id}/restore", post=_switch(product_operations.restore_price, what="price",
                                                        param="price_id", notice="price_restored")),
    ]
