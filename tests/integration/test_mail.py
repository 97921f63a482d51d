"""Mail when a campaign ends, through a real SMTP server (aiosmtpd, started here on a free
port of 127.0.0.1): real campaigns run to their end through `kinds/run.py execute` (the one run path)
with the real engine, git and SQLite store over fake guests (tests/fakes.py), and the mail
that arrives is read back. Sent once: a campaign's end seen again, or `vmbisect notify`, does
not mail again; a mail that failed (the server down) goes at the next campaign's end; STARTTLS
with a login works and a refused login says so without the password."""

from __future__ import annotations

import datetime as dt
import email
import email.policy
import ipaddress
import socket
import ssl
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from orchestrator import wiring
from orchestrator.campaign.file import parse_campaign
from orchestrator.cli import main
from orchestrator.commands import notify
from orchestrator.explain import profile_boots
from orchestrator.hosts.labfile import local_lab
from orchestrator.kinds import run as kinds
from orchestrator.kinds.specs import BisectSpec
from orchestrator.kinds.table import open_campaign, record
from orchestrator.store import Store
from tests.fakes import FakeBuilder, FakeMeasurer, fake_perf_pool, fake_profile_pair
from tests.integration.gitrepo import Repo
from tests.mailparts import attached

CULPRIT_SUBJECT = "blk-mq: Warteschlange früher prüfen"
TEAM = "perf-team@example.org"


class Inbox:
    """What the server received: (envelope sender, recipients, the message as parsed)."""

    def __init__(self) -> None:
        self.mails: list[tuple[str, list[str], email.message.EmailMessage]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        msg = email.message_from_bytes(envelope.original_content, policy=email.policy.default)
        self.mails.append((envelope.mail_from, list(envelope.rcpt_tos), msg))  # type: ignore[arg-type]
        return "250 2.0.0 queued"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(inbox: Inbox, port: int, **smtp: Any) -> Controller:
    server = Controller(inbox, hostname="127.0.0.1", port=port, **smtp)
    server.start()
    return server


@pytest.fixture
def smtpd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Inbox, int]]:
    """A plain SMTP server on a free port, and vmbisect's config file pointing at it."""
    inbox, port = Inbox(), free_port()
    write_config(tmp_path, monkeypatch, f"smtp:\n  host: 127.0.0.1\n  port: {port}\n  security: none\n"
                                        "  from: vmbisect@lab.example.org\n")
    server = serve(inbox, port)
    yield inbox, port
    server.stop()


def write_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    (tmp_path / "config.yaml").write_text(text)
    monkeypatch.setenv("VMBISECT_CONFIG", str(tmp_path / "config.yaml"))


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """A git history whose c5 costs 20% of read_iops (the culprit, with a non-ASCII subject),
    fake guests over the real engine, and every campaign end mailed (the hook cli.main wires)."""
    monkeypatch.setenv("VMBISECT_DATA_DIR", str(tmp_path / "data"))
    repo = Repo(tmp_path / "linux")
    for i in range(8):
        repo.commit(CULPRIT_SUBJECT if i == 5 else f"c{i}")
    bad = set(repo.git("rev-list", "--ancestry-path", f"{repo.names[CULPRIT_SUBJECT]}..HEAD").split())
    bad.add(repo.names[CULPRIT_SUBJECT])
    pool = SimpleNamespace(close=lambda: None, lab=local_lab())  # one slot: the engine's one-slot search
    monkeypatch.setattr(wiring, "open_pool", lambda _lab, *_store_and_id: pool)
    monkeypatch.setattr(profile_boots, "perf_pool", fake_perf_pool)
    monkeypatch.setattr(profile_boots, "profile_pair", fake_profile_pair)
    monkeypatch.setattr(kinds, "END_HOOKS", [notify.on_end])
    ns = SimpleNamespace(repo=repo, store=Store(f"sqlite:///{tmp_path / 'v.db'}"), regressed=lambda c: c in bad)
    return ns


