"""Request bodies below Starlette's request object, which several surfaces share: the body a request
declares (whether it is taken as it comes or left to the stack's limits) and a body read once,
given again to the application that reads it next."""

from __future__ import annotations

from starlette.types import Receive, Scope


def declared_length(scope: Scope) -> int | None:
    """The length of the body a request declares (0 without a Content-Length), or None for a body
    only the full stack reads: chunked, or a Content-Length repeated or malformed."""
    length = None
    for name, value in scope["headers"]:
        if name == b"content-length":
            if length is not None or not value.isdigit():
                return None
            length = int(value)
        elif name == b"transfer-encoding":
            return None
    return length or 0


def replaying(body: bytes, receive: Receive) -> Receive:
    """`receive` with the body already read given first (the request passed on as it came)."""
    sent = False

    async def replay() -> dict:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()
    return replay

