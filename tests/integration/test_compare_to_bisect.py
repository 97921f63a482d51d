"""From a stored comparison of two commits to the bisection of the row that regressed, through
the command line: `vmbisect bisect --from-compare ID ROW --write-campaign FILE` writes a file
that `vmbisect bisect FILE` accepts (parsed and preflighted), `--from-compare ID ROW` records
that bisection and hands it to the runner (faked here: nothing builds or boots), and bad input
is one line naming the field and the choices, with nothing recorded. The comparison is built
with the fakes and a real SQLite store and git repository, as test_compare_runner does."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from orchestrator.cli import _parser, main
from orchestrator.commands.bisect import checked_file
from orchestrator.commands.compare import spec_from_args
from orchestrator.compare.plan import plan_from_spec
from orchestrator.compare.runplan import run_plan
from orchestrator.kinds.specs import BisectSpec
from orchestrator.kinds.table import record, report, stored
from orchestrator.ports import KernelArtifact
from orchestrator.store import Store
from tests.fakes import FakeKernels, FakeMeasurer, FakeSession
from tests.integration.gitrepo import linear


@pytest.fixture
def compared(tmp_path: Path) -> tuple[str, int, str]:
    """A finished comparison of c0 against c3 on fio-randread-4k, with the iops at numjobs=16
    20% lower on c3: the store's URL, the comparison's id and the repository."""
    repo = linear(tmp_path / "linux", 4)
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    old, new = repo.names["c0"], repo.names["c3"]
    a = _parser().parse_args(["compare", "--workload", "fio-randread-4k", "--disks", "1", "--repo", str(repo.path),
                              "--variant", f"old=commit:{old}", "--variant", f"new=commit:{new}", "--reps", "4"])
    spec = spec_from_args(a)
    store = Store(url)
    cid = record(store, "compare-fio", spec)

    class SixteenJobsWorseOnNew(FakeMeasurer):
        @contextmanager
        def boot(self, kernel: KernelArtifact, append: str | None = None) -> Iterator[FakeSession]:
            with super().boot(kernel, append) as session:
                run, base = session.run, session.value

                def at_point(params: Any = None, nice: int | None = None) -> Any:
                    slow = kernel.commit == new and int((params or {}).get("numjobs", 1)) == 16
                    session.value = base * (0.8 if slow else 1.0)
                    return run(params, nice)

                session.run = at_point  # type: ignore[method-assign]
                yield session

    run_plan(plan_from_spec(spec), store, cid, FakeKernels(), SixteenJobsWorseOnNew(noise=0.01))
    return url, cid, str(repo.path)


def test_compare_s_report_names_the_bisect_command_of_the_row_that_regressed(compared: tuple[str, int, str]) -> None:
    url, cid, _repo = compared
    store = Store(url)
    text = report(store, cid, "md")
    assert f"vmbisect bisect --from-compare {cid} iops@numjobs=16   # iops at numjobs=16: -20." in text
    assert text.count("vmbisect bisect --from-compare") == 1


def test_the_written_campaign_file_is_accepted_by_bisect_and_records_nothing(
        compared: tuple[str, int, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url, cid, repo = compared
    path = tmp_path / "bisect.yaml"
    assert main(["bisect", "--from-compare", str(cid), "iops@numjobs=16", "--write-campaign", str(path),
                 "--store", url]) == 0
    name, spec = checked_file(path)  # what `vmbisect bisect FILE` checks before recording
    assert isinstance(spec, BisectSpec) and name == f"compare{cid}-iops-numjobs-16"
    c = spec.campaign
    assert (c.repository, c.workload.params, c.metric.name, c.metric.direction) == (
        Path(repo), {"numjobs": 16}, "iops", "higher")
    assert -0.2 < c.metric.threshold.value < 0
    assert [r.id for r in Store(url).campaigns()] == [cid]


def test_from_compare_records_the_bisection_and_starts_it(compared: tuple[str, int, str], monkeypatch) -> None:
    from orchestrator.kinds import run as kinds

    url, cid, _repo = compared
    started: list[int] = []
    monkeypatch.setattr(kinds, "execute", lambda store, campaign_id, **_kw: started.append(campaign_id) or 0)
    assert main(["bisect", "--from-compare", str(cid), "iops@numjobs=16", "--store", url]) == 0
    store = Store(url)
    (new,) = [r for r in store.campaigns() if r.id != cid]
    assert started == [new.id] and new.kind == "bisect"
    spec = stored(new)
    assert isinstance(spec, BisectSpec) and spec.campaign.workload.params == {"numjobs": 16}


@pytest.mark.parametrize("args, message", [
    (["99", "iops@numjobs=16"], "from-compare: ID '99' is not a comparison; comparisons: {cid}"),
    (["{cid}", "iops@numjobs=4"], "row: 'iops@numjobs=4' did not move significantly; rows that regressed: "
                                  "iops@numjobs=16"),
])
def test_bad_input_is_one_line_naming_the_choices_and_records_nothing(
        compared: tuple[str, int, str], capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    url, cid, _repo = compared
    capsys.readouterr()
    assert main(["bisect", "--from-compare", *(a.format(cid=cid) for a in args), "--store", url]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(message.format(cid=cid)) and "\n" not in err
    assert [r.id for r in Store(url).campaigns()] == [cid]


def test_a_comparison_of_a_prebuilt_kernel_cannot_be_bisected(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              ) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    a = _parser().parse_args(["compare", "--workload", "fio", "--disks", "1", "--reps", "3",
                              "--variant", "old=kernel:/k/bzImage-6.1", "--variant", "new=kernel:/k/bzImage-6.2"])
    spec = spec_from_args(a)
    store = Store(url)
    cid = record(store, "compare-fio", spec)
    run_plan(plan_from_spec(spec), store, cid, FakeKernels(),
             FakeMeasurer(value_of=lambda _c: 8000.0, noise=0.01))
    assert main(["bisect", "--from-compare", str(cid), "iops", "--store", url]) == 2
    assert "variant old: kernel /k/bzImage-6.1 is not a commit" in capsys.readouterr().err
    assert [r.id for r in Store(url).campaigns()] == [cid]


@pytest.mark.parametrize("args", [["bisect"], ["bisect", "--write-campaign", "-"]])
def test_bisect_without_a_file_or_a_comparison_says_what_to_give(
        args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*args, "--store", f"sqlite:///{tmp_path / 'db.sqlite'}"]) == 2
    assert capsys.readouterr().err.strip().endswith(
        "campaign: give a campaign file, or --from-compare ID ROW (which --write-campaign needs)")
