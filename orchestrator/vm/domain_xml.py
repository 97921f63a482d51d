"""Pure rendering of a libvirt domain from a VmSpec and the files of one boot.

The domain boots the kernel directly (no bootloader, never from disk), logs the serial console
to a file, exposes the agent's virtio-serial port as a unix socket, and is destroyed on
power-off, reboot and crash, so a panicking kernel (booted with panic=-1) ends the domain.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from orchestrator.vm.spec import CONTROLLERS, VmSpec, disk_names

AGENT_PORT = "org.vmbisect.agent.0"
METADATA_NS = "https://vmbisect.invalid/domain/1"
# libvirt addresses the parallel-SCSI lsilogic's devices by unit (the SCSI id), target 0.
ADDRESS_BY_UNIT = frozenset({"lsilogic"})
# QEMU's mptsas1068 reports a disk's SAS address from its wwn, 0 unless set, and Linux's mptsas
# driver skips phys whose attached SAS address is 0 (mptsas_setup_wide_ports), so no disk would
# appear. Each disk gets a unique locally assigned (NAA 3) WWN there; docs/controllers.md.
WWN_CONTROLLERS = frozenset({"lsisas1068"})
WWN_BASE = 0x3000000000000001


@dataclass(frozen=True)
class BootFiles:
    """Everything of one boot that lives on the host."""

    name: str
    kernel: Path
    initrd: Path
    cmdline: str
    console_log: Path
    agent_socket: Path
    disks: tuple[Path, ...] = ()
    accel: str = "tcg"
    owner_pid: int = 0
    run_as_root: bool = False


def domain_xml(spec: VmSpec, boot: BootFiles) -> str:
    dom = ET.Element("domain", type="kvm" if boot.accel == "kvm" else "qemu")
    ET.SubElement(dom, "name").text = boot.name
    meta = ET.SubElement(dom, "metadata")
    ET.SubElement(meta, "{%s}owner" % METADATA_NS, pid=str(boot.owner_pid))
    ET.SubElement(dom, "memory", unit="MiB").text = str(spec.memory_mib)
    ET.SubElement(dom, "vcpu", placement="static").text = str(spec.vcpus)
    if spec.disks.iothreads:
        ET.SubElement(dom, "iothreads").text = str(spec.disks.iothreads)
    _cputune(dom, spec)
    _os(dom, spec, boot)
    ET.SubElement(dom, "features").append(ET.Element("acpi"))
    cpu = ET.SubElement(dom, "cpu", mode="host-passthrough" if boot.accel == "kvm" else "custom")
    if boot.accel != "kvm":
        ET.SubElement(cpu, "model", fallback="allow").text = "qemu64"
    if spec.topology is not None:
        t = spec.topology
        ET.SubElement(cpu, "topology", sockets=str(t.sockets), dies="1", cores=str(t.cores), threads=str(t.threads))
    ET.SubElement(dom, "clock", offset="utc")
    for event in ("on_poweroff", "on_reboot", "on_crash"):
        ET.SubElement(dom, event).text = "destroy"
    devices = ET.SubElement(dom, "devices")
    ET.SubElement(devices, "controller", type="usb", model="none")
    _disks(devices, spec, boot)
    _console(devices, boot)
    _agent_channel(devices, boot)
    _rng(devices)
    ET.SubElement(devices, "memballoon", model="none")
    if boot.run_as_root:
        seclabel = ET.SubElement(dom, "seclabel", type="static", model="dac", relabel="no")
        ET.SubElement(seclabel, "label").text = "+0:+0"
    ET.register_namespace("vmbisect", METADATA_NS)
    ET.indent(dom)
    return ET.tostring(dom, encoding="unicode")


def _cputune(dom: ET.Element, spec: VmSpec) -> None:
    """vCPU threads pinned one set each; QEMU's own threads (the main loop and the I/O
    threads) pinned apart from them when `emulator_pin` names host CPUs."""
    if not spec.pinning and not spec.emulator_pin:
        return
    tune = ET.SubElement(dom, "cputune")
    for vcpu, cpuset in enumerate(spec.pinning):
        ET.SubElement(tune, "vcpupin", vcpu=str(vcpu), cpuset=cpuset)
    if spec.emulator_pin:
        ET.SubElement(tune, "emulatorpin", cpuset=spec.emulator_pin)
        for iothread in range(1, spec.disks.iothreads + 1):
            ET.SubElement(tune, "iothreadpin", iothread=str(iothread), cpuset=spec.emulator_pin)


def _os(dom: ET.Element, spec: VmSpec, boot: BootFiles) -> None:
    os_el = ET.SubElement(dom, "os")
    ET.SubElement(os_el, "type", arch="x86_64", machine=spec.machine).text = "hvm"
    ET.SubElement(os_el, "kernel").text = str(boot.kernel)
    ET.SubElement(os_el, "initrd").text = str(boot.initrd)
    ET.SubElement(os_el, "cmdline").text = boot.cmdline


def _disks(devices: ET.Element, spec: VmSpec, boot: BootFiles) -> None:
    d = spec.disks
    if d.count == 0:
        return
    bus, model, per_controller = CONTROLLERS[d.controller]
    if model is not None:
        for index in range((d.count + per_controller - 1) // per_controller):
            ctl = ET.SubElement(devices, "controller", type="scsi", index=str(index), model=model)
            driver = _queue_attrs(d.queues, d.iothreads, index) if d.controller == "virtio-scsi" else {}
            if driver:
                ET.SubElement(ctl, "driver", driver)
    for i, (dev, source) in enumerate(zip(disk_names(d.controller, d.count), boot.disks)):
        is_block = d.backing == "block"
        disk = ET.SubElement(devices, "disk", type="block" if is_block else "file", device="disk")
        driver = {"name": "qemu", "type": "qcow2" if d.backing == "qcow2" else "raw", "cache": d.cache, "io": d.aio}
        if d.controller == "virtio-blk":
            driver.update(_queue_attrs(d.queues, d.iothreads, i))
        ET.SubElement(disk, "driver", driver)
        ET.SubElement(disk, "source", {"dev": str(source)} if is_block else {"file": str(source)})
        ET.SubElement(disk, "target", dev=dev, bus=bus)
        ET.SubElement(disk, "serial").text = f"vmbisect{i}"
        if d.controller in WWN_CONTROLLERS:
            ET.SubElement(disk, "wwn").text = f"{WWN_BASE + i:016x}"
        if model is not None:
            controller, slot = divmod(i, per_controller)
            target, unit = (0, slot) if d.controller in ADDRESS_BY_UNIT else (slot, 0)
            ET.SubElement(disk, "address", type="drive", controller=str(controller), bus="0",
                          target=str(target), unit=str(unit))


def _queue_attrs(queues: int, iothreads: int, index: int) -> dict[str, str]:
    attrs: dict[str, str] = {}
    if queues:
        attrs["queues"] = str(queues)
    if iothreads:
        attrs["iothread"] = str(index % iothreads + 1)
    return attrs


def _console(devices: ET.Element, boot: BootFiles) -> None:
    serial = ET.SubElement(devices, "serial", type="file")
    ET.SubElement(serial, "source", path=str(boot.console_log), append="off")
    ET.SubElement(serial, "target", port="0")


def _rng(devices: ET.Element) -> None:
    """An entropy source (virtio-rng, from the host's /dev/urandom). Without one a guest with
    no RDRAND (TCG's qemu64) readies its CRNG from interrupt timings: during the first
    workload run, from disk completions, with a static key patched on every vCPU inside a
    measured run. With it the CRNG is ready before the agent serves (docs/architecture.md)."""
    rng = ET.SubElement(devices, "rng", model="virtio")
    ET.SubElement(rng, "backend", model="random").text = "/dev/urandom"


def _agent_channel(devices: ET.Element, boot: BootFiles) -> None:
    ET.SubElement(devices, "controller", type="virtio-serial", index="0")
    channel = ET.SubElement(devices, "channel", type="unix")
    ET.SubElement(channel, "source", mode="bind", path=str(boot.agent_socket))
    ET.SubElement(channel, "target", type="virtio", name=AGENT_PORT)
