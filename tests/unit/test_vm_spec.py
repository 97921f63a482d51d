import pytest

from orchestrator.errors import UserError
from orchestrator.vm.spec import DiskSpec, Topology, VmSpec, disk_names


def test_default_spec_is_valid():
    assert VmSpec().validate() == VmSpec()


@pytest.mark.parametrize(
    "spec, field, shown",
    [
        (VmSpec(disks=DiskSpec(controller="ide")), "controller", "virtio-scsi"),
        (VmSpec(machine="isapc"), "machine", "q35"),
        (VmSpec(disks=DiskSpec(cache="sometimes")), "cache", "writeback"),
        (VmSpec(disks=DiskSpec(aio="fast")), "aio", "io_uring"),
        (VmSpec(disks=DiskSpec(backing="nfs")), "backing", "qcow2"),
    ],
)
def test_bad_choice_names_field_and_valid_choices(spec, field, shown):
    with pytest.raises(UserError) as err:
        spec.validate()
    message = str(err.value)
    assert message.startswith(field + ":") and shown in message and "\n" not in message


def test_topology_must_multiply_to_vcpus():
    with pytest.raises(UserError, match="topology: 2 sockets x 2 cores x 1 threads = 4 CPUs, but vcpus is 16"):
        VmSpec(vcpus=16, topology=Topology(2, 2, 1)).validate()


def test_pinning_needs_one_cpuset_per_vcpu():
    with pytest.raises(UserError, match="pinning"):
        VmSpec(vcpus=2, pinning=("0",)).validate()


def test_block_backing_needs_one_device_per_disk():
    with pytest.raises(UserError, match="devices"):
        VmSpec(disks=DiskSpec(count=2, backing="block", devices=("/dev/sdx",))).validate()


def test_native_aio_requires_o_direct_cache():
    with pytest.raises(UserError, match="native"):
        VmSpec(disks=DiskSpec(count=1, cache="writeback", aio="native")).validate()


def test_iothreads_only_for_virtio_controllers():
    with pytest.raises(UserError, match="iothreads"):
        VmSpec(disks=DiskSpec(count=1, controller="lsisas1078", iothreads=2)).validate()


def test_negative_counts_rejected():
    with pytest.raises(UserError, match="vcpus"):
        VmSpec(vcpus=0).validate()
    with pytest.raises(UserError, match="disks"):
        VmSpec(disks=DiskSpec(count=-1)).validate()


def test_disk_names_follow_kernel_naming_past_z():
    names = disk_names("virtio-scsi", 28)
    assert names[:2] == ["sda", "sdb"] and names[25] == "sdz" and names[26:] == ["sdaa", "sdab"]
    assert disk_names("virtio-blk", 2) == ["vda", "vdb"]
