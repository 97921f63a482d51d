"""Issue #13's reproducers through `vmbisect` in-process: every bad campaign file or command
line ends as one line on stderr, exit 2, no traceback and no campaign recorded (the store is
not even created). Git is real: the repository and revision checks read a throwaway repo."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.cli import main
from orchestrator.store import Store
from tests.integration.gitrepo import Repo

GOOD_REST = ("good: good\nbad: bad\nworkload: {name: fio, params: {rw: randread, disks: 1}}\n"
             "metric: {name: read_iops, threshold: -10%}\nguest: {disks: {count: 1}}\n")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = Repo(tmp_path / "linux")
    r.commit("one")
    r.git("tag", "good")
    r.commit("two")
    r.git("tag", "bad")
    r.branch("side", "good")  # a branch off good that bad does not descend from
    r.commit("side-one")
    r.git("tag", "side")
    r.git("checkout", "-q", "--orphan", "lone")  # a history of its own
    r.commit("lone")
    r.git("tag", "lone")
    r.checkout("main")
    return r.path


def campaign(repo: Path, **lines: str) -> bytes:
    """A valid campaign with some top-level lines replaced (a value of "" drops the key)."""
    fields = {"name": "x", "repository": str(repo), "good": "good", "bad": "bad",
              "workload": "{name: fio, params: {rw: randread, disks: 1}}",
              "metric": "{name: read_iops, threshold: -10%}", "guest": "{disks: {count: 1}}"}
    fields.update(lines)
    return "".join(f"{k}: {v}\n" for k, v in fields.items() if v != "").encode()


CASES = {
    # The loader's crashes of issue #13.
    "not_utf8": (lambda r: b"name: caf\xe9\n", "is not UTF-8 text (byte 0xe9 at offset 9)"),
    "number_of_4301_digits": (lambda r: b"x: 1" + b"0" * 4300 + b"\n", "has a value YAML cannot convert"),
    "500_nested_brackets": (lambda r: b"[" * 500, "nests deeper than"),
    "alias_loop_in_threshold": (lambda r: campaign(r, metric="{name: read_iops, threshold: &t {relative: *t}}"),
                                "metric.threshold.relative: refers to itself (a YAML alias loop)"),
    "devices_a_number": (lambda r: campaign(r, guest="{disks: {devices: 5}}"),
                         "guest.disks.devices: expected a list of host block devices, one per disk, got the number 5"),
    "devices_null": (lambda r: campaign(r, guest="{disks: {devices: null}}"),
                     "guest.disks.devices: expected a list of host block devices, one per disk, got nothing"),
    "repository_with_nul": (lambda r: campaign(r, repository='"a\\0b"'), "repository: contains a control character"),
    "repository_lone_surrogate": (lambda r: campaign(r, repository='"\\ud800"'), "repository: contains a lone surrogate"),
    "repository_of_unknown_user": (lambda r: campaign(r, repository="~nosuchuser/x"),
                                   "repository: cannot expand '~nosuchuser': no such user"),
    # Accepted although invalid.
    "threshold_nan": (lambda r: campaign(r, metric="{name: read_iops, threshold: nan}"),
                      "metric.threshold: a relative change must be non-zero and below 1000%, got 'nan'"),
    "self_referencing_params": (lambda r: campaign(r, workload="&w {name: fio, params: *w}"),
                                "workload.params: refers to itself (a YAML alias loop)"),
    "devices_as_text": (lambda r: campaign(r, guest="{disks: {count: 2, backing: block, devices: ab}}"),
                        "guest.disks.devices: expected a list of host block devices, one per disk, got text"),
    "plus_10_percent_without_direction": (lambda r: campaign(r, metric="{name: read_iops, threshold: +10%}"),
                                          "metric.threshold: +10.0% is an improvement for a metric where higher is"),
    "a_billion_disks": (lambda r: campaign(r, guest="{disks: {count: 1000000000}}"),
                        "guest.disks.count: must be at most 256, got 1000000000"),
    "a_million_vcpus": (lambda r: campaign(r, guest="{vcpus: 1000000}"), "guest.vcpus: must be at most 255"),
    "memory_1e30": (lambda r: campaign(r, guest="{memory_mib: 1000000000000000000000000000000}"),
                    "guest.memory_mib: must be at most 1048576, got 1000000000000000000000000000000"),
    # Checked too late before.
    "unknown_workload": (lambda r: campaign(r, workload="fiio"), "workload: invalid value 'fiio'"),
    "unknown_metric": (lambda r: campaign(r, metric="{name: no_such_metric, threshold: -10%}"),
                       "metric.name: invalid value 'no_such_metric'"),
    "descriptive_metric": (lambda r: campaign(r, metric="{name: iostat_util_pct.sda, direction: lower, threshold: 10%}"),
                           "metric.name: iostat_util_pct.sda is descriptive (no better direction) and cannot be "
                           "judged; valid choices: iops, "),
    "cycles_under_tcg": (lambda r: campaign(r, accel="tcg", metric="{name: host_cycles_per_op, threshold: 10%}"),
                         "metric.name: host_cycles_per_op is recorded only under KVM and the campaign says accel: tcg"),
    "unknown_watched_metric": (lambda r: campaign(r, metric="{name: read_iops, threshold: -10%, watch: [cpio]}"),
                               "metric.watch: invalid value 'cpio'; valid choices: iops, "),
    "unknown_metric_key": (lambda r: campaign(r, metric="{name: read_iops, threshold: -10%, watched: [iops]}"),
                           "metric.watched: unknown key; valid keys: name, direction, threshold, watch"),
    "bad_param": (lambda r: campaign(r, workload="{name: fio, params: {rw: sideways}}"), "rw"),
    "unknown_config_fragment": (lambda r: campaign(r, kernel="{config: [no-such-fragment]}"),
                                "kernel.config: unknown item 'no-such-fragment'"),
    "missing_repository": (lambda r: campaign(r, repository=str(r.parent / "nowhere")), "is not a git repository"),
    "unknown_good_revision": (lambda r: campaign(r, good="v0.0"), "good: 'v0.0' is not a commit in"),
    "revision_as_git_option": (lambda r: campaign(r, bad="--upload-pack=touch${IFS}/tmp/pwned"),
                               "bad: '--upload-pack=touch${IFS}/tmp/pwned' is not a revision"),
    "run_s_below_the_runtime": (lambda r: campaign(r, timeouts="{run_s: 3}",
                                                   workload="{name: fio, params: {rw: randread, disks: 1, runtime: 5}}"),
                                "timeouts.run_s: 3 s is not more than the workload's own"),
    "aio_error_names_the_disks_path": (lambda r: campaign(r, guest="{disks: {count: 1, aio: native, cache: unsafe}}"),
                                       "guest.disks.aio: 'native' needs cache"),
    "empty_file": (lambda r: b"", "is empty; expected a mapping with name, repository"),
    # Known wrong from the repository before anything runs (issue #31).
    "good_and_bad_the_same_commit": (lambda r: campaign(r, bad="main~1"), "bad: names the same commit as good ("),
    "good_and_bad_reversed": (lambda r: campaign(r, good="bad", bad="good"),
                              "the range is reversed (good is the older commit)"),
    "bad_on_a_branch_good_is_not_on": (lambda r: campaign(r, good="side", bad="bad"),
                                       "does not descend from good"),
    "bad_of_another_history": (lambda r: campaign(r, bad="lone"), "shares no history with good"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_campaign_is_one_line_exit_2_and_nothing_is_recorded(case, repo, tmp_path, capsys):
    make, expected = CASES[case]
    path = tmp_path / "c.yaml"
    path.write_bytes(make(repo))
    db = tmp_path / "store" / "v.db"
    assert main(["bisect", str(path), "--store", f"sqlite:///{db}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("vmbisect: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert expected in err, err
    assert not db.exists()


def test_the_valid_base_campaign_passes_every_check_before_recording(repo, tmp_path):
    from orchestrator.campaign.file import parse_campaign, read_campaign_file
    from orchestrator.kinds.bisect_kind import preflight

    path = tmp_path / "c.yaml"
    path.write_bytes(campaign(repo))
    choice = preflight(parse_campaign(read_campaign_file(path), base=tmp_path))
    assert choice.workload.name == "fio" and choice.direction == "higher"


@pytest.mark.parametrize("argv, expected", [
    (["resume", "99999999999999999999"], "resume: argument id: expected a campaign id"),
    (["status", "99999999999999999999"], "status: argument id: expected a campaign id"),
    (["report", "99999999999999999999"], "report: argument id: expected a campaign id"),
    (["status", "--store", "sqlite:////proc/nope/x.db"], "store: no database at /proc/nope/x.db"),
    (["status", "--store", "nonsense"], "store: 'nonsense' is not a database URL"),
    (["report", "1", "--output", "/nonexistent/dir/x.md"], "report: argument --output: cannot write"),
    (["measure", "--kernel", "/nonexistent/bzImage", "--workload", "fio"],
     "measure: argument --kernel: '/nonexistent/bzImage' is not a readable file"),
    (["boot", "--kernel", "/nonexistent/bzImage", "--", "true"], "boot: argument --kernel: "),
    (["boot", "--kernel", "KERNEL", "--disks", "1000", "--", "true"], "disks: must be at most 256, got 1000"),
    (["boot", "--kernel", "KERNEL", "--vcpus", "99999", "--", "true"], "vcpus: must be at most 255, got 99999"),
    (["boot", "--kernel", "KERNEL", "--timeout", "nan", "--", "true"], "boot: argument --timeout: expected seconds"),
    (["measure", "--kernel", "KERNEL", "--workload", "fio", "--reps", "0"], "measure: argument --reps:"),
    (["compare", "--workload", "fio", "--kernel", "/nonexistent", "--disks", "1", "--variant", "a=nice:0",
      "--variant", "b=nice:1"], "variant a: kernel /nonexistent is not a file"),
    (["compare", "--workload", "fio", "--kernel", "KERNEL", "--disks", "1", "--variant", "a=nice:0",
      "--variant", "b=commit:--upload-pack=x", "--repo", "REPO"], "variant b: commit '--upload-pack=x' is not a revision"),
    (["compare", "--workload", "fio", "--kernel", "KERNEL", "--disks", "1", "--variant", "a=nice:0",
      "--variant", "b=commit:nope", "--repo", "REPO"], "variant b: commit 'nope' is not a commit in"),
    (["compare", "--workload", "fio", "--kernel", "KERNEL", "--alpha", "nan", "--variant", "a=nice:0",
      "--variant", "b=nice:1"], "compare: argument --alpha: expected a number between 0 and 0.5"),
    (["verify", "bad", "--workload", "fio", "--disks", "1"], "repository: missing; give --repo PATH or a campaign"),
    (["verify", "nope", "--repo", "REPO", "--workload", "fio", "--disks", "1"], "commit: 'nope' is not a commit in"),
    (["verify", "bad", "--repo", "REPO", "--workload", "fio", "--disks", "1", "--revert-on=--upload-pack=x"],
     "revert-on: '--upload-pack=x' is not a revision"),
    (["verify", "good", "--repo", "REPO", "--workload", "fio", "--disks", "1"],
     "commit: 'good' has no parent to measure it against"),
    (["verify", "bad", "--repo", "REPO", "--workload", "fio", "--disks", "1", "--controller", "ide"],
     "guest.disks.controller: invalid value 'ide'; valid choices: virtio-blk"),
    (["verify", "bad", "--repo", "REPO", "--workload", "fio", "--metric", "read_iopz", "--disks", "1"],
     "metric.name: invalid value 'read_iopz'; valid choices:"),
    (["verify", "bad", "--repo", "REPO", "--workload", "fio"], "guest.disks.count: fio needs at least 1 data disk"),
    (["verify", "bad", "--repo", "REPO", "--workload", "fio", "--disks", "1", "--boots", "1"],
     "verify: argument --boots: expected a whole number from 2 to 1000"),
])
def test_bad_command_line_is_one_line_exit_2_before_any_connection(argv, expected, repo, tmp_path, capsys):
    kernel = tmp_path / "bzImage"
    kernel.write_bytes(b"not really a kernel")
    argv = [a.replace("KERNEL", str(kernel)).replace("REPO", str(repo)) for a in argv]
    db = tmp_path / "store" / "v.db"
    if "--store" not in argv:
        argv += ["--store", f"sqlite:///{db}"] if argv[0] in ("resume", "status", "report", "compare", "verify") else []
    # A libvirt URI nothing answers: a command that got past its checks would fail differently.
    assert main(["--uri", "test:///nowhere", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("vmbisect: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert expected in err, err
    assert not db.exists() or Store(f"sqlite:///{db}").campaigns() == []
