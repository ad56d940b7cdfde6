"""Prices: create, list with filters, retrieve, update (every rule of the spec's PATCH row), archive."""

import uuid

import pytest

MAX_AMOUNT = 9007199254740991
# Fixed (not random) so that pytest-xdist workers collect the same test ids.
UNKNOWN_UUID = "5f0c8a4e-9d1b-4c3a-8e2f-7b6a5d4c3b2a"
UNKNOWN_HEX = UNKNOWN_UUID.replace("-", "")


def make_product(tenant, **fields):
    response = tenant.post("/products", json={"name": "Consulting", **fields})
    assert response.status_code == 201, response.text
    return response.json()["data"]


def create(tenant, product=None, **fields):
    product_id = product or make_product(tenant)["id"]
    body = {"product": product_id, "unit_amount": 2500, "currency": "USD", **fields}
    response = tenant.post("/prices", json=body)
    assert response.status_code == 201, response.text
    return response.json()["data"]


def errors_of(response):
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "validation"
    return {e["path"]: e["message"] for e in response.json()["errors"]}


@pytest.fixture
def product(tenant):
    return make_product(tenant)


# --- create --------------------------------------------------------------------------------


def test_create_returns_201_with_the_price(tenant, product):
    response = tenant.post("/prices", json={"product": product["id"], "unit_amount": 2500, "currency": "usd"})
    assert response.status_code == 201
    data = response.json()["data"]
    assert data["id"].startswith("price_")
    assert data == {
        "id": data["id"], "object": "price", "product": product["id"], "nickname": None, "unit_amount": 2500,
        "currency": "USD", "billing_scheme": "per_unit", "type": "one_time", "recurring": None, "tax_rate": 0,
        "active": True, "created": data["created"],
    }
    assert data["created"].endswith("Z") and len(data["created"]) == 24


def test_create_accepts_the_product_uuid(tenant, product):
    raw = str(uuid.UUID(product["id"][5:]))
    assert create(tenant, product=raw)["product"] == product["id"]


def test_create_recurring_price(tenant, product):
    data = create(tenant, product=product["id"], type="recurring", recurring={"interval": "month", "interval_count": 3},
                  nickname="Quarterly", tax_rate=7.5)
    assert data["type"] == "recurring"
    assert data["recurring"] == {"interval": "month", "interval_count": 3}
    assert data["nickname"] == "Quarterly"
    assert data["tax_rate"] == 7.5


def test_interval_count_defaults_to_1(tenant, product):
    data = create(tenant, product=product["id"], type="recurring", recurring={"interval": "year"})
    assert data["recurring"] == {"interval": "year", "interval_count": 1}


@pytest.mark.parametrize("interval", ["day", "week", "month", "year"])
def test_every_interval_is_accepted(tenant, product, interval):
    assert create(tenant, product=product["id"], type="recurring",
                  recurring={"interval": interval})["recurring"]["interval"] == interval


@pytest.mark.parametrize("missing", ["product", "unit_amount", "currency"])
def test_required_field_missing_is_422(tenant, product, missing):
    body = {"product": product["id"], "unit_amount": 100, "currency": "USD"}
    del body[missing]
    assert errors_of(tenant.post("/prices", json=body)) == {missing: "is required"}


@pytest.mark.parametrize("amount", [0, MAX_AMOUNT])
def test_unit_amount_bounds_are_accepted(tenant, product, amount):
    assert create(tenant, product=product["id"], unit_amount=amount)["unit_amount"] == amount


@pytest.mark.parametrize("amount", [-1, MAX_AMOUNT + 1, 10.5, 10.0, "10", None, True])
def test_bad_unit_amount_is_422(tenant, product, amount):
    body = {"product": product["id"], "unit_amount": amount, "currency": "USD"}
    assert list(errors_of(tenant.post("/prices", json=body))) == ["unit_amount"]


@pytest.mark.parametrize("currency", ["XYZ", "US", "USDD", "", 840])
def test_unknown_currency_is_422(tenant, product, currency):
    body = {"product": product["id"], "unit_amount": 1, "currency": currency}
    assert list(errors_of(tenant.post("/prices", json=body))) == ["currency"]


@pytest.mark.parametrize("code", ["jpy", "Kwd", "EUR"])
def test_currency_is_uppercased(tenant, product, code):
    assert create(tenant, product=product["id"], currency=code)["currency"] == code.upper()


