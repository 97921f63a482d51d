"""Boot the installed Debian kernel on the image under plain QEMU (TCG), with a stand-in agent.

This is the proof that the kernel's initramfs unpacker reads the archive and that the module
list loads in order: a shell script stands in for the agent as /init, loads every listed module
with busybox insmod, then makes and mounts ext4 and xfs on a virtio disk and runs fio.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from orchestrator.image import GuestImageBuilder
from orchestrator.image.modfiles import installed_releases

STANDIN_INIT = """#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
while read -r module; do insmod "$module" || echo "INSMOD-FAILED $module"; done < /etc/vmbisect/modules
echo "MODULES-LOADED $(wc -l < /proc/modules)"
mkfs.ext4 -q -F /dev/vda && mount /dev/vda /mnt && echo EXT4-MOUNTED && umount /mnt
mkfs.xfs -q -f /dev/vda && mount /dev/vda /mnt && echo XFS-MOUNTED && umount /mnt
fio --version
echo GUEST-DONE
poweroff -f
"""


@pytest.mark.vm
@pytest.mark.timeout(600)
def test_debian_kernel_boots_standin_agent_image_loads_modules_and_mounts_ext4_and_xfs(
    tmp_path: Path,
) -> None:
    qemu = shutil.which("qemu-system-x86_64")
    releases = [r for r in installed_releases(Path("/lib/modules")) if Path(f"/boot/vmlinuz-{r}").is_file()]
    if qemu is None or not releases:
        pytest.skip("needs qemu-system-x86 and Debian's linux-image-amd64 (kernel in /boot)")
    release = releases[-1]
    agent = tmp_path / "standin-init"
    agent.write_text(STANDIN_INIT)
    agent.chmod(0o755)
    image = GuestImageBuilder(tmp_path / "cache", agent).build(kernel_release=release)
    disk = tmp_path / "disk.raw"
    with disk.open("wb") as f:
        f.truncate(1 << 30)

    console = subprocess.run(
        [
            qemu, "-accel", "tcg", "-cpu", "max", "-m", "1024", "-smp", "2",
            "-nographic", "-no-reboot", "-nodefaults", "-serial", "stdio",
            "-kernel", f"/boot/vmlinuz-{release}", "-initrd", str(image.path),
            "-append", "console=ttyS0 panic=-1 quiet",
            "-drive", f"file={disk},format=raw,if=virtio",
        ],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=540,
    ).stdout

    assert "GUEST-DONE" in console, console[-3000:]
    assert "INSMOD-FAILED" not in console, console[-3000:]
    assert f"MODULES-LOADED {len(image.modules)}" in console
    assert "EXT4-MOUNTED" in console and "XFS-MOUNTED" in console
    assert "fio-" in console
