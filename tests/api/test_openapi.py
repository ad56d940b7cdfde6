"""GET /api/v1/openapi.json: public, valid OpenAPI 3.1, generated from the operations themselves."""


import json

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012
from schemathesis import GenerationMode

from core.access.scopes import ALL_SCOPES
from core.models import EVENT_TYPES
from rest import examples
from rest.app import operations
from tests import hostile
from tests.conftest import make_tenant


@pytest.fixture
def document(client):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    return response.json()


class _AnyText:
    def __eq__(self, other):
        return isinstance(other, str) and len(other) > 10


ANY_TEXT = _AnyText()


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
        scope = scopes[(method, path)]
        assert operation["security"] == [{"apiKey": [scope]}, {"oauth2": [scope]}]
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
            content = operation["responses"][status]["content"]["application/problem+json"]
            assert content["schema"] == {"$ref": "#/components/schemas/Problem"}
            assert content["example"]["status"] == int(status)


def test_api_key_security_scheme_is_http_bearer(document):
    assert document["components"]["securitySchemes"]["apiKey"] == {
        "type": "http", "scheme": "bearer", "description": ANY_TEXT}


def test_oauth2_security_scheme_is_the_authorization_code_flow_with_every_scope(document):
    oauth = document["components"]["securitySchemes"]["oauth2"]
    flow = oauth["flows"]["authorizationCode"]
    assert flow["authorizationUrl"] == "http://testserver/oauth/authorize"
    assert flow["tokenUrl"] == flow["refreshUrl"] == "http://testserver/oauth/token"
    assert list(flow["scopes"]) == list(ALL_SCOPES) and all(flow["scopes"].values())
    assert "PKCE" in oauth["description"] and "S256" in oauth["description"]


