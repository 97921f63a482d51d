#!/usr/bin/env bash
# Start libvirt's daemons where no init system does (containers, CI), as root: libvirt needs a
# qemu user it can resolve and its run/log directories, then `virtlogd -d` and `libvirtd -d`.
# Waits until qemu:///system answers. Called by scripts/setup.sh, and by the tests that
# restart libvirtd (tests/integration/libvirtd.py). Where systemd runs, it manages them instead.
set -euo pipefail

say() { printf 'setup: %s\n' "$*"; }

if virsh -c qemu:///system version >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  say "starting libvirtd needs root"
  exit 1
fi
getent group kvm >/dev/null || groupadd -r kvm
getent group libvirt-qemu >/dev/null || groupadd -r libvirt-qemu
getent passwd libvirt-qemu >/dev/null ||
  useradd -r -g libvirt-qemu -G kvm -d /var/lib/libvirt -s /usr/sbin/nologin libvirt-qemu
mkdir -p /var/run/libvirt /var/log/libvirt/qemu /var/lib/libvirt/qemu
# The daemons outlive this script and must not keep its descriptors: started by a `make setup`
# run under `flock` (a lock file that keeps heavy jobs apart), they held that lock for as long as
# they ran, and every later `flock` on it waited for ever.
daemon() { ( for fd in $(seq 3 255); do eval "exec $fd>&-"; done 2>/dev/null; exec "$@" ); }
# -r: a daemon just killed may linger as a zombie until init reaps it; it does not count
pgrep -x -r D,R,S,T virtlogd >/dev/null || daemon virtlogd -d
pgrep -x -r D,R,S,T libvirtd >/dev/null || daemon libvirtd -d
for _ in $(seq 1 50); do
  virsh -c qemu:///system version >/dev/null 2>&1 && { say "libvirtd started"; exit 0; }
  sleep 0.2
done
say "libvirtd did not answer on qemu:///system; see /var/log/libvirt/libvirtd.log"
exit 1