def campaign(ns: SimpleNamespace, name: str, to: list[str] | None = None, **extra: Any) -> int:
    """A stored bisection of the whole history, measured by fake guests (its regression at c5,
    or none: then the endpoint check refuses it)."""
    raw: dict[str, Any] = {
        "name": name, "repository": str(ns.repo.path), "good": ns.repo.names["c0"], "bad": ns.repo.names["c7"],
        "workload": {"name": "fio", "params": {"rw": "randread"}}, "metric": {"name": "read_iops", "threshold": "-10%"},
        "guest": {"disks": {"count": 1}}, "boots_per_commit": 2, "runs_per_boot": 2, "confirm": "none",
        "explain": "profile"}
    if to is not None:
        raw["notify"] = {"mail": to}
    raw.update(extra)
    return record(ns.store, name, BisectSpec.of(raw, parse_campaign(raw)))


def run(lab: SimpleNamespace, monkeypatch: pytest.MonkeyPatch, cid: int, regresses: bool) -> int:
    value = (lambda c: 8000.0 * (0.8 if lab.regressed(c) else 1.0)) if regresses else (lambda c: 8000.0)
    monkeypatch.setattr(wiring, "bisection", lambda *a, **k: (FakeBuilder(), FakeMeasurer(value, noise=0.01,
                                                                                            metric="read_iops")))
    return kinds.run_stored(lab.store, cid, on_event=lambda e: None)


def test_a_bisection_that_finds_its_culprit_is_mailed_once_with_its_report(lab, smtpd, monkeypatch, capsys):
    inbox, _port = smtpd
    cid = campaign(lab, "nightly-fio", [TEAM, "me@example.org"])
    assert run(lab, monkeypatch, cid, True) == 0
    assert len(inbox.mails) == 1
    sender, to, msg = inbox.mails[0]
    assert sender == "vmbisect@lab.example.org" and to == [TEAM, "me@example.org"]
    assert str(msg["Subject"]).strip() == f"[vmbisect] nightly-fio: {CULPRIT_SUBJECT}"
    assert msg["To"] == f"{TEAM}, me@example.org" and msg["From"] == "vmbisect@lab.example.org"
    assert msg["Message-ID"] == f"<vmbisect.{lab.store.key}.{cid}.1@lab.example.org>"
    assert msg["X-Vmbisect-Campaign"] == f"{cid} (nightly-fio, bisect)" and msg["X-Vmbisect-Outcome"] == "found"
    assert abs(email.utils.parsedate_to_datetime(msg["Date"]) - dt.datetime.now(dt.timezone.utc)).total_seconds() < 60
    body = msg.get_body(("plain",)).get_content().replace("\r\n", "\n")
    culprit = lab.repo.names[CULPRIT_SUBJECT]
    md, page = kinds.report_files(lab.store.campaign(cid))
    assert body.startswith(f"vmbisect campaign {cid} (nightly-fio, bisect) ended: found.\n\n"
                           f"Culprit: {culprit[:12]} {CULPRIT_SUBJECT}\n")
    files = attached(msg)
    assert files["report.md"] == md.read_text(), "the Markdown report, whole, beside the text part that left its table"
    assert str(md.parent) not in body, "no path that exists only on the controller"
    assert max(len(line) for line in body.split("\n")) <= 78 and "\n## Reproduce\n" in body
    assert f"mailed to {TEAM}, me@example.org" in capsys.readouterr().err

    kinds.ended(open_campaign(lab.store, cid))  # the campaign's end seen again (run once more by a worker)
    assert main(["notify", str(cid), "--store", str(lab.store.engine.url)]) == 0
    assert len(inbox.mails) == 1, "mailed once"
    assert f"campaign {cid}: mailed " in capsys.readouterr().out

    assert main(["notify", str(cid), "--again", "--store", str(lab.store.engine.url)]) == 0
    assert len(inbox.mails) == 2 and inbox.mails[1][2]["Message-ID"] == f"<vmbisect.{lab.store.key}.{cid}.2@lab.example.org>"
    assert inbox.mails[1][2]["References"] == msg["References"], "a resend is in the campaign's thread"


