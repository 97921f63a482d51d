"""vmbisect's config file (YAML): `$VMBISECT_CONFIG`, else `$XDG_CONFIG_HOME/vmbisect/config.yaml`
(`~/.config/vmbisect/config.yaml`). Its `smtp:` section says how mail leaves this machine:

    smtp:
      host: mail.example.org      # required
      port: 587                   # default: 25, 587 with starttls, 465 with ssl
      security: starttls          # none | starttls | ssl (default: starttls)
      user: vmbisect              # optional: log in (needs password_file)
      password_file: ~/.config/vmbisect/smtp-password   # the password, on its first line
      from: vmbisect@example.org  # the From address (default: vmbisect@<this host's name>)

The password is never in the file itself: `password_file` names a file only its owner can read,
read when a mail is sent and never printed. Every error names the field (`smtp.port`) and, where
there is a fixed set, the valid choices, as the campaign file's do."""

from __future__ import annotations

import os
import socket
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator import yamlcheck
from orchestrator.errors import UserError
from orchestrator.notify.recipients import address

SECURITIES = ("none", "starttls", "ssl")
DEFAULT_PORTS = {"none": 25, "starttls": 587, "ssl": 465}
SMTP_KEYS = ("host", "port", "security", "user", "password_file", "from")
TOP_KEYS = ("smtp",)
_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]")


@dataclass(frozen=True)
class Smtp:
    host: str
    port: int
    security: str
    sender: str
    user: str = ""
    password_file: Path | None = None

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"

    def password(self) -> str:
        """The password's file's first line ("" without a user). Read when a mail is sent."""
        if self.password_file is None:
            return ""
        try:
            lines = self.password_file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"smtp.password_file: cannot read {self.password_file}: "
                            f"{getattr(exc, 'strerror', None) or exc}") from None
        return lines[0] if lines else ""


def config_path() -> Path:
    if os.environ.get("VMBISECT_CONFIG"):
        return Path(os.environ["VMBISECT_CONFIG"])
    root = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(root) / "vmbisect" / "config.yaml"


def load_smtp(path: Path | None = None) -> Smtp | None:
    """The SMTP settings of the config file (None: there is no file, or it has no smtp:)."""
    path = path or config_path()
    if not path.exists():
        return None
    data = yamlcheck.read_file(path, "config", "a config file holds a few settings", "a mapping with smtp:")
    top = yamlcheck.mapping(data, "config")
    yamlcheck.known(top, "", list(TOP_KEYS))
    return parse_smtp(top["smtp"], path.parent) if "smtp" in top else None


def parse_smtp(value: Any, base: Path = Path(".")) -> Smtp:
    data = yamlcheck.mapping(value, "smtp")
    yamlcheck.known(data, "smtp", list(SMTP_KEYS))
    if "host" not in data:
        raise UserError("smtp.host: missing (required): the mail server's name, e.g. mail.example.org")
    host = yamlcheck.text(data["host"], "smtp.host", 255)
    if not host or not set(host) <= _HOST_CHARS or host.startswith("-"):
        raise UserError(f"smtp.host: {host!r} is not a host name or address")
    security = yamlcheck.text(data.get("security", "starttls"), "smtp.security")
    if security not in SECURITIES:
        raise UserError(f"smtp.security: invalid value {security!r}; valid choices: {', '.join(SECURITIES)}")
    port = data.get("port", DEFAULT_PORTS[security])
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise UserError(f"smtp.port: expected a port number 1-65535, got {yamlcheck.shown(port)}")
    user = yamlcheck.text(data.get("user", ""), "smtp.user", 255)
    password_file = _password_file(data["password_file"], base) if "password_file" in data else None
    if user and password_file is None:
        raise UserError("smtp.password_file: missing; with smtp.user give the file that holds the password "
                        "(never the password itself)")
    if password_file is not None and not user:
        raise UserError("smtp.user: missing; smtp.password_file is only read to log in as smtp.user")
    sender = address(data["from"], "smtp.from") if "from" in data else f"vmbisect@{_hostname()}"
    return Smtp(host, port, security, sender, user, password_file)


def _password_file(value: Any, base: Path) -> Path:
    """The file exists and only its owner may read it (as ssh insists of a private key)."""
    text = yamlcheck.text(value, "smtp.password_file")
    path = Path(text).expanduser()
    path = path if path.is_absolute() else base / path
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise UserError(f"smtp.password_file: cannot read {path}: {exc.strerror}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise UserError(f"smtp.password_file: {path} can be read by others (mode {stat.S_IMODE(mode):04o}); "
                        f"chmod 600 {path}")
    return path


def _hostname() -> str:
    name = socket.getfqdn() or socket.gethostname()
    return name if "." in name or name == "localhost" else f"{name}.localdomain"
