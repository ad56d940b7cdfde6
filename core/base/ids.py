"""Public ids: a type prefix and the row's UUID (`cus_<32 hex>`); the bare UUID is accepted too."""

from __future__ import annotations

import uuid

from core.base.errors import NotFound

PREFIXES = {
    "customer": "cus",
    "product": "prod",
    "price": "price",
    "invoice": "in",
    "invoiceitem": "ii",
    "credit_note": "cn",
    "credit_note_line": "cnli",
    "payment": "py",
    "invoice_schedule": "sched",
    "schedule_run": "schrun",
    "e_invoice_export": "exp",
    "account": "acct",
    "member": "mem",
    "invitation": "invite",
}


def public_id(kind: str, value: uuid.UUID) -> str:
    return f"{PREFIXES[kind]}_{value.hex}"


def try_parse(kind: str, text: object) -> uuid.UUID | None:
    """The UUID behind a prefixed id or a UUID string; None when malformed."""
    if not isinstance(text, str) or len(text) > 64:
        return None
    prefix = PREFIXES[kind] + "_"
    if text.startswith(prefix):
        text = text[len(prefix):]
        if len(text) != 32:
            return None
    try:
        return uuid.UUID(text)
    except ValueError:
        return None


def parse(kind: str, text: object, *, what: str | None = None) -> uuid.UUID:
    """Like try_parse, but a malformed id is reported as the resource not existing."""
    value = try_parse(kind, text)
    if value is None:
        raise NotFound(f"No such {what or kind}: {text!r}")
    return value


def parse_uuid(text: object, *, what: str) -> uuid.UUID:
    if isinstance(text, str) and len(text) <= 64:
        try:
            return uuid.UUID(text)
        except ValueError:
            pass
    raise NotFound(f"No such {what}: {text!r}")