def test_a_mail_that_failed_goes_at_the_next_campaigns_end_and_the_campaign_is_not_failed(lab, tmp_path, monkeypatch,
                                                                                         capsys):
    port = free_port()  # nothing listens here yet
    write_config(tmp_path, monkeypatch, f"smtp: {{host: 127.0.0.1, port: {port}, security: none, "
                                        "from: vmbisect@lab.example.org}\n")
    refused = campaign(lab, "flat", [TEAM])
    assert run(lab, monkeypatch, refused, False) == 2, "refused: the endpoints show no regression"
    assert lab.store.campaign(refused).state == "refused"
    err = capsys.readouterr().err
    assert (f"vmbisect: campaign {refused}: mail not sent: smtp 127.0.0.1:{port}: [Errno 111] Connection refused; sent "
            "again when a campaign ends, or by: vmbisect notify") in err
    assert lab.store.mail(refused).state == "failed"

    inbox = Inbox()
    server = serve(inbox, port)
    try:
        found = campaign(lab, "nightly-fio", [TEAM])
        assert run(lab, monkeypatch, found, True) == 0
    finally:
        server.stop()
    subjects = sorted(str(m["Subject"]).strip() for _f, _t, m in inbox.mails)
    reason = lab.store.campaign(refused).result["reason"]
    assert subjects[0].removesuffix("...").startswith("[vmbisect] flat: refused: bad is not bad: ")
    assert f"[vmbisect] flat: refused: {reason}".startswith(subjects[0].removesuffix("..."))
    assert subjects[1] == f"[vmbisect] nightly-fio: {CULPRIT_SUBJECT}" and len(subjects) == 2
    assert lab.store.mail(refused).state == lab.store.mail(found).state == "sent"
    assert main(["notify", "--store", str(lab.store.engine.url)]) == 0
    assert "no mail waits to be sent" in capsys.readouterr().out and len(inbox.mails) == 2


def test_a_campaign_naming_no_one_is_not_mailed_and_its_labs_list_stands_in_for_its_own(lab, smtpd, tmp_path,
                                                                                      monkeypatch):
    inbox, _port = smtpd
    silent = campaign(lab, "quiet", [])
    assert run(lab, monkeypatch, silent, False) == 2
    assert inbox.mails == [] and lab.store.mail(silent) is None
    (tmp_path / "lab.yaml").write_text(f"hosts: [{{name: local}}]\nnotify: {{mail: [{TEAM}]}}\n")
    on_lab = campaign(lab, "on-lab", None, lab=str(tmp_path / "lab.yaml"))
    assert run(lab, monkeypatch, on_lab, False) == 2
    assert [t for _f, t, _m in inbox.mails] == [[TEAM]]


