"""GET /api/v1/openapi.json: public, valid OpenAPI 3.1, generated from the operations themselves."""


import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from openapi_spec_validator import validate
from schemathesis import GenerationMode

from rest.app import operations
from tests import hostile
from tests.conftest import make_tenant


@pytest.fixture
def document(client):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    return response.json()


def all_operations(document):
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            yield path, method, operation


def test_served_without_credentials_as_json(client):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")


def test_is_valid_openapi_3_1(document):
    assert document["openapi"].startswith("3.1")
    validate(document)


def test_server_is_the_base_url(document):
    assert document["servers"] == [{"url": "http://testserver/api/v1"}]


def test_every_declared_operation_is_documented(document):
    documented = {(method.upper(), path) for path, method, _ in all_operations(document)}
    declared = {(op.method, op.path) for op in operations()}
    assert declared == documented
    assert ("GET", "/business") in documented and ("POST", "/customers") in documented


def test_every_operation_names_its_scope(document):
    scopes = {(op.method.lower(), op.path): op.scope for op in operations()}
    for path, method, operation in all_operations(document):
        assert operation["security"] == [{"bearer": [scopes[(method, path)]]}]
        assert operation["x-required-scope"] == scopes[(method, path)]


def test_operation_ids_are_unique(document):
    ids = [operation["operationId"] for _, _, operation in all_operations(document)]
    assert len(ids) == len(set(ids))


def test_problem_schema_is_listed_and_used_for_errors(document):
    problem = document["components"]["schemas"]["Problem"]
    assert set(problem["required"]) == {"type", "title", "status", "detail", "instance", "code"}
    assert "errors" in problem["properties"]
    assert {"validation", "not_found", "rate_limited", "upstream_failed"} <= set(problem["properties"]["code"]["enum"])
    for _, _, operation in all_operations(document):
        for status in ("401", "403", "429"):
            content = operation["responses"][status]["content"]
            assert content == {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}


def test_bearer_security_scheme(document):
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"


def test_business_response_uses_the_business_model(document):
    success = document["paths"]["/business"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    ref = success["properties"]["data"]["$ref"]
    schema = document["components"]["schemas"][ref.rsplit("/", 1)[1]]
    assert set(schema["properties"]) >= {"legal_name", "invoice_prefix", "created_at", "bank", "address"}


def test_list_operations_document_cursor_and_limit(document):
    names = {p["name"] for p in document["paths"]["/customers"]["get"]["parameters"]}
    assert {"cursor", "limit", "query", "include_deleted"} <= names
    page = document["paths"]["/customers"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert page["required"] == ["data", "next_cursor"]


def test_idempotency_header_documented_where_accepted(document):
    create = document["paths"]["/customers"]["post"]
    header = next(p for p in create["parameters"] if p["name"] == "Idempotency-Key")
    assert header["in"] == "header" and header["required"] is False
    assert header["schema"]["maxLength"] == 255
    assert all(p["name"] != "Idempotency-Key" for p in document["paths"]["/customers"]["get"]["parameters"])


def test_every_internal_reference_resolves(document):
    schemas = document["components"]["schemas"]

    def refs(node):
        if isinstance(node, dict):
            if "$ref" in node:
                yield node["$ref"]
            for value in node.values():
                yield from refs(value)
        elif isinstance(node, list):
            for value in node:
                yield from refs(value)

    for ref in refs(document):
        assert ref.startswith("#/components/schemas/"), ref
        assert ref.rsplit("/", 1)[1] in schemas, ref


# --- property-based: no operation answers 5xx to any input, valid or not -----------------------



@pytest.fixture(scope="module")
def api_schema(app):
    return schemathesis.openapi.from_asgi("/api/v1/openapi.json", app)


def seed_ids(tenant) -> dict[str, str]:
    """Real ids of the tenant's resources, so id paths are fuzzed against records, not only 404s."""
    records = hostile.seed(tenant)
    return {"/customers/": records["customer"]["id"], "/products/": records["product"]["id"],
            "/prices/": records["price"]["id"], "/invoices/": records["draft"]["id"],
            "/invoice-items/": records["draft"]["lines"]["data"][0]["id"]}


@pytest.mark.fuzz
@pytest.mark.parametrize("method, path", sorted({(op.method, op.path) for op in operations()}))
def test_no_operation_answers_a_server_error(api_schema, client, method, path):
    operation = api_schema[path][method]
    tenant = make_tenant(client)
    real_id = next((value for prefix, value in seed_ids(tenant).items() if path.startswith(prefix + "{id}")), None)
    cases = st.one_of(operation.as_strategy(GenerationMode.POSITIVE), operation.as_strategy(GenerationMode.NEGATIVE))

    @given(case=cases)
    @settings(max_examples=hostile.EXAMPLES, derandomize=True, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    def fuzz(case):
        generated = {k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
        case.headers = None
        if real_id and isinstance(case.path_parameters, dict) and "id" in case.path_parameters:
            case.path_parameters = {**case.path_parameters, "id": real_id}
        response = case.call(headers={**generated, **tenant.headers})
        assert response.status_code < 500, f"{case.method} {case.formatted_path} -> {response.status_code}: " \
                                           f"{response.text[:300]}\n{case.as_curl_command()}"

    fuzz()
