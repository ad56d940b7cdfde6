"""Foundations every other group builds on: clock, database sessions and column types, domain
errors, prefixed ids, JSON output, input validation, money arithmetic, account-scoped look-ups
and crypto helpers (tokens, hashes, constant-time comparison)."""
