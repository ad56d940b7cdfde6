"""ASGI plumbing the surfaces share, below them and beside `operations` (which knows nothing of HTTP):
the body a request declares, read once and replayed to the stack as it came, an answer sent."""
