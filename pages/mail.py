"""E-mails a page sends for its visitor, sent after the answer on a few threads of their own.

A slow or unreachable mail server must not hold the threads that serve requests, and how long an
answer takes must not tell whether an e-mail went (a sign-in code goes only for a right password).
A process that stops before sending loses the e-mail; every page that sends one offers another.
"""

from __future__ import annotations

import logging
from email.message import EmailMessage

from starlette.background import BackgroundTask
from starlette.responses import Response

from core.base.work_pools import WorkPool
from core.outbound import mailer

log = logging.getLogger("invoicing.mail")

MAIL_POOL = WorkPool("mail", 2)


def _deliver(message: EmailMessage, kind: str) -> None:
    mailer.send(message, kind=kind)


async def _send(message: EmailMessage, kind: str) -> None:
    try:
        await MAIL_POOL.run_async(_deliver, message, kind)
    except Exception:
        log.exception("could not send a %s e-mail", kind)  # never the address or the content


def send_after(response: Response, message: EmailMessage | None, kind: str) -> Response:
    """Send `message` (if any) once `response` has gone out."""
    if message is not None:
        response.background = BackgroundTask(_send, message, kind)
    return response
