import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from orchestrator.vm.domain_xml import AGENT_PORT, BootFiles, domain_xml
from orchestrator.vm.spec import DiskSpec, Topology, VmSpec


def boot_files(n: int, **kw) -> BootFiles:
    return BootFiles(
        name="vmbisect-42-abcd", kernel=Path("/k/bzImage"), initrd=Path("/k/initrd.gz"),
        cmdline="console=ttyS0 panic=-1", console_log=Path("/logs/c.log"), agent_socket=Path("/s/agent.sock"),
        disks=tuple(Path(f"/d/disk{i}.raw") for i in range(n)), owner_pid=42, **kw,
    )


def render(spec: VmSpec, **kw) -> ET.Element:
    return ET.fromstring(domain_xml(spec.validate(), boot_files(spec.disks.count, **kw)))


def test_direct_kernel_boot_without_bootloader_or_boot_device():
    dom = render(VmSpec())
    assert dom.findtext("os/kernel") == "/k/bzImage"
    assert dom.findtext("os/initrd") == "/k/initrd.gz"
    assert dom.findtext("os/cmdline") == "console=ttyS0 panic=-1"
    assert dom.find("os/boot") is None and dom.find("os/loader") is None
    assert dom.find("devices/disk/boot") is None


def test_no_usb_controller_or_balloon_to_add_noise():
    dom = render(VmSpec())
    assert dom.find("devices/controller[@type='usb']").get("model") == "none"
    assert dom.find("devices/memballoon").get("model") == "none"


def test_a_virtio_entropy_source_from_the_hosts_urandom():
    rngs = render(VmSpec()).findall("devices/rng")
    assert [(r.get("model"), r.find("backend").get("model"), r.findtext("backend")) for r in rngs] == [
        ("virtio", "random", "/dev/urandom")]


def test_guest_is_destroyed_on_poweroff_reboot_and_crash():
    dom = render(VmSpec())
    assert [dom.findtext(e) for e in ("on_poweroff", "on_reboot", "on_crash")] == ["destroy"] * 3


def test_console_goes_to_file_and_agent_to_unix_socket():
    dom = render(VmSpec())
    assert dom.find("devices/serial[@type='file']/source").get("path") == "/logs/c.log"
    channel = dom.find("devices/channel[@type='unix']")
    assert channel.find("source").attrib == {"mode": "bind", "path": "/s/agent.sock"}
    assert channel.find("target").attrib == {"type": "virtio", "name": AGENT_PORT}


def test_tcg_domain_type_qemu_and_kvm_type_kvm():
    assert render(VmSpec()).get("type") == "qemu"
    assert render(VmSpec(), accel="kvm").get("type") == "kvm"
    assert render(VmSpec(), accel="kvm").find("cpu").get("mode") == "host-passthrough"


def test_eight_disks_on_lsi_megaraid_share_one_controller():
    dom = render(VmSpec(vcpus=16, disks=DiskSpec(count=8, controller="lsisas1078")))
    controllers = dom.findall("devices/controller[@type='scsi']")
    assert [c.get("model") for c in controllers] == ["lsisas1078"]
    disks = dom.findall("devices/disk")
    assert [d.find("target").get("dev") for d in disks] == [f"sd{c}" for c in "abcdefgh"]
    assert {d.find("target").get("bus") for d in disks} == {"scsi"}
    assert [d.find("address").get("target") for d in disks] == [str(i) for i in range(8)]
    assert dom.findtext("vcpu") == "16"


@pytest.mark.parametrize("controller, per", [("lsilogic", 7), ("lsisas1068", 8)])
def test_disks_beyond_a_controllers_targets_spill_to_a_second_controller(controller, per):
    dom = render(VmSpec(disks=DiskSpec(count=per + 1, controller=controller)))
    assert len(dom.findall("devices/controller[@type='scsi']")) == 2
    last = dom.findall("devices/disk")[-1].find("address")
    assert (last.get("controller"), last.get("target"), last.get("unit")) == ("1", "0", "0")


def test_lsilogic_disks_are_addressed_by_unit_on_target_zero():
    dom = render(VmSpec(disks=DiskSpec(count=3, controller="lsilogic")))
    addresses = [d.find("address") for d in dom.findall("devices/disk")]
    assert [(a.get("target"), a.get("unit")) for a in addresses] == [("0", "0"), ("0", "1"), ("0", "2")]


