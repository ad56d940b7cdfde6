"""Hostile input for property-based tests: what a careless or malicious client may send.

`values` draws text with NUL, controls, unpaired surrogates, bidirectional marks, very long words
and 1 MB strings; numbers JSON can spell but Python chokes on (NaN, Infinity, 1e400, 2^53+1, 2^63,
negative zero); dates at and past the ends of the calendar; ids in odd spellings; and small
structures of them. `to_json` writes them as a client would, literals included.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

# Examples per operation or tool; `make fuzz` raises it for a long hunt.
EXAMPLES = int(os.environ.get("INVOICING_TEST_FUZZ_EXAMPLES", "10"))


@dataclass(frozen=True)
class Raw:
    """A JSON literal `json.dumps` will not write (NaN, 1e400, -0) or would write differently."""

    text: str


def to_json(value: Any) -> str:
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k))}:{to_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(to_json(v) for v in value) + "]"
    return json.dumps(value)  # ensure_ascii: an unpaired surrogate travels as its \u escape


SPECIAL_TEXT = [
    "", " ", "\x00", "a\x00b", "\x01\x02\x1f", "\x1b[31mred", "\x7f", "\x85\x9f", "\t", "\n", "\r\n", "a\nb",
    "\ud800", "a\udfffb", "\udbff\udc00", "\u202etxt.exe", "\u200f\u200e\u2066", "\ufeff", "\ufffe\uffff",
    "\u0301" * 500, "💸" * 300, "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "ﷺ" * 50, "W" * 6000, "x" * 70_000,
    "'; DROP TABLE invoices; --", "\" OR \"1\"=\"1", "%00", "%s%n", "../../../etc/passwd", "{{7*7}}",
    "<script>alert(1)</script>", "NaN", "Infinity", "-0", "null", "true", "1e400", "０１２", "١٢٣",
]
MEGABYTE = "m" * 1_000_000

texts = st.one_of(
    st.sampled_from(SPECIAL_TEXT),
    st.text(max_size=40),
    st.text(st.characters(codec=None, categories=["Cc", "Cf", "Cs", "Zl", "Zp", "Mn"]), max_size=20),
    st.integers(250, 5100).map(lambda n: "Ŵ" * n),
    st.just(MEGABYTE),
)

numbers = st.one_of(
    st.sampled_from([
        Raw("NaN"), Raw("Infinity"), Raw("-Infinity"), Raw("1e400"), Raw("-1e400"), Raw("1e-400"), Raw("-0"),
        Raw("-0.0"), Raw("0.30000000000000004"), Raw("123456789012345678901234567890.123456789"),
        2**53 + 1, 2**53, 2**63, 2**63 - 1, -(2**63) - 1, 2**64, -1, 0, 1, 0.5, 1.0, 100.0000001,
    ]),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
)

dates = st.one_of(
    st.sampled_from([
        "0001-01-01", "9999-12-31", "9998-12-31", "1900-01-01", "1899-12-31", "0000-01-01", "2026-02-29",
        "2024-02-29", "2026-13-01", "2026-00-10", "20261123", "+002026-11-23", "2026-11-23 ",
        "9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+23:59", "9998-12-31T23:00:00-05:00",
        "2026-11-23T25:00:00Z", "2026-11-23T10:00:00.123456789+05:30", "2026-11-23T10:00:00+24:00",
    ]),
    st.dates().map(lambda day: day.isoformat()),
    st.datetimes().map(lambda moment: moment.isoformat()),
)


def _odd_ids(value: uuid.UUID) -> st.SearchStrategy[str]:
    return st.sampled_from([
        str(value).upper(), "{" + str(value) + "}", value.hex, f"urn:uuid:{value}", f"in_{value.hex.upper()}",
        f"cus_{value}", f"price_{value.hex}' OR '1'='1", str(value) + "\x00",
    ])


ids = st.one_of(
    st.sampled_from(["", "in_", "cus_", "ii_" + "0" * 2000, "in_%00", "prod_🙂", "price_../../x", "null",
                     "1 OR 1=1", "*", "in_ 123"]),
    st.uuids().flatmap(_odd_ids),
)

scalars = st.one_of(texts, numbers, dates, ids, st.booleans(), st.none())
values = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=3),
                               st.dictionaries(st.text(max_size=8), children, max_size=3)),
    max_leaves=5,
)

# Header values must stay printable ASCII (the HTTP client refuses the rest before sending).
idempotency_keys = st.one_of(
    st.uuids().map(str),
    st.sampled_from(["", "x" * 255, "x" * 256, "x" * 5000, " ", "key with spaces", "'; --", "%00"]),
    st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=300),
)


def overrides(fields: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Hostile values for some of `fields`, and sometimes a field nobody declared."""
    known = st.fixed_dictionaries({}, optional={name: values for name in fields})
    unknown = st.dictionaries(st.sampled_from(["unknown", "__proto__", "id", "object", "\x00"]), values, max_size=1)
    return st.tuples(known, unknown).map(lambda pair: {**pair[1], **pair[0]})


