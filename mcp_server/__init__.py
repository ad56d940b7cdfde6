"""The MCP endpoint at `{origin}/mcp`: the invoicing operations as tools for AI assistants.

Streamable HTTP on the official SDK's low-level server, stateless (any request may land on any
process). `gate` authenticates every request and answers a tool call whose scope the credential
lacks with HTTP 403 `insufficient_scope` before the SDK sees it, so a client can step up through
the consent screen. `tools` binds each operation of `operations` as a tool: the same validation,
error codes, events, limits and idempotency as the REST API.
"""