def test_business_response_uses_the_business_model(document):
    success = document["paths"]["/business"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    ref = document["components"]["schemas"][success["$ref"].rsplit("/", 1)[1]]["properties"]["data"]["$ref"]
    schema = document["components"]["schemas"][ref.rsplit("/", 1)[1]]
    assert set(schema["properties"]) >= {"legal_name", "invoice_prefix", "created_at", "bank", "address"}


def test_list_operations_document_cursor_and_limit(document):
    names = {p["name"] for p in document["paths"]["/customers"]["get"]["parameters"]}
    assert {"cursor", "limit", "query", "include_deleted"} <= names
    page = document["paths"]["/customers"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert page == {"$ref": "#/components/schemas/CustomerList"}
    assert document["components"]["schemas"]["CustomerList"]["required"] == ["data", "next_cursor"]


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


# --- what generators and readers need ------------------------------------------------------------

def schemas_of(document) -> dict:
    return document["components"]["schemas"]


def success_content(operation) -> dict:
    status = next(code for code in operation["responses"] if code.startswith("2"))
    return operation["responses"][status]["content"]


def test_every_operation_has_a_summary_and_a_description(document):
    for path, method, operation in all_operations(document):
        assert operation["summary"] and len(operation["summary"]) <= 60, (method, path)
        assert len(operation["description"]) > 20, (method, path)


def test_every_property_of_every_schema_is_described(document):
    for name, schema in schemas_of(document).items():
        assert schema.get("description"), name
        for prop, definition in schema.get("properties", {}).items():
            assert definition.get("description"), f"{name}.{prop}"


def test_every_parameter_is_described(document):
    for path, method, operation in all_operations(document):
        for parameter in operation["parameters"]:
            assert parameter.get("description"), (method, path, parameter["name"])


@pytest.mark.parametrize("schema, prop, wanted", [
    ("Invoice", "created", "date-time"), ("Invoice", "finalized_at", "date-time"), ("Customer", "created", "date-time"),
    ("Product", "updated", "date-time"), ("Price", "created", "date-time"), ("InvoiceEvent", "created_at", "date-time"),
    ("WebhookEndpoint", "disabled_at", "date-time"), ("Business", "created_at", "date-time"),
    ("Invoice", "issue_date", "date"), ("Invoice", "due_date", "date"), ("InvoiceCreate", "issue_date", "date"),
    ("Customer", "email", "email"), ("Business", "email", "email"), ("InvoiceSendResult", "emailed_to", "email"),
    ("Invoice", "public_url", "uri"), ("Invoice", "public_pdf_url", "uri"), ("WebhookEndpoint", "url", "uri"),
])
def test_formats_are_declared(document, schema, prop, wanted):
    definition = schemas_of(document)[schema]["properties"][prop]
    formats = {option.get("format") for option in definition.get("anyOf", [definition])}
    assert wanted in formats, definition


def test_date_query_parameters_have_the_date_format(document):
    parameters = {p["name"]: p for p in document["paths"]["/invoices"]["get"]["parameters"]}
    for name in ("from", "to"):
        assert "date" in {o.get("format") for o in parameters[name]["schema"].get("anyOf", [parameters[name]["schema"]])}


def test_every_json_response_is_a_named_schema_with_an_example(document):
    for path, method, operation in all_operations(document):
        for media_type, content in success_content(operation).items():
            if media_type == "application/json":
                assert set(content["schema"]) == {"$ref"}, (method, path)
                assert "example" in content, (method, path)


def test_resources_lists_and_envelopes_have_their_own_names(document):
    names = set(schemas_of(document))
    for resource in ("Business", "Customer", "Product", "Price", "Invoice", "InvoiceWithLines", "InvoiceItem",
                     "InvoiceEvent", "WebhookEndpoint"):
        assert resource in names
    assert {"CustomerList", "CustomerResponse", "InvoiceList", "InvoiceWithLinesResponse", "InvoiceEventList",
            "InvoiceItemList"} <= names
    assert not [name for name in names if name.endswith(("Out", "OutModel", "Query"))]
    for name, schema in schemas_of(document).items():
        assert schema.get("title", name) == name


def test_no_component_is_unused(document):
    text = json.dumps({key: value for key, value in document.items() if key != "components"})
    schemas = schemas_of(document)
    used = {name for name in schemas if f"#/components/schemas/{name}\"" in text}
    while True:
        more = {name for name in schemas if name not in used
                and any(f"#/components/schemas/{name}\"" in json.dumps(schemas[u]) for u in used)}
        if not more:
            break
        used |= more
    assert used == set(schemas)


def test_replays_and_rate_limits_document_their_headers(document):
    create = document["paths"]["/invoices"]["post"]["responses"]
    assert "Idempotent-Replayed" in create["201"]["headers"]
    assert "Retry-After" in create["429"]["headers"] and "WWW-Authenticate" in create["401"]["headers"]
    assert "Idempotent-Replayed" not in document["paths"]["/invoices"]["get"]["responses"]["200"]["headers"]


def test_every_request_body_has_an_example(document):
    for path, method, operation in all_operations(document):
        if "requestBody" in operation:
            assert operation["requestBody"]["content"]["application/json"]["example"], (method, path)


def _validator(document, schema):
    registry = Registry().with_resource("urn:openapi", Resource.from_contents(document, DRAFT202012))
    return Draft202012Validator({"$ref": "urn:openapi#" + schema["$ref"][1:]} if "$ref" in schema else schema,
                                registry=registry, format_checker=Draft202012Validator.FORMAT_CHECKER)


def test_every_example_matches_its_schema(document):
    checked = 0
    for _, _, operation in all_operations(document):
        bodies = [operation.get("requestBody", {}).get("content", {}).get("application/json")]
        bodies += [content.get("application/json") or content.get("application/problem+json")
                   for response in operation["responses"].values() if (content := response.get("content"))]
        for body in filter(None, bodies):
            if "example" in body:
                _validator(document, body["schema"]).validate(body["example"])
                checked += 1
    for name, schema in schemas_of(document).items():
        for example in schema.get("examples", []):
            _validator(document, {"$ref": f"#/components/schemas/{name}"}).validate(example)
            checked += 1
    assert checked > 100


def test_examples_exist_only_for_schemas_of_the_document(document):
    assert set(examples.RESOURCES) <= set(schemas_of(document))
    assert set(examples.REQUESTS) == {op.operation_id for op in operations() if op.body is not None}


def test_tags_are_listed_with_descriptions_and_used(document):
    tags = {tag["name"]: tag["description"] for tag in document["tags"]}
    used = {tag for _, _, operation in all_operations(document) for tag in operation["tags"]}
    assert used == set(tags) and all(tags.values())


def test_the_pdf_is_binary_application_pdf(document):
    content = document["paths"]["/invoices/{id}/pdf"]["get"]["responses"]["200"]["content"]
    assert content == {"application/pdf": {"schema": {"type": "string", "format": "binary",
                                                      "contentMediaType": "application/pdf"}}}


def test_webhooks_describe_every_event_payload_and_signature_header(document):
    assert set(document["webhooks"]) == set(EVENT_TYPES)
    for kind, item in document["webhooks"].items():
        post = item["post"]
        assert {p["name"] for p in post["parameters"]} == {"webhook-id", "webhook-timestamp", "webhook-signature"}
        body = post["requestBody"]["content"]["application/json"]
        about = kind.split(".")[0]
        schema = {"credit_note": "CreditNote", "payment": "Payment", "invoice": "Invoice",
                  "invoice_schedule": "InvoiceSchedule"}[about]
        assert body["schema"] == {"$ref": f"#/components/schemas/{schema}EventNotification"}
        assert body["example"]["type"] == kind
        assert body["example"]["data"]["object"]["object"] == about
    for about in ("Invoice", "CreditNote"):
        payload = schemas_of(document)[f"{about}EventNotification"]
        assert payload["properties"]["data"]["properties"]["object"]["$ref"] == f"#/components/schemas/{about}"


def test_the_documented_example_invoice_adds_up():
    from core.base.money import amount_in_words
    invoice, lines = examples.INVOICE, examples.RESOURCES["InvoiceWithLines"]["lines"]["data"]
    assert invoice["taxable"] == sum(line["amount"] for line in lines)
    assert invoice["subtotal"] == sum(round(line["unit_amount"] * line["quantity"]) for line in lines)
    assert invoice["subtotal"] - invoice["discount"] == invoice["taxable"]
    assert invoice["tax"] == sum(line["tax_amount"] for line in lines)
    assert invoice["total"] == invoice["taxable"] + invoice["tax"] == invoice["amount_due"]
    assert invoice["amount_in_words"] == amount_in_words(invoice["total"], invoice["currency"])


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
