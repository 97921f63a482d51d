"""What a reader needs to run a bisection's measurement again, away from the controller: the
campaign file as it ran (paths that exist only on the controller replaced by what to put there),
the workload's commands as the agent ran them in the guest, the guest's shape, the kernel recipe
and the culprit's and its parent's .config (with their sha256), the accelerator, the host's CPU
model, the guest's clocksource and vmbisect's version.

`reproduce` is pure over what the store and the campaign hold (`Facts`); `facts` reads them
(the store's runs, builds and boots, each build's .config from the kernel store beside its
image). `lines` lays the section out as text no wider than `WIDTH` columns: Markdown whose code
is indented, so the same lines are the report's section and the mail's."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import yaml

from orchestrator import __version__
from orchestrator.campaign.file import Campaign
from orchestrator.vm.spec import VmSpec
from orchestrator.workloads import clock
from orchestrator.workloads.clock import BootClock

if TYPE_CHECKING:
    from orchestrator.store import CampaignRow, Store

WIDTH = 78  # a mail's text: RFC 5322's recommended line length
# fields of a campaign file that name a file on the controller: what a reader puts there instead
CONTROLLER_PATHS = {"repository": "linux", "lab": None, "source": None}
CONTROLLER_ONLY = ("notify",)  # who was mailed: nothing a rerun needs
GUEST_SCRIPT = "guest.sh"  # the workload's commands for one run, as a file a reader copies into a guest


@dataclass(frozen=True)
class KernelConfig:
    """A kernel's .config as it was built: the commit, its role (culprit, parent), the file name
    it is attached and written under, its text and sha256."""

    role: str
    commit: str
    name: str
    text: str
    sha256: str


@dataclass(frozen=True)
class Facts:
    """What the store holds of a campaign that a rerun needs: the campaign file's mapping as
    stored, the commits named (role -> sha), one run of each (what `RunResult.to_json` kept, {}
    when none), each commit's .config text ("" when the kernel store has none), and the boots'
    accelerators, host CPU models and clocks as recorded (empty for boots of an older store)."""

    file: Mapping[str, Any]
    campaign: Campaign
    commits: Mapping[str, str]
    runs: Mapping[str, Mapping[str, Any]]
    configs: Mapping[str, str]
    accels: tuple[str, ...] = ()
    host_cpus: tuple[str, ...] = ()
    endpoints: Mapping[str, str] = dataclasses.field(default_factory=dict)  # good / bad -> the commit they named
    packages: Mapping[str, str] = dataclasses.field(default_factory=dict)  # the guest tools' packages -> version
    clocks: Mapping[str, tuple[BootClock, ...]] = dataclasses.field(default_factory=dict)  # commit -> its boots' clocks


@dataclass(frozen=True)
class Reproduce:
    campaign_file: str  # YAML
    command: str
    workload: str
    params: Mapping[str, Any]
    commands: tuple[str, ...]  # shell lines in the guest, one repetition
    runs_per_boot: int
    guest: str
    kernel: str
    configs: tuple[KernelConfig, ...]
    accel: str
    host_cpu: str
    userspace: str = ""  # what the guest boots into: the programs it carries, the kernel command line
    metric: str = ""  # the bisected metric, where the workload's output gives it, and how a boot's value is made
    version: str = __version__
    clocksource: str = ""  # the guest's clocksource over the boots (workloads/clock.py); "" when none recorded it


def campaign_file(file: Mapping[str, Any], endpoints: Mapping[str, str] | None = None) -> str:
    """The campaign file as it ran, as YAML, with every path of the controller replaced and
    `good` and `bad` as the commits they named (`endpoints`; a branch or tag of the
    controller's clone names another commit, or none, in a reader's)."""
    out: dict[str, Any] = {}
    for key, value in file.items():
        if key in CONTROLLER_ONLY:
            continue
        if key in CONTROLLER_PATHS:
            if CONTROLLER_PATHS[key] is not None:
                out[key] = CONTROLLER_PATHS[key]
            continue
        out[key] = (endpoints or {}).get(key, value)
    return yaml.safe_dump(out, sort_keys=False, default_flow_style=False, width=WIDTH - 4).rstrip("\n")


def guest_shape(spec: VmSpec) -> str:
    d = spec.disks
    words = [f"{spec.vcpus} vCPU{'s' * (spec.vcpus != 1)}", f"{spec.memory_mib} MiB memory", f"machine {spec.machine}",
             f"clock {spec.clock}"]
    if spec.topology is not None:
        t = spec.topology
        words.append(f"{t.sockets} socket(s) x {t.cores} core(s) x {t.threads} thread(s)")
    if spec.pinning:
        words.append("vCPUs pinned to host CPUs " + ", ".join(spec.pinning))
    if spec.emulator_pin:
        words.append(f"QEMU's own threads pinned to host CPUs {spec.emulator_pin}")
    if d.count:
        words.append(f"{d.count} data disk{'s' * (d.count != 1)} of {d.size_mib} MiB on {d.controller} "
                     f"({d.backing}, cache={d.cache}, aio={d.aio}"
                     + (f", {d.queues} queues" if d.queues else "") + (f", {d.iothreads} iothreads" if d.iothreads else "")
                     + ")")
    else:
        words.append("no data disk")
    return ", ".join(words)


def _workload_commands(name: str, params: Mapping[str, Any], run: Mapping[str, Any]) -> tuple[str, ...]:
    """The tool's own account of what it runs (workloads/<name>: TOOL.commands); () for a
    workload without a tool here."""
    try:
        tool = importlib.import_module(f"workloads.{name}").TOOL
    except ImportError:
        return ()
    raw = run.get("raw") if run.get("workload") == name else None
    return tuple(tool.commands(params, raw or {}, tuple(run.get("disks") or ())))


def userspace(tools: Mapping[str, Mapping[str, Any]], packages: Mapping[str, str], append: str,
              clock: str = "") -> str:
    """The guest's userspace as a reader rebuilds it: the programs its initramfs carries (each
    with its Debian package and that package's version on the controller), and the kernel
    command line (with the words that chose the guest's clock, orchestrator/vm/clocksource.py)."""
    from orchestrator.image.tools import BUSYBOX
    from orchestrator.vm.console import kernel_cmdline

    carried = {BUSYBOX: "busybox-static", **{name: str(t.get("package", "")) for name, t in tools.items()}}
    named = ", ".join(f"{name} ({pkg}{' ' + packages[pkg] if packages.get(pkg) else ''})" for name, pkg in carried.items())
    return (f"an initramfs of the controller's own programs: {named}; vmbisect's guest agent is its /init; "
            f"kernel command line `{kernel_cmdline(append, clock)}`")


def reproduce(f: Facts) -> Reproduce:
    from orchestrator.campaign.workload import choose_workload

    c = f.campaign
    choice = choose_workload(c)
    tool = choice.workload.name  # a preset's workload (netperf-tcp-stream-large: netperf)
    run = next((f.runs[r] for r in ("culprit", "parent") if f.runs.get(r, {}).get("workload") == tool), {})
    params = {**choice.params, **(run.get("params") or {})}
    configs = tuple(KernelConfig(role, sha, f"config-{sha[:12]}", f.configs[sha],
                                 hashlib.sha256(f.configs[sha].encode()).hexdigest())
                    for role, sha in f.commits.items() if f.configs.get(sha))
    recipe = f"config fragments {', '.join(c.kernel.config)}" + (f", compiler {c.kernel.cc}" if c.kernel.cc else "")
    m = choice.metric
    metric = (f"{m.name} ({m.unit}, {m.direction} is better): {m.help.rstrip('.')}; "
              "a boot's value is the mean of its runs")
    return Reproduce(
        campaign_file(f.file, f.endpoints), "vmbisect bisect campaign.yaml", c.workload.name, params,
        _workload_commands(tool, params, run), c.runs_per_boot, guest_shape(c.guest),
        recipe + (f"; kernel command line +{c.append!r}" if c.append else ""), configs,
        ", ".join(sorted(set(f.accels))) or (c.accel if c.accel != "auto" else "not recorded"),
        "; ".join(sorted(set(f.host_cpus))) or "not recorded",
        userspace(choice.workload.guest_tools, f.packages, c.append, _clock_words(c, f.accels)), metric,
        clocksource=clocksource(f.clocks, f.commits))


def _clock_words(c: Campaign, accels: Sequence[str]) -> str:
    """The clock's command line words under the accelerator the boots ran on (the campaign's
    own choice where none is recorded or they differ; none where that is auto: the guest's
    shape names the clock choice)."""
    from orchestrator.vm.clocksource import clock_cmdline

    ran = set(accels)
    accel = ran.pop() if len(ran) == 1 else c.accel
    return clock_cmdline(c.guest.clock, accel) if accel in ("kvm", "tcg") else ""


def clocksource(clocks: Mapping[str, tuple[BootClock, ...]], commits: Mapping[str, str]) -> str:
    """The guest's clocksource over every boot, and each named commit's where they differ."""
    every = clock.summary(c for boots in clocks.values() for c in boots)
    sides = {role: clock.summary(clocks.get(sha, ())) for role, sha in commits.items()}
    if every and len(set(sides.values()) - {""}) > 1:
        every += " (" + ", ".join(f"the {role}'s {text}" for role, text in sides.items() if text) + ")"
    return every


def shell_lines(line: str, width: int = WIDTH - 4) -> list[str]:
    """A shell line in pieces of at most `width` columns, each but the last ending in a
    backslash (the shell joins them back, within a word too); a piece inside quotes is never cut
    within a word (a quoted backslash-newline would stay)."""
    out: list[str] = []
    while len(line) > width:
        lead = 2 if out else 0  # a continuation's own indent is no place to cut
        cut = line.rfind(" ", lead + 1, width - 1)
        if cut > lead:
            out.append(line[:cut] + " \\")
            line = "  " + line[cut + 1:]
        elif "'" not in line[:width] and '"' not in line[:width]:
            out.append(line[:width - 1] + "\\")
            line = line[width - 1:]
        else:
            break
    return out + [line]


def _wrap(text: str, width: int = WIDTH, indent: str = "", hang: str = "") -> list[str]:
    import textwrap

    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent + hang,
                         break_on_hyphens=False, break_long_words=False) or [""]