@pytest.mark.parametrize("rate,shown", [(0, 0), (100, 100), (12.25, 12.25)])
def test_tax_rate_bounds_are_accepted(tenant, product, rate, shown):
    assert create(tenant, product=product["id"], tax_rate=rate)["tax_rate"] == shown


@pytest.mark.parametrize("rate", [-0.01, 100.01, "abc"])
def test_tax_rate_out_of_range_is_422(tenant, product, rate):
    body = {"product": product["id"], "unit_amount": 1, "currency": "USD", "tax_rate": rate}
    assert list(errors_of(tenant.post("/prices", json=body))) == ["tax_rate"]


def test_unknown_type_is_422(tenant, product):
    body = {"product": product["id"], "unit_amount": 1, "currency": "USD", "type": "metered"}
    assert list(errors_of(tenant.post("/prices", json=body))) == ["type"]


def test_recurring_type_without_recurring_is_422_at_recurring(tenant, product):
    body = {"product": product["id"], "unit_amount": 1, "currency": "USD", "type": "recurring"}
    assert list(errors_of(tenant.post("/prices", json=body))) == ["recurring"]


def test_recurring_on_one_time_price_is_422_at_recurring(tenant, product):
    body = {"product": product["id"], "unit_amount": 1, "currency": "USD", "recurring": {"interval": "month"}}
    assert list(errors_of(tenant.post("/prices", json=body))) == ["recurring"]


@pytest.mark.parametrize("recurring,path", [
    ({"interval": "fortnight"}, "recurring.interval"),
    ({}, "recurring.interval"),
    ({"interval": "month", "interval_count": 0}, "recurring.interval_count"),
    ({"interval": "month", "interval_count": 13}, "recurring.interval_count"),
    ({"interval": "month", "interval_count": "2"}, "recurring.interval_count"),
    ({"interval": "month", "every": 2}, "recurring.every"),
])
def test_bad_recurring_is_422_at_its_path(tenant, product, recurring, path):
    body = {"product": product["id"], "unit_amount": 1, "currency": "USD", "type": "recurring", "recurring": recurring}
    assert list(errors_of(tenant.post("/prices", json=body))) == [path]


def test_interval_count_12_is_accepted(tenant, product):
    data = create(tenant, product=product["id"], type="recurring", recurring={"interval": "week", "interval_count": 12})
    assert data["recurring"]["interval_count"] == 12


@pytest.mark.parametrize("nickname", ["", None])
def test_empty_or_null_nickname_is_stored_as_null(tenant, product, nickname):
    assert create(tenant, product=product["id"], nickname=nickname)["nickname"] is None


def test_nickname_over_256_characters_is_422(tenant, product):
    body = {"product": product["id"], "unit_amount": 1, "currency": "USD", "nickname": "n" * 257}
    assert list(errors_of(tenant.post("/prices", json=body))) == ["nickname"]


def test_billing_scheme_cannot_be_set(tenant, product):
    body = {"product": product["id"], "unit_amount": 1, "currency": "USD", "billing_scheme": "tiered"}
    assert errors_of(tenant.post("/prices", json=body)) == {"billing_scheme": "unknown field"}


def test_price_on_archived_product_is_422_at_product(tenant, product):
    tenant.delete(f"/products/{product['id']}")
    body = {"product": product["id"], "unit_amount": 1, "currency": "USD"}
    assert list(errors_of(tenant.post("/prices", json=body))) == ["product"]


@pytest.mark.parametrize("reference", [f"prod_{UNKNOWN_HEX}", "prod_nope", UNKNOWN_UUID])
def test_price_on_nonexistent_or_malformed_product_is_404(tenant, reference):
    response = tenant.post("/prices", json={"product": reference, "unit_amount": 1, "currency": "USD"})
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_product_that_is_not_a_string_is_422(tenant):
    response = tenant.post("/prices", json={"product": 42, "unit_amount": 1, "currency": "USD"})
    assert list(errors_of(response)) == ["product"]


def test_null_recurring_on_one_time_price_counts_as_omitted(tenant, product):
    assert create(tenant, product=product["id"], recurring=None)["recurring"] is None


