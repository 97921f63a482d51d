"""The Reproduce section of a bisection's report and mail, over a campaign the real engine ran
(real git, the real store, fake builds whose images and .config sit in a kernel store laid out
as the real one, fake guests): the mail's text part keeps to 78 columns and carries what a
reader needs to run the parent and the culprit again (the campaign file, the workload's
commands, the guest, the kernels' .config attached with their sha256, the accelerator, the
host's CPU, vmbisect's version; the guest's commands attached as a script) and no path of the
controller; the report directory holds the
same files with their sums; the HTML report shows the section."""

from __future__ import annotations

import datetime as dt
import email
import email.policy
import hashlib
import json
import subprocess
import textwrap
from typing import Any

import pytest
import yaml

from orchestrator import __version__
from orchestrator.backends.git_bisect import GitBisect
from orchestrator.bisect.engine import Engine
from orchestrator.bisect.workdir import campaign_workdir
from orchestrator.campaign.file import parse_campaign
from orchestrator.commands.notify import ended_of
from orchestrator.kinds.run import ended, report_files
from orchestrator.kinds.table import open_campaign, report, stored
from orchestrator.notify.message import build
from orchestrator.store import Store
from tests.fakes import FakeBuilder, FakeMeasurer
from tests.integration.dashboard import _slow, history, stored_campaign
from tests.mailparts import attached


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A bisection run to its end (culprit c7), its reports written; the data directory set."""
    tmp = tmp_path_factory.mktemp("reproduce")
    mp = pytest.MonkeyPatch()
    mp.setenv("VMBISECT_DATA_DIR", str(tmp / "data"))
    repo, culprit = history(tmp / "repo")
    store = Store(f"sqlite:///{tmp / 'v.db'}")
    cid = stored_campaign(store, repo)
    campaign = stored(store.campaign(cid)).campaign  # type: ignore[union-attr]
    measurer = FakeMeasurer(lambda c: 90.0 if _slow(campaign.repository, c) else 100.0, noise=0.01, seed=7,
                            metric=campaign.metric.name)
    with store.lock(cid):
        Engine(campaign, "higher", GitBisect(campaign.repository, campaign_workdir(store, cid)),
               FakeBuilder(kernels=tmp / "kernels"), measurer, store).run(cid)
    ended(open_campaign(store, cid))
    yield tmp, store, cid, culprit, repo
    mp.undo()


def mail(store: Store, cid: int) -> email.message.EmailMessage:
    raw = build(ended_of(open_campaign(store, cid)), "vmbisect@lab.example.org", ("perf@example.org",),
                dt.datetime(2026, 11, 27, 6, 0, tzinfo=dt.timezone.utc)).as_bytes()
    return email.message_from_bytes(raw, policy=email.policy.default)  # type: ignore[return-value]


def indented_after(text: str, heading: str) -> str:
    """The code block (four spaces in) that follows the paragraph starting with `heading`."""
    rest = text.split(heading, 1)[1].split("\n\n", 1)[1]
    block = []
    for line in rest.split("\n"):
        if line and not line.startswith("    "):
            break
        block.append(line)
    return textwrap.dedent("\n".join(block)).strip("\n")


def test_the_mail_keeps_to_78_columns_and_says_how_to_rerun_the_parent_and_the_culprit(finished):
    tmp, store, cid, culprit, repo = finished
    msg = mail(store, cid)
    text = msg.get_body(("plain",)).get_content().replace("\r\n", "\n")
    wide = [line for line in text.split("\n") if len(line) > 78]
    assert not wide, f"{len(wide)} lines wider than 78 columns: {wide[:3]}"
    files = attached(msg)

    parent = repo.names["c6"]
    for role, sha in (("culprit", culprit), ("parent", parent)):
        config = files[f"config-{sha[:12]}"]
        assert config.startswith("# Linux/x86 kernel of "), "the .config the kernel was built with"
        assert (f"config-{sha[:12]}  {role} {sha[:12]}\n      sha256 {hashlib.sha256(config.encode()).hexdigest()}"
                in text)
    # the campaign file as it ran: a reader's clone in place of the controller's repository
    shown = yaml.safe_load(indented_after(text, "The campaign as it ran"))
    assert yaml.safe_load(files["campaign.yaml"]) == shown and shown["repository"] == "linux"
    again = parse_campaign({**shown, "repository": str(repo.path)})
    ran = stored(store.campaign(cid)).campaign  # type: ignore[union-attr]
    assert ((again.good, again.bad, again.workload, again.metric, again.guest, again.runs_per_boot)
            == (ran.good, ran.bad, ran.workload, ran.metric, ran.guest, ran.runs_per_boot))
    assert f"    vmbisect verify campaign.yaml {culprit}\n" in text, "the culprit against its parent, again"
    assert "    vmbisect bisect campaign.yaml\n" in text
    assert "cat > /tmp/vmbisect/fio.job <<'EOF'\n    [global]\n" in text and "rw=randread\n" in text
    assert "    fio --output-format=json+ /tmp/vmbisect/fio.job\n" in text
    assert ("Guest: 2 vCPUs, 1024 MiB memory, machine pc, clock auto, 1 data disk of 1024 MiB on virtio-scsi"
            in " ".join(text.split()))
    script = files["guest.sh"]  # the same commands unindented: a heredoc's end is at a line's start
    assert "\nEOF\nfio --output-format=json+ /tmp/vmbisect/fio.job\n" in script and "\n[global]\n" in script
    assert subprocess.run(["sh", "-n"], input=script, text=True).returncode == 0
    assert (f"vmbisect {__version__}; accelerator tcg; host CPU Fake CPU @ 2.00GHz; guest clocksource hpet."
            in " ".join(text.split()))
    assert str(tmp) not in text and not any(str(tmp) in f for f in files.values()), "a path only the controller has"


def test_the_report_directory_holds_the_configs_and_the_campaign_file_with_their_sums(finished):
    _tmp, store, cid, culprit, _repo = finished
    md, _page = report_files(store.campaign(cid))
    beside = md.with_suffix("")
    sums = dict(reversed(line.split("  ", 1)) for line in (beside / "SHA256SUMS").read_text().splitlines())
    assert sorted(sums) == sorted(p.name for p in beside.iterdir() if p.name != "SHA256SUMS")
    assert f"config-{culprit[:12]}" in sums and "campaign.yaml" in sums
    assert all(hashlib.sha256((beside / n).read_bytes()).hexdigest() == s for n, s in sums.items())
    assert "## Reproduce" in md.read_text()
    as_json = json.loads(report(store, cid, "json"))["reproduce"]
    assert as_json["campaign_file"] + "\n" == (beside / "campaign.yaml").read_text()


def test_the_html_report_has_the_reproduce_section_escaped(finished):
    _tmp, store, cid, culprit, _repo = finished
    page = report(store, cid, "html")
    section = page.split("<h2>Reproduce</h2>", 1)[1].split("</pre>", 1)[0]
    assert f"vmbisect verify campaign.yaml {culprit}" in section and "&lt;&lt;&#x27;EOF&#x27;" in section