def lines(r: Reproduce, culprit: str, where: str) -> list[str]:
    """The section as Markdown text of at most WIDTH columns (code indented by four spaces).
    `culprit`: the commit to measure against its parent ("" for none); `where`: where the
    .config files are."""
    code = "    "
    out = ["## Reproduce", ""]
    out += _wrap(f"vmbisect {r.version}; accelerator {r.accel}; host CPU {r.host_cpu}; guest clocksource "
                 f"{r.clocksource or 'not recorded'}.") + [""]
    out += _wrap(f"Guest: {r.guest}.") + [""]
    if r.userspace:
        out += _wrap(f"Its userspace: {r.userspace}.") + [""]
    out += _wrap(f"Kernel: built at each commit from the recipe ({r.kernel}); "
                 + ("the .config each was built with is " + where + ":" if r.configs else
                    "no .config was kept for these commits (a kernel given as a file, or a store from before).")) + [""]
    for k in r.configs:
        out += [f"{code}{k.name}  {k.role} {k.commit[:12]}", f"{code}  sha256 {k.sha256}"]
    if r.configs:
        out += [""]
    out += _wrap("To rebuild one: copy its .config into a clone of the tree at the commit, then "
                 "`make olddefconfig && make -j$(nproc) bzImage modules`.") + [""]
    out += _wrap(f"Workload: {r.workload}, {r.runs_per_boot} run(s) per boot of a fresh guest, with:") + [""]
    out += [code + line for line in _wrap(", ".join(f"{k}={_value(v)}" for k, v in r.params.items()), WIDTH - 4,
                                          hang="  ")]
    out += [""]
    if r.metric:
        out += _wrap(f"Metric: {r.metric}.") + [""]
    if r.commands:
        out += _wrap(f"In the guest, one run as the agent ran it (attached as {GUEST_SCRIPT}, unindented):") + [""]
        out += [(code + piece).rstrip() for line in r.commands for piece in shell_lines(line)] + [""]
    out += _wrap("The campaign as it ran (`good` and `bad` are the commits it resolved them to; `repository:` "
                 "is a clone of a tree holding them):") + [""]
    out += [code + piece for line in r.campaign_file.split("\n") for piece in _yaml_line(line)] + [""]
    out += _wrap("Again with vmbisect, the whole bisection:") + [""]
    out += [code + r.command] + [""]
    if culprit:
        out += _wrap("Or only the culprit against its parent, both built and measured the same way:") + [""]
        out += [code + piece for piece in shell_lines(f"vmbisect verify campaign.yaml {culprit}")] + [""]
    return out


