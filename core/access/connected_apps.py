"""What the dashboard needs of the authorization server: the apps a user has connected, and
disconnecting one. `authz.connected_apps` provides it; the composition root hands it to `web`."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from sqlmodel import Session


@dataclass(frozen=True)
class AppSummary:
    client_id: str
    name: str
    verified: bool  # identified by a client metadata document (its host is `host`)
    host: str
    scopes: list[str]  # granted scopes, across its live sign-ins
    resources: list[str]  # "MCP" and/or "REST API"
    connected_at: datetime
    last_used_at: datetime | None


class ConnectedApps(Protocol):
    def connected_apps(self, session: Session, user_id: uuid.UUID) -> list[AppSummary]: ...

    def disconnect(self, session: Session, user_id: uuid.UUID, client_id: str) -> int: ...
