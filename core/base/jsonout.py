"""JSON output: exact decimals as JSON numbers, UUIDs and dates as strings.

`dumps` writes what `json.dumps(jsonable(value), separators=(",", ":"), ensure_ascii=False)` writes,
byte for byte, with orjson: numbers that are not whole are written as Python writes a float
(`1e-06`, which orjson would write `1e-6`), as an `orjson.Fragment`.
"""

from __future__ import annotations

import json
import uuid
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import orjson

from core.base.clock import iso


def jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, Decimal):
        # At most six decimal places are stored, so the shortest float repr is the exact decimal.
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, date):
        return value.isoformat()
    return value


def json_number(value: Decimal) -> int | orjson.Fragment:
    """An exact decimal as `dumps` writes it: a whole number, or Python's repr of the float."""
    return int(value) if value == value.to_integral_value() else orjson.Fragment(repr(float(value)))


class Encoded:
    """A JSON value written already (`json`, as `dumps` writes it): `dumps` embeds it as it is; its
    value is read back only for whoever asks (`value`)."""

    __slots__ = ("json",)

    def __init__(self, json_bytes: bytes) -> None:
        self.json = json_bytes

    def value(self) -> Any:
        """The value, with numbers that are not whole as floats (whose repr `dumps` writes as it came)."""
        return orjson.loads(self.json)


def _ready(value: Any) -> Any:
    """`value` as orjson writes it like the json module: decimals and floats as Python's repr."""
    if isinstance(value, Encoded):
        return orjson.Fragment(value.json)
    if isinstance(value, dict):
        return {k: _ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_ready(v) for v in value]
    if isinstance(value, Decimal):
        return json_number(value)
    if isinstance(value, float):
        return orjson.Fragment(json.dumps(value))
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, date):
        return value.isoformat()
    return value


def dumps_bytes(value: Any) -> bytes:
    return orjson.dumps(_ready(value))


def dumps(value: Any) -> str:
    return dumps_bytes(value).decode()


def _decimal(value: Any) -> Any:
    if isinstance(value, Decimal):
        return json_number(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def dumps_read(value: Any) -> bytes:
    """`dumps_bytes` for what the read path renders: no float and no datetime (moments are `iso`
    strings already), dates and UUIDs as orjson writes them (as `dumps` does), decimals through `_decimal`."""
    return orjson.dumps(value, default=_decimal)
