"""The operation layer: every API operation declared once, and how every surface runs it.

`business`, `customers`, `products`, `invoices` and `webhook_endpoints` declare the operations
(scope, idempotency rule, input and output models, a handler over `core`); REST binds them to
paths, MCP to tools. `pipeline.execute` is the one path from a credential and raw input to a
result or a domain error: authenticate for a resource, count the rate limit, check the scope,
validate, apply idempotency, run the handler in a transaction, map unexpected faults. So the same
operation fails with the same code and counts against the same limits whichever way it is reached.
It knows nothing of HTTP: surfaces parse their transport into an `Invocation` and render the
`Outcome`.
"""
