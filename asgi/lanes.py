"""What the fast lanes of several surfaces share: which body a request declares, its body read before
the full stack (and given back to it, as it came, when a lane leaves the request), and an answer sent
without Starlette's response machinery."""

from __future__ import annotations

from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send


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


def first_header(scope: Scope, wanted: bytes) -> bytes | None:
    """A header's first value, as Starlette's `Headers.get` reads it."""
    return next((value for name, value in scope["headers"] if name == wanted), None)


async def read_body(receive: Receive, length: int) -> tuple[bytes | None, Receive]:
    """The body of a request that declared `length` bytes, or None when it did not come whole (the
    client left before its end, or sent more); and the `receive` the application then reads the
    request from: the messages read, given again as they came, then the rest."""
    messages: list[Message] = []
    chunks, size, whole = [], 0, False
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break  # the client left: the application meets the disconnect
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if not message.get("more_body", False):
            whole = True
            break
        if size > length:
            break
    return (b"".join(chunks) if whole and size == length else None), _again(messages, receive)


def _again(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()
    return replay


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


async def send_answer(send: Send, response: Response, *headers: tuple[bytes, bytes]) -> int:
    """Send `response` (its headers, and `headers` after them) as Starlette would; its status."""
    await send({"type": "http.response.start", "status": response.status_code,
                "headers": [*response.raw_headers, *headers]})
    await send({"type": "http.response.body", "body": response.body})
    return response.status_code
