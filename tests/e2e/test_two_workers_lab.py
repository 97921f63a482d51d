"""A lab left alone, on real guests: the shipped dbench and netperf series (kernels built from
linux-source-6.1, as tests/e2e/test_queue_lab.py) submitted with `vmbisect submit`, two
`vmbisect worker --runners 1` processes on this machine sharing one lab host whose one slot
takes both cores, one worker SIGKILLed while its guest runs and started again. Both culprits
are confirmed, no boot is measured while a kernel build runs (builds lease the CPUs the slot
uses), the boot cut by the kill is not counted and its commit is booted again, the takeover is
on record in `vmbisect status ID`, in the mail (a real SMTP server, the lab file's notify) and
on the dashboard (a screenshot in Chromium), and no guest is left. Each campaign's boots of one
commit differ no more than twice as much as the same series' boots bisected alone on this
machine (tests/data/alone); the mail carries what a reader reruns the culprit against its parent
from; the dashboard's campaign page and `vmbisect report ID` give every row the same boots,
runs and median."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from sqlalchemy import select

from orchestrator import paths
from orchestrator.backends.libvirt_vm import NAME_PREFIX
from orchestrator.demo import DBENCH, NETPERF, ensure_series_repo
from orchestrator.kinds.table import metric_of
from orchestrator.notify.message import WIDTH
from orchestrator.queue.takeovers import IN_FLIGHT
from orchestrator.stats import Boot, pooled_boot_variance
from orchestrator.store import BootRow, RunRow, Store, WorkerRow
from tests.agreement import page_rows, report_rows
from tests.conftest import require
from tests.integration.test_dashboard_browser import CHROMIUM, FLAGS, serving
from tests.integration.test_mail import Inbox, free_port, serve

pytestmark = [pytest.mark.vm, pytest.mark.slow, pytest.mark.long]
VMBISECT = [sys.executable, "-m", "orchestrator.cli"]
TEAM = "perf-team@example.org"
HEARTBEAT_S = 30
ALONE = Path(__file__).resolve().parents[1] / "data" / "alone"  # each series bisected alone: capture.py


def worker(lab: Path, url: str, env: dict[str, str], log: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([*VMBISECT, "worker", "--lab", str(lab), "--runners", "1", "--once",
                             "--heartbeat-timeout", str(HEARTBEAT_S), "--store", url],
                            stdout=log.open("a"), stderr=subprocess.STDOUT, text=True, env=env)


def boot_in_flight(store: Store, pids: set[int]) -> tuple[int, int, int] | None:
    """(worker pid, campaign, boot id) of a boot a worker of `pids` has up and measuring (its
    guest up, a run stored, its end not: measure/judge.py marks the end `whole`), or None."""
    with store.session() as s:
        for w in s.scalars(select(WorkerRow).where(WorkerRow.pid.in_(pids), WorkerRow.campaign_id.is_not(None))):
            for b in s.scalars(select(BootRow).where(BootRow.campaign_id == w.campaign_id,
                                                     BootRow.status.in_([IN_FLIGHT, "ok"]))):
                if (not (b.facts or {}).get("whole")
                        and s.scalar(select(RunRow.id).where(RunRow.boot_id == b.id).limit(1)) is not None):
                    return w.pid, b.campaign_id, b.id
    return None


def builds_run(kernels: Path) -> list[tuple[str, dt.datetime, dt.datetime]]:
    """(commit, start, end) of every kernel built into the kernel store `kernels`: from the
    start of its make (its build log is named after it, made once the build holds its CPUs;
    local time, to the second) to its publication (the manifest's `created`), in UTC."""
    out = []
    for manifest in sorted(kernels.glob("*/manifest.json")):
        m = json.loads(manifest.read_text())
        began = dt.datetime.strptime(Path(m["build_log"]).name[:15], "%Y%m%dT%H%M%S").astimezone(dt.timezone.utc)
        ended = dt.datetime.fromtimestamp(m["created"], dt.timezone.utc)
        out.append((m["inputs"]["commit"], began.replace(tzinfo=None), ended.replace(tzinfo=None)))
    return out


def boots_measured(store: Store, campaign_id: int) -> list[tuple[int, dt.datetime, dt.datetime]]:
    """(id, from the guest's start to its last run) of the campaign's boots that measured: the
    guest's `to_agent` and `guest` phases before its last run (a boot's row is made before it
    waits for its slot)."""
    last: dict[int, dt.datetime] = {}
    for r in store.runs(campaign_id):
        last[r.boot_id] = r.created
    boots = []
    for boot in store.boots(campaign_id):
        phases = (boot.facts or {}).get("phases")
        if boot.id in last and phases:
            up = dt.timedelta(seconds=phases.get("to_agent", 0.0) + phases.get("guest", 0.0))
            boots.append((boot.id, last[boot.id] - up, last[boot.id]))
    return boots


def between_boot_cov(groups: list[list[Boot]]) -> float:
    """How much boots of one commit differ: the standard deviation of the log of each boot's
    mean around its commit's mean, pooled over commits (about the CoV of a boot's value;
    orchestrator/stats.py pooled_boot_variance, the within-boot noise left in)."""
    ss, df = pooled_boot_variance(groups)
    return math.sqrt(ss / df)


def counted_cov(store: Store, campaign_id: int) -> float:
    """between_boot_cov of the boots the campaign counted."""
    return between_boot_cov(list(store.boot_samples(campaign_id, metric_of(store.campaign(campaign_id)) or "").values()))


def alone_cov(series: str) -> tuple[float, str]:
    """between_boot_cov of the series bisected alone on this machine (tests/data/alone), and when."""
    path = ALONE / f"{series}.json"
    assert path.is_file(), f"no capture of the {series} series bisected alone: python {ALONE / 'capture.py'} {series}"
    alone = json.loads(path.read_text())
    groups = [[Boot(i, tuple(runs)) for i, runs in enumerate(boots)] for boots in alone["boots"].values()]
    return between_boot_cov(groups), alone["measured"]


def test_two_workers_on_one_lab_host_one_killed_mid_boot_leave_every_boot_whole_and_the_takeover_on_record(
        tmp_path: Path):
    require(Path("/usr/src/linux-source-6.1.tar.xz").is_file(), "linux-source-6.1 not installed")
    require(Path(CHROMIUM).exists(), "Debian's chromium is not installed (make setup installs it)")
    culprits, of_series, files = {}, {}, []
    for series in (DBENCH, NETPERF):
        repo = ensure_series_repo(series)
        spec = {**yaml.safe_load(series.campaign.read_text()), "repository": str(repo.path)}
        path = tmp_path / f"{spec['name']}.yaml"
        path.write_text(yaml.safe_dump(spec))
        files.append(path)
        culprits[spec["name"]] = repo.culprit
        of_series[spec["name"]] = series.name
    # One host, one slot on both cores (a slot of one core under a 2-vCPU guest hides the
    # netperf series' change: tests/e2e/test_queue_lab.py); builds lease every CPU of the
    # machine, the slot's too.
    lab = tmp_path / "lab.yaml"
    lab.write_text(yaml.safe_dump({"hosts": [{"name": "local", "slots": [{"cpus": "0-1"}]}],
                                   "notify": {"mail": [TEAM]}}))
    inbox, port = Inbox(), free_port()
    (tmp_path / "config.yaml").write_text(f"smtp:\n  host: 127.0.0.1\n  port: {port}\n  security: none\n"
                                          "  from: vmbisect@lab.example.org\n")
    # a kernel store of its own, so that every kernel is built during the run (the series' kernels
    # of an earlier run would come from the cache, and no build would meet a guest); the rest of
    # the cache (the source, ccache, guest images) is shared
    cache = tmp_path / "cache"
    (cache / "kernels").mkdir(parents=True)
    for entry in paths.cache_dir().iterdir():
        if entry.name != "kernels":
            (cache / entry.name).symlink_to(entry)
    env = {**os.environ, "VMBISECT_CACHE_DIR": str(cache),
           "VMBISECT_CONFIG": str(tmp_path / "config.yaml"), "VMBISECT_DATA_DIR": str(tmp_path / "data"),
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    submitted = subprocess.run([*VMBISECT, "submit", *map(str, files), "--store", url], capture_output=True,
                               text=True, timeout=300, env=env)
    assert submitted.returncode == 0, submitted.stderr
    store = Store(url)
    smtp = serve(inbox, port)
    workers = [worker(lab, url, env, tmp_path / f"worker{i}.log") for i in range(2)]
    try:
        deadline = time.monotonic() + 1800
        while (found := boot_in_flight(store, {w.pid for w in workers})) is None:
            assert time.monotonic() < deadline, "no boot in flight with a run stored"
            assert all(w.poll() is None for w in workers), (tmp_path / "worker0.log").read_text()[-3000:]
            time.sleep(0.5)
        pid, taken, killed = found
        os.kill(pid, signal.SIGKILL)
        dead = next(w for w in workers if w.pid == pid)
        dead.wait(timeout=30)
        workers.append(worker(lab, url, env, tmp_path / "worker2.log"))
        for w in workers:
            if w is not dead:
                assert w.wait(timeout=5400) == 0, [p.read_text()[-3000:] for p in tmp_path.glob("worker*.log")]
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.wait()
        smtp.stop()

    rows = {row.name: row for row in store.campaigns()}
    for name, row in rows.items():
        assert row.state == "done" and row.result["culprit"] == culprits[name], (name, row.state, row.result)
        assert row.result["confirmation"]["verdict"] == "confirmed", (name, row.result["confirmation"])


    # builds lease the slot's CPUs: no boot of either campaign was measured while a build ran
    builds = builds_run(cache / "kernels")
    boots = [boot for row in rows.values() for boot in boots_measured(store, row.id)]
    assert len(builds) >= 4 and boots, (builds, boots)
    overlaps = [(b, g) for b in builds for g in boots if b[1] < g[2] and g[1] < b[2]]
    assert not overlaps, overlaps

    # the boot the kill cut is not counted, and its commit was booted again
    cut = next(b for b in store.boots(taken) if b.id == killed)
    counted = store.boot_samples(taken, metric_of(store.campaign(taken)) or "")
    assert killed not in {b.id for bs in counted.values() for b in bs}
    assert any(b.id > killed for b in counted.get(cut.commit, [])), "its commit got a fresh boot"

    status = subprocess.run([*VMBISECT, "status", str(taken), "--store", url], capture_output=True, text=True,
                            env=env, timeout=120)
    assert status.returncode == 0, status.stderr
    assert "taken over once; 1 boot lost" in status.stdout and "takeovers" in status.stdout, status.stdout
    assert f"cut short (not counted: boot {killed})" in status.stdout, status.stdout
    (tmp_path / "status.txt").write_text(status.stdout)
    listed = subprocess.run([*VMBISECT, "status", "--store", url], capture_output=True, text=True, env=env, timeout=120)
    assert listed.returncode == 0 and "…" not in listed.stdout, listed.stdout + listed.stderr
    (tmp_path / "status-list.txt").write_text(listed.stdout)

    mails = {m["Subject"]: m for _sender, to, m in inbox.mails if to == [TEAM]}
    assert len(mails) == 2, [m["Subject"] for *_, m in inbox.mails]
    name = next(n for n, r in rows.items() if r.id == taken)
    mail = next(m for subject, m in mails.items() if name in subject)
    plain = mail.get_body(("plain",))
    assert plain is not None
    text = plain.get_content()
    (tmp_path / "mail.txt").write_text(text)
    (tmp_path / "mail.eml").write_bytes(mail.as_bytes())
    assert max(map(len, text.splitlines())) <= WIDTH
    words = " ".join(text.split())
    assert "Workers: taken over once; 1 boot lost" in words, text[:3000]
    assert f"cut short (not counted: boot {killed})" in words, text[:3000]
    # what a reader reruns the culprit against its parent from: the campaign file with good and bad
    # as commits, both .config files, the guest's commands, the verify command line
    attached = {part.get_filename(): part.get_content() for part in mail.iter_attachments()}
    culprit = culprits[name]
    parent = rows[name].result["parent"]
    assert {"campaign.yaml", "guest.sh", f"config-{culprit[:12]}", f"config-{parent[:12]}"} <= set(attached), attached
    rerun = yaml.safe_load(attached["campaign.yaml"])
    assert re.fullmatch("[0-9a-f]{40}", rerun["good"]) and re.fullmatch("[0-9a-f]{40}", rerun["bad"]), rerun
    assert f"vmbisect verify campaign.yaml {culprit}" in words and "Its userspace: an initramfs" in words
    subprocess.run(["sh", "-n"], input=attached["guest.sh"], check=True)  # the bytes a reader saves

    png = tmp_path / "dashboard.png"
    from playwright.sync_api import sync_playwright

    with serving(url, env) as (base, _lines), sync_playwright() as p:
        # the campaign page and `vmbisect report ID` give the same boots, runs and median, row by row
        for row in rows.values():
            md = subprocess.run([*VMBISECT, "report", str(row.id), "--format", "md", "--store", url],
                                capture_output=True, text=True, env=env, timeout=120)
            assert md.returncode == 0, md.stderr
            with urllib.request.urlopen(f"{base}/campaigns/{row.id}", timeout=60) as response:
                html = response.read().decode()
            assert page_rows(html) == report_rows(md.stdout) and len(page_rows(html)) >= 4, row.name
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 2400})  # the report frame inside it: drawn
        page.goto(f"{base}/campaigns/{taken}", wait_until="networkidle")
        assert name in page.frame_locator("iframe.report").locator("h1").first.inner_text(timeout=30_000)
        takeover = page.locator("ul.takeovers li")
        assert takeover.count() == 1 and f"boot {killed} of" in takeover.inner_text(), takeover.all_inner_texts()
        assert "cut short" in page.locator("p.left-out").inner_text()
        page.screenshot(path=str(png), full_page=True)
        browser.close()
    assert png.stat().st_size > 10_000
    keep = os.environ.get("VMBISECT_DASHBOARD_SHOTS")
    if keep:
        shutil.copy(png, Path(keep) / f"two-workers-{name}.png")

    left = subprocess.run(["virsh", "-c", "qemu:///system", "list", "--all", "--name"], capture_output=True, text=True)
    assert not [n for n in left.stdout.split() if n.startswith(NAME_PREFIX)], left.stdout

    # two campaigns on one host (their guests in turns, their builds leased) measure as each does alone
    for series_name, row in rows.items():
        (shared, (alone, when)) = counted_cov(store, row.id), alone_cov(of_series[series_name])
        print(f"{series_name}: campaign {row.id}, between-boot CoV {shared:.1%}; alone {alone:.1%} (measured {when})")
        assert shared <= 2 * alone, (series_name, shared, alone)
