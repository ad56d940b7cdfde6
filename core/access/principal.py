"""Who is calling: the business acted on, the effective scopes (what the credential was granted,
bounded by the person's role there), and the actor recorded in history."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from core.access.roles import ROLE_SCOPES, manages
from core.access.scopes import ALL_SCOPES, effective
from core.base.errors import Forbidden, RoleForbids


@dataclass(frozen=True)
class Principal:
    account_id: uuid.UUID
    granted_scopes: frozenset[str]
    actor: str  # "api_key", "oauth_app" or "user"
    # The person's role in the business, read with the credential on every request: the upper bound
    # of its scopes (`core.access.roles`). None: the person is no member (nothing is allowed).
    role: str | None
    api_key_id: uuid.UUID | None = None
    client_id: str | None = None
    client_name: str | None = None  # the OAuth app's name as registered, for history
    # The person acting: signed in, behind an app, or who created the API key.
    user_id: uuid.UUID | None = None
    request_id: str | None = None
    # Bucket for per-credential rate limits (the key, or the OAuth grant).
    credential_id: str = ""
    # An OAuth grant's limits on consequential actions (core.access.authorization_details); None: scopes only.
    authorization_details: tuple | None = None
    grant_id: uuid.UUID | None = None
    resource: str | None = None  # the resource an OAuth token is bound to
    # A schedule's run acting as the credential that created it (core.schedules), named in history.
    schedule_id: uuid.UUID | None = None
    # The business's own work acting as this person (`reminders`: a late fee), named in history as itself.
    automatic: str | None = None
    scopes: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "scopes", effective(self.granted_scopes) & ROLE_SCOPES.get(self.role, frozenset()))

    @classmethod
    def signed_in_person(cls, account_id: uuid.UUID, user_id: uuid.UUID, role: str | None) -> Principal:
        """A member acting in the dashboard: every scope their role allows."""
        return cls(account_id=account_id, granted_scopes=frozenset(ALL_SCOPES), actor="user", role=role,
                   user_id=user_id, credential_id=f"user:{user_id}")

    @property
    def manages_business(self) -> bool:
        """An owner or admin: may manage members, keys, webhooks and the profile."""
        return manages(self.role)

    @property
    def has_credential_limits(self) -> bool:
        """The specification counts requests a minute and sends an hour per credential (API key or
        OAuth grant); a person in the dashboard has none, only the account's limits."""
        return self.actor != "user"

    @property
    def rate_limit_subject(self) -> str:
        """The bucket of per-credential limits: the key or the OAuth grant. A verifier that names no
        credential still gets a bucket of its own, never a shared one."""
        return self.credential_id or f"account:{self.account_id}:{self.actor}"

    @property
    def credential_label(self) -> str:
        """Which credential acts, for logs: the API key's id, the OAuth client's id, or the person."""
        if self.actor == "api_key":
            return f"api_key:{self.api_key_id}"
        if self.actor == "oauth_app":
            return f"oauth_client:{self.client_id}"
        return f"user:{self.user_id}"

    def require(self, scope: str) -> None:
        if refused := self.refusal(scope):
            raise refused

    def refusal(self, scope: str, doing: str | None = None) -> Forbidden | None:
        """Why `scope` is refused (None: it is not), saying what needed it when `doing` is given: the
        person's role (a RoleForbids) or the credential."""
        if scope in self.scopes:
            return None
        needed = f"{doing} needs the scope {scope}" if doing else None
        if why := self.role_refusal(scope):
            return RoleForbids(f"{needed}. {why}" if needed else why, missing_scope=scope, role=self.role)
        lacks = f"{needed}, which this credential lacks." if needed else f"This credential lacks the scope {scope}."
        return Forbidden(lacks, missing_scope=scope)

    def role_refusal(self, scope: str) -> str | None:
        """Why the person's role refuses `scope` the credential was granted (None: it does not). No
        step-up helps then: an app is never granted more than the role allows."""
        if scope in self.scopes or scope not in effective(self.granted_scopes):
            return None
        who = "You are" if self.actor == "user" else "The person behind this credential is"
        where = (f"{_article(self.role)} {self.role} in this business, a role that does not allow {scope}"
                 if self.role else "no longer a member of this business")
        return f"{who} {where}."

    def with_request_id(self, request_id: str) -> Principal:
        return dataclasses.replace(self, request_id=request_id)

    def event_meta(self) -> dict:
        """The `meta` recorded on invoice events caused by this caller (and `schedule`, its public id,
        when a schedule's run acts as it)."""
        if self.actor == "api_key":
            meta = {"actor": "api_key", "api_key_id": str(self.api_key_id), "user_id": str(self.user_id),
                    "request_id": self.request_id}
        elif self.actor == "oauth_app":
            meta = {
                "actor": "oauth_app", "client_id": self.client_id, "client_name": self.client_name,
                "user_id": str(self.user_id), "request_id": self.request_id,
            }
        else:
            meta = {"actor": self.automatic or "user", "user_id": str(self.user_id)}
        if self.schedule_id is not None:
            meta["schedule"] = f"sched_{self.schedule_id.hex}"
        return meta


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


@dataclass(frozen=True)
class Verified:
    """A credential verified: its caller, and how its use is noted (`note_use(db)`, among the request's
    independent writes; `core.base.executor`)."""

    principal: Principal
    note_use: Callable[[Any], Awaitable[None]]


# A credential's last use is written at most once a minute (the dashboard shows it): in Python for a
# credential read, in SQL for the statement that checks and counts it (`ratelimit.count_through`).
LAST_USED_PRECISION = timedelta(seconds=60)


def stale_use(last_used_at: datetime | None, moment: datetime) -> bool:
    """Whether a credential's `last_used_at` should be written at `moment`."""
    return last_used_at is None or moment - last_used_at >= LAST_USED_PRECISION


def stale_use_clause(last_used_at):
    """`stale_use` as SQL, against `:stale_before` (`stale_before(moment)`)."""
    from sqlalchemy import bindparam, or_
    return or_(last_used_at.is_(None), last_used_at <= bindparam("stale_before"))


def stale_before(moment: datetime) -> datetime:
    return moment - LAST_USED_PRECISION
