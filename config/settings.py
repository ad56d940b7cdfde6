"""Process configuration, read from INVOICING_* environment variables."""

from __future__ import annotations

import logging
import secrets
from functools import cached_property
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

log = logging.getLogger("invoicing")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="INVOICING_", extra="ignore")

    database_url: str = "sqlite:///./var/invoicing.db"
    origin: str = "http://127.0.0.1:8000"
    secret_key: str | None = None
    smtp_url: str | None = None
    webhook_delivery: str = Field(default="immediate", pattern="^(immediate|daily)$")
    unsafe_webhook_allow_hosts: str = ""
    data_dir: Path = Path("./var")
    # Sender address of invoice and verification e-mails; default `invoices@<the origin's host name>`.
    mail_from: str | None = None
    # Comma-separated addresses (or networks) of the reverse proxies whose X-Forwarded-For and
    # X-Forwarded-Proto are believed; empty (the default) believes none, so a client cannot spoof
    # its address around per-address throttles.
    forwarded_allow_ips: str = ""
    # Rate limits (defaults: the specification's and docs/decisions.md's). Raise them to benchmark,
    # or for a trusted integration; every process on one database must use the same values.
    rate_limit_requests: int = Field(default=120, ge=1)  # API requests per credential per minute
    # PostgreSQL connections per process on asyncpg (core.base.raw): for statements that commit on their own
    # (credentials, counts, claims, reads) and for write transactions, which hold theirs while the handler runs.
    # (INVOICING_FAST_READ_CONNECTIONS, its name before issue 34, is still read.)
    read_connections: int = Field(default=2, ge=1, le=100, validation_alias=AliasChoices(
        "INVOICING_READ_CONNECTIONS", "INVOICING_FAST_READ_CONNECTIONS", "read_connections"))
    write_connections: int = Field(default=4, ge=1, le=100)
    rate_limit_sends: int = Field(default=10, ge=1)  # invoice sends per credential per hour
    rate_limit_emails: int = Field(default=50, ge=1)  # invoice e-mails per account per hour
    rate_limit_invitations: int = Field(default=20, ge=1)  # invitations sent per business per hour
    # Failed sign-ins per account and address per 15 minutes; per address 5x that, per account 10x an hour.
    rate_limit_sign_in: int = Field(default=10, ge=1)
    rate_limit_registrations: int = Field(default=30, ge=1)  # OAuth client registrations per network per hour
    rate_limit_sign_ups: int = Field(default=5, ge=1)  # sign-ups (taken addresses too) per client network per hour
    rate_limit_metadata_fetches: int = Field(default=30, ge=1)  # OAuth client documents fetched per network per hour
    rate_limit_public_link: int = Field(default=60, ge=1)  # public invoice pages and PDFs per client network per minute
    # Threads per server process that run requests' database work. Python runs one at a time, so
    # more only contend for the interpreter (measured in docs/performance.md); a slow PDF or SMTP
    # exchange holds one.
    request_threads: int = Field(default=4, ge=1, le=256)
    # Who may read /metrics: client addresses or networks (comma-separated), and/or a bearer token.
    # Both empty (the default): metrics are off, nothing is recorded and /metrics is 404.
    metrics_allow: str = ""
    metrics_token: str | None = None
    # Where the processes of one host share their metrics; default `{data_dir}/metrics`.
    metrics_dir: Path | None = None
    # Log lines: `text` for people, `json` (one object per line) for log collectors, or `auto`
    # (the default): text on a terminal, JSON otherwise.
    log_format: str = Field(default="auto", pattern="^(auto|text|json)$")

    @property
    def metrics_enabled(self) -> bool:
        return bool(self.metrics_allow.strip() or self.metrics_token)

    @property
    def metrics_directory(self) -> Path:
        return self.metrics_dir or self.data_dir / "metrics"

    @property
    def base_url(self) -> str:
        return f"{self.origin.rstrip('/')}/api/v1"

    @property
    def sender_address(self) -> str:
        """INVOICING_MAIL_FROM, else `invoices@` the origin's host name (`localhost` for an address)."""
        if self.mail_from:
            return self.mail_from
        host = urlsplit(self.origin).hostname or ""
        is_name = "." in host and not host.replace(".", "").isdigit() and ":" not in host
        return f"invoices@{host if is_name else 'localhost'}"

    @property
    def mcp_resource(self) -> str:
        return f"{self.origin.rstrip('/')}/mcp"

    @property
    def outbox_dir(self) -> Path:
        return self.data_dir / "outbox"

    @cached_property
    def signing_key(self) -> bytes:
        """The secret that signs cursors, sessions and CSRF tokens."""
        if self.secret_key:
            return self.secret_key.encode()
        path = self.data_dir / "secret.key"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(secrets.token_urlsafe(48))
            path.chmod(0o600)
        return path.read_text().strip().encode()

    @property
    def allow_hosts(self) -> frozenset[str]:
        return frozenset(
            h.strip().lower() for h in self.unsafe_webhook_allow_hosts.split(",") if h.strip()
        )

    def warn_if_unsafe(self) -> None:
        if self.allow_hosts:
            log.warning(
                "INVOICING_UNSAFE_WEBHOOK_ALLOW_HOSTS is set (%s): outbound requests to these hosts "
                "skip the public-address and https rules. Never set this in production.",
                ",".join(sorted(self.allow_hosts)),
            )


_settings: Settings | None = None


def get_settings() -> Settings:
    global _settings
    if _settings is None:
        _settings = Settings()
    return _settings


def set_settings(settings: Settings | None) -> None:
    """Replace the process settings (tests, command line)."""
    global _settings
    _settings = settings
