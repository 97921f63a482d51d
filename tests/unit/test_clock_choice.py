import pytest

from orchestrator.campaign.file import parse_campaign, stored_clock, with_clock
from orchestrator.errors import UserError
from orchestrator.kinds.specs import BisectSpec
from orchestrator.vm.clocksource import clock_cmdline
from orchestrator.vm.console import kernel_cmdline
from orchestrator.vm.options import GuestOptions
from orchestrator.vm.spec import VmSpec


def test_auto_keeps_time_with_the_tsc_under_tcg_and_leaves_kvm_to_the_kernel():
    assert clock_cmdline("auto", "tcg") == "clocksource=tsc tsc=reliable"
    assert clock_cmdline("auto", "kvm") == ""


def test_each_clock_choice_names_its_clocksource_and_kernel_names_none():
    assert clock_cmdline("hpet", "tcg") == "clocksource=hpet"
    assert clock_cmdline("kvm-clock", "kvm") == "clocksource=kvm-clock"
    assert clock_cmdline("kernel", "tcg") == ""


def test_the_users_append_comes_after_the_clock_so_their_clocksource_wins():
    line = kernel_cmdline("clocksource=hpet quiet", clock_cmdline("tsc", "tcg"))
    assert line.endswith("clocksource=tsc tsc=reliable clocksource=hpet quiet")


def test_a_bad_clock_is_refused_naming_the_field_and_the_choices():
    with pytest.raises(UserError, match=r"^clock: invalid value 'rtc'; valid choices: auto, tsc, hpet"):
        VmSpec(clock="rtc").validate()


def _file(**guest):
    return {"name": "c", "repository": "/tmp", "good": "a", "bad": "b", "workload": {"name": "fio"},
            "metric": {"name": "iops", "threshold": "-10%"}, "guest": guest}


def test_a_campaign_files_guest_clock_defaults_to_auto_and_is_checked():
    assert parse_campaign(_file()).guest.clock == "auto"
    assert parse_campaign(_file(clock="hpet")).guest.clock == "hpet"
    with pytest.raises(UserError, match=r"^guest.clock: invalid value 'rtc'"):
        parse_campaign(_file(clock="rtc"))


def test_a_stored_campaign_names_its_clock_and_one_stored_before_the_clock_keeps_the_kernels_own():
    raw = _file()
    spec = BisectSpec.of(raw, parse_campaign(raw))
    assert spec.to_dict()["guest"]["clock"] == "auto"
    assert BisectSpec.from_dict(spec.to_dict()).campaign.guest.clock == "auto"
    assert BisectSpec.from_dict(_file()).campaign.guest.clock == "kernel"
    assert stored_clock(with_clock(_file(), "tsc"))["guest"]["clock"] == "tsc"


def test_guest_options_stored_before_the_clock_keep_the_kernels_own():
    stored = GuestOptions().to_dict()
    assert GuestOptions.from_dict(stored).clock == "auto"
    del stored["clock"]
    assert GuestOptions.from_dict(stored).clock == "kernel"


def test_emulator_pinning_is_a_host_cpu_set():
    assert parse_campaign(_file(emulator_pinning="0")).guest.emulator_pin == "0"
    with pytest.raises(UserError, match=r"^guest.emulator_pinning: expected a host CPU set"):
        parse_campaign(_file(emulator_pinning="zero"))
