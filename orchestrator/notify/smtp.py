"""The thin adapter: mails through the configured SMTP server with smtplib, in one session."""

from __future__ import annotations

import smtplib
import ssl
from collections.abc import Callable, Sequence
from email.message import EmailMessage

from orchestrator.notify.config import Smtp

TIMEOUT_S = 30.0


class MailError(Exception):
    """The server could not be reached or refused the mail: one line naming it (never the password)."""


def _connect(s: Smtp) -> smtplib.SMTP:
    """A session, encrypted as `s.security` says: the server's certificate checked against the
    system's trust store (SSL_CERT_FILE names another, e.g. a lab's own CA) and its name."""
    if s.security == "ssl":
        return smtplib.SMTP_SSL(s.host, s.port, timeout=TIMEOUT_S, context=ssl.create_default_context())
    conn = smtplib.SMTP(s.host, s.port, timeout=TIMEOUT_S)
    if s.security == "starttls":
        conn.starttls(context=ssl.create_default_context())
    return conn


def send(s: Smtp, messages: Sequence[EmailMessage], sent: Callable[[int], None] = lambda i: None) -> None:
    """Send each message over one session (logged in when `s` has a user), calling `sent(i)`
    once the server took message i. Raises MailError naming the server on the first failure."""
    try:
        with _connect(s) as conn:
            if s.user:
                conn.login(s.user, s.password())
            for i, msg in enumerate(messages):
                conn.send_message(msg)
                sent(i)
    except (OSError, smtplib.SMTPException) as exc:
        raise MailError(f"smtp {s}: {_said(exc)}") from None


def _said(exc: BaseException) -> str:
    if isinstance(exc, smtplib.SMTPResponseException):
        text = exc.smtp_error.decode("utf-8", "replace") if isinstance(exc.smtp_error, bytes) else str(exc.smtp_error)
        return f"{exc.smtp_code} {' '.join(text.split())}"
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return "every recipient refused: " + ", ".join(sorted(exc.recipients))
    return " ".join(str(exc).split()) or type(exc).__name__
