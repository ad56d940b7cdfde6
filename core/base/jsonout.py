"""JSON output: exact decimals as JSON numbers, UUIDs and dates as strings."""

from __future__ import annotations

import json
import uuid
from datetime import date, datetime
from decimal import Decimal
from typing import Any

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


def dumps(value: Any) -> str:
    return json.dumps(jsonable(value), separators=(",", ":"), ensure_ascii=False)
