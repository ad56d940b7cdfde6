"""The invoicing library: every rule of the service once, with no HTTP.

Groups, lowest first (a group imports only the groups below it; `tests/unit/test_architecture.py`
holds that):

- `base`: clock, database sessions, domain errors, ids, JSON output, input validation, money
  arithmetic, account-scoped look-ups and small crypto helpers.
- `models`: every table (one SQLModel metadata for Alembic).
- `mechanisms` and `outbound`: shared request mechanisms (rate limits, idempotency, pagination
  cursors); talking to the outside world safely (SSRF-safe HTTP, SMTP).
- `access`, `catalog` and `webhooks`: who may act (accounts, API keys, credentials, scopes);
  what is billed and to whom (customers, products, prices); notifying the account's systems
  (webhook endpoints, the outbox, signing and delivery).
- `billing`: invoices, their lines, numbers, history, documents (PDF, e-mail, public link) and
  the business profile printed on them.
"""
