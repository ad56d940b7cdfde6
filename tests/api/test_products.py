"""Products: create, list, retrieve, update, archive and restore."""

import uuid

import pytest


def create(tenant, **fields):
    body = {"name": "Consulting", **fields}
    response = tenant.post("/products", json=body)
    assert response.status_code == 201, response.text
    return response.json()["data"]


def errors_of(response):
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "validation"
    return {e["path"]: e["message"] for e in response.json()["errors"]}


# --- create --------------------------------------------------------------------------------


def test_create_returns_201_with_the_product(tenant):
    response = tenant.post("/products", json={"name": "Consulting", "description": "Hourly advice"})
    assert response.status_code == 201
    data = response.json()["data"]
    assert data["id"].startswith("prod_")
    assert data["object"] == "product"
    assert data["name"] == "Consulting"
    assert data["description"] == "Hourly advice"
    assert data["active"] is True
    assert data["created"].endswith("Z") and len(data["created"]) == 24
    assert data["updated"] == data["created"]


def test_description_defaults_to_null(tenant):
    assert create(tenant)["description"] is None


def test_create_without_name_is_422_at_name(tenant):
    assert errors_of(tenant.post("/products", json={"description": "x"})) == {"name": "is required"}


def test_create_with_empty_name_is_422(tenant):
    assert "name" in errors_of(tenant.post("/products", json={"name": ""}))


def test_name_of_256_characters_is_accepted_and_257_refused(tenant):
    assert create(tenant, name="x" * 256)["name"] == "x" * 256
    assert "name" in errors_of(tenant.post("/products", json={"name": "x" * 257}))


def test_description_of_5000_characters_is_accepted_and_5001_refused(tenant):
    assert len(create(tenant, description="d" * 5000)["description"]) == 5000
    assert "description" in errors_of(tenant.post("/products", json={"name": "A", "description": "d" * 5001}))


def test_create_with_unknown_field_is_422(tenant):
    assert errors_of(tenant.post("/products", json={"name": "A", "price": 10})) == {"price": "unknown field"}


def test_create_without_body_is_422(tenant):
    assert "body" in errors_of(tenant.post("/products"))


def test_create_with_idempotency_key_replays(tenant):
    first = tenant.post("/products", json={"name": "A"}, idem="product-1")
    second = tenant.post("/products", json={"name": "A"}, idem="product-1")
    assert second.status_code == 201
    assert second.headers["Idempotent-Replayed"] == "true"
    assert second.json() == first.json()
    assert len(tenant.get("/products").json()["data"]) == 1


# --- retrieve ------------------------------------------------------------------------------


def test_retrieve_by_prefixed_id_and_by_uuid(tenant):
    product = create(tenant)
    raw = str(uuid.UUID(product["id"][5:]))
    assert tenant.get(f"/products/{product['id']}").json()["data"] == product
    assert tenant.get(f"/products/{raw}").json()["data"] == product


@pytest.mark.parametrize("bad_id", ["prod_nope", "cus_" + "0" * 32, "12345", "prod_" + "g" * 32])
def test_malformed_id_is_404(tenant, bad_id):
    response = tenant.get(f"/products/{bad_id}")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_unknown_id_is_404(tenant):
    assert tenant.get(f"/products/prod_{uuid.uuid4().hex}").status_code == 404


def test_other_accounts_product_is_404_on_every_endpoint(tenant, other_tenant):
    product = create(other_tenant)
    for method, path in [("GET", ""), ("PATCH", ""), ("DELETE", ""), ("POST", "/restore")]:
        response = tenant.request(method, f"/products/{product['id']}{path}",
                                  json={"name": "Mine"} if method == "PATCH" else None)
        assert response.status_code == 404, (method, path)
        assert response.json()["code"] == "not_found"
    assert other_tenant.get(f"/products/{product['id']}").json()["data"] == product


# --- update --------------------------------------------------------------------------------


def test_patch_changes_only_the_fields_sent(tenant):
    product = create(tenant, description="Old")
    response = tenant.patch(f"/products/{product['id']}", json={"name": "Advice"})
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["name"] == "Advice" and data["description"] == "Old" and data["active"] is True
    assert data["updated"] >= product["updated"]