def _value(v: Any) -> str:
    """A parameter's value as a campaign file or `--param` writes it."""
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def _yaml_line(line: str, width: int = WIDTH - 4) -> list[str]:
    """A YAML line that does not fit: its value on lines of its own, as a folded block."""
    if len(line) <= width or ": " not in line:
        return [line]
    key, _, value = line.partition(": ")
    pad = " " * (len(key) - len(key.lstrip()) + 2)
    return [f"{key}: >-", *(_wrap(value, width, pad) if value else [])]


def facts(store: Store, row: CampaignRow, commits: Mapping[str, str]) -> Facts:
    """The store's account of the campaign of `row` for a rerun of `commits` (role -> sha)."""
    import json

    from orchestrator.campaign.file import parse_campaign

    campaign_id = row.id
    file = json.loads(row.spec or "{}")  # a bisection keeps its campaign file's mapping
    campaign = parse_campaign(file)
    wanted = set(commits.values())
    runs: dict[str, Mapping[str, Any]] = {}
    for run in store.runs(campaign_id):
        for role, sha in commits.items():
            if run.commit == sha and role not in runs:
                runs[role] = run.raw
        if len(runs) == len(commits):  # one run of each is all a rerun needs
            break
    configs = {}
    for b in store.builds(campaign_id):
        if b.commit in wanted and b.status == "ok" and b.image:
            text = _read(Path(b.image).parent / "config")
            if text:
                configs[b.commit] = text
    boots = [b for b in store.boots(campaign_id) if b.status == "ok"]
    endpoints: dict[str, str] = {}
    for d in store.decisions(campaign_id):
        if d.role in ("good", "bad") and d.commit:
            endpoints.setdefault(str(d.role), d.commit)
    clocks: dict[str, tuple[BootClock, ...]] = {}
    for boot in boots:
        if (bc := BootClock.from_facts(boot.facts)) is not None:
            clocks[boot.commit] = (*clocks.get(boot.commit, ()), bc)
    return Facts(dict(file), campaign, dict(commits), runs, configs,
                 tuple(str(b.facts.get("accel")) for b in boots if (b.facts or {}).get("accel")),
                 tuple(str(b.facts.get("host_cpu")) for b in boots if (b.facts or {}).get("host_cpu")),
                 endpoints, _versions(campaign), clocks)


