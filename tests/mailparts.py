"""A mail's attachments as a reader's client saves them: text parts with local line ends, the
others (the guest's script) byte for byte."""

from __future__ import annotations

from email.message import EmailMessage


def attached(msg: EmailMessage) -> dict[str, str]:
    """Each attachment's file name and its text."""
    files: dict[str, str] = {}
    for part in msg.iter_attachments():
        content = part.get_content()
        files[str(part.get_filename())] = (content.decode("utf-8") if isinstance(content, bytes)
                                           else content.replace("\r\n", "\n"))
    return files
