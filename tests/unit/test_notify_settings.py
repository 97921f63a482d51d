"""The `notify:` key of campaign and lab files and the SMTP settings of the config file: every
mistake is one line naming the field (and the valid choices), and a password never sits in
the file itself."""

from __future__ import annotations

import pytest

from orchestrator.campaign.file import parse_campaign
from orchestrator.errors import UserError
from orchestrator.hosts.labfile import parse_lab
from orchestrator.notify.config import config_path, load_smtp, parse_smtp
from orchestrator.notify.recipients import Notify, parse_notify, recipients

CAMPAIGN = {"name": "nightly", "repository": "/src/linux", "good": "v6.1", "bad": "v6.2", "workload": "fio",
            "metric": {"name": "read_iops", "threshold": "-10%"}}


def test_a_campaign_and_a_lab_read_their_notify_lists():
    c = parse_campaign({**CAMPAIGN, "notify": {"mail": ["a@example.org", "b.c+perf@lists.example.org"]}})
    assert c.notify == Notify(("a@example.org", "b.c+perf@lists.example.org"))
    assert parse_campaign(CAMPAIGN).notify is None
    lab = parse_lab({"hosts": [{"name": "local"}], "notify": {"mail": "team@example.org"}})
    assert lab.notify == Notify(("team@example.org",))


@pytest.mark.parametrize("value, message", [
    ({"mail": ["a@example.org", "bob@"]}, "notify.mail[1]: 'bob@' is not an e-mail address"),
    ({"mail": ["Bob <bob@example.org>"]}, "notify.mail[0]: 'Bob <bob@example.org>' is not an e-mail address"),
    ({"mail": ["a@example.org, evil@example.org"]}, "notify.mail[0]: 'a@example.org, evil@example.org' is not"),
    ({"mail": ["a@example.org\nBcc: evil@example.org"]}, "notify.mail[0]: contains a control character"),
    ({"mail": [7]}, "notify.mail[0]: '7' is not an e-mail address"),
    ({"mail": {"a": 1}}, "notify.mail: expected a list of e-mail addresses, got a mapping"),
    ({"slack": ["#perf"]}, "notify.slack: unknown key; valid keys: mail"),
    (["a@example.org"], "notify: expected a mapping of keys to values, got a list"),
])
def test_a_bad_notify_key_is_one_line_naming_the_field(value, message):
    with pytest.raises(UserError) as err:
        parse_campaign({**CAMPAIGN, "notify": value})
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_a_lab_files_notify_key_is_checked_the_same_way():
    with pytest.raises(UserError, match=r"^notify\.mail\[0\]: 'x' is not an e-mail address"):
        parse_lab({"hosts": [{"name": "local"}], "notify": {"mail": ["x"]}})


def test_the_campaigns_list_replaces_the_labs_and_an_empty_one_mails_no_one():
    lab = parse_notify({"mail": ["team@example.org"]})
    assert recipients(None, lab) == ("team@example.org",)
    assert recipients(parse_notify({"mail": ["me@example.org"]}), lab) == ("me@example.org",)
    assert recipients(parse_notify({"mail": []}), lab) == ()
    assert recipients(None, None) == ()
    assert parse_notify({"mail": ["a@x.org", "a@x.org"]}).mail == ("a@x.org",), "an address listed twice gets one"


def test_smtp_settings_default_their_port_by_security():
    s = parse_smtp({"host": "mail.example.org", "from": "perf@example.org"})
    assert (s.host, s.port, s.security, s.sender, s.user) == ("mail.example.org", 587, "starttls", "perf@example.org", "")
    assert parse_smtp({"host": "mx", "security": "ssl"}).port == 465
    assert parse_smtp({"host": "127.0.0.1", "security": "none", "port": 2525}).port == 2525
    assert "@" in parse_smtp({"host": "mx"}).sender


@pytest.mark.parametrize("value, message", [
    ({}, "smtp.host: missing (required)"),
    ({"host": "mx", "security": "tls"}, "smtp.security: invalid value 'tls'; valid choices: none, starttls, ssl"),
    ({"host": "mx", "port": 70000}, "smtp.port: expected a port number 1-65535, got 70000"),
    ({"host": "mx", "port": "587"}, "smtp.port: expected a port number 1-65535, got '587'"),
    ({"host": "mx", "password": "hunter2"}, "smtp.password: unknown key; valid keys: host, port, security, user, "
                                            "password_file, from"),
    ({"host": "mx", "user": "me"}, "smtp.password_file: missing; with smtp.user"),
    ({"host": "mx", "from": "vmbisect"}, "smtp.from: 'vmbisect' is not an e-mail address"),
    ({"host": "-oProxyCommand=x"}, "smtp.host: '-oProxyCommand=x' is not a host name"),
])
def test_bad_smtp_settings_are_one_line_naming_the_field(value, message):
    with pytest.raises(UserError) as err:
        parse_smtp(value)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_the_password_file_must_be_the_owners_alone_and_its_first_line_is_the_password(tmp_path):
    secret = tmp_path / "smtp-password"
    secret.write_text("s3cret pass\nignored\n")
    secret.chmod(0o644)
    with pytest.raises(UserError, match=r"^smtp.password_file: .* can be read by others \(mode 0644\); chmod 600"):
        parse_smtp({"host": "mx", "user": "me", "password_file": str(secret)})
    secret.chmod(0o600)
    s = parse_smtp({"host": "mx", "user": "me", "password_file": "smtp-password"}, tmp_path)
    assert s.password_file == secret and s.password() == "s3cret pass"
    assert "s3cret" not in repr(s), "the settings hold where the password is, never the password"
    with pytest.raises(UserError, match=r"^smtp.password_file: cannot read .*missing"):
        parse_smtp({"host": "mx", "user": "me", "password_file": str(tmp_path / "missing")})


def test_the_config_file_is_found_by_environment_and_its_unknown_sections_are_refused(tmp_path, monkeypatch):
    monkeypatch.delenv("VMBISECT_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert config_path() == tmp_path / "xdg" / "vmbisect" / "config.yaml"
    assert load_smtp() is None, "no config file: no SMTP settings"
    path = tmp_path / "config.yaml"
    monkeypatch.setenv("VMBISECT_CONFIG", str(path))
    path.write_text("smtp:\n  host: mail.example.org\n  security: ssl\n")
    assert config_path() == path and load_smtp() == parse_smtp({"host": "mail.example.org", "security": "ssl"})
    path.write_text("smpt:\n  host: mail.example.org\n")
    with pytest.raises(UserError, match=r"^smpt: unknown key; valid keys: smtp$"):
        load_smtp()
    path.write_text("smtp: [\n")
    with pytest.raises(UserError, match=r"^config: .* is not valid YAML"):
        load_smtp()