def test_price_on_other_accounts_product_is_404(tenant, other_tenant):
    theirs = make_product(other_tenant)
    response = tenant.post("/prices", json={"product": theirs["id"], "unit_amount": 1, "currency": "USD"})
    assert response.status_code == 404


def test_create_with_idempotency_key_replays(tenant, product):
    body = {"product": product["id"], "unit_amount": 1, "currency": "USD"}
    first = tenant.post("/prices", json=body, idem="price-1")
    second = tenant.post("/prices", json=body, idem="price-1")
    assert second.headers["Idempotent-Replayed"] == "true"
    assert second.status_code == 201 and second.json() == first.json()
    assert len(tenant.get("/prices").json()["data"]) == 1


# --- retrieve ------------------------------------------------------------------------------


def test_retrieve_by_prefixed_id_and_by_uuid(tenant):
    price = create(tenant)
    raw = str(uuid.UUID(price["id"][6:]))
    assert tenant.get(f"/prices/{price['id']}").json()["data"] == price
    assert tenant.get(f"/prices/{raw}").json()["data"] == price


@pytest.mark.parametrize("bad_id", ["price_nope", "prod_" + "0" * 32, "1", f"price_{UNKNOWN_HEX}"])
def test_malformed_or_unknown_id_is_404(tenant, bad_id):
    response = tenant.get(f"/prices/{bad_id}")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_other_accounts_price_is_404_on_every_endpoint(tenant, other_tenant):
    price = create(other_tenant)
    for method, path in [("GET", ""), ("PATCH", ""), ("DELETE", ""), ("POST", "/restore")]:
        response = tenant.request(method, f"/prices/{price['id']}{path}",
                                  json={"unit_amount": 1} if method == "PATCH" else None)
        assert response.status_code == 404, (method, path)
    assert other_tenant.get(f"/prices/{price['id']}").json()["data"] == price


# --- update --------------------------------------------------------------------------------


def patch(tenant, price, body):
    response = tenant.patch(f"/prices/{price['id']}", json=body)
    assert response.status_code == 200, response.text
    return response.json()["data"]


def test_patch_changes_only_the_fields_sent(tenant):
    price = create(tenant, nickname="Std", tax_rate=5)
    data = patch(tenant, price, {"unit_amount": 3000})
    assert data == {**price, "unit_amount": 3000}


def test_patch_every_simple_field(tenant):
    price = create(tenant)
    data = patch(tenant, price, {"nickname": "New", "unit_amount": 0, "currency": "eur", "tax_rate": 20,
                                 "active": False})
    assert (data["nickname"], data["unit_amount"], data["currency"], data["tax_rate"], data["active"]) == \
        ("New", 0, "EUR", 20, False)


@pytest.mark.parametrize("cleared", [None, ""])
def test_patch_null_or_empty_nickname_clears_it(tenant, cleared):
    price = create(tenant, nickname="Std")
    assert patch(tenant, price, {"nickname": cleared})["nickname"] is None


@pytest.mark.parametrize("value", [None, "prod_x"])
def test_patch_product_is_422_at_product(tenant, value):
    price = create(tenant)
    other_product = make_product(tenant)
    for sent in (value, other_product["id"], price["product"]):
        response = tenant.patch(f"/prices/{price['id']}", json={"product": sent})
        assert errors_of(response) == {"product": "cannot be changed after creation"}
    assert tenant.get(f"/prices/{price['id']}").json()["data"]["product"] == price["product"]


def test_patch_product_with_other_fields_changes_nothing(tenant):
    price = create(tenant)
    response = tenant.patch(f"/prices/{price['id']}", json={"product": price["product"], "unit_amount": 1})
    assert list(errors_of(response)) == ["product"]
    assert tenant.get(f"/prices/{price['id']}").json()["data"]["unit_amount"] == price["unit_amount"]


@pytest.mark.parametrize("body,path", [
    ({"unit_amount": 10.5}, "unit_amount"), ({"unit_amount": "10"}, "unit_amount"),
    ({"unit_amount": -1}, "unit_amount"), ({"unit_amount": MAX_AMOUNT + 1}, "unit_amount"),
    ({"unit_amount": None}, "unit_amount"), ({"currency": "ABC"}, "currency"), ({"currency": None}, "currency"),
    ({"tax_rate": 101}, "tax_rate"), ({"tax_rate": None}, "tax_rate"), ({"type": "metered"}, "type"),
    ({"type": None}, "type"), ({"active": None}, "active"), ({"active": "false"}, "active"),
    ({"nickname": "n" * 257}, "nickname"), ({"billing_scheme": "per_unit"}, "billing_scheme"),
])
def test_patch_invalid_field_is_422_at_its_path(tenant, body, path):
    price = create(tenant)
    assert list(errors_of(tenant.patch(f"/prices/{price['id']}", json=body))) == [path]


