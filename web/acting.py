"""The dashboard acts through the operations REST and MCP run, as the signed-in person.

Each action is `operations.pipeline.execute` with the person as the caller (actor `user`, every
scope their role in the business allows), so it runs the same core function with the same validation, events,
webhooks and limits (the account's e-mail limit counts dashboard sends). Forms that create or change
state carry an idempotency key made when the form was shown: submitting the same form twice (a
double click, a reload after a slow answer) replays the first answer instead of acting twice.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import anyio

from core.access.principal import Principal
from core.base import context
from core.base.errors import DomainError, FieldError
from core.base.jsonout import dumps
from core.mechanisms.idempotency import StoredResponse as Reply
from operations.pipeline import Invocation, Operation, execute
from operations.rendering import error_payload
from pages.routing import Visit

IDEMPOTENCY_FIELD = "idempotency_key"


class ReplayedError(DomainError):
    """A refusal kept under the form's idempotency key, shown again when the same form is resent."""

    def __init__(self, payload: dict, status: int):
        super().__init__(payload.get("detail", ""), errors=[FieldError(e["path"], e["message"])
                                                             for e in payload.get("errors", [])])
        self.code, self.status = payload.get("code", "internal_error"), status


class _Kept:
    """What an idempotency key keeps for the dashboard: the result, or the refusal."""

    def success(self, result: Any) -> Reply:
        return Reply(200, dumps(result), {})

    def failure(self, error: DomainError) -> Reply:
        return Reply(error.status, json.dumps(error_payload(error)), {})


def new_form_key() -> str:
    """The idempotency key a form carries (hidden field `idempotency_key`)."""
    return f"dash_{secrets.token_urlsafe(18)}"


def principal_of(visit: Visit) -> Principal:
    """The signed-in person acting for the business they chose, with their role there now."""
    return Principal.signed_in_person(visit.account_id, visit.user.id, visit.role)


def act(visit: Visit, operation: Operation, *, params: dict[str, str] | None = None,
        query: dict[str, str] | None = None, body: dict | None = None, keyed: bool = False) -> Any:
    """Run `operation` for the signed-in person and return its result (as the API renders it);
    raise the domain error it fails with. `keyed` takes the form's idempotency key."""
    query = {name: value for name, value in (query or {}).items() if value not in ("", None)}
    # A form sent without its key (a page from before an upgrade, a script) still acts, once.
    key = (visit.text(IDEMPOTENCY_FIELD, 300) or new_form_key()) if keyed else None
    invocation = Invocation(
        credential=None, resource="dashboard", request_id=context.request_id(), params=params or {}, query=query,
        query_items=sorted(query.items()), body=json.dumps(body).encode() if body is not None else b"",
        idempotency_key=key, idempotency_scope=("WEB", operation.name), principal=principal_of(visit))
    outcome = anyio.from_thread.run(execute, operation, invocation, _Kept())  # from the page's worker thread
    if outcome.error is not None:
        raise outcome.error
    payload = json.loads(outcome.reply.body)
    if outcome.reply.status >= 400:  # a refusal kept under the form's key, replayed
        raise ReplayedError(payload, outcome.reply.status)
    return payload
