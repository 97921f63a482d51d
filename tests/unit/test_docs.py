"""README.md and docs/ against the repository and the parsers (tests/docscheck.py): links,
paths, commands, campaign keys, example files, --help. The checker's own tests feed it small
fixtures that each check must refuse."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from orchestrator import cli
from orchestrator.errors import UserError
from orchestrator.kinds.table import FILES
from tests import docscheck
from tests.docscheck import ROOT

PAGES = docscheck.doc_files()
ALL_DOCS = "\n".join(p.read_text() for p in PAGES)
EXAMPLE_FILES = [p for p in sorted((ROOT / "examples").rglob("*.yaml"))
                 if docscheck.example_kind(yaml.safe_load(p.read_text())) is not None]


def _page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_relative_link_and_named_path_of_the_docs_exists(page):
    text = page.read_text()
    assert docscheck.broken_links(page, text) + docscheck.missing_paths(page, text) == []


def test_the_readme_links_every_page_of_docs():
    assert docscheck.unindexed_pages((ROOT / "README.md").read_text(), PAGES) == []


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_the_docs_speak_of_the_product_not_of_the_machines_they_were_written_on(page):
    assert docscheck.workplace_words(page, page.read_text()) == []


def test_every_vmbisect_command_is_named_in_the_docs():
    assert docscheck.undocumented_commands(cli._parser(), ALL_DOCS) == []


def test_no_help_text_shows_a_percent_escape():
    assert docscheck.help_escapes(cli._parser()) == []


@pytest.mark.parametrize("keyfile", docscheck.key_files(), ids=lambda k: k.what)
def test_every_key_a_parser_accepts_has_a_row_in_its_reference(keyfile):
    with docscheck.recording_keys() as calls:
        keyfile.read()
    reference = "\n".join((ROOT / page).read_text() for page in keyfile.pages)
    missing = docscheck.undocumented_keys(docscheck.key_paths(calls), reference)
    assert missing == [], f"add a row for each to the key table of {' or '.join(keyfile.pages)}"


def test_the_key_check_reads_every_key_table_of_the_parsers():
    reached = set()
    for keyfile in docscheck.key_files():
        with docscheck.recording_keys() as calls:
            keyfile.read()
        reached |= {c.site for c in calls}
    assert docscheck.known_sites() - reached == set(), "extend the FULL_* files of tests/docscheck.py to reach it"


def test_every_campaign_kind_a_file_can_name_is_in_the_kind_row():
    assert docscheck.undocumented_kinds(FILES, (ROOT / "docs/campaign.md").read_text()) == []


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_example_file_in_the_docs_parses(page):
    failed = []
    for line, data in docscheck.examples_in(page.read_text()):
        try:
            docscheck.check_example(data, page.parent)
        except UserError as exc:
            failed.append(f"{page.name}:{line}: {exc}")
    assert failed == []


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_example_file_parses(path):
    docscheck.check_example(yaml.safe_load(path.read_text()), path.parent)


# --- the checker refuses what it should ------------------------------------------------------------

def test_a_key_without_a_row_is_reported():
    reference = "| key | meaning |\n|---|---|\n| `name` | the name |\n| `guest.disks.cache` / `aio` | modes |\n"
    keys = ["name", "guest.disks.cache", "guest.disks.aio", "guest.disks.queues"]
    assert docscheck.undocumented_keys(keys, reference) == ["guest.disks.queues"]


def test_a_key_added_to_a_parser_is_recorded_and_reported_until_documented(monkeypatch):
    from orchestrator.notify import recipients

    monkeypatch.setattr(recipients, "NOTIFY_KEYS", (*recipients.NOTIFY_KEYS, "pager"))
    with docscheck.recording_keys() as calls:
        docscheck.key_files()[0].read()
    keys = docscheck.key_paths(calls)
    assert "notify.pager" in keys
    reference = (ROOT / "docs/campaign.md").read_text()
    assert docscheck.undocumented_keys(keys, reference) == ["notify.pager"]
    assert docscheck.undocumented_keys(keys, reference + "\n| `notify.pager` | no | | a pager |\n") == []


def test_a_row_of_a_mapping_documents_the_keys_it_names():
    reference = "| `guest.topology` | no | | `{sockets, cores, threads}` |\n| `slots` | list of `{cpus: ...}` |\n"
    keys = ["guest.topology.cores", "guest.topology.dies", "hosts[].slots[].cpus"]
    assert docscheck.undocumented_keys(keys, reference) == ["guest.topology.dies"]


def test_a_missing_link_path_and_top_level_page_are_reported(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "orchestrator").mkdir()
    (tmp_path / "orchestrator" / "stats.py").write_text("")
    page = tmp_path / "docs" / "x.md"
    text = ("see [stats](../orchestrator/stats.py) and [gone](../orchestrator/gone.py);\n"
            "`orchestrator/stats.py:12`, orchestrator/nothing.py, `orchestrator/<name>.py`, /tmp/orchestrator/x.py\n"
            "DESIGN.md says so\n")
    assert docscheck.broken_links(page, text) == ["x.md:1: link ../orchestrator/gone.py does not resolve"]
    assert docscheck.missing_paths(page, text, tmp_path) == ["x.md:2: orchestrator/nothing.py does not exist",
                                                             "x.md:3: DESIGN.md does not exist"]


def test_a_link_to_a_heading_that_does_not_exist_is_reported(tmp_path):
    (tmp_path / "b.md").write_text("# B\n\n## The threshold: forms\n\n```\n# not a heading\n```\n")
    page = tmp_path / "a.md"
    text = ("[ok](b.md#the-threshold-forms) [own](#a) [gone](b.md#timeouts)\n"
            "[fenced](b.md#not-a-heading)\n\n# A\n")
    page.write_text(text)
    assert docscheck.broken_links(page, text) == ["a.md:1: link b.md#timeouts: no such heading",
                                                  "a.md:2: link b.md#not-a-heading: no such heading"]


def test_a_page_the_readme_does_not_link_is_reported(tmp_path):
    pages = [tmp_path / "README.md", tmp_path / "docs" / "a.md", tmp_path / "docs" / "sub" / "b.md"]
    readme = "- [docs/a.md](docs/a.md#top): a\n- docs/sub/b.md named, not linked\n"
    assert docscheck.unindexed_pages(readme, pages, tmp_path) == ["README.md: no link to docs/sub/b.md"]


def test_words_about_the_workplace_are_reported():
    text = "Run it under flock /work/cpu.lock.\nAnother helper's demo ran; virt-ssh-helper is fine.\n"
    assert docscheck.workplace_words(Path("x.md"), text) == ["x.md:1: 'cpu.lock'", "x.md:2: 'Another helper'"]


def test_an_undocumented_command_and_a_percent_escape_are_reported():
    import argparse

    parser = argparse.ArgumentParser(prog="vmbisect")
    sub = parser.add_subparsers()
    sub.add_parser("frobnicate", description="cuts it by 10%% at most")
    assert docscheck.undocumented_commands(parser, "run `vmbisect bisect FILE`") == [
        "vmbisect frobnicate: no `vmbisect frobnicate` in README.md or docs/"]
    assert docscheck.help_escapes(parser) == ["frobnicate --help line 3: cuts it by 10%% at most"]


def test_a_kind_missing_from_the_kind_row_is_reported():
    reference = "| `kind` | no | | `settings` (docs/settings-bisect.md) |\n"
    assert docscheck.undocumented_kinds(["settings", "config"], reference) == ["kind: config"]


def test_an_example_campaign_with_a_bad_key_or_value_is_refused():
    page = ("Run it:\n\n```yaml\nname: x\nrepository: .\ngood: a\nbad: b\nworkload: fio\n"
            "metric: {name: read_iops, threshold: -10%, colour: red}\n```\n\n    kind: settings\n    name: y\n"
            "    kernel: {stored: k}\n    good: {settings: {scheduler: none}}\n    bad: {settings: {scheduler: bfqq}}\n"
            "    workload: fio\n    metric: {name: read_iops, threshold: -10%}\n")
    found = list(docscheck.examples_in(page))
    assert [line for line, _ in found] == [4, 12]
    errors = []
    for _, data in found:
        with pytest.raises(UserError) as exc:
            docscheck.check_example(data, ROOT)
        errors.append(str(exc.value).split(":")[0])
    assert errors == ["metric.colour", "bad.settings.scheduler"]
