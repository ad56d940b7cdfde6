"""Configuration: the process settings read from INVOICING_* environment variables.

The bottom layer: it imports nothing else of the project, and every other package may read it.
"""
