"""Schedules: recurring invoices, run by the worker (exactly once per period)."""
