"""What workloads need from the guest kernel: declared options, their check against a .config,
and the hints that name an option when a failure's output points at the kernel config."""

from __future__ import annotations

import pytest

from orchestrator.errors import WorkloadFailed
from orchestrator.workloads import kneeds
from orchestrator.workloads.definition import load_all, resolve

WORKLOADS = load_all()
# What tinyconfig + kvm_guest + guest-base gave before netperf and dbench were made to run:
# no POSIX timers (the options that matter here, as the .config writes them).
TINY = {"CONFIG_SYSVIPC": "y", "CONFIG_PROC_FS": "y", "CONFIG_AIO": "y", "CONFIG_IO_URING": "y",
        "CONFIG_INET": "y", "CONFIG_EXT4_FS": "y", "CONFIG_XFS_FS": "y", "CONFIG_POSIX_TIMERS": "n"}


def needs(name: str, *overrides: str) -> dict[str, str]:
    plan = resolve(WORKLOADS, name, list(overrides))
    return plan.workload.kernel_needs_all(plan.points)


def test_every_workload_and_preset_declares_what_it_needs_from_the_kernel():
    for w in WORKLOADS.values():
        for name in (w.name, *w.presets):
            assert "CONFIG_PROC_FS" in needs(name), name


@pytest.mark.parametrize("name, option", [("netperf-tcp-rr", "CONFIG_POSIX_TIMERS"), ("dbench", "CONFIG_POSIX_TIMERS"),
                                          ("dbench", "CONFIG_SYSVIPC"), ("fio-randread-4k", "CONFIG_SYSVIPC")])
def test_the_tools_needs_found_by_running_them_are_declared(name, option):
    assert option in needs(name)


def test_a_parameter_value_adds_the_options_it_needs():
    assert "CONFIG_XFS_FS" in needs("dbench-xfs") and "CONFIG_XFS_FS" not in needs("dbench")
    assert "CONFIG_IO_URING" in needs("fio", "ioengine=io_uring") and "CONFIG_AIO" not in needs("fio", "ioengine=io_uring")
    assert "CONFIG_AIO" in needs("fio")


def test_missing_lists_options_not_set_absent_or_off_but_accepts_modules():
    need = {"CONFIG_A": "a", "CONFIG_B": "b", "CONFIG_C": "c", "CONFIG_D": "d"}
    assert kneeds.missing(need, {"CONFIG_A": "y", "CONFIG_B": "m", "CONFIG_C": "n"}) == [("CONFIG_C", "c"),
                                                                                        ("CONFIG_D", "d")]


def test_a_kernel_in_the_store_is_checked_against_the_config_beside_it(tmp_path):
    (tmp_path / "bzImage").write_bytes(b"kernel")
    (tmp_path / "config").write_text("CONFIG_PROC_FS=y\nCONFIG_INET=y\n# CONFIG_POSIX_TIMERS is not set\n")
    with pytest.raises(WorkloadFailed) as err:
        kneeds.check_kernel("netperf", needs("netperf"), tmp_path / "bzImage", "the kernel built at 1a2b3c")
    assert str(err.value) == ("netperf needs CONFIG_POSIX_TIMERS (alarm() and setitimer() time netperf's test; "
                              "without them it fails with errno 38), which the kernel built at 1a2b3c lacks; add "
                              "CONFIG_POSIX_TIMERS=y to the kernel recipe")


def test_a_distribution_kernel_is_checked_against_its_boot_config(tmp_path):
    (tmp_path / "vmlinuz-6.1.0-9-amd64").write_bytes(b"kernel")
    (tmp_path / "config-6.1.0-9-amd64").write_text("".join(f"{k}=y\n" for k in TINY))
    kneeds.check_kernel("dbench", needs("dbench-xfs"), tmp_path / "vmlinuz-6.1.0-9-amd64")


def test_a_kernel_without_a_known_config_is_not_refused(tmp_path):
    (tmp_path / "bzImage").write_bytes(b"kernel")
    kneeds.check_kernel("netperf", needs("netperf"), tmp_path / "bzImage")


@pytest.mark.parametrize("output, option", [
    ("netperf stream 0: no result: error starting alarm timer, ret -1 errno 38", "CONFIG_POSIX_TIMERS"),
    ("mount: mounting /dev/sda on /mnt/vmbisect failed: unknown filesystem type 'xfs'", "CONFIG_XFS_FS"),
    ("mount: /dev/sda: unknown filesystem type 'ext4'", "CONFIG_EXT4_FS"),
    ("fio: io_uring_setup: Function not implemented", "CONFIG_IO_URING"),
    ("fio: io_setup: errno 38", "CONFIG_AIO"),
    ("shmget: Function not implemented", "CONFIG_SYSVIPC"),
    ("cat: can't open '/proc/diskstats': No such file or directory", "/proc/diskstats"),
])
def test_a_failure_the_kernel_config_explains_names_the_likely_option(output, option):
    hint = kneeds.explain(output)
    assert hint is not None and option in hint


def test_an_unexplained_failure_gets_no_hint_and_errno_380_is_not_enosys():
    assert kneeds.explain("fio: pid 12: verify failed at offset 4096") is None
    assert kneeds.explain("something errno 380") is None


def test_a_failure_keeps_its_message_and_output_and_gains_the_hint_once():
    exc = kneeds.with_hint(WorkloadFailed("netperf stream 0: no result: error starting alarm timer, ret -1 errno 38",
                                          "raw", "netperf output"))
    assert str(exc).endswith("; the guest kernel has no interval timers (ENOSYS): likely CONFIG_POSIX_TIMERS is not set")
    assert exc.detail == "raw" and exc.detail_label == "netperf output"
    assert kneeds.with_hint(exc) is exc


def test_a_workload_definition_with_a_misspelt_option_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="without CONFIG_, in capitals: CONFIG_POSIX_TIMERS"):
        kneeds.parse_needs({"kconfig": {"CONFIG_POSIX_TIMERS": "x"}}, "w.yaml")
