"""`vmbisect compare --profile` in real libvirt guests (TCG): the distribution kernel with the disk
scheduler none against bfq, fio once a boot, then two profile boots a variant under
`perf record`; the profile is a row of its own (the comparison's runs are only its runs) and
every report ends with it."""

from __future__ import annotations

import json

import pytest

from orchestrator.cli import main
from orchestrator.store import Store

pytestmark = [pytest.mark.vm, pytest.mark.long]


def test_compare_profile_adds_the_kernel_profile_of_the_first_two_variants_to_every_report(launcher, distro, capsys,
                                                                                           tmp_path):
    store = f"sqlite:///{tmp_path / 'db.sqlite'}"
    reports = [tmp_path / "r.md", tmp_path / "r.html", tmp_path / "r.json"]
    argv = ["compare", "--kernel", str(distro.image), "--initrd-modules-from", distro.release, "--accel", "tcg",
            "--disks", "1", "--disk-size", "128", "--workload", "fio", "--param", "runtime=2",
            "--param", "ramp_time=0", "--variant", "none=sched:none", "--variant", "bfq=sched:bfq",
            "--reps", "1", "--profile", "--store", store, *sum((["--report", str(p)] for p in reports), [])]
    assert main(argv) == 0, capsys.readouterr().err
    db = Store(store)
    runs = list(db.runs(1))
    assert sorted(r.raw["variant"] for r in runs) == ["bfq", "none"], "profile boots are no runs"
    (row,) = db.profiles(1)
    assert (row.parent, row.culprit, row.event, row.note) == ("none", "bfq", "cpu-clock", "")
    assert [len(row.stacks[side]) for side in ("parent", "culprit")] == [2, 2]
    assert any("bfq_" in line for text in row.stacks["culprit"] for line in text.splitlines())
    md = reports[0].read_text()
    assert "perf-profile.children.cpu-clock." in md and "Where the time went" in md
    assert reports[1].read_text().count('<div class="flame">') == 2
    assert json.loads(reports[2].read_text())["profile"]["parent"]["boots"] == 2
