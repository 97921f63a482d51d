"""`verify`: a suspect commit against its parent, measured by the engine (interleaved boots),
on real git with the fake guests; the pure judgement on boot values."""

from __future__ import annotations

import random

from orchestrator.backends.git_bisect import GitBisect
from orchestrator.bisect.suspect import verify_commit
from orchestrator.decisions import PairVerdict
from orchestrator.measure.judge import Judge
from orchestrator.measure.pairs import answer_pair
from orchestrator.stats import Boot
from orchestrator.store import Store
from tests.fakes import FakeBuilder, FakeMeasurer
from tests.integration.gitrepo import linear
from tests.integration.test_engine_cases import make_campaign, values


def boots(level: float, n: int, between: float, seed: int, start: int = 0) -> list[Boot]:
    rng = random.Random(seed)
    return [Boot(start + 2 * i, (level * (1 + rng.gauss(0, between)),) * 3) for i in range(n)]


def verification(tmp_path, commit: str, revert_on: str = "", restores: bool = True,  # type: ignore[no-untyped-def]
                 **hosts):
    repo = linear(tmp_path / "u", 12)
    store = Store(f"sqlite:///{tmp_path / 'v.db'}")
    cid = store.new_campaign("t", {})
    measurer = FakeMeasurer(values(repo, "c6", 0.15, restores), seed=3, between=0.03, **hosts)
    campaign = make_campaign(repo, "c0", "c11")
    judge_ = Judge(cid, store, FakeBuilder(), measurer, campaign.metric.name, campaign.runs_per_boot)
    result = verify_commit(judge_, GitBisect(repo.path, tmp_path / "work"), campaign, "higher", repo.names[commit], 5,
                           repo.names[revert_on] if revert_on else "")
    return repo, store, cid, result, measurer


def test_verify_confirms_the_culprit_with_interleaved_boots(tmp_path):
    repo, store, cid, result, measurer = verification(tmp_path, "c6")
    assert result.answer.verdict is PairVerdict.CONFIRMED and result.answer.line.startswith("confirmed: commit against parent -")
    assert result.parent == repo.names["c5"]
    order = [repo.name_of(x) for x in measurer.booted]
    assert order[:4] == ["c5", "c6", "c6", "c5"]  # A B B A
    assert store.campaign(cid).result["answer"] == "confirmed" and len(store.boots(cid)) == 10


def test_verify_does_not_see_a_neutral_commit(tmp_path):
    _, _, _, result, _ = verification(tmp_path, "c8")
    assert result.answer.verdict is PairVerdict.NOT_SEEN and "a change of -10% is ruled out" in result.answer.line


def test_verify_measures_the_revert_on_a_tip(tmp_path):
    _, _, _, restored, _ = verification(tmp_path / "a", "c6", revert_on="c11")
    assert restored.revert is not None
    assert restored.revert.text.startswith("revert restores the metric: tip with the commit reverted against tip +")
    _, _, _, kept, _ = verification(tmp_path / "b", "c6", revert_on="c11", restores=False)
    assert kept.revert is not None and kept.revert.text.startswith("revert does not restore the metric")


def test_too_few_boots_for_the_noise_cannot_tell_and_say_how_many_would():
    parent, commit = boots(100, 3, 0.15, 1), boots(95, 3, 0.15, 2, start=1)
    answer = answer_pair(parent, commit, "higher", -0.10, 0.05, 8)
    assert answer.verdict is PairVerdict.CANNOT_TELL and answer.boots_needed > 3
    assert f"about {answer.boots_needed} boots per side would" in answer.line


def test_a_lower_is_better_metric_is_confirmed_when_it_rises():
    parent, commit = boots(10, 6, 0.02, 1), boots(12, 6, 0.02, 2, start=1)
    assert answer_pair(parent, commit, "lower", 0.10, 0.05, 8).verdict is PairVerdict.CONFIRMED
    assert answer_pair(commit, parent, "lower", 0.10, 0.05, 8).verdict is not PairVerdict.CONFIRMED


