"""A real SMTP server on loopback (aiosmtpd) for tests, and settings that point the mailer at it."""

from __future__ import annotations

import contextlib
import email
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.policy import default as default_policy

from aiosmtpd.controller import Controller

from config.settings import Settings, get_settings, set_settings


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    message: EmailMessage

    def attachments(self) -> list[EmailMessage]:
        return list(self.message.iter_attachments())


@dataclass
class Handler:
    """Accepts every message, or answers DATA with `refuse` (for example '550 …')."""

    refuse: str | None = None
    received: list[Received] = field(default_factory=list)

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd hook name)
        if self.refuse:
            return self.refuse
        message = email.message_from_bytes(envelope.content, policy=default_policy)
        self.received.append(Received(envelope.mail_from, list(envelope.rcpt_tos), message))
        return "250 Message accepted"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def smtp_server(handler: Handler | None = None, **smtp_options) -> Iterator[tuple[Handler, str]]:
    """A running server; yields its handler and the smtp:// URL to reach it."""
    handler = handler or Handler()
    port = free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port, **smtp_options)
    controller.start()
    try:
        yield handler, f"smtp://127.0.0.1:{port}"
    finally:
        controller.stop()


@contextlib.contextmanager
def mail_settings(**changes) -> Iterator[Settings]:
    """The current settings with `changes` (smtp_url, data_dir…), restored afterwards."""
    before = get_settings()
    changed = before.model_copy(update=changes)
    set_settings(changed)
    try:
        yield changed
    finally:
        set_settings(before)
