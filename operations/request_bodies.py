"""What the fast lanes of several surfaces share: a request's body read before the full stack, and
given to it again when a lane leaves the request (the stack reads it as it came)."""

from __future__ import annotations

from starlette.types import Receive


async def read_body(receive: Receive, length: int) -> bytes:
    """The body of a request that declared `length` bytes, read until it ends or exceeds them."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if not message.get("more_body", False) or size > length:
            break
    return b"".join(chunks)


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
