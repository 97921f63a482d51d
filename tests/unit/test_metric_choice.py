"""Which metrics a bisection accepts (orchestrator/campaign/workload.py): the workload's own and
the system ones with their directions, per disk and per vCPU; descriptive ones, unknown ones
and ones the campaign's guest never records are one-line refusals naming the choices; the
watched metrics of `metric.watch`."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.campaign.file import parse_campaign
from orchestrator.campaign.workload import choose_workload
from orchestrator.errors import UserError


def campaign(metric: dict[str, Any], **extra: Any):  # type: ignore[no-untyped-def]
    data = {"name": "cost", "repository": "/src/linux", "good": "v6.0", "bad": "v6.1",
            "workload": {"name": "fio", "params": {"rw": "read", "bs": "4k"}},
            "guest": {"vcpus": 4, "disks": {"count": 2, "controller": "lsisas1078"}}, "metric": metric}
    data.update(extra)
    return parse_campaign(data)


def refusal(c) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(UserError) as err:
        choose_workload(c)
    text = str(err.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize("name, direction, unit", [
    ("guest_cpu_us_per_op", "lower", "CPU-us/op"),
    ("host_cpu_us_per_op", "lower", "CPU-us/op"),
    ("host_cpu_ns_per_byte", "lower", "CPU-ns/B"),
    ("ctxt_per_op", "lower", "1/op"),
    ("intr_per_op", "lower", "1/op"),
    ("iostat_await.sdb", "lower", "ms"),
    ("guest_vcpu_busy.3", "lower", "s"),
    ("guest_cpu_busiest_share", "lower", "%"),
    ("read_iops", "higher", "IO/s"),
])
def test_system_and_workload_metrics_are_bisectable_with_their_own_direction(name, direction, unit):
    chosen = choose_workload(campaign({"name": name, "threshold": "+10%" if direction == "lower" else "-10%"}))
    assert (chosen.direction, chosen.metric.name, chosen.metric.unit) == (direction, name, unit)


def test_the_campaigns_direction_overrides_the_metrics_own():
    chosen = choose_workload(campaign({"name": "guest_cpu_busiest_share", "direction": "higher", "threshold": "-30%"}))
    assert (chosen.direction, chosen.metric.direction) == ("higher", "higher")


def test_a_descriptive_metric_is_refused_with_the_metrics_that_can_be_judged():
    text = refusal(campaign({"name": "iostat_util_pct.sda", "direction": "lower", "threshold": "+10%"}))
    assert text.startswith("metric.name: iostat_util_pct.sda is descriptive (no better direction) and cannot be "
                           "judged; valid choices: iops, read_iops, ")
    assert "guest_cpu_us_per_op" in text and "iostat_await.{sda,sdb}" in text and "guest_vcpu_busy.{0,1,2,3}" in text
    assert "iostat_util_pct" not in text.partition("valid choices")[2] and "host_vcpu_used" not in text


def test_an_unknown_metric_is_refused_with_the_choices():
    text = refusal(campaign({"name": "cpio", "threshold": "+10%"}))
    assert text.startswith("metric.name: invalid value 'cpio'; valid choices: iops, ") and "host_cpu_us_per_op" in text


def test_a_disk_or_vcpu_the_guest_does_not_have_is_unknown():
    assert refusal(campaign({"name": "iostat_await.sdc", "threshold": "+10%"})).startswith(
        "metric.name: invalid value 'iostat_await.sdc'")
    assert refusal(campaign({"name": "guest_vcpu_busy.4", "threshold": "+10%"})).startswith(
        "metric.name: invalid value 'guest_vcpu_busy.4'")


def test_host_cycles_per_op_under_tcg_is_refused_with_the_reason_and_what_to_use():
    assert refusal(campaign({"name": "host_cycles_per_op", "threshold": "+10%"}, accel="tcg")) == (
        "metric.name: host_cycles_per_op is recorded only under KVM and the campaign says accel: tcg; "
        "host_cpu_us_per_op or guest_cpu_us_per_op measure the CPU per operation there")
    assert "host_cycles_per_op" not in refusal(campaign({"name": "cpio", "threshold": "+10%"}, accel="tcg"))
    assert choose_workload(campaign({"name": "host_cycles_per_op", "threshold": "+10%"}, accel="kvm")).direction == "lower"


def test_the_busiest_vcpus_share_needs_two_vcpus():
    one = campaign({"name": "guest_cpu_busiest_share", "threshold": "+10%"},
                   guest={"vcpus": 1, "disks": {"count": 1}})
    assert refusal(one) == ("metric.name: guest_cpu_busiest_share needs at least 2 vCPUs, the guest has 1 "
                            "(guest.vcpus)")


def test_watched_metrics_come_back_with_their_definitions_descriptive_ones_included():
    chosen = choose_workload(campaign({"name": "guest_cpu_us_per_op", "threshold": "+10%",
                                       "watch": ["iops", "read_clat_p99", "iostat_util_pct.sda", "iops"]}))
    assert [(m.name, m.direction) for m in chosen.watched] == [
        ("iops", "higher"), ("read_clat_p99", "lower"), ("iostat_util_pct.sda", "none")]


def test_an_unknown_watched_metric_is_refused_with_the_choices():
    text = refusal(campaign({"name": "iops", "threshold": "-10%", "watch": ["cpio"]}))
    assert text.startswith("metric.watch: invalid value 'cpio'; valid choices: iops, ") and "iostat_util_pct" in text
    with pytest.raises(UserError, match=r"^metric\.watch: expected a list of metric names, got text$"):
        campaign({"name": "iops", "threshold": "-10%", "watch": "iops"})
    with pytest.raises(UserError, match=r"^metric\.bogus: unknown key; valid keys: name, direction, threshold, watch$"):
        campaign({"name": "iops", "threshold": "-10%", "bogus": 1})
