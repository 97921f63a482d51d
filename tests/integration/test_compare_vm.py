"""A real `vmbisect compare` in libvirt guests (TCG here): two I/O schedulers of the
distribution kernel switched inside one guest through sysfs (bfq, which that kernel builds as a
module, so the guest image must carry and load it), fio runs interleaved, every run stored, and
the Markdown, HTML and JSON reports written from the stored runs; each boot records the
accelerator and the host's CPU model, and the stored run gives back the fio job it ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.backends.host import cpuinfo_model
from orchestrator.cli import main
from orchestrator.store import Store
from workloads import fio

pytestmark = pytest.mark.vm


def test_compare_switches_to_a_modular_scheduler_between_runs_and_reports_them(launcher, distro, capsys, tmp_path):
    store = f"sqlite:///{tmp_path / 'db.sqlite'}"
    reports = [tmp_path / "r.md", tmp_path / "r.html", tmp_path / "r.json"]
    argv = ["compare", "--kernel", str(distro.image), "--initrd-modules-from", distro.release, "--accel", "tcg",
            "--disks", "1", "--disk-size", "128", "--workload", "fio", "--param", "runtime=2",
            "--param", "ramp_time=0", "--variant", "none=sched:none", "--variant", "bfq=sched:bfq",
            "--reps", "2", "--store", store, *sum((["--report", str(p)] for p in reports), [])]
    assert main(argv) == 0, capsys.readouterr().err
    out = capsys.readouterr()
    assert "iops (IO/s, higher is better)" in out.out and "Amean" in out.out
    runs = list(Store(store).runs(1))
    assert [r.raw["variant"] for r in runs] == ["none", "bfq", "bfq", "none"]
    assert all(r.raw["result"]["metrics"]["iops"]["value"] > 0 for r in runs)
    assert "- **bfq**: kernel " in reports[0].read_text() and "sched=bfq" in reports[0].read_text()
    assert "<svg" in reports[1].read_text()
    doc = json.loads(reports[2].read_text())
    assert [v["name"] for v in doc["variants"]] == ["none", "bfq"] and doc["rows"][0]["metric"] == "iops"
    assert main(["report", "1", "--format", "md", "--store", store]) == 0
    assert capsys.readouterr().out.startswith("# fio: none vs bfq")
    # what a report's Reproduce section reads of a real boot and run: the accelerator, the host's
    # CPU model, and the fio job the agent ran, on the guest's own disk
    facts = [b.facts for b in Store(store).boots(1)]
    assert facts and all(f["accel"] == "tcg" and f["host_cpu"] == cpuinfo_model(Path("/proc/cpuinfo").read_text())
                         for f in facts), facts
    result = runs[0].raw["result"]
    lines = fio.TOOL.commands(result["params"], result["raw"], result["disks"])
    assert "rw=randread" in lines and f"filename=/dev/{result['disks'][0]}" in lines and lines[-1].startswith("fio ")
