"""Every REST operation, fed hostile bodies, queries, ids and keys (tests/hostile.py): never a 5xx,
and every refusal is a problem document; a 422 names paths the caller can act on."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import quote_from_bytes

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rest.app import operations
from rest.framework import Endpoint
from tests import hostile
from tests.conftest import make_tenant

# Where the refusal of an input may point besides the fields themselves.
TRANSPORT_PATHS = {"body", "id", "Idempotency-Key", "lines", "items"}


def real_ids(path: str, records: dict[str, Any]) -> list[str]:
    by_collection = {
        "/customers/": [records["customer"]["id"]], "/products/": [records["product"]["id"]],
        "/prices/": [records["price"]["id"]], "/invoices/": [records["draft"]["id"], records["open"]["id"]],
        "/invoice-items/": [records["draft"]["lines"]["data"][0]["id"]], "/webhook-endpoints/": [records["hook"]["id"]],
    }
    return next((found for prefix, found in by_collection.items() if path.startswith(prefix)), [])


def field_names(model) -> list[str]:
    if model is None:
        return []
    return [info.alias or name for name, info in model.model_fields.items()]


def query_string(query: dict[str, Any]) -> str:
    """As a client encodes it: UTF-8 (an unpaired surrogate as its raw bytes), percent-escaped, each
    value cut to 2,000 characters (HTTP clients and servers refuse request lines much longer)."""
    def encoded(value: Any) -> str:
        text = (value if isinstance(value, str) else hostile.to_json(value).strip('"'))[:2000]
        return quote_from_bytes(text.encode("utf-8", "surrogatepass"), safe="")
    return "&".join(f"{quote_from_bytes(name.encode('utf-8', 'surrogatepass'), safe='')}={encoded(value)}"
                    for name, value in query.items())


def assert_answer(response, names: set[str]) -> None:
    assert response.status_code < 500, response.text[:500]
    if response.status_code < 400:
        return
    assert response.headers["content-type"] == "application/problem+json", response.text[:300]
    problem = response.json()
    assert problem["status"] == response.status_code and problem["code"]
    if response.status_code == 422:
        assert problem["errors"], problem
        for error in problem["errors"]:
            assert error["message"], problem
            assert hostile.names_a_sent_path(error["path"], names | TRANSPORT_PATHS), problem


def request_for(op: Endpoint, records: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    body_fields, query_fields = field_names(op.body), field_names(op.query)
    base = hostile.valid_body(op.name, records)
    bodies = st.just(None)
    if op.body is not None:
        bodies = st.one_of(hostile.overrides(body_fields).map(lambda changed: {**base, **changed}), hostile.values)
    ids = real_ids(op.path, records)
    # Never empty: `/invoices/` is another route (the collection), not a hostile id.
    path_ids = st.one_of(st.sampled_from(ids), hostile.ids.filter(bool)) if ids else st.just(None)
    queries = hostile.overrides(query_fields) if op.query is not None else st.just({})
    keys = hostile.idempotency_keys if op.idempotency != "none" else st.just(None)
    return st.fixed_dictionaries({"body": bodies, "id": path_ids, "query": queries, "key": keys})


# A megabyte string makes hypothesis warn that its repr of a case is large; that is the point here.
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

ENDPOINTS = sorted(operations(), key=lambda op: (op.path, op.method))


@pytest.mark.fuzz
@pytest.mark.parametrize("op", ENDPOINTS, ids=lambda op: f"{op.method} {op.path}")
def test_hostile_input_never_reaches_a_server_error(client, op, monkeypatch):
    hostile.lift_request_limit(monkeypatch)
    tenant = make_tenant(client)
    records = hostile.seed(tenant)

    @given(sent=request_for(op, records))
    @settings(max_examples=hostile.EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    def fuzz(sent):
        path = op.path
        if "{id}" in path:
            path = path.replace("{id}", quote_from_bytes((sent["id"] or "").encode("utf-8", "surrogatepass"), safe=""))
        if sent["query"]:
            path += "?" + query_string(sent["query"])
        headers = {"Content-Type": "application/json"}
        if sent["key"] is not None:
            headers["Idempotency-Key"] = sent["key"] or str(uuid.uuid4())
        content = hostile.to_json(sent["body"]).encode("utf-8", "surrogatepass") if sent["body"] is not None else b""
        response = tenant.request(op.method, path, content=content, headers=headers)
        names = set(field_names(op.body)) | set(field_names(op.query))
        if isinstance(sent["body"], dict):
            names |= {str(name) for name in sent["body"]}
        assert_answer(response, names | set(sent["query"]))

    fuzz()
