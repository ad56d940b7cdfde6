"""Progress of a long loop in core, reported to whoever runs it, and a way to stop it between items.

A loop calls `checkpoint(done, total, message)` before each item. The runner (an MCP task, say)
sets a hook for its context with `watching(hook)`; without one, `checkpoint` does nothing. The hook
may raise `Stopped` to end the loop before the next item: the loop lets it pass and leaves nothing
half-done behind (it stores nothing, its transaction rolls back).

The hook lives in a context variable, so it follows the call into `anyio.to_thread.run_sync` (which
copies the context) and never leaks into another request. It may be called from a worker thread:
a hook that touches the event loop goes through `anyio.from_thread`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Hook = Callable[[int, int, str], None]

_hook: ContextVar[Hook | None] = ContextVar("invoicing_progress_hook", default=None)


class Stopped(BaseException):
    """Raised by a hook to stop the loop between items. A BaseException, like a cancellation: the
    handlers that turn any Exception into an internal error (the operation pipeline) let it through
    to the runner, which asked for it."""


def checkpoint(done: int, total: int, message: str) -> None:
    """`done` of `total` items are done and `message` names the next (or what happens now); the
    runner's hook hears it and may raise `Stopped`. Nothing happens when no runner watches."""
    hook = _hook.get()
    if hook is not None:
        hook(done, total, message)


@contextmanager
def watching(hook: Hook) -> Iterator[None]:
    """Run the block with `hook` hearing every `checkpoint` of this context (and the threads it starts
    through anyio), then restore whatever hook was there before."""
    token = _hook.set(hook)
    try:
        yield
    finally:
        _hook.reset(token)
