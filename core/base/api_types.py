"""Types of fields in API responses, so every schema generated from them (OpenAPI, MCP output
schemas) states the format a client can rely on."""

from __future__ import annotations

from typing import Annotated

from pydantic import WithJsonSchema

# ISO 8601 UTC with milliseconds (`core.base.clock.iso`): 2026-11-24T09:30:00.000Z.
Timestamp = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]
EmailText = Annotated[str, WithJsonSchema({"type": "string", "format": "email"})]
UriText = Annotated[str, WithJsonSchema({"type": "string", "format": "uri"})]
