"""Text a database cannot store, or that would corrupt what we print and send, is a 422 at its path
on every database: NUL and other C0 controls, line breaks in one-line fields, unpaired surrogates."""

import pytest
from sqlalchemy.exc import DataError, ProgrammingError
from sqlmodel import select

from core.base import db
from core.models import IdempotencyRecord
from rest import customers as customer_endpoints
from tests.api.invoicing import adhoc, create, customer
from tests.api.test_errors import assert_problem, operation


def paths(response) -> list[str]:
    return [error["path"] for error in response.json()["errors"]]


@pytest.mark.parametrize("text", ["A\x00B", "A\x1bB", "A\x7f\x00", "\x00"])
def test_a_control_character_in_a_body_field_is_422_at_its_path(tenant, text):
    response = tenant.post("/customers", json={"name": text})
    assert_problem(response, 422, "validation", "validation")
    assert paths(response) == ["name"]


def test_a_control_character_in_a_nested_field_is_422_at_its_nested_path(tenant):
    response = tenant.post("/customers", json={"name": "A", "address": {"city": "Par\x00is"}})
    assert paths(response) == ["address.city"]


@pytest.mark.parametrize("text", ["Jane\nDoe", "Jane\rDoe", "Jane\tDoe"])
def test_a_line_break_or_tab_in_a_one_line_field_is_422(tenant, text):
    response = tenant.post("/customers", json={"name": text})
    assert response.status_code == 422
    assert "single line" in response.json()["errors"][0]["message"]


def test_multi_line_text_keeps_its_line_breaks_and_tabs(tenant):
    text = "First line\r\nSecond\tline\nThird"
    response = create(tenant, items=[adhoc(description=text)], footer=text)
    assert response.status_code == 201, response.text
    invoice = response.json()["data"]
    assert invoice["lines"]["data"][0]["description"] == text
    assert invoice["footer"] == text


def test_a_nul_in_multi_line_text_is_422_at_its_path(tenant):
    response = create(tenant, items=[adhoc(description="ok\n\x00")])
    assert paths(response) == ["items.0.description"]


def test_an_unpaired_surrogate_in_json_is_422_at_its_path(tenant):
    response = tenant.post("/customers", content=b'{"name": "A\\ud800B"}', headers={"Content-Type": "application/json"})
    assert_problem(response, 422, "validation", "validation")
    assert paths(response) == ["name"]


def test_characters_outside_the_basic_plane_are_accepted(tenant):
    name = "Zoë 🧾 \u200fשלום\u200f 𝔘"
    assert customer(tenant, name=name)["name"] == name


def test_a_control_character_in_a_query_parameter_is_422_at_its_name(tenant):
    response = tenant.get("/customers", params={"query": "a\x00"})
    assert paths(response) == ["query"]


def test_a_control_character_in_a_path_id_is_404_as_any_malformed_id(tenant):
    response = tenant.get("/customers/cus_%00")
    assert_problem(response, 404, "not_found", "not-found")


def test_a_nul_in_a_lifecycle_path_with_a_key_is_404_and_claims_nothing(tenant):
    assert tenant.post("/invoices/in_%00/finalize", idem="nul-path").status_code == 404
    with db.transaction() as session:
        assert session.exec(select(IdempotencyRecord)).first() is None


def test_a_value_the_database_refuses_is_422_not_502(tenant, monkeypatch):
    def refused(call):
        raise DataError("INSERT", {}, Exception("PostgreSQL text fields cannot contain NUL (0x00) bytes"))
    monkeypatch.setattr(operation(customer_endpoints, "create_customer"), "handler", refused)
    response = tenant.post("/customers", json={"name": "A"})
    assert_problem(response, 422, "validation", "validation")
    assert "0x00" not in response.text


def test_another_database_fault_is_ours_a_500_not_a_502(tenant, monkeypatch):
    def broken(call):
        raise ProgrammingError("SELECT", {}, Exception("column does not exist"))
    monkeypatch.setattr(operation(customer_endpoints, "list_customers"), "handler", broken)
    response = tenant.get("/customers")
    assert_problem(response, 500, "internal_error", "internal-error")
    assert "column" not in response.text
