"""The checks that keep README.md and docs/ true to the repository and the parsers
(tests/unit/test_docs.py runs them): relative links and their anchors resolve, README.md links
every page of docs/, repository paths named in the text exist, every command of the `vmbisect`
parser is named as `vmbisect <command>`, every key the YAML parsers accept has a row in a key
table of its reference page, every example campaign, lab or mail config file parses with the
product's own parsers, and no `--help` text shows a `%` escape. Each check is a pure function
over texts (or the parser) that returns what it found wrong, one line each, so a unit test can
feed it a small fixture and see it fail."""

from __future__ import annotations

import argparse
import ast
import glob
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]

# Paths that name files of a kernel tree, not of this repository.
KERNEL_TREE = ("Documentation/", "scripts/kconfig/", "scripts/min-tool-version.sh", "kernel/configs/", "arch/",
               "drivers/", "block/", "include/")
# Directories vmbisect or its tests create when they run (.gitignore): named in the docs as
# where output goes, absent from a fresh checkout.
GENERATED = ("build/", "reports/", ".venv/", ".setup/")
_EXTENSIONS = "py|go|md|yaml|yml|sh|txt|json|toml|config|png|patch|html"


def doc_files(root: Path = ROOT) -> list[Path]:
    """README.md and every page under docs/."""
    return [root / "README.md", *sorted(Path(p) for p in glob.glob(str(root / "docs" / "**" / "*.md"),
                                                                   recursive=True))]


def _lines(text: str) -> Iterator[tuple[int, str]]:
    return enumerate(text.splitlines(), 1)


# --- links and paths --------------------------------------------------------------------------

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def broken_links(page: Path, text: str) -> list[str]:
    """Relative markdown links of `page` whose file does not exist, or whose `#anchor` names no
    heading of the Markdown page it points to (the page itself for `#anchor` alone)."""
    out = []
    for n, line in _lines(text):
        for m in _LINK.finditer(line):
            target = m.group(1)
            if re.match(r"[a-z][a-z+.-]*:", target):
                continue
            path, _, anchor = target.partition("#")
            file = page.parent / path if path else page
            if not file.exists():
                out.append(f"{page.name}:{n}: link {target} does not resolve")
            elif anchor and file.suffix == ".md" and anchor not in heading_anchors(file.read_text()):
                out.append(f"{page.name}:{n}: link {target}: no such heading")
    return out


