"""How long a client may keep what the MCP server answers (SEP-2549 `ttlMs` and `cacheScope`, 2026-07-28).

- The lists of tools, prompts and resource templates, and `server/discover`, are the same for every
  caller and change only with a release: public, an hour (`HINTS`, passed to the low-level server).
- The resource list is the caller's account's invoices: private, briefly (a listen stream's
  `notifications/resources/list_changed` tells a client when to read it again sooner).
- Resources, per kind (set on each read's result): the invoice view's HTML is the same for everyone
  (public, a day); a PDF is the account's (private, a minute); `invoice://{id}` is live (private, 0:
  read it again when told it changed); an e-invoice export's ZIP never changes (private, an hour).
"""

from __future__ import annotations

from mcp.server.caching import CacheHint

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS

SAME_FOR_EVERYONE = CacheHint(ttl_ms=HOUR_MS, scope="public")
RESOURCE_LIST = CacheHint(ttl_ms=30_000, scope="private")
VIEW_HTML = CacheHint(ttl_ms=DAY_MS, scope="public")
PDF = CacheHint(ttl_ms=60_000, scope="private")
LIVE = CacheHint(ttl_ms=0, scope="private")
EXPORT = CacheHint(ttl_ms=HOUR_MS, scope="private")  # a ZIP never changes while it is kept

# The server-wide hints: `Server(cache_hints=HINTS)`. Results built in `mcp_server.resources` set theirs.
HINTS = {
    "tools/list": SAME_FOR_EVERYONE,
    "prompts/list": SAME_FOR_EVERYONE,
    "resources/templates/list": SAME_FOR_EVERYONE,
    "server/discover": SAME_FOR_EVERYONE,
    "resources/list": RESOURCE_LIST,
    "resources/read": LIVE,  # what a read's result does not set itself
}


def fields(hint: CacheHint) -> dict:
    """The result fields of `hint`, for a result built here: `Result(..., **fields(hint))`."""
    return {"ttl_ms": hint.ttl_ms, "cache_scope": hint.scope}