def test_verify_by_flags_alone_confirms_the_culprit_and_its_revert_with_the_engines_fake_ports(tmp_path):
    """No campaign file: repository, workload, metric, guest and the tip to revert on by flags,
    checked and stored as `vmbisect verify` stores them, then measured by the engine."""
    from orchestrator.cli import _parser
    from orchestrator.commands.verify import checked
    from orchestrator.kinds.specs import VerifySpec
    from orchestrator.kinds.table import record, stored

    repo = linear(tmp_path / "u", 12)
    a = _parser().parse_args(["verify", repo.names["c6"], "--repo", str(repo.path), "--workload", "fio",
                              "--param", "rw=randread", "--metric", "read_iops", "--disks", "2",
                              "--controller", "lsisas1078", "--revert-on", repo.names["c11"], "--boots", "5"])
    campaign, spec = checked(a)
    store = Store(f"sqlite:///{tmp_path / 'v.db'}")
    cid = record(store, campaign.name, spec)
    again = stored(store.campaign(cid))  # what `vmbisect resume` rebuilds
    assert isinstance(again, VerifySpec)
    c = again.campaign
    assert (c.guest.disks.count, c.guest.disks.controller, c.metric.name) == (2, "lsisas1078", "read_iops")
    measurer = FakeMeasurer(values(repo, "c6", 0.15, True), seed=3, between=0.03, metric="read_iops")
    judge_ = Judge(cid, store, FakeBuilder(), measurer, c.metric.name, c.runs_per_boot)
    result = verify_commit(judge_, GitBisect(repo.path, tmp_path / "work"), c, "higher", again.commit, again.boots,
                           again.revert_on)
    assert result.answer.verdict is PairVerdict.CONFIRMED and result.parent == repo.names["c5"]
    assert result.revert is not None and result.revert.text.startswith("revert restores the metric")
    assert store.campaign(cid).result["answer"] == "confirmed"


def test_a_verification_whose_host_fails_during_the_revert_measures_all_four_again_on_the_next_host(tmp_path):
    """Host `fast` fails while the revert is measured; `slow` reads half as fast, so the pair
    measured on fast cannot be compared with the revert measured on slow: all four are booted
    again on slow and the answers come from its boots alone."""
    repo, store, cid, result, measurer = verification(
        tmp_path, "c6", revert_on="c11", host="fast", host_fails_after={"fast": 40}, spare_hosts=["slow"],
        speed={"fast": 1.0, "slow": 0.5})
    assert result.answer.verdict is PairVerdict.CONFIRMED
    assert result.revert is not None and result.revert.text.startswith("revert restores the metric")
    ok = [b for b in store.boots(cid) if b.status == "ok"]
    names = {sha: name for name, sha in repo.names.items()}
    assert {names.get(b.commit, "c11 reverted") for b in ok if b.host == "slow"} == {"c5", "c6", "c11", "c11 reverted"}
    assert [b.status for b in store.boots(cid) if b.host == "fast"].count("lost") == 1
    assert all(len(v) >= 5 for v in result.boot_means.values()) and max(
        m for v in result.boot_means.values() for m in v) < 60, "a boot of fast was compared on slow"


def test_verify_profiles_only_when_asked_with_profile_whatever_the_campaign_file_says(tmp_path):
    from orchestrator.cli import _parser
    from orchestrator.commands.verify import checked

    repo = linear(tmp_path / "u", 4)
    flags = ["--repo", str(repo.path), "--workload", "fio", "--param", "rw=randread", "--disks", "1"]
    plain, _spec = checked(_parser().parse_args(["verify", repo.names["c2"], *flags]))
    asked, spec = checked(_parser().parse_args(["verify", repo.names["c2"], *flags, "--profile"]))
    assert not plain.explain.profile and asked.explain.profile and asked.explain.profile_boots == 2
    assert spec.to_dict()["explain"] == {"profile": True}
