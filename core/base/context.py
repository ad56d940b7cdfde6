"""What the current request is, for logs: its id and, once authenticated, its caller.

The service's middleware opens a `RequestContext` per HTTP request; the surfaces take its id as
the request id they report (`X-Request-Id`, event meta, tool errors), and the pipeline notes the
caller once authenticated. The context is one mutable object shared with the worker threads a
request runs in, so what they note is seen by the middleware's access log line.
"""

from __future__ import annotations

import secrets
from contextvars import ContextVar
from dataclasses import dataclass

REQUEST_ID_MAX = 200


@dataclass
class RequestContext:
    request_id: str
    account_id: str | None = None
    credential_id: str | None = None  # the API key's id, or the OAuth client's id; never the secret


_current: ContextVar[RequestContext | None] = ContextVar("invoicing_request", default=None)


def new_request_id() -> str:
    return f"req_{secrets.token_hex(12)}"


def acceptable_request_id(supplied: str | None) -> bool:
    """A client's X-Request-Id is taken when it is 1 to 200 printable characters."""
    return bool(supplied) and len(supplied) <= REQUEST_ID_MAX and supplied.isprintable()


def begin(request_id: str) -> RequestContext:
    context = RequestContext(request_id=request_id)
    _current.set(context)
    return context


def current() -> RequestContext | None:
    return _current.get()


def request_id() -> str:
    """The current request's id, or a new one outside a request (a background job, a test)."""
    context = _current.get()
    return context.request_id if context is not None else new_request_id()


def note_caller(account_id: object, credential_id: str | None) -> None:
    context = _current.get()
    if context is not None:
        context.account_id, context.credential_id = str(account_id), credential_id or None
