import pytest

from bench.noise import VARIANTS, guest_of, order, rows, variants
from orchestrator.errors import UserError
from orchestrator.stats import Boot, variance_ratio
from orchestrator.vm.spec import DiskSpec, Topology, VmSpec


def test_rounds_alternate_their_order_so_a_drifting_host_spreads_over_every_variant():
    assert order(["a", "b", "c"], 0) == ["a", "b", "c"]
    assert order(["a", "b", "c"], 1) == ["c", "b", "a"]


def test_a_variant_sets_only_its_own_source():
    spec = VmSpec(vcpus=2, disks=DiskSpec(count=1, controller="virtio-scsi"))
    assert guest_of(VARIANTS["tsc"], spec, 2) == VmSpec(vcpus=2, disks=spec.disks, clock="tsc")
    one = guest_of(VARIANTS["tsc+1socket"], spec, 2)
    assert one.topology == Topology(1, 2, 1) and one.pinning == ()
    pinned = guest_of(VARIANTS["tsc+pin+emu0"], spec, 2)
    assert pinned.pinning == ("0", "1") and pinned.emulator_pin == "0"
    assert guest_of(VARIANTS["tsc+iothread"], spec, 2).disks.iothreads == 1
    assert guest_of(VARIANTS["tsc+native"], spec, 2).disks.aio == "native"


def test_an_iothread_variant_leaves_a_controller_without_iothreads_alone():
    spec = VmSpec(disks=DiskSpec(count=1, controller="lsisas1078"))
    assert guest_of(VARIANTS["tsc+iothread"], spec, 2).disks.iothreads == 0


def test_an_unknown_variant_is_refused_with_the_choices():
    with pytest.raises(UserError, match=r"^variant: invalid value 'fast'; valid choices: kernel, hpet"):
        variants(["tsc", "fast"])


def test_rows_give_the_boots_noise_and_the_change_against_the_first_variant():
    runs = {"kernel": {"iops": [[100, 101], [110, 111], [90, 91], [105, 104]]},
            "tsc": {"iops": [[150, 151], [152, 150], [149, 151], [151, 150]]}}
    ref, tsc = rows(runs, "iops")
    assert ref.boots == 4 and ref.change == "-" and 0.06 < ref.between_cov < 0.10
    assert tsc.between_cov < 0.01 and tsc.change.startswith("+")
    assert tsc.noise_ratio.endswith(")") and float(tsc.noise_ratio.split("x")[0]) < 0.2


def test_variance_ratio_is_one_for_equal_spread_and_its_interval_covers_it():
    a = [Boot(i, (v,)) for i, v in enumerate((100, 110, 90, 105, 95))]
    b = [Boot(i, (2 * v,)) for i, v in enumerate((100, 110, 90, 105, 95))]
    ratio, low, high = variance_ratio(a, b)
    assert ratio == pytest.approx(1.0) and low < 1 < high
    assert variance_ratio(a[:1], b) is None


def test_the_host_floor_counts_work_in_every_window_of_its_boot():
    import time

    from bench.noise.floor import work

    rates = work(3, 0.05, time.monotonic())
    assert len(rates) == 3 and all(r > 0 for r in rates), rates
