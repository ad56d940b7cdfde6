"""Tables of the authorization server: clients, authorization codes, grants and tokens.

A *grant* is one sign-in: the user's consent for one client and one resource. Every token issued
from it (the first pair from the authorization code, then each rotated pair) points at the grant,
so revoking the grant (refresh-token reuse, code reuse, disconnect) stops them all at once.
Codes and tokens are stored only as sha256 hashes.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import JSON
from sqlmodel import Field, SQLModel

from core.base.clock import now
from core.base.db import UTCDateTime


def _id() -> uuid.UUID:
    return uuid.uuid4()


class OAuthClient(SQLModel, table=True):
    """A dynamically registered client, or the cached client metadata document of an https
    `client_id` (`metadata_document` true: shown as verified, refreshed after `document_expires_at`)."""

    __tablename__ = "oauth_clients"
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    client_id: str = Field(max_length=2048, unique=True, index=True)
    secret_hash: str | None = Field(default=None, max_length=64)
    token_endpoint_auth_method: str = Field(max_length=32)
    redirect_uris: list = Field(sa_type=JSON)
    grant_types: list = Field(sa_type=JSON)
    response_types: list = Field(sa_type=JSON)
    client_name: str | None = Field(default=None, max_length=256)
    client_uri: str | None = Field(default=None, max_length=2048)
    scope: str | None = Field(default=None, max_length=1000)
    metadata_document: bool = False
    document_expires_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    created_at: datetime = Field(default_factory=now, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=now, sa_type=UTCDateTime)


class OAuthGrant(SQLModel, table=True):
    __tablename__ = "oauth_grants"
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    client_id: str = Field(max_length=2048, index=True)
    user_id: uuid.UUID = Field(foreign_key="users.id", index=True)
    account_id: uuid.UUID = Field(foreign_key="accounts.id")
    resource: str = Field(max_length=2048)
    scopes: list = Field(sa_type=JSON)  # what the user ticked on the consent page
    # RFC 9396 limits on consequential actions (core.access.authorization_details); None: scopes only.
    authorization_details: list | None = Field(default=None, sa_type=JSON)
    created_at: datetime = Field(default_factory=now, sa_type=UTCDateTime)
    revoked_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    last_used_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class OAuthAuthorizationCode(SQLModel, table=True):
    __tablename__ = "oauth_authorization_codes"
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    code_hash: str = Field(max_length=64, unique=True)
    client_id: str = Field(max_length=2048)
    user_id: uuid.UUID = Field(foreign_key="users.id", index=True)
    account_id: uuid.UUID = Field(foreign_key="accounts.id")
    # The redirect_uri parameter of the authorization request (None when it was omitted).
    redirect_uri: str | None = Field(default=None, max_length=2048)
    scopes: list = Field(sa_type=JSON)
    authorization_details: list | None = Field(default=None, sa_type=JSON)
    resource: str = Field(max_length=2048)
    code_challenge: str = Field(max_length=128)
    code_challenge_method: str = Field(max_length=8)
    created_at: datetime = Field(default_factory=now, sa_type=UTCDateTime)
    expires_at: datetime = Field(sa_type=UTCDateTime)
    used_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    grant_id: uuid.UUID | None = Field(default=None, foreign_key="oauth_grants.id")


class OAuthToken(SQLModel, table=True):
    __tablename__ = "oauth_tokens"
    id: uuid.UUID = Field(default_factory=_id, primary_key=True)
    grant_id: uuid.UUID = Field(foreign_key="oauth_grants.id", index=True)
    kind: str = Field(max_length=8)  # "access" or "refresh"
    token_hash: str = Field(max_length=64, unique=True)
    scopes: list = Field(sa_type=JSON)
    created_at: datetime = Field(default_factory=now, sa_type=UTCDateTime)
    expires_at: datetime = Field(sa_type=UTCDateTime)
    revoked_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    used_at: datetime | None = Field(default=None, sa_type=UTCDateTime)  # refresh token rotated