def _versions(campaign: Campaign) -> dict[str, str]:
    """The installed version of each Debian package the campaign's guest tools come from ({}
    where dpkg cannot say)."""
    from orchestrator.campaign.workload import choose_workload

    packages = sorted({"busybox-static", *(str(t.get("package", "")) for t in
                                           choose_workload(campaign).workload.guest_tools.values())} - {""})
    try:
        done = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version}\\n", "--", *packages],
                              capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return {}
    return dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def files(r: Reproduce) -> dict[str, str]:
    """The files that go with the section: each .config by its name, the campaign file, and the
    workload's guest commands as a script."""
    script = {GUEST_SCRIPT: "#!/bin/sh\nset -e\n" + "\n".join(r.commands) + "\n"} if r.commands else {}
    return {**{k.name: k.text for k in r.configs}, "campaign.yaml": r.campaign_file + "\n", **script}


def of_campaign(store: Store, row: CampaignRow, commits: Mapping[str, str]) -> Reproduce | None:
    """The section of a bisection (None for another kind, or a stored campaign that no longer
    reads: its report says the rest)."""
    from orchestrator.errors import UserError

    if row.kind != "bisect":
        return None
    try:
        return reproduce(facts(store, row, commits))
    except UserError:
        return None


def named(row: CampaignRow) -> dict[str, str]:
    """The commits a bisection's answer names (role -> sha): its culprit and the culprit's parent."""
    from orchestrator.results import BisectResult, answer_as

    done = answer_as(BisectResult, row.state, row.result) if row.kind == "bisect" else None
    if done is None:
        return {}
    return {role: sha for role, sha in (("culprit", done.culprit), ("parent", done.parent)) if sha}


def files_of(store: Store, row: CampaignRow) -> dict[str, str]:
    """The files that go with a bisection's report and mail ({} for a campaign without the
    section)."""
    r = of_campaign(store, row, named(row))
    return files(r) if r is not None else {}


def write_files(written: Mapping[str, str], directory: Path) -> None:
    """The files that go with a report (`files_of`) into `directory` (beside the report files),
    with SHA256SUMS; nothing when there are none."""
    if not written:
        return
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in written.items():
        (directory / name).write_text(text, encoding="utf-8")
    (directory / "SHA256SUMS").write_text("".join(f"{hashlib.sha256(t.encode()).hexdigest()}  {n}\n"
                                                  for n, t in sorted(written.items())))