@pytest.mark.parametrize("cleared", [None, ""])
def test_patch_null_or_empty_description_clears_it(tenant, cleared):
    product = create(tenant, description="Old")
    data = tenant.patch(f"/products/{product['id']}", json={"description": cleared}).json()["data"]
    assert data["description"] is None


def test_patch_active_false_archives_and_true_restores(tenant):
    product = create(tenant)
    assert tenant.patch(f"/products/{product['id']}", json={"active": False}).json()["data"]["active"] is False
    assert tenant.patch(f"/products/{product['id']}", json={"active": True}).json()["data"]["active"] is True


@pytest.mark.parametrize("body,path", [
    ({"name": ""}, "name"), ({"name": None}, "name"), ({"name": "x" * 257}, "name"),
    ({"active": None}, "active"), ({"active": "yes"}, "active"), ({"description": "d" * 5001}, "description"),
    ({"unit_amount": 5}, "unit_amount"),
])
def test_patch_invalid_field_is_422_at_its_path(tenant, body, path):
    product = create(tenant)
    assert path in errors_of(tenant.patch(f"/products/{product['id']}", json=body))


def test_patch_is_repeatable(tenant):
    product = create(tenant)
    first = tenant.patch(f"/products/{product['id']}", json={"name": "Advice"}).json()["data"]
    second = tenant.patch(f"/products/{product['id']}", json={"name": "Advice"}).json()["data"]
    assert first == second


def test_patch_unknown_product_is_404(tenant):
    assert tenant.patch(f"/products/prod_{uuid.uuid4().hex}", json={"name": "A"}).status_code == 404


# --- archive and restore -------------------------------------------------------------------


def test_delete_archives_and_returns_the_product(tenant):
    product = create(tenant)
    response = tenant.delete(f"/products/{product['id']}")
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["id"] == product["id"] and data["active"] is False
    assert tenant.get(f"/products/{product['id']}").json()["data"]["active"] is False


def test_repeating_delete_is_harmless(tenant):
    product = create(tenant)
    first = tenant.delete(f"/products/{product['id']}").json()["data"]
    second = tenant.delete(f"/products/{product['id']}")
    assert second.status_code == 200
    assert second.json()["data"] == first


def test_restore_undoes_archive(tenant):
    product = create(tenant)
    tenant.delete(f"/products/{product['id']}")
    response = tenant.post(f"/products/{product['id']}/restore")
    assert response.status_code == 200
    assert response.json()["data"]["active"] is True


def test_delete_unknown_product_is_404(tenant):
    assert tenant.delete(f"/products/prod_{uuid.uuid4().hex}").status_code == 404


# --- list ----------------------------------------------------------------------------------


def test_list_is_newest_first_and_paginates(tenant):
    made = [create(tenant, name=f"P{i}")["id"] for i in range(5)]
    first = tenant.get("/products", params={"limit": 2}).json()
    assert [p["id"] for p in first["data"]] == made[::-1][:2]
    second = tenant.get("/products", params={"limit": 2, "cursor": first["next_cursor"]}).json()
    third = tenant.get("/products", params={"limit": 2, "cursor": second["next_cursor"]}).json()
    assert [p["id"] for p in second["data"] + third["data"]] == made[::-1][2:]
    assert third["next_cursor"] is None


def test_list_without_filter_includes_archived_products(tenant):
    kept, archived = create(tenant, name="Kept"), create(tenant, name="Gone")
    tenant.delete(f"/products/{archived['id']}")
    listed = [p["id"] for p in tenant.get("/products").json()["data"]]
    assert listed == [archived["id"], kept["id"]]


def test_list_active_filter(tenant):
    kept, archived = create(tenant, name="Kept"), create(tenant, name="Gone")
    tenant.delete(f"/products/{archived['id']}")
    assert [p["id"] for p in tenant.get("/products", params={"active": "true"}).json()["data"]] == [kept["id"]]
    assert [p["id"] for p in tenant.get("/products", params={"active": "false"}).json()["data"]] == [archived["id"]]


