"""The connected OAuth apps of a user, as the settings page needs them.

The authorization server (`authz.grants`) owns grants; this module only adapts its functions.
Until the authorization server provides them, no app can be connected, so the list is empty.
"""

from __future__ import annotations

import uuid

from sqlmodel import Session


def list_apps(session: Session, user_id: uuid.UUID) -> list:
    try:
        from authz.grants import connected_apps
    except ImportError:
        return []
    return list(connected_apps(session, user_id))


def disconnect(session: Session, user_id: uuid.UUID, client_id: str) -> bool:
    """Revoke every token of the app for this user; False when it was not connected."""
    try:
        from authz.grants import disconnect as revoke_app
    except ImportError:
        return False
    return bool(revoke_app(session, user_id, client_id))