def test_switching_to_one_time_clears_the_interval(tenant):
    price = create(tenant, type="recurring", recurring={"interval": "month", "interval_count": 2})
    data = patch(tenant, price, {"type": "one_time"})
    assert data["type"] == "one_time" and data["recurring"] is None


def test_switching_to_one_time_with_an_interval_is_422_at_recurring(tenant):
    price = create(tenant, type="recurring", recurring={"interval": "month"})
    response = tenant.patch(f"/prices/{price['id']}", json={"type": "one_time", "recurring": {"interval": "year"}})
    assert list(errors_of(response)) == ["recurring"]


def test_recurring_on_a_one_time_price_is_422_at_recurring(tenant):
    price = create(tenant)
    assert list(errors_of(tenant.patch(f"/prices/{price['id']}", json={"recurring": {"interval": "month"}}))) == \
        ["recurring"]


def test_switching_to_recurring_needs_an_interval(tenant):
    price = create(tenant)
    assert list(errors_of(tenant.patch(f"/prices/{price['id']}", json={"type": "recurring"}))) == ["recurring"]
    response = tenant.patch(f"/prices/{price['id']}", json={"type": "recurring", "recurring": {"interval_count": 2}})
    assert list(errors_of(response)) == ["recurring.interval"]
    assert tenant.get(f"/prices/{price['id']}").json()["data"]["type"] == "one_time"


def test_switching_to_recurring_with_an_interval(tenant):
    price = create(tenant)
    data = patch(tenant, price, {"type": "recurring", "recurring": {"interval": "week"}})
    assert data["type"] == "recurring" and data["recurring"] == {"interval": "week", "interval_count": 1}


def test_back_to_recurring_after_one_time_needs_the_interval_again(tenant):
    price = create(tenant, type="recurring", recurring={"interval": "month"})
    patch(tenant, price, {"type": "one_time"})
    assert list(errors_of(tenant.patch(f"/prices/{price['id']}", json={"type": "recurring"}))) == ["recurring"]


def test_type_recurring_again_keeps_the_stored_interval(tenant):
    price = create(tenant, type="recurring", recurring={"interval": "year", "interval_count": 2})
    assert patch(tenant, price, {"type": "recurring"})["recurring"] == {"interval": "year", "interval_count": 2}


def test_patch_recurring_members_merge_with_the_stored_ones(tenant):
    price = create(tenant, type="recurring", recurring={"interval": "month", "interval_count": 3})
    assert patch(tenant, price, {"recurring": {"interval_count": 6}})["recurring"] == \
        {"interval": "month", "interval_count": 6}
    assert patch(tenant, price, {"recurring": {"interval": "week"}})["recurring"] == \
        {"interval": "week", "interval_count": 6}


def test_patch_null_recurring_on_recurring_price_is_422(tenant):
    price = create(tenant, type="recurring", recurring={"interval": "month"})
    assert list(errors_of(tenant.patch(f"/prices/{price['id']}", json={"recurring": None}))) == ["recurring"]


@pytest.mark.parametrize("recurring,path", [
    ({"interval": "hour"}, "recurring.interval"), ({"interval": None}, "recurring.interval"),
    ({"interval_count": 13}, "recurring.interval_count"), ({"interval_count": None}, "recurring.interval_count"),
])
def test_patch_bad_recurring_member_is_422_at_its_path(tenant, recurring, path):
    price = create(tenant, type="recurring", recurring={"interval": "month"})
    assert list(errors_of(tenant.patch(f"/prices/{price['id']}", json={"recurring": recurring}))) == [path]


def test_patch_is_repeatable(tenant):
    price = create(tenant)
    first = patch(tenant, price, {"unit_amount": 99})
    assert patch(tenant, price, {"unit_amount": 99}) == first


