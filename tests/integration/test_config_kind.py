"""The `config` kind end to end on the one run path (orchestrator/kinds/run.py) with fakes for the
kernel source (FakeConfigKernels over FakeKconfig) and the guests (FakeMeasurer), a real git
repository for the commit and a real SQLite store: `vmbisect bisect FILE` with `kind: config`
refuses a bad file with one line naming the key (nothing stored), runs a good one to its answer,
and its report lists the options in the order tried, grouped, with the table of both sides."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator import wiring
from orchestrator.cli import main
from orchestrator.kinds import table as kinds
from orchestrator.kinds.table import read_result as read
from orchestrator.results import SetBisectResult
from orchestrator.setbisect.configspec import parse_config_campaign
from orchestrator.store import Store
from tests.fakes import FakeConfigKernels, FakeKconfig, FakeMeasurer, by_options
from tests.integration.gitrepo import Repo

KCONFIG: dict[str, dict[str, Any]] = {
    "CONFIG_DEBUG_KERNEL": {},
    "CONFIG_PROVE_LOCKING": {"depends": ["CONFIG_DEBUG_KERNEL"], "selects": ["CONFIG_LOCKDEP"]},
    "CONFIG_LOCKDEP": {"prompt": False},
    "CONFIG_HZ_1000": {},
    "CONFIG_NUMA": {},
}
WHERE = {"CONFIG_DEBUG_KERNEL": "lib/Kconfig.debug", "CONFIG_PROVE_LOCKING": "lib/Kconfig.debug",
         "CONFIG_HZ_1000": "kernel/Kconfig.hz", "CONFIG_NUMA": "arch/x86/Kconfig"}


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("VMBISECT_DATA_DIR", str(tmp_path / "data"))
    repo = Repo(tmp_path / "linux")
    repo.commit("v6.1")
    (tmp_path / "good.config").write_text("CONFIG_DEBUG_KERNEL=y\n# CONFIG_PROVE_LOCKING is not set\n")
    (tmp_path / "bad.config").write_text("CONFIG_DEBUG_KERNEL=y\nCONFIG_PROVE_LOCKING=y\nCONFIG_LOCKDEP=y\n"
                                         "CONFIG_HZ_1000=y\nCONFIG_NUMA=y\n")
    campaign = {"kind": "config", "name": "lockdep-cost", "repository": str(repo.path), "commit": "main",
                "good": {"config": "good.config"}, "bad": {"config": "bad.config"},
                "workload": {"name": "fio", "params": {"rw": "randread", "disks": 1}}, "guest": {"disks": {"count": 1}},
                "metric": {"name": "read_iops", "threshold": "-10%"}, "runs_per_boot": 2}
    kernels = FakeConfigKernels(FakeKconfig(KCONFIG), where=WHERE)
    measurer = FakeMeasurer(value_of=by_options(lambda on: 8000.0 * (0.6 if "PROVE_LOCKING" in on else 1.0)),
                            noise=0.01, between=0.01, seed=5, metric="read_iops")
    monkeypatch.setattr(wiring, "open_pool", lambda lab, *_store_and_id: type(
        "Pool", (), {"close": lambda self: None, "lab": lab})())  # the lab: wiring.lab_slots reads its slots
    monkeypatch.setattr(wiring, "bisection", lambda *a, **k: (kernels, measurer))
    return {"dir": tmp_path, "campaign": campaign, "store": f"sqlite:///{tmp_path / 'v.db'}", "kernels": kernels,
            "measurer": measurer}


def _write(world: dict[str, Any], **change: Any) -> Path:
    data = {**world["campaign"], **change}
    path = world["dir"] / "config-campaign.yaml"
    path.write_text(yaml.safe_dump({k: v for k, v in data.items() if v is not None}))
    return path


@pytest.mark.parametrize("change, message", [
    ({"commit": None}, "commit: missing (required)"),
    ({"commit": "no-such-branch"}, "commit: 'no-such-branch' is not a commit in"),
    ({"good": {"config": "good.config", "recipe": ["guest-base"]}}, "good: give one of config"),
    ({"bad": {"config": "missing.config"}}, "bad.config: cannot read"),
    ({"bad": {"config": "config-campaign.yaml"}}, "bad.config: "),
    ({"good": {"recipe": ["no-such-fragment"]}}, "good.recipe: unknown item 'no-such-fragment'"),
    ({"kernel": {"config": ["guest-base"]}}, "kernel.config: a config bisection's configs are its good and bad"),
    ({"confirm": "none"}, "unknown key"),
    ({"metric": {"name": "read_iops", "threshold": "+10%"}}, "metric.threshold"),
])
def test_a_bad_config_campaign_is_one_line_naming_the_key_and_nothing_is_stored(world, capsys, change, message):
    path = _write(world, **change)
    assert main(["bisect", str(path), "--store", world["store"]]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert Store(world["store"]).campaigns() == []


def test_a_config_campaign_names_the_option_and_reports_the_options_grouped_in_order(world, capsys):
    path = _write(world)
    assert main(["bisect", str(path), "--store", world["store"]]) == 0
    store = Store(world["store"])
    row = store.campaigns()[0]
    result = read(row.kind, row.state, row.result)
    assert row.kind == "config" and isinstance(result, SetBisectResult)
    assert result.units == ("CONFIG_PROVE_LOCKING",) and result.confirmation.verdict == "confirmed"
    md = kinds.report(store, row.id, "md")
    assert "1. PROVE_LOCKING: not set -> y [lib/Kconfig.debug]" in md
    assert "olddefconfig sets with it: LOCKDEP" in md and "not a unit: LOCKDEP" in md
    assert md.index("PROVE_LOCKING: not set") < md.index("NUMA: not set") < md.index("HZ_1000: not set")
    assert "| good | good |" in md and "| bad | bad |" in md and "| good + CONFIG_PROVE_LOCKING |" in md
    assert "1. PROVE_LOCKING: not set -&gt; y" in kinds.report(store, row.id, "html")  # escaped
    assert '"CONFIG_PROVE_LOCKING"' in kinds.report(store, row.id, "json")
    # each candidate's kernel was built for it (the builder's answer is stored, not a cache hit)
    assert store.builds(row.id) and not any(b.cache_hit for b in store.builds(row.id))
    # the stored spec keeps the .config texts: the file may change, the campaign does not
    (world["dir"] / "bad.config").write_text("CONFIG_NUMA=y\n")
    spec = parse_config_campaign(store_spec(store, row.id))
    assert "CONFIG_PROVE_LOCKING=y" in spec.bad.text


def test_a_finished_config_campaign_whose_store_was_copied_reports_without_its_sides_and_says_why(world, capsys):
    """The sides (olddefconfig's grouping) live in the campaign's working directory, keyed by the
    store's URL: a copied store reports the answer and every candidate by key, never a traceback."""
    assert main(["bisect", str(_write(world)), "--store", world["store"]]) == 0
    copy = world["dir"] / "copy.db"
    copy.write_bytes((world["dir"] / "v.db").read_bytes())
    store = Store(f"sqlite:///{copy}")
    for fmt in ("md", "html", "json"):
        text = kinds.report(store, 1, fmt)
        assert "options are not in" in text and "CONFIG_PROVE_LOCKING" in text, fmt
    assert "named: CONFIG_PROVE_LOCKING (alone)" in kinds.report(store, 1, "md")


def store_spec(store: Store, campaign_id: int) -> Any:
    import json

    return json.loads(store.campaign(campaign_id).spec)


def test_a_killed_config_campaign_resumes_with_the_sides_it_prepared_and_ends_with_the_same_answer(world, capsys):
    from orchestrator.bisect.workdir import campaign_workdir
    from orchestrator.setbisect.configrun import SIDES_FILE

    measurer = world["measurer"]
    measurer.crash_after = 12  # the controller is killed after 12 runs
    path = _write(world)
    assert main(["bisect", str(path), "--store", world["store"]]) == 130
    store = Store(world["store"])
    sides_file = campaign_workdir(store, 1) / SIDES_FILE
    prepared = sides_file.stat().st_mtime_ns
    boots_before = len(store.boots(1))
    measurer.crash_after = None
    assert main(["resume", "1", "--store", world["store"]]) == 0
    row = store.campaign(1)
    result = read(row.kind, row.state, row.result)
    assert isinstance(result, SetBisectResult) and result.units == ("CONFIG_PROVE_LOCKING",)
    assert sides_file.stat().st_mtime_ns == prepared, "the sides were prepared again on resume"
    assert len(store.boots(1)) > boots_before


def test_sides_that_do_not_differ_after_olddefconfig_are_refused_and_say_so(world, capsys):
    # the bad file asks only for what olddefconfig drops (a symbol without a prompt)
    (world["dir"] / "bad.config").write_text("CONFIG_DEBUG_KERNEL=y\nCONFIG_LOCKDEP=y\n")
    assert main(["bisect", str(_write(world)), "--store", world["store"]]) == 2
    row = Store(world["store"]).campaigns()[0]
    assert row.state == "refused" and "do not differ" in capsys.readouterr().err
    assert "not candidates (1)" in kinds.report(Store(world["store"]), row.id, "md")


def test_a_config_campaign_file_names_its_own_mail_recipients(world):
    """`notify:` is a key of a config campaign as of a commit campaign: the kind's mail reads it."""
    from orchestrator.kinds.table import kind_of

    path = _write(world, notify={"mail": ["perf@example.org"]})
    spec = parse_config_campaign(yaml.safe_load(path.read_text()), path.parent, path)
    assert kind_of("config").notify(spec) is not None
    assert "perf@example.org" in str(kind_of("config").notify(spec))