@pytest.mark.parametrize("value", ["1", "True", "yes", ""])
def test_list_bad_active_value_is_422(tenant, value):
    assert errors_of(tenant.get("/products", params={"active": value})) == {"active": "must be true or false"}


def test_list_query_is_case_insensitive_substring(tenant):
    create(tenant, name="Alpha Widget")
    create(tenant, name="Beta Gadget")
    create(tenant, name="alphabet 100%")
    names = [p["name"] for p in tenant.get("/products", params={"query": "ALPHA"}).json()["data"]]
    assert names == ["alphabet 100%", "Alpha Widget"]
    assert [p["name"] for p in tenant.get("/products", params={"query": "%"}).json()["data"]] == ["alphabet 100%"]


def test_list_paginates_with_filters(tenant):
    wanted = [create(tenant, name=f"Widget {i}")["id"] for i in range(3)]
    create(tenant, name="Other")
    tenant.delete(f"/products/{create(tenant, name='Widget archived')['id']}")
    params = {"query": "widget", "active": "true", "limit": 2}
    first = tenant.get("/products", params=params).json()
    second = tenant.get("/products", params={**params, "cursor": first["next_cursor"]}).json()
    assert [p["id"] for p in first["data"] + second["data"]] == wanted[::-1]
    assert second["next_cursor"] is None


def test_cursor_from_other_filters_is_422_at_cursor(tenant):
    for i in range(3):
        create(tenant, name=f"P{i}")
    cursor = tenant.get("/products", params={"limit": 1, "active": "true"}).json()["next_cursor"]
    response = tenant.get("/products", params={"limit": 1, "active": "false", "cursor": cursor})
    assert list(errors_of(response)) == ["cursor"]


def test_cursor_of_another_list_is_422(tenant):
    for i in range(2):
        tenant.post("/customers", json={"name": f"C{i}"})
    cursor = tenant.get("/customers", params={"limit": 1}).json()["next_cursor"]
    assert list(errors_of(tenant.get("/products", params={"cursor": cursor}))) == ["cursor"]


def test_garbage_cursor_is_422(tenant):
    assert list(errors_of(tenant.get("/products", params={"cursor": "abc"}))) == ["cursor"]


def test_list_shows_only_the_callers_products(tenant, other_tenant):
    mine = create(tenant)
    create(other_tenant)
    assert [p["id"] for p in tenant.get("/products").json()["data"]] == [mine["id"]]


@pytest.mark.parametrize("limit,path", [("0", "limit"), ("abc", "limit")])
def test_bad_limit_is_422(tenant, limit, path):
    assert path in errors_of(tenant.get("/products", params={"limit": limit}))


def test_limit_over_100_is_capped(tenant):
    assert tenant.get("/products", params={"limit": 1000}).status_code == 200


def test_query_over_256_characters_is_422(tenant):
    assert "query" in errors_of(tenant.get("/products", params={"query": "q" * 257}))


# --- scopes --------------------------------------------------------------------------------


def test_read_only_key_cannot_write(tenant_factory):
    reader = tenant_factory(scopes=["products:read"])
    writer = reader.as_key(reader.key_with(["products:write"]))
    product = create(writer)
    for method, path, body in [("POST", "/products", {"name": "A"}),
                               ("PATCH", f"/products/{product['id']}", {"name": "B"}),
                               ("DELETE", f"/products/{product['id']}", None),
                               ("POST", f"/products/{product['id']}/restore", None)]:
        response = reader.request(method, path, json=body)
        assert response.status_code == 403, (method, path)
        assert response.json()["code"] == "forbidden"
        assert "products:write" in response.json()["detail"]
    assert reader.get(f"/products/{product['id']}").status_code == 200
    assert reader.get("/products").status_code == 200


def test_key_without_products_read_cannot_list(tenant_factory):
    outsider = tenant_factory(scopes=["clients:read"])
    response = outsider.get("/products")
    assert response.status_code == 403
    assert "products:read" in response.json()["detail"]


def test_products_write_implies_read(tenant_factory):
    writer = tenant_factory(scopes=["products:write"])
    product = create(writer)
    assert writer.get(f"/products/{product['id']}").status_code == 200


def test_missing_key_is_401(client):
    assert client.get("/api/v1/products").status_code == 401