def test_virtio_blk_disks_carry_queues_and_round_robin_iothreads():
    spec = VmSpec(disks=DiskSpec(count=3, controller="virtio-blk", queues=4, iothreads=2, aio="native"))
    dom = render(spec)
    assert dom.findtext("iothreads") == "2"
    drivers = [d.find("driver").attrib for d in dom.findall("devices/disk")]
    assert [d["iothread"] for d in drivers] == ["1", "2", "1"]
    assert {d["queues"] for d in drivers} == {"4"} and {d["io"] for d in drivers} == {"native"}
    assert dom.find("devices/controller[@type='scsi']") is None
    assert dom.findall("devices/disk/target")[0].attrib == {"dev": "vda", "bus": "virtio"}


def test_virtio_scsi_controller_takes_queues_and_iothread():
    dom = render(VmSpec(disks=DiskSpec(count=16, controller="virtio-scsi", queues=2, iothreads=1)))
    ctl = dom.findall("devices/controller[@type='scsi']")
    assert len(ctl) == 1 and ctl[0].find("driver").attrib == {"queues": "2", "iothread": "1"}
    assert len(dom.findall("devices/disk")) == 16


def test_qcow2_and_block_backings():
    dom = render(VmSpec(disks=DiskSpec(count=1, backing="qcow2")))
    assert dom.find("devices/disk/driver").get("type") == "qcow2"
    spec = VmSpec(disks=DiskSpec(count=1, backing="block", devices=("/dev/nvme0n1",)))
    boot = BootFiles(name="vmbisect-1-a", kernel=Path("/k"), initrd=Path("/i"), cmdline="", console_log=Path("/c"),
                     agent_socket=Path("/s"), disks=(Path("/dev/nvme0n1"),))
    disk = ET.fromstring(domain_xml(spec.validate(), boot)).find("devices/disk")
    assert disk.get("type") == "block" and disk.find("source").get("dev") == "/dev/nvme0n1"


def test_topology_and_pinning_rendered():
    dom = render(VmSpec(vcpus=4, topology=Topology(1, 2, 2), pinning=("0", "1", "0", "1")))
    assert dom.find("cpu/topology").attrib == {"sockets": "1", "dies": "1", "cores": "2", "threads": "2"}
    assert [p.get("cpuset") for p in dom.findall("cputune/vcpupin")] == ["0", "1", "0", "1"]


def test_root_run_sets_static_dac_label_so_libvirt_relabels_nothing():
    assert render(VmSpec()).find("seclabel") is None
    label = render(VmSpec(), run_as_root=True).find("seclabel")
    assert label.attrib == {"type": "static", "model": "dac", "relabel": "no"}


def test_owner_pid_in_metadata_for_leftover_cleanup():
    xml = domain_xml(VmSpec(), boot_files(0))
    assert 'pid="42"' in xml and ET.fromstring(xml).findtext("name") == "vmbisect-42-abcd"


def test_lsisas1068_disks_get_unique_nonzero_wwns_so_mptsas_attaches_them():
    dom = render(VmSpec(disks=DiskSpec(count=9, controller="lsisas1068")))
    wwns = [d.findtext("wwn") for d in dom.findall("devices/disk")]
    assert len(set(wwns)) == 9 and all(len(w) == 16 and int(w, 16) != 0 for w in wwns)


def test_other_controllers_keep_qemus_default_disk_identity():
    for controller in ("virtio-scsi", "lsisas1078", "lsilogic", "virtio-blk"):
        assert render(VmSpec(disks=DiskSpec(count=2, controller=controller))).find("devices/disk/wwn") is None


def test_emulator_and_its_io_threads_pinned_apart_from_the_vcpus():
    spec = VmSpec(vcpus=2, pinning=("1", "1"), emulator_pin="0",
                  disks=DiskSpec(count=2, controller="virtio-blk", iothreads=2))
    dom = render(spec)
    assert dom.find("cputune/emulatorpin").get("cpuset") == "0"
    assert [(p.get("iothread"), p.get("cpuset")) for p in dom.findall("cputune/iothreadpin")] == [("1", "0"), ("2", "0")]


def test_no_cputune_without_pinning():
    assert render(VmSpec()).find("cputune") is None
