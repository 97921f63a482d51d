"""No campaign or command-line field reaches a shell or becomes an option of git, make or
QEMU: option-like revisions, compilers and variant specs are refused before anything runs,
the kernel command line stays one XML text node, and no code path builds a shell string."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from orchestrator.campaign.file import parse_campaign
from orchestrator.cli import main
from orchestrator.errors import UserError
from orchestrator.kbuild.recipe import parse_recipe
from orchestrator.vm.domain_xml import BootFiles, domain_xml
from orchestrator.vm.spec import VmSpec
from tests.integration.gitrepo import Repo

ORCHESTRATOR = Path(__file__).resolve().parents[2] / "orchestrator"
PWNED = "/tmp/vmbisect-pwned"


def test_no_module_runs_a_shell_or_builds_a_command_string():
    # `sh -c` only with a constant script (an UPPER_CASE name) whose inputs are positional arguments.
    shells = re.compile(r"shell\s*=\s*True|os\.system\(|os\.popen\(|subprocess\.getoutput|getstatusoutput|"
                        r"\[\s*\"(?:/bin/)?(?:ba)?sh\"\s*,\s*\"-c\"\s*,(?!\s*[A-Z_]+\b)")
    found = [f"{p.relative_to(ORCHESTRATOR)}:{n}" for p in ORCHESTRATOR.rglob("*.py")
             for n, line in enumerate(p.read_text().splitlines(), 1) if shells.search(line)]
    assert found == []


def test_a_sysfs_value_reaches_the_guest_as_an_argument_of_a_constant_script():
    from orchestrator.compare.sysfs import WRITE_SCRIPT, write_argv

    argv = write_argv("/sys/block/sda/queue/scheduler", "$(reboot); `id` \"'")
    assert argv[:3] == ["sh", "-c", WRITE_SCRIPT] and "{" not in WRITE_SCRIPT
    assert argv[4:] == ["$(reboot); `id` \"'", "/sys/block/sda/queue/scheduler"]


@pytest.mark.parametrize("field, value", [
    ("good", "--upload-pack=touch /tmp/vmbisect-pwned"), ("bad", "-c core.pager=touch"),
    ("good", "--output=/tmp/vmbisect-pwned"), ("bad", "HEAD;touch /tmp/vmbisect-pwned"),
    ("good", "$(touch /tmp/vmbisect-pwned)"), ("bad", "v1..v2"),
])
def test_option_like_or_shell_like_revisions_are_refused_by_the_loader(field, value):
    data = {"name": "x", "repository": "/r", "good": "a", "bad": "b", "workload": "fio",
            "metric": {"name": "read_iops", "threshold": "-10%"}, field: value}
    with pytest.raises(UserError, match=rf"^{field}: .* is not a revision"):
        parse_campaign(data)


@pytest.mark.parametrize("cc", ["--version", "-fplugin=/tmp/x.so", "gcc -include /etc/shadow", "gcc;id", "$(id)"])
def test_a_compiler_that_is_an_option_or_a_command_is_refused(cc):
    with pytest.raises(UserError, match="config: cc must be a compiler command name"):
        parse_recipe([f"cc={cc}"])


def test_the_kernel_command_line_stays_one_text_node_of_the_domain(tmp_path):
    append = ("quiet </cmdline><qemu:commandline><qemu:arg value='-monitor'/><qemu:arg value='tcp::4444'/>"
              "</qemu:commandline><cmdline> & \"x\"")
    boot = BootFiles(name="vmbisect-1-aa", kernel=tmp_path / "k", initrd=tmp_path / "i", cmdline=append,
                     console_log=tmp_path / "c", agent_socket=tmp_path / "s", owner_pid=1)
    dom = ET.fromstring(domain_xml(VmSpec(), boot))
    assert dom.findtext("os/cmdline") == append
    assert not [e for e in dom.iter() if "commandline" in e.tag or e.tag.endswith("}arg")]


def test_a_newline_in_append_is_refused_so_it_cannot_start_a_second_argument():
    data = {"name": "x", "repository": "/r", "good": "a", "bad": "b", "workload": "fio",
            "metric": {"name": "read_iops", "threshold": "-10%"}, "append": "quiet\n-monitor stdio"}
    with pytest.raises(UserError, match="append: contains a control character"):
        parse_campaign(data)


@pytest.mark.parametrize("argv", [
    ["build", "--repo", "REPO", "--commit", "--upload-pack=touch /tmp/vmbisect-pwned"],
    ["build", "--repo", "REPO", "--commit=--upload-pack=touch /tmp/vmbisect-pwned"],
    ["build", "--repo", "REPO", "--commit", "HEAD", "--config", "cc=--version"],
    ["compare", "--workload", "fio", "--kernel", "KERNEL", "--repo", "REPO", "--disks", "1",
     "--variant", "a=nice:0", "--variant", "b=commit:--upload-pack=touch${IFS}/tmp/vmbisect-pwned"],
    ["compare", "--workload", "fio", "--kernel", "KERNEL", "--disks", "1", "--variant", "a=nice:0",
     "--variant", "b=sysfs:/sys/block/{disk}/../../../../etc/passwd=x"],
])
def test_option_like_command_line_values_are_refused_before_anything_runs(argv, tmp_path, capsys):
    repo = Repo(tmp_path / "linux")
    repo.commit("one")
    kernel = tmp_path / "bzImage"
    kernel.write_bytes(b"k")
    argv = [a.replace("REPO", str(repo.path)).replace("KERNEL", str(kernel)) for a in argv]
    rc = main(["--uri", "test:///nowhere", *argv, *(["--store", f"sqlite:///{tmp_path / 'v.db'}"]
                                                   if argv[0] == "compare" else [])])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    assert not Path(PWNED).exists()
