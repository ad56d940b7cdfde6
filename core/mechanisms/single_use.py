"""Tokens good for one use: the first use spends one, every later use is refused, in every process."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from core.base import crypto
from core.base.clock import now
from core.base.db import transaction
from core.models import SpentToken


def spend(token: str, expires_at: datetime) -> bool:
    """Spend `token` (kept until `expires_at`, after which its own expiry refuses it); False when it
    was spent before."""
    try:
        with transaction() as session:
            session.add(SpentToken(token_hash=crypto.sha256_hex(token), expires_at=expires_at))
    except IntegrityError:
        return False
    return True


def purge_spent(session: Session) -> None:
    session.execute(delete(SpentToken).where(SpentToken.expires_at <= now()))
