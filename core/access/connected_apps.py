"""What the dashboard needs of the authorization server: the apps a user has connected, their limits,
and disconnecting one. `authz.connected_apps` provides it; the composition root hands it to `web`."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from sqlmodel import Session


@dataclass(frozen=True)
class Grant:
    """One sign-in of an app: where it acts, and the app's limits (every live sign-in of the app holds
    the same; None: its scopes alone)."""

    id: uuid.UUID
    client_id: str
    app_name: str
    account_id: uuid.UUID  # the business it acts for, chosen on the consent page
    resource: str  # "MCP" or "REST API"
    scopes: list[str]
    authorization_details: tuple | None  # core.access.authorization_details.InvoiceActions
    connected_at: datetime


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
    grants: list[Grant]  # its live sign-ins, oldest first, each holding the app's limits


class ConnectedApps(Protocol):
    def connected_apps(self, session: Session, user_id: uuid.UUID, account_id: uuid.UUID) -> list[AppSummary]: ...

    def disconnect(self, session: Session, user_id: uuid.UUID, account_id: uuid.UUID,
                   client_id: str | None = None) -> int: ...

    def grant(self, session: Session, user_id: uuid.UUID, grant_id: uuid.UUID) -> Grant | None: ...

    def set_limits(self, session: Session, user_id: uuid.UUID, grant_id: uuid.UUID, details: tuple | None) -> bool:
        """Change the limits of this live grant's app: every sign-in of it not revoked holds them from
        the app's next request, on every process."""