def test_patch_unknown_price_is_404(tenant):
    assert tenant.patch(f"/prices/price_{uuid.uuid4().hex}", json={"unit_amount": 1}).status_code == 404


def test_patch_active_restores(tenant):
    price = create(tenant)
    patch(tenant, price, {"active": False})
    assert patch(tenant, price, {"active": True})["active"] is True


# --- archive and restore -------------------------------------------------------------------


def test_delete_archives_and_repeating_is_harmless(tenant):
    price = create(tenant)
    response = tenant.delete(f"/prices/{price['id']}")
    assert response.status_code == 200
    assert response.json()["data"] == {**price, "active": False}
    again = tenant.delete(f"/prices/{price['id']}")
    assert again.status_code == 200 and again.json() == response.json()


def test_restore_undoes_archive(tenant):
    price = create(tenant)
    tenant.delete(f"/prices/{price['id']}")
    response = tenant.post(f"/prices/{price['id']}/restore")
    assert response.status_code == 200
    assert response.json()["data"]["active"] is True


def test_archiving_the_product_keeps_its_prices_readable(tenant, product):
    price = create(tenant, product=product["id"])
    tenant.delete(f"/products/{product['id']}")
    assert tenant.get(f"/prices/{price['id']}").json()["data"] == price


# --- list ----------------------------------------------------------------------------------


def test_list_is_newest_first_and_paginates(tenant, product):
    made = [create(tenant, product=product["id"], unit_amount=i)["id"] for i in range(5)]
    first = tenant.get("/prices", params={"limit": 2}).json()
    assert [p["id"] for p in first["data"]] == made[::-1][:2]
    second = tenant.get("/prices", params={"limit": 2, "cursor": first["next_cursor"]}).json()
    third = tenant.get("/prices", params={"limit": 2, "cursor": second["next_cursor"]}).json()
    assert [p["id"] for p in second["data"] + third["data"]] == made[::-1][2:]
    assert third["next_cursor"] is None


def test_list_shows_only_the_callers_prices(tenant, other_tenant):
    mine = create(tenant)
    create(other_tenant)
    assert [p["id"] for p in tenant.get("/prices").json()["data"]] == [mine["id"]]


def test_list_filter_by_product_accepts_id_or_uuid(tenant):
    first, second = make_product(tenant), make_product(tenant)
    wanted = create(tenant, product=first["id"])
    create(tenant, product=second["id"])
    for reference in (first["id"], str(uuid.UUID(first["id"][5:]))):
        listed = tenant.get("/prices", params={"product": reference}).json()["data"]
        assert [p["id"] for p in listed] == [wanted["id"]]


@pytest.mark.parametrize("reference", [f"prod_{UNKNOWN_HEX}", "prod_nope"])
def test_list_filter_by_nonexistent_product_is_404(tenant, reference):
    response = tenant.get("/prices", params={"product": reference})
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_list_filter_by_other_accounts_product_is_404(tenant, other_tenant):
    theirs = make_product(other_tenant)
    assert tenant.get("/prices", params={"product": theirs["id"]}).status_code == 404


def test_list_filter_by_product_without_prices_is_an_empty_page(tenant, product):
    body = tenant.get("/prices", params={"product": product["id"]}).json()
    assert body == {"data": [], "next_cursor": None}


def test_list_filter_by_active(tenant, product):
    kept = create(tenant, product=product["id"])
    archived = create(tenant, product=product["id"])
    tenant.delete(f"/prices/{archived['id']}")
    assert [p["id"] for p in tenant.get("/prices").json()["data"]] == [archived["id"], kept["id"]]
    assert [p["id"] for p in tenant.get("/prices", params={"active": "true"}).json()["data"]] == [kept["id"]]
    assert [p["id"] for p in tenant.get("/prices", params={"active": "false"}).json()["data"]] == [archived["id"]]


def test_list_filter_by_currency_any_case(tenant, product):
    usd = create(tenant, product=product["id"], currency="USD")
    create(tenant, product=product["id"], currency="EUR")
    assert [p["id"] for p in tenant.get("/prices", params={"currency": "usd"}).json()["data"]] == [usd["id"]]


def test_list_filter_by_type(tenant, product):
    once = create(tenant, product=product["id"])
    monthly = create(tenant, product=product["id"], type="recurring", recurring={"interval": "month"})
    assert [p["id"] for p in tenant.get("/prices", params={"type": "one_time"}).json()["data"]] == [once["id"]]
    assert [p["id"] for p in tenant.get("/prices", params={"type": "recurring"}).json()["data"]] == [monthly["id"]]