def heading_anchors(text: str) -> set[str]:
    """The anchors a renderer gives the page's headings: lower case, punctuation but `-` and `_`
    dropped, spaces as `-` (headings inside fenced blocks are not headings)."""
    out, fenced = set(), False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            out.add(re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-"))
    return out


def unindexed_pages(readme: str, pages: Iterable[Path], root: Path = ROOT) -> list[str]:
    """Pages under docs/ that README.md's text does not link to (its docs index)."""
    linked = {m.group(1).split("#")[0] for m in _LINK.finditer(readme)}
    return [f"README.md: no link to {rel}" for rel in (str(page.relative_to(root)) for page in pages)
            if rel.startswith("docs/") and rel not in linked]


def _path_pattern(root: Path) -> re.Pattern[str]:
    tops = sorted(p.name for p in root.iterdir() if not p.name.startswith(".") and p.is_dir())
    top = "|".join(re.escape(t) for t in tops)
    word = r"[\w.@*+-]"
    return re.compile(
        rf"(?<![\w./~$@:-])((?:(?:{top})/{word}*(?:/{word}+)*/?)|(?:{word}+(?:/{word}+)+\.(?:{_EXTENSIONS})))"
        rf"(?![\w/<{{])")


def named_paths(text: str, root: Path = ROOT) -> Iterator[tuple[int, str]]:
    """Repository paths named in `text` (line, path): those under a top-level directory of
    `root` and any `dir/file.ext`; a `:line` suffix is dropped; placeholders (`<name>`, `NAME`,
    `{disk}`, `path/to/`) and paths inside URLs are left out."""
    pattern = _path_pattern(root)
    for n, line in _lines(text):
        line = _LINK.sub(" ", re.sub(r"[a-z][a-z+.-]*://\S+", " ", line))  # links: broken_links
        for m in pattern.finditer(line):
            path = m.group(1).rstrip(".")
            parts = path.rstrip("/").split("/")
            if (path.startswith("path/to/") or any(p.isupper() and len(p) > 1 for p in re.split(r"[/.]", path))
                    or not parts[-1]):
                continue
            yield n, path


def missing_paths(page: Path, text: str, root: Path = ROOT) -> list[str]:
    """Paths named on `page` that exist neither in the repository (from its root, from the
    page's directory or, as the architecture page names modules, under orchestrator/ and
    guest-agent/) nor are a kernel tree's or a generated directory's; a glob must match."""
    out = []
    bases = (root, page.parent, root / "orchestrator", root / "guest-agent")
    for n, path in named_paths(text, root):
        if path.startswith(KERNEL_TREE + GENERATED) or "linux.git" in path:
            continue
        if not any(glob.glob(str(base / path)) for base in bases):
            out.append(f"{page.name}:{n}: {path} does not exist")
    for n, line in _lines(text):  # a top-level page by name: README.md, CONTRIBUTING.md
        for name in re.findall(r"(?<![\w/.-])([A-Z][A-Z_-]+\.md)\b", line):
            if not any((base / name).exists() for base in (root, page.parent, root / "docs")):
                out.append(f"{page.name}:{n}: {name} does not exist")
    return out


# Words about the machines the docs were written on rather than the product: a lock file of
# theirs, the people or sessions that shared them.
_WORKPLACE = re.compile(r"cpu\.lock|CPU lock|\bthe lead\b|\bthis session\b|\bsessions' work|"
                        r"\banother helper|\bother helpers|\bhelper's|\bengineers?'", re.IGNORECASE)


def workplace_words(page: Path, text: str) -> list[str]:
    return [f"{page.name}:{n}: {m.group(0)!r}" for n, line in _lines(text) for m in _WORKPLACE.finditer(line)]


# --- commands and --help ------------------------------------------------------------------------

def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parser's own subcommand table: name -> its parser."""
    for action in parser._actions:  # argparse keeps the table there and nowhere public
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def undocumented_commands(parser: argparse.ArgumentParser, docs: str) -> list[str]:
    return [f"vmbisect {name}: no `vmbisect {name}` in README.md or docs/"
            for name in subcommands(parser) if not re.search(rf"vmbisect\s+{re.escape(name)}\b", docs)]


def help_escapes(parser: argparse.ArgumentParser) -> list[str]:
    """`%%` or `%(` left in a rendered --help (a description is not %-formatted, a help is)."""
    out = []
    for name, sub in [("vmbisect", parser), *subcommands(parser).items()]:
        for n, line in _lines(sub.format_help()):
            if "%%" in line or "%(" in line:
                out.append(f"{name} --help line {n}: {line.strip()}")
    return out


# --- campaign keys ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Known:
    """One check of allowed keys as a parser made it: where (file:line of the call), the
    mapping's path (`hosts[0].slots[1]`) and the keys it allows."""

    site: str
    path: str
    allowed: tuple[str, ...]


@contextmanager
def recording_keys() -> Iterator[list[Known]]:
    """Every `yamlcheck.known` call made inside, as it was made (the parsers' own key tables)."""
    import sys

    from orchestrator import yamlcheck

    calls: list[Known] = []
    real = yamlcheck.known

    def known(data: Any, path: str, allowed: list[str]) -> None:
        caller = sys._getframe(1)
        site = f"{Path(caller.f_code.co_filename).resolve().relative_to(ROOT)}:{caller.f_lineno}"
        calls.append(Known(site, path, tuple(allowed)))
        real(data, path, allowed)

    yamlcheck.known = known
    try:
        yield calls
    finally:
        yamlcheck.known = real


def known_sites(root: Path = ROOT) -> set[str]:
    """Every `yamlcheck.known(...)` call in the product's source, as file:line."""
    sites = set()
    for path in sorted((root / "orchestrator").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "known"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "yamlcheck"):
                sites.add(f"{path.relative_to(root)}:{node.lineno}")
    return sites


def key_paths(calls: Iterable[Known]) -> list[str]:
    """The dotted paths of every allowed key (`hosts.slots.cpus`; list indices dropped as
    `hosts[].slots[].cpus`)."""
    out: dict[str, None] = {}
    for call in calls:
        base = re.sub(r"\[\d+\]", "[]", call.path)
        for key in call.allowed:
            out[f"{base}.{key}" if base else key] = None
    return list(out)


def _names(key: str) -> set[str]:
    """How a key table may name `key`: its whole path, and its path inside each list item
    above it (a lab file's table names `name` for `hosts[].name`)."""
    names = {key.replace("[]", "")}
    parts = key.split("[].")
    for i in range(1, len(parts)):
        names.add("[].".join(parts[i:]).replace("[]", ""))
    return names


def _first_cell_names(row: str) -> set[str]:
    """Key names in a table row's first cell: `timeouts.build_s` / `boot_s` names
    timeouts.build_s and timeouts.boot_s."""
    cell = row.strip().strip("|").split("|")[0]
    tokens = re.findall(r"`([^`]+)`", cell)
    names = set(tokens)
    prefix = next((t.rpartition(".")[0] for t in tokens if "." in t), "")
    if prefix:
        names |= {f"{prefix}.{t}" for t in tokens if "." not in t}
    return names


def _mentions(row: str, leaf: str) -> bool:
    """The row names `leaf` as a key: `leaf`, leaf: or inside {...}."""
    word = re.escape(leaf)
    return bool(re.search(rf"`{word}`|(?<![\w.-]){word}:|\{{[^}}]*(?<![\w.-]){word}(?![\w.-])[^}}]*\}}", row))


def table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.lstrip().startswith("|")]


