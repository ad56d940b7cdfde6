"""Mechanisms every operation may use, with their state in the database so that several
processes act as one: rate limits, idempotency records and signed pagination cursors."""
