"""The `notify:` key of a campaign file and of a lab file: `{mail: [address, ...]}`. A campaign
that has the key is mailed to its own list, which replaces the lab's (`mail: []` mails no one);
a campaign without it is mailed to its lab's list (docs/mail.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from orchestrator import yamlcheck
from orchestrator.errors import UserError

NOTIFY_KEYS = ("mail",)
MAX_RECIPIENTS = 64
MAX_ADDRESS = 254  # RFC 5321's limit on a forward path, less the angle brackets
# An addr-spec as lists and MTAs take it: a dot-atom local part and a host name (one label,
# `root@localhost`, is fine for a lab's own MTA). No display names, quoted local parts or
# address literals: nothing that could carry a comma, a newline or a second address.
_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_ADDRESS = re.compile(rf"{_ATOM}(?:\.{_ATOM})*@{_LABEL}(?:\.{_LABEL})*")


@dataclass(frozen=True)
class Notify:
    """Who is told when a campaign ends: `mail`, the addresses of the mail (docs/mail.md)."""

    mail: tuple[str, ...] = ()


def address(value: Any, path: str) -> str:
    """One e-mail address (`maintainer@example.org`), or a one-line UserError naming `path`."""
    text = yamlcheck.text(value, path, MAX_ADDRESS)
    if not _ADDRESS.fullmatch(text):
        raise UserError(f"{path}: {text!r} is not an e-mail address; give one like maintainer@example.org")
    return text


def parse_notify(value: Any, path: str = "notify") -> Notify:
    """`{mail: [address, ...]}` (a single address may stand for a list of one)."""
    data = yamlcheck.mapping(value, path)
    yamlcheck.known(data, path, list(NOTIFY_KEYS))
    raw = data.get("mail", [])
    if isinstance(raw, str):
        raw = [raw]
    listed = yamlcheck.items(raw, f"{path}.mail", "e-mail addresses", MAX_RECIPIENTS)
    addresses = [address(a, f"{path}.mail[{i}]") for i, a in enumerate(listed)]
    return Notify(tuple(dict.fromkeys(addresses)))


def recipients(campaign: Notify | None, lab: Notify | None) -> tuple[str, ...]:
    """Who is mailed: the campaign's own list when it has the key (replacing the lab's), else
    the lab's, else no one."""
    chosen = campaign if campaign is not None else lab
    return chosen.mail if chosen is not None else ()
