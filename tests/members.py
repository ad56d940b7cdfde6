"""Helpers of the member tests: people joined to a tenant's business with a role, and their keys."""

from __future__ import annotations

import email
import re
import uuid
from email.policy import default as default_policy

from config.settings import get_settings
from core.access import accounts, apikeys, memberships
from core.access.scopes import ALL_SCOPES
from core.base import db
from tests.conftest import Tenant, owner_password_hash

LINK = re.compile(r"https?://\S+/invitations/(\S+)")


def new_person(email_address: str | None = None) -> str:
    """A person with no business (as one who signs up to accept an invitation); their address."""
    address = email_address or f"person-{uuid.uuid4().hex[:8]}@example.com"
    with db.transaction() as session:
        accounts.create_user(session, email=address, password_hash=owner_password_hash())
    return address


def join(tenant, role: str, *, scopes=ALL_SCOPES):
    """A new person made a member of the tenant's business with `role`, and a key of theirs there
    with `scopes` (all by default: their role is what bounds it). The tenant as seen with that key."""
    address = new_person()
    with db.transaction() as session:
        user = accounts.user_by_email(session, address)
        memberships.join(session, tenant.account_id, user.id, role)
        created = apikeys.create_key(session, tenant.account_id, created_by=user.id, name=role, scopes=list(scopes))
    return Tenant(tenant.account_id, address, created.key, created.row.id, tenant.client)


def member_id(tenant, address: str) -> str:
    listed = tenant.get("/members").json()["data"]
    return next(m["id"] for m in listed if m["email"] == address)


def invitation_link_token(address: str) -> str:
    """The token of the latest invitation e-mailed to `address` (written to the outbox folder)."""
    found = []
    for path in sorted(get_settings().outbox_dir.glob("*.eml")):
        message = email.message_from_bytes(path.read_bytes(), policy=default_policy)
        if message["To"] == address and "invited" in message["Subject"]:
            found.append(LINK.search(message.get_content()).group(1))
    assert found, f"no invitation e-mailed to {address}"
    return found[-1]
