"""Outgoing e-mail: SMTP when INVOICING_SMTP_URL is set, else `.eml` files in the outbox folder.

`INVOICING_SMTP_URL` forms:

- `smtp://user:pass@host:port` (port 25 by default): plain SMTP upgraded with STARTTLS whenever the
  server offers it (certificate and host name verified). Credentials are only sent over TLS, or
  to a relay on a loopback address; otherwise the send is refused rather than leak the password.
- `smtps://user:pass@host:port` (port 465 by default): TLS from the first byte.

User name and password are percent-decoded. They are never logged nor put in an error detail.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import smtplib
import ssl
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from pathlib import Path
from urllib.parse import unquote, urlsplit

from config.settings import get_settings
from core.base import metrics

log = logging.getLogger("invoicing.mailer")

TIMEOUT_SECONDS = 30


class MailRejected(Exception):
    """The mail server refused the message or could not be reached."""

    def __init__(self, detail: str):
        super().__init__(detail)
        self.detail = detail


@dataclass(frozen=True)
class Attachment:
    filename: str
    content: bytes
    maintype: str = "application"
    subtype: str = "pdf"


def compose(*, to: str, subject: str, body: str, cc: Iterable[str] = (), reply_to: str | None = None,
            attachments: Iterable[Attachment] = (), sender: str | None = None, html: str | None = None) -> EmailMessage:
    """A plain-text message from the configured sender, with an HTML alternative of it and
    attachments when given."""
    message = EmailMessage()
    message["From"] = sender or get_settings().sender_address
    message["To"] = to
    cc = list(cc)
    if cc:
        message["Cc"] = ", ".join(cc)
    if reply_to:
        message["Reply-To"] = reply_to
    message["Subject"] = subject
    message.set_content(body)
    if html is not None:
        message.add_alternative(html, subtype="html")
    for attachment in attachments:
        message.add_attachment(attachment.content, maintype=attachment.maintype, subtype=attachment.subtype,
                               filename=attachment.filename)
    return message


def send(message: EmailMessage, *, kind: str) -> None:
    """Deliver `message` to its To and Cc recipients; MailRejected when the server refuses.
    `kind` (invoice, credit_note, verification) labels the e-mail metrics."""
    if message["Message-ID"] is None:
        message["Message-ID"] = make_msgid(domain=_sender_domain(message))
    if message["Date"] is None:
        message["Date"] = formatdate(localtime=False, usegmt=True)
    settings = get_settings()
    try:
        if settings.smtp_url:
            _send_smtp(message, settings.smtp_url)
        else:
            _write_outbox(message, settings.outbox_dir)
    except MailRejected:
        metrics.email(kind, "failed")
        raise
    metrics.email(kind, "sent")


def _sender_domain(message: EmailMessage) -> str:
    sender = str(message["From"] or "")
    return sender.rsplit("@", 1)[-1].strip("> ") or "localhost"


# --- without SMTP: the outbox folder -------------------------------------------------------


def _write_outbox(message: EmailMessage, folder: Path) -> Path:
    """Messages hold sign-in codes and verification links: readable by the service's user only."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    folder.chmod(0o700)  # also when it existed before
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    path = folder / f"{stamp}-{uuid.uuid4().hex[:12]}.eml"
    partial = path.with_suffix(".eml.part")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(message.as_bytes())
    os.replace(partial, path)  # readers of the folder never see half a message
    log.info("e-mail written to %s (no INVOICING_SMTP_URL set)", path)
    return path


# --- SMTP ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SmtpTarget:
    implicit_tls: bool
    host: str
    port: int
    username: str | None
    password: str | None

    @property
    def loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False


def parse_smtp_url(url: str) -> SmtpTarget:
    parts = urlsplit(url)
    if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
        raise MailRejected("the mail server is misconfigured (INVOICING_SMTP_URL must look like "
                           "smtp://user:pass@host:port or smtps://…)")
    try:
        port = parts.port
    except ValueError:
        raise MailRejected("the mail server is misconfigured (INVOICING_SMTP_URL has an invalid port)") from None
    implicit_tls = parts.scheme == "smtps"
    return SmtpTarget(
        implicit_tls=implicit_tls, host=parts.hostname, port=port or (465 if implicit_tls else 25),
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
    )


def _send_smtp(message: EmailMessage, url: str) -> None:
    target = parse_smtp_url(url)
    where = f"{target.host}:{target.port}"  # logged, never returned: callers may show the detail to clients
    try:
        _deliver(message, target)
    except smtplib.SMTPRecipientsRefused as exc:
        refused = ", ".join(f"{address}: {code} {_text(text)}" for address, (code, text) in exc.recipients.items())
        log.warning("mail server %s refused recipients: %s", where, refused)
        raise MailRejected(f"the mail server refused the recipients ({refused})") from None
    except smtplib.SMTPResponseException as exc:
        log.warning("mail server %s refused the message: %s %s", where, exc.smtp_code, _text(exc.smtp_error))
        raise MailRejected(f"the mail server refused the message: {exc.smtp_code} {_text(exc.smtp_error)}") from None
    except (smtplib.SMTPException, OSError) as exc:  # OSError covers refused connections, timeouts, TLS
        log.warning("could not send e-mail through %s: %s", where, exc.__class__.__name__)
        raise MailRejected(f"the mail server could not be reached or failed ({exc.__class__.__name__})") from None


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _deliver(message: EmailMessage, target: SmtpTarget) -> None:
    context = ssl.create_default_context()
    if target.implicit_tls:
        client: smtplib.SMTP = smtplib.SMTP_SSL(target.host, target.port, timeout=TIMEOUT_SECONDS, context=context)
    else:
        client = smtplib.SMTP(target.host, target.port, timeout=TIMEOUT_SECONDS)
    with client:
        client.ehlo()
        encrypted = target.implicit_tls
        if not encrypted and client.has_extn("starttls"):
            client.starttls(context=context)
            client.ehlo()
            encrypted = True
        if target.username is not None:
            if not encrypted and not target.loopback:
                log.error("mail server %s:%s offers no STARTTLS: credentials not sent", target.host, target.port)
                raise MailRejected("the mail server offers no TLS, and credentials are only sent encrypted")
            client.login(target.username, target.password or "")
        client.send_message(message)
