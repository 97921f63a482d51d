"""The launcher of one lab host: this machine's libvirt (its URI, its work_dir), or a host
reached over SSH (paramiko), whose libvirt is reached through the remote driver and whose
accelerator is probed there."""

from __future__ import annotations

from pathlib import Path

from orchestrator.backends.factory import GuestLauncher, guest_images
from orchestrator.backends.libvirt_vm import LibvirtProvider
from orchestrator.errors import InfraError
from orchestrator.hosts.labfile import Host


def host_launcher(host: Host, log_root: Path | None = None) -> GuestLauncher:
    images = guest_images()
    if host.ssh is None:
        run_root = host.work_dir / "run" if host.work_dir is not None else None
        return GuestLauncher(LibvirtProvider(host.uri, run_root=run_root, log_root=log_root), images)
    from orchestrator.hosts.remote import RemoteSite, choose_remote_accel, ensure_event_loop
    from orchestrator.hosts.ssh import SshHost

    ensure_event_loop()
    ssh = SshHost(host.name, host.ssh)
    ssh.connect()
    site = RemoteSite(host, ssh, log_root)
    try:
        provider = LibvirtProvider(host.uri, site=site)
    except InfraError:
        ssh.close()
        raise
    site.attach(provider.conn)
    return GuestLauncher(provider, images, ssh,
                         remote_accel=lambda probe, reprobe: choose_remote_accel(ssh, probe, reprobe=reprobe))