@pytest.mark.parametrize("params,path", [
    ({"active": "yes"}, "active"), ({"type": "metered"}, "type"), ({"currency": "XYZ"}, "currency"),
    ({"limit": "0"}, "limit"), ({"limit": "many"}, "limit"), ({"cursor": "abc"}, "cursor"),
])
def test_list_bad_query_parameter_is_422(tenant, params, path):
    assert list(errors_of(tenant.get("/prices", params=params))) == [path]


def test_list_paginates_with_every_filter(tenant):
    first, second = make_product(tenant), make_product(tenant)
    wanted = [create(tenant, product=first["id"], currency="EUR", type="recurring",
                     recurring={"interval": "month"})["id"] for _ in range(3)]
    create(tenant, product=first["id"], currency="USD", type="recurring", recurring={"interval": "month"})
    create(tenant, product=first["id"], currency="EUR")
    create(tenant, product=second["id"], currency="EUR", type="recurring", recurring={"interval": "month"})
    archived = create(tenant, product=first["id"], currency="EUR", type="recurring", recurring={"interval": "day"})
    tenant.delete(f"/prices/{archived['id']}")
    params = {"product": first["id"], "active": "true", "currency": "EUR", "type": "recurring", "limit": 2}
    page1 = tenant.get("/prices", params=params).json()
    page2 = tenant.get("/prices", params={**params, "cursor": page1["next_cursor"]}).json()
    assert [p["id"] for p in page1["data"] + page2["data"]] == wanted[::-1]
    assert page2["next_cursor"] is None


@pytest.mark.parametrize("changed", [{"currency": "USD"}, {"type": "one_time"}, {"active": "false"}, {"product": None}])
def test_cursor_used_with_other_filters_is_422_at_cursor(tenant, changed):
    product = make_product(tenant)
    for _ in range(2):
        create(tenant, product=product["id"], currency="EUR", type="recurring", recurring={"interval": "month"})
    params = {"product": product["id"], "active": "true", "currency": "EUR", "type": "recurring", "limit": 1}
    cursor = tenant.get("/prices", params=params).json()["next_cursor"]
    other = {k: v for k, v in {**params, **changed}.items() if v is not None}
    assert list(errors_of(tenant.get("/prices", params={**other, "cursor": cursor}))) == ["cursor"]


def test_cursor_of_another_account_is_422(tenant, other_tenant):
    for _ in range(2):
        create(other_tenant)
    cursor = other_tenant.get("/prices", params={"limit": 1}).json()["next_cursor"]
    assert list(errors_of(tenant.get("/prices", params={"limit": 1, "cursor": cursor}))) == ["cursor"]


def test_limit_over_100_is_capped(tenant):
    assert tenant.get("/prices", params={"limit": 500}).status_code == 200


# --- scopes --------------------------------------------------------------------------------


def test_read_only_key_cannot_write_prices(tenant_factory):
    reader = tenant_factory(scopes=["products:read"])
    writer = reader.as_key(reader.key_with(["products:write"]))
    price = create(writer)
    for method, path, body in [("POST", "/prices", {"product": price["product"], "unit_amount": 1, "currency": "USD"}),
                               ("PATCH", f"/prices/{price['id']}", {"unit_amount": 2}),
                               ("DELETE", f"/prices/{price['id']}", None),
                               ("POST", f"/prices/{price['id']}/restore", None)]:
        response = reader.request(method, path, json=body)
        assert response.status_code == 403, (method, path)
        assert response.json()["code"] == "forbidden"
        assert "products:write" in response.json()["detail"]
    assert reader.get(f"/prices/{price['id']}").json()["data"] == price
    assert reader.get("/prices").status_code == 200


def test_key_without_products_read_cannot_read_prices(tenant_factory):
    outsider = tenant_factory(scopes=["invoices:read"])
    for path in ("/prices", f"/prices/price_{uuid.uuid4().hex}"):
        response = outsider.get(path)
        assert response.status_code == 403
        assert "products:read" in response.json()["detail"]


def test_missing_key_is_401(client):
    assert client.get("/api/v1/prices").status_code == 401
