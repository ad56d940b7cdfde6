"""The JSON-RPC error codes of our own refusals: application codes outside -32768..-32000 (which
JSON-RPC and MCP keep for themselves; 2026-07-28 allocates -32020 onwards), each equal to the HTTP
status it stands for, so a client reading only the JSON-RPC body learns the same."""

FORBIDDEN = 403
RATE_LIMITED = 429