def undocumented_keys(keys: Iterable[str], reference: str) -> list[str]:
    """Keys without a row in a key table of `reference` (the pages' text): a row whose first
    cell names the key, a key below it (`smtp.host` for `smtp`), or a mapping above it and
    whose text names the key (`guest.topology` ... `{sockets, cores, threads}`)."""
    rows = [(row, _first_cell_names(row)) for row in table_rows(reference)]
    out = []
    for key in keys:
        names = _names(key)
        leaf = key.rpartition(".")[2]
        above = {n for k in _ancestors(key) for n in _names(k)}
        if not any(names & first or any(f.startswith(f"{n}.") for n in names for f in first)
                   or (above & first and _mentions(row, leaf)) for row, first in rows):
            out.append(key)
    return out


def undocumented_kinds(kinds: Iterable[str], reference: str) -> list[str]:
    """File kinds (`kind: settings`) the `kind` row of the reference does not name."""
    rows = [row for row in table_rows(reference) if "kind" in _first_cell_names(row)]
    return [f"kind: {kind}" for kind in kinds if not any(f"`{kind}`" in row for row in rows)]


def _ancestors(key: str) -> list[str]:
    parts = key.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


# --- example files --------------------------------------------------------------------------------

def code_blocks(text: str) -> Iterator[tuple[int, str, str]]:
    """(first line, info string, body) of each fenced block and each indented block."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            indent = len(line) - len(line.lstrip())
            info, start, body = line.strip()[3:].strip(), i + 1, []
            i += 1
            while i < len(lines) and not lines[i].lstrip().startswith("```"):
                body.append(lines[i][indent:])
                i += 1
            yield start + 1, info, "\n".join(body)
        elif line.startswith("    ") and (i == 0 or not lines[i - 1].strip()):
            start, body = i, []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                body.append(lines[i][4:])
                i += 1
            yield start + 1, "", "\n".join(body).rstrip()
            continue
        i += 1


def example_kind(data: Any) -> str | None:
    """What a YAML document is an example of: campaign, lab, config (vmbisect's config file),
    notify; None: not one of the product's files."""
    if not isinstance(data, dict):
        return None
    keys = set(data)
    if "kind" in keys or {"workload", "metric"} <= keys:
        return "campaign"
    if "hosts" in keys:
        return "lab"
    if keys == {"smtp"}:
        return "config"
    if keys == {"notify"}:
        return "notify"
    return None


def examples_in(text: str) -> Iterator[tuple[int, Any]]:
    """(line, data) of each code block of a page that is YAML and an example of a product file."""
    for line, info, body in code_blocks(text):
        if info and info not in ("yaml", "yml"):
            continue
        try:
            data = yaml.safe_load(body)
        except yaml.YAMLError:
            if info:
                yield line, body  # a block marked yaml that is not YAML
            continue
        if example_kind(data) is not None:
            yield line, data


def check_example(data: Any, base: Path) -> None:
    """Parse an example as `vmbisect bisect` (and the lab, mail and notify readers) would, up
    to what needs no repository, kernel or host: the file's keys and values, the workload, the
    metric and its threshold's sign, the config recipe. Raises UserError (or, for a string,
    says it is not YAML)."""
    from orchestrator.campaign.file import check_threshold_sign, parse_campaign
    from orchestrator.campaign.workload import choose_workload
    from orchestrator.errors import UserError, choices_error
    from orchestrator.hosts import labfile as lab_module
    from orchestrator.hosts.labfile import parse_lab
    from orchestrator.kbuild.recipe import parse_recipe
    from orchestrator.kinds.table import FILES
    from orchestrator.notify.config import parse_smtp
    from orchestrator.notify.recipients import parse_notify
    from orchestrator.setbisect.campaign import parse_settings
    from orchestrator.setbisect.configspec import parse_config_campaign

    if isinstance(data, str):
        raise UserError("not YAML")
    kind = example_kind(data)
    if kind == "lab":  # build_cpus against a machine with as many CPUs as the example names
        lab = parse_lab({k: v for k, v in data.items() if k != "build_cpus"}, base)
        if "build_cpus" in data:
            lab_module._build_cpus(data["build_cpus"], lab.hosts, available=1 << 16)
        return
    if kind == "config":  # the password file as one the example's owner made
        with tempfile.TemporaryDirectory() as tmp:
            smtp = dict(data["smtp"])
            if "password_file" in smtp:
                secret = Path(tmp) / "password"
                secret.write_text("secret\n")
                secret.chmod(0o600)
                smtp["password_file"] = str(secret)
            parse_smtp(smtp, base)
        return
    if kind == "notify":
        parse_notify(data["notify"])
        return
    parsers: dict[str, Callable[[Any, Path], Any]] = {
        "settings": lambda d, b: parse_settings(d, b).common,
        "config": lambda d, b: parse_config_campaign(d, b).campaign,
    }
    if "kind" in data and data["kind"] not in FILES:
        raise choices_error("kind", data["kind"], list(FILES))
    file_kind = FILES[data["kind"]].name if "kind" in data else None
    campaign = parsers[file_kind](data, base) if file_kind else parse_campaign(data, base)
    choice = choose_workload(campaign)
    check_threshold_sign(campaign.metric.threshold, choice.direction)
    if file_kind != "config":
        parse_recipe(list(campaign.kernel.config))


# --- the maximal files the key check reads --------------------------------------------------------

# One file of each kind that reaches every `yamlcheck.known` of its parser, so the recorder
# sees every key table (test_docs checks that every call site in orchestrator/ was reached).
FULL_CAMPAIGN = """
name: full
repository: .
good: v1
bad: v2
first_parent: false
kernel: {config: [guest-base], cc: gcc}
guest:
  vcpus: 2
  memory_mib: 512
  topology: {sockets: 1, cores: 2, threads: 1}
  machine: pc
  disks: {count: 1, size_mib: 64, controller: virtio-scsi, backing: raw, cache: none, aio: threads}
accel: tcg
append: quiet
workload: {name: fio, params: {runtime: 5}}
metric: {name: read_iops, direction: higher, threshold: {relative: -10%}, watch: [write_iops]}
boots_per_commit: 2
max_boots_per_commit: 4
runs_per_boot: 1
confirm: revert
skip_policy: {build_failure: skip, boot_failure: skip}
timeouts: {build_s: 60, boot_s: 60, run_s: 60}
alpha: 0.05
notify: {mail: [a@example.org]}
explain: {profile: true, profile_boots: 2}
steps: {min_share: 0.2}
"""
FULL_SETTINGS = """
kind: settings
name: full
kernel: {file: /boot/vmlinuz, modules: "6.1"}
good: {cmdline: "", settings: {scheduler: none}}
bad: {cmdline: "quiet", settings: {scheduler: bfq, nomerges: 2}}
together: [[scheduler, quiet]]
workload: {name: fio}
metric: {name: read_iops, threshold: -10%}
"""
FULL_CONFIG = """
kind: config
name: full
repository: .
commit: v1
good: {recipe: [guest-base]}
bad: {recipe: [guest-base, lockdep]}
workload: {name: fio}
metric: {name: read_iops, threshold: -10%}
"""
FULL_LAB = """
hosts:
  - {name: local, slots: [{cpus: 0}]}
  - {name: far, ssh: root@far, key: k, known_hosts: kh, uri: "qemu:///system", work_dir: /w, disk_dir: /d}
notify: {mail: [a@example.org]}
"""
FULL_MAIL = """
smtp: {host: mail.example.org}
"""


@dataclass(frozen=True)
class KeyFile:
    """A file format whose keys must each have a row in a key table of `pages` (docs/...)."""

    what: str
    pages: tuple[str, ...]
    read: Callable[[], Any]


def key_files() -> list[KeyFile]:
    from orchestrator.campaign.file import parse_campaign
    from orchestrator.hosts.labfile import parse_lab
    from orchestrator.notify.config import load_smtp
    from orchestrator.setbisect.campaign import parse_settings
    from orchestrator.setbisect.configspec import parse_config_campaign

    def mail() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "config.yaml"
            path.write_text(FULL_MAIL)
            load_smtp(path)

    return [
        KeyFile("campaign file", ("docs/campaign.md",), lambda: parse_campaign(yaml.safe_load(FULL_CAMPAIGN))),
        KeyFile("settings campaign file", ("docs/settings-bisect.md", "docs/campaign.md"),
                lambda: parse_settings(yaml.safe_load(FULL_SETTINGS))),
        KeyFile("config campaign file", ("docs/config-bisect.md", "docs/campaign.md"),
                lambda: parse_config_campaign(yaml.safe_load(FULL_CONFIG))),
        KeyFile("lab file", ("docs/hosts.md", "docs/mail.md"), lambda: parse_lab(yaml.safe_load(FULL_LAB))),
        KeyFile("config file", ("docs/mail.md",), mail),
    ]