def has_lone_surrogate(value: Any) -> bool:
    """Whether `value` holds a lone surrogate anywhere: JSON that I-JSON (RFC 7493) refuses."""
    if isinstance(value, str):
        return any("\ud800" <= char <= "\udfff" for char in value)
    if isinstance(value, dict):
        return any(has_lone_surrogate(k) or has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(has_lone_surrogate(v) for v in value)
    return False


def names_a_sent_path(path: str, names: set[str]) -> bool:
    """Whether an error `path` points at one of `names` or inside it (a name may hold a dot)."""
    return path in names or path.split(".", 1)[0] in names or any(path.startswith(f"{name}.") for name in names)


def lift_request_limit(monkeypatch) -> None:
    """Hundreds of examples from one key would otherwise test only the `429` path after 120."""
    from config.settings import get_settings
    monkeypatch.setattr(get_settings(), "rate_limit_requests", 10**9)


# --- records for hostile input to act on ----------------------------------------------------

def seed(tenant) -> dict[str, Any]:
    """Real records, so hostile input reaches handlers and not only 404s."""
    def data(response):
        assert response.status_code in (200, 201), response.text
        return response.json()["data"]

    customer = data(tenant.post("/customers", json={"name": "Fuzz", "email": "fuzz@example.com"}))
    product = data(tenant.post("/products", json={"name": "Fuzz product"}))
    price = data(tenant.post("/prices", json={"product": product["id"], "unit_amount": 1000, "currency": "USD"}))
    draft = data(tenant.post("/invoices", json={"customer": customer["id"], "items": [{"price": price["id"]}]},
                             idem=True))
    opened = data(tenant.post("/invoices", json={"customer": customer["id"], "items": [{"price": price["id"]}]},
                              idem=True))
    data(tenant.post(f"/invoices/{opened['id']}/finalize", idem=True))
    hook = data(tenant.post("/webhook-endpoints", json={"url": "http://127.0.0.1:9/hook"}))
    credit_note = data(tenant.post("/credit-notes", json={"invoice": opened["id"], "lines": [
        {"description": "Goodwill", "amount": 100}]}, idem=True))
    return {"customer": customer, "product": product, "price": price, "draft": draft, "open": opened, "hook": hook,
            "credit_note": credit_note}


def valid_body(operation_name: str, records: dict[str, Any]) -> dict[str, Any]:
    """A body the operation accepts, for hostile values to replace one field at a time."""
    return {
        "create_customer": {"name": "A"},
        "create_product": {"name": "A"},
        "create_price": {"product": records["product"]["id"], "unit_amount": 100, "currency": "USD"},
        "create_invoice": {"customer": records["customer"]["id"], "items": [{"description": "x", "unit_amount": 1}]},
        "add_invoice_item": {"invoice": records["draft"]["id"], "description": "x", "unit_amount": 1},
        "create_webhook_endpoint": {"url": "http://127.0.0.1:9/other"},
        "create_credit_note": {"invoice": records["open"]["id"], "lines": [{"description": "x", "amount": 1}]},
        "preview_credit_note": {"invoice": records["open"]["id"], "lines": [{"description": "x", "amount": 1}]},
    }.get(operation_name, {})
