"""Customers: create, list, retrieve, update, archive and restore."""

import uuid


def create(tenant, **fields):
    body = {"name": "Jane Doe", **fields}
    response = tenant.post("/customers", json=body)
    assert response.status_code == 201, response.text
    return response.json()["data"]


def test_create_returns_201_with_the_customer(tenant):
    response = tenant.post("/customers", json={"name": "Jane Doe", "email": "Jane@Example.com",
                                               "address": {"city": "Paris"}})
    assert response.status_code == 201
    data = response.json()["data"]
    assert data["id"].startswith("cus_")
    assert data["object"] == "customer"
    assert data["email"] == "Jane@example.com"
    assert data["address"] == {"line1": None, "line2": None, "city": "Paris", "state": None,
                               "postal_code": None, "country": None}
    assert data["deleted"] is False
    assert data["created"].endswith("Z") and len(data["created"]) == 24


def test_create_without_name_is_422_at_name(tenant):
    response = tenant.post("/customers", json={"email": "a@example.com"})
    assert response.status_code == 422
    body = response.json()
    assert response.headers["content-type"] == "application/problem+json"
    assert body["code"] == "validation"
    assert {"path": "name", "message": "is required"} in body["errors"]


def test_create_with_bad_email_is_422_at_email(tenant):
    response = tenant.post("/customers", json={"name": "A", "email": "not-an-email"})
    assert response.status_code == 422
    assert [e["path"] for e in response.json()["errors"]] == ["email"]


def test_create_with_unknown_field_is_422(tenant):
    response = tenant.post("/customers", json={"name": "A", "nmae": "typo"})
    assert response.status_code == 422
    assert response.json()["errors"] == [{"path": "nmae", "message": "unknown field"}]


def test_name_over_256_characters_is_422(tenant):
    response = tenant.post("/customers", json={"name": "x" * 257})
    assert response.status_code == 422
    assert response.json()["errors"][0]["path"] == "name"


def test_retrieve_by_prefixed_id_and_by_uuid(tenant):
    customer = create(tenant)
    raw = str(uuid.UUID(customer["id"][4:]))
    assert tenant.get(f"/customers/{customer['id']}").json()["data"] == customer
    assert tenant.get(f"/customers/{raw}").json()["data"] == customer


def test_malformed_id_is_404(tenant):
    response = tenant.get("/customers/cus_nope")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_other_accounts_customer_is_404(tenant, other_tenant):
    customer = create(other_tenant)
    for method, path in [("GET", ""), ("PATCH", ""), ("DELETE", ""), ("POST", "/restore")]:
        response = tenant.request(method, f"/customers/{customer['id']}{path}", json={} if method == "PATCH" else None)
        assert response.status_code == 404, (method, path)


def test_patch_changes_only_the_fields_sent(tenant):
    customer = create(tenant, email="a@example.com", phone="123")
    response = tenant.patch(f"/customers/{customer['id']}", json={"phone": "456"})
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["phone"] == "456" and data["email"] == "a@example.com" and data["name"] == "Jane Doe"


def test_patch_empty_string_email_clears_it(tenant):
    customer = create(tenant, email="a@example.com")
    data = tenant.patch(f"/customers/{customer['id']}", json={"email": ""}).json()["data"]
    assert data["email"] is None


def test_patch_empty_name_is_422(tenant):
    customer = create(tenant)
    response = tenant.patch(f"/customers/{customer['id']}", json={"name": ""})
    assert response.status_code == 422
    assert response.json()["errors"][0]["path"] == "name"


def test_patch_null_name_is_422(tenant):
    customer = create(tenant)
    response = tenant.patch(f"/customers/{customer['id']}", json={"name": None})
    assert response.status_code == 422


def test_patch_is_repeatable(tenant):
    customer = create(tenant)
    first = tenant.patch(f"/customers/{customer['id']}", json={"tax_id": "X1"}).json()["data"]
    second = tenant.patch(f"/customers/{customer['id']}", json={"tax_id": "X1"}).json()["data"]
    assert first == second


def test_archive_sets_deleted_and_hides_from_list(tenant):
    customer = create(tenant)
    response = tenant.delete(f"/customers/{customer['id']}")
    assert response.status_code == 200
    assert response.json()["data"]["deleted"] is True
    assert tenant.delete(f"/customers/{customer['id']}").json()["data"]["deleted"] is True
    assert tenant.get("/customers").json()["data"] == []
    listed = tenant.get("/customers", params={"include_deleted": "true"}).json()["data"]
    assert [c["id"] for c in listed] == [customer["id"]]


def test_include_deleted_only_accepts_literal_true(tenant):
    customer = create(tenant)
    tenant.delete(f"/customers/{customer['id']}")
    for value in ("1", "True", "yes"):
        assert tenant.get("/customers", params={"include_deleted": value}).json()["data"] == []


def test_restore_undoes_archive(tenant):
    customer = create(tenant)
    tenant.delete(f"/customers/{customer['id']}")
    data = tenant.post(f"/customers/{customer['id']}/restore").json()["data"]
    assert data["deleted"] is False
    assert len(tenant.get("/customers").json()["data"]) == 1


def test_list_query_is_case_insensitive_substring(tenant):
    create(tenant, name="Alpha Corp")
    create(tenant, name="Beta LLC")
    create(tenant, name="alphabet 100%")
    names = [c["name"] for c in tenant.get("/customers", params={"query": "ALPHA"}).json()["data"]]
    assert names == ["alphabet 100%", "Alpha Corp"]
    assert [c["name"] for c in tenant.get("/customers", params={"query": "%"}).json()["data"]] == ["alphabet 100%"]


def test_list_is_newest_first_and_paginates(tenant):
    made = [create(tenant, name=f"C{i}")["id"] for i in range(5)]
    first = tenant.get("/customers", params={"limit": 2}).json()
    assert [c["id"] for c in first["data"]] == made[::-1][:2]
    second = tenant.get("/customers", params={"limit": 2, "cursor": first["next_cursor"]}).json()
    third = tenant.get("/customers", params={"limit": 2, "cursor": second["next_cursor"]}).json()
    assert [c["id"] for c in second["data"] + third["data"]] == made[::-1][2:]
    assert third["next_cursor"] is None