def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    """A certificate for localhost and 127.0.0.1, and its key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


@pytest.mark.parametrize("security", ["starttls", "ssl"])
@pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")  # aiosmtpd's, for implicit TLS
def test_tls_with_a_login_sends_and_a_refused_login_is_one_line_without_the_password(security, lab, tmp_path,
                                                                                     monkeypatch, capsys):
    cert, key = self_signed(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the lab's own CA, as docs/mail.md says
    logins: list[tuple[bytes, bytes]] = []

    def authenticator(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
        assert isinstance(data, LoginPassword)
        logins.append((data.login, data.password))
        return AuthResult(success=data.password == b"correct horse", handled=False)

    inbox, port = Inbox(), free_port()
    # aiosmtpd counts only a STARTTLS session as encrypted for AUTH; an implicit TLS one is too
    tls = ({"tls_context": context, "require_starttls": True} if security == "starttls"
           else {"ssl_context": context, "auth_require_tls": False})
    server = serve(inbox, port, auth_required=True, authenticator=authenticator, **tls)
    secret = tmp_path / "smtp-password"
    secret.write_text("wrong battery\n")
    secret.chmod(0o600)
    write_config(tmp_path, monkeypatch, f"smtp: {{host: localhost, port: {port}, security: {security}, user: vmbisect, "
                                        f"password_file: {secret}, from: vmbisect@lab.example.org}}\n")
    try:
        cid = campaign(lab, "flat", [TEAM])
        assert run(lab, monkeypatch, cid, False) == 2
        err = capsys.readouterr().err
        assert (f"vmbisect: campaign {cid}: mail not sent: smtp localhost:{port}: 535 5.7.8 Authentication "
                "credentials invalid") in err and "wrong battery" not in err
        assert lab.store.campaign(cid).state == "refused" and inbox.mails == []
        secret.write_text("correct horse\n")
        assert main(["notify", "--store", str(lab.store.engine.url)]) == 0
    finally:
        server.stop()
    assert {p for _u, p in logins[:-1]} == {b"wrong battery"} and logins[-1] == (b"vmbisect", b"correct horse")
    assert [t for _f, t, _m in inbox.mails] == [[TEAM]]


def test_notify_refuses_a_running_campaign_one_naming_no_one_and_again_without_ids(lab, capsys):
    url = str(lab.store.engine.url)
    running = campaign(lab, "running", [TEAM])
    assert main(["notify", str(running), "--store", url]) == 2
    assert capsys.readouterr().err == (f"vmbisect: id: campaign {running} is running; it is mailed when it ends "
                                       "(done, refused, failed)\n")
    silent = campaign(lab, "silent")
    lab.store.set_state(silent, "failed", {"stop": "failed", "reason": "bad does not build"})
    assert main(["notify", str(silent), "--store", url]) == 2
    assert "names no one to mail and its lab file has no notify:" in capsys.readouterr().err
    assert main(["notify", "--again", "--store", url]) == 2
    assert capsys.readouterr().err.startswith("vmbisect: --again: name the campaigns to mail again")
    assert lab.store.mail(running) is None and lab.store.mail(silent) is None


def test_a_settings_campaign_is_mailed_to_its_labs_list(lab, tmp_path):
    from orchestrator.commands.notify import recipients_of
    from orchestrator.kinds.specs import SettingsSpec
    from orchestrator.setbisect.campaign import parse_settings

    (tmp_path / "lab.yaml").write_text(f"hosts: [{{name: local}}]\nnotify: {{mail: [{TEAM}]}}\n")
    raw = {"kind": "settings", "name": "sched", "kernel": {"file": str(tmp_path / "bzImage")},
           "good": {"settings": {"scheduler": "none"}}, "bad": {"settings": {"scheduler": "bfq"}},
           "workload": {"name": "fio"}, "metric": {"name": "iops", "threshold": "-10%"},
           "lab": str(tmp_path / "lab.yaml")}
    cid = record(lab.store, "sched", SettingsSpec.of(raw, parse_settings(raw)))
    assert recipients_of(open_campaign(lab.store, cid)) == (TEAM,)


def test_a_campaign_without_a_lab_file_is_mailed_to_the_list_of_the_lab_a_worker_ran_it_on(lab, tmp_path):
    from orchestrator.commands.notify import recipients_of
    from orchestrator.hosts.labfile import load_lab
    from orchestrator.kinds.specs import SettingsSpec
    from orchestrator.setbisect.campaign import parse_settings

    (tmp_path / "lab.yaml").write_text(f"hosts: [{{name: local}}]\nnotify: {{mail: [{TEAM}]}}\n")
    raw = {"kind": "settings", "name": "sched", "kernel": {"file": str(tmp_path / "bzImage")},
           "good": {"settings": {"scheduler": "none"}}, "bad": {"settings": {"scheduler": "bfq"}},
           "workload": {"name": "fio"}, "metric": {"name": "iops", "threshold": "-10%"}}
    cid = record(lab.store, "sched", SettingsSpec.of(raw, parse_settings(raw)))
    campaign = open_campaign(lab.store, cid)
    assert recipients_of(campaign) == ()  # nothing names anyone: `vmbisect notify` refuses it
    assert recipients_of(campaign, load_lab(tmp_path / "lab.yaml")) == (TEAM,)  # the worker's lab does
    lab.store.claim_mail(cid, TEAM)
    assert recipients_of(campaign) == (TEAM,)  # a retry by `vmbisect notify` mails whom the end addressed
