"""The pure parts of a report's Reproduce section (orchestrator/report/reproduce.py) and what it reads
from the tools and the host: shell lines cut to the width and joined back by a real shell, the
campaign file without the controller's paths, the guest's shape, each workload's commands as
its agent runs them, the host's CPU model from /proc/cpuinfo or libvirt's capabilities."""

from __future__ import annotations

import shlex
import subprocess

import pytest
import yaml

from orchestrator.backends.host import capabilities_cpu, cpuinfo_model
from orchestrator.campaign.file import parse_campaign
from orchestrator.report.reproduce import WIDTH, Facts, campaign_file, guest_shape, lines, reproduce, shell_lines
from orchestrator.vm.spec import DiskSpec, VmSpec
from workloads import dbench, fio, netperf

NETPERF = {"test": "TCP_RR", "socket_size": 65536, "message_size": 16384, "request_size": 64, "response_size": 64,
           "streams": 4, "runtime": 30}


@pytest.mark.parametrize("argv", [
    netperf.netperf_argv(NETPERF),
    ["dbench", "-t", "30", "-D", "/mnt/vmbisect", "-c", "/usr/share/dbench/client.txt", "16"],
    ["echo", "x" * 200, "a b' c", "y" * 90],
])
def test_a_long_shell_line_is_cut_to_the_width_and_the_shell_reads_the_same_words(argv):
    pieces = shell_lines(shlex.join(["printf", "%s\\n", *argv]))
    assert all(len(p) <= WIDTH - 4 for p in pieces[:-1]) or any("'" in p for p in pieces)
    done = subprocess.run(["sh", "-c", "\n".join(pieces)], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[:-1] == argv


def test_the_campaign_file_keeps_what_ran_and_names_no_path_of_the_controller():
    file = {"name": "n", "repository": "/srv/ctl/linux", "good": "v6.1", "bad": "v6.2", "lab": "/srv/ctl/lab.yaml",
            "host": "h1", "notify": {"mail": ["a@example.org"]}, "workload": {"name": "fio", "params": {"rw": "read"}},
            "metric": {"name": "read_iops", "threshold": "-5%"}}
    text = campaign_file(file)
    back = yaml.safe_load(text)
    assert "/srv/ctl" not in text and "notify" not in back and "lab" not in back
    assert back == {**{k: v for k, v in file.items() if k not in ("lab", "notify")}, "repository": "linux"}


def test_the_campaign_file_names_good_and_bad_by_the_commits_they_resolved_to():
    file = {"name": "n", "repository": "/srv/ctl/linux", "good": "master", "bad": "series",
            "workload": {"name": "fio"}, "metric": {"name": "read_iops", "threshold": "-5%"}}
    back = yaml.safe_load(campaign_file(file, {"good": "a" * 40, "bad": "b" * 40}))
    assert (back["good"], back["bad"]) == ("a" * 40, "b" * 40)
    assert yaml.safe_load(campaign_file(file))["good"] == "master"


def test_the_section_says_what_the_guest_carries_and_how_a_boots_value_is_made():
    raw = {"name": "n", "repository": "/r", "good": "master", "bad": "dbench",
           "workload": {"name": "dbench", "params": {"clients": 2}}, "guest": {"disks": {"count": 1}},
           "metric": {"name": "throughput", "threshold": "-25%"}}
    r = reproduce(Facts(raw, parse_campaign(raw), {"culprit": "c" * 40}, {}, {}, endpoints={"good": "a" * 40},
                        packages={"dbench": "4.0-2.1"}))
    words = " ".join(" ".join(lines(r, "c" * 40, "attached")).split())
    assert "dbench (dbench 4.0-2.1), mkfs.ext4 (e2fsprogs)" in words and "busybox (busybox-static)" in words
    assert "kernel command line `console=ttyS0,115200 panic=-1 rdinit=/init`" in words
    assert "Metric: throughput (MB/s, higher is better): dbench's own throughput line; a boot's value is the mean" \
        in words
    assert f"good: {'a' * 40}" in r.campaign_file and "bad: dbench" in r.campaign_file


def test_the_guest_shape_names_cpus_memory_disks_and_controller():
    shape = guest_shape(VmSpec(4, 4096, disks=DiskSpec(2, 8192, "nvme", cache="writeback", queues=4)))
    assert shape == ("4 vCPUs, 4096 MiB memory, machine pc, clock auto, 2 data disks of 8192 MiB on nvme (raw, cache=writeback, "
                     "aio=threads, 4 queues)")
    assert guest_shape(VmSpec(1, 512)) == "1 vCPU, 512 MiB memory, machine pc, clock auto, no data disk"


def test_each_workload_says_the_commands_its_agent_runs():
    kept = {"fio.job": "[global]\nrw=randwrite\n\n[vdb]\nfilename=/dev/vdb\n"}
    assert fio.TOOL.commands({}, kept, ["vdb"])[1:-1] == ["cat > /tmp/vmbisect/fio.job <<'EOF'", "[global]",
                                                          "rw=randwrite", "", "[vdb]", "filename=/dev/vdb", "EOF"]
    db = dbench.TOOL.commands({"fs": "xfs", "runtime": 30, "loadfile": "/l.txt", "clients": 8}, {}, ["sdb"])
    assert db == ["mkdir -p /mnt/vmbisect", "mkfs.xfs -q -f /dev/sdb", "mount -t xfs /dev/sdb /mnt/vmbisect",
                  "dbench -t 30 -D /mnt/vmbisect -c /l.txt 8", "umount /mnt/vmbisect"]
    nl = netperf.TOOL.commands(NETPERF, {}, [])
    assert nl[:3] == ["mkdir -p /tmp/vmbisect", "ifconfig lo:1 127.0.0.2 netmask 255.0.0.0 up", "netserver -4"]
    assert nl[3] == "for i in $(seq 4); do" and shlex.join(netperf.netperf_argv(NETPERF)) in nl[4]


def test_the_section_keeps_to_the_width_and_says_what_is_not_recorded():
    raw = {"name": "n", "repository": "/r", "good": "a" * 40, "bad": "b" * 40,
           "workload": {"name": "netperf", "params": {"test": "TCP_RR", "streams": 4}},
           "metric": {"name": "transactions", "threshold": "-5%"}}
    r = reproduce(Facts(raw, parse_campaign(raw), {"culprit": "c" * 40}, {}, {}))
    text = lines(r, "c" * 40, "attached")
    words = " ".join(" ".join(text).split())
    assert max(len(line) for line in text) <= WIDTH
    assert "accelerator not recorded; host CPU not recorded" in words
    assert "no .config was kept" in words and f"    vmbisect verify campaign.yaml {'c' * 40}" in text


def test_the_host_cpu_model_comes_from_cpuinfo_or_libvirts_capabilities():
    assert cpuinfo_model("processor\t: 0\nmodel name\t: AMD EPYC   7B13\nflags: x\n") == "AMD EPYC 7B13"
    assert cpuinfo_model("processor: 0\n") == ""
    caps = ("<capabilities><host><cpu><arch>x86_64</arch><model>Skylake-Client-IBRS</model><vendor>Intel</vendor>"
            "<signature family='6' model='94' stepping='3'/></cpu></host></capabilities>")
    assert capabilities_cpu(caps) == "Intel Skylake-Client-IBRS (family 6 model 94 stepping 3)"
    assert capabilities_cpu("<capabilities/>") == "" and capabilities_cpu("not xml") == ""
