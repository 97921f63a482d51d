#!/usr/bin/env bash
# vmbisect host setup for Debian 12 (bookworm), run as root. Idempotent: every step checks
# before it acts, so a second run on a ready machine takes a few seconds.
# Every host configuration change is listed in docs/setup.md.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
venv="${VMBISECT_VENV:-$here/.venv}"
stamp_dir="$here/.setup"
mkdir -p "$stamp_dir"

say() { printf 'setup: %s\n' "$*"; }

packages=(
  qemu-system-x86 qemu-utils
  libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients libvirt-dev pkg-config
  busybox-static fio dbench netperf e2fsprogs xfsprogs cpio zstd kmod linux-perf
  ccache git build-essential bc bison flex libelf-dev libssl-dev dwarves rsync
  linux-image-amd64 linux-source-6.1
  python3 python3-venv python3-dev golang-go
  postgresql
  chromium fonts-dejavu-core
  openssh-server
)

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    say "installing packages needs root; re-run as root, or see docs/setup.md for the non-root path"
    exit 1
  fi
}

# netperf lives in Debian's non-free component. We add exactly that component for bookworm,
# in a file of our own, and say so.
enable_nonfree() {
  local f=/etc/apt/sources.list.d/vmbisect-non-free.sources
  if apt-cache policy netperf 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    return 0
  fi
  if [ ! -f "$f" ]; then
    say "adding Debian's non-free component (for netperf) in $f"
    cat >"$f" <<'SRC'
# Added by vmbisect setup (scripts/setup.sh): netperf is only in Debian's non-free component.
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  fi
  apt-get update -qq
}

install_packages() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    return 0
  fi
  need_root
  say "installing from Debian: ${missing[*]}"
  if [ ! -f "$stamp_dir/apt-updated" ]; then
    apt-get update -qq
    touch "$stamp_dir/apt-updated"
  fi
  enable_nonfree
  # Services must not be started by package scripts in containers without an init system.
  DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# libvirt's daemons without an init system: scripts/start-libvirt.sh (the libvirtd-restart
# tests start libvirtd again the same way).
start_libvirt() {
  if virsh -c qemu:///system version >/dev/null 2>&1; then
    return 0
  fi
  need_root
  bash "$here/scripts/start-libvirt.sh"
}

build_agent() {
  make -C "$here" --no-print-directory agent >/dev/null
}

make_venv() {
  local want
  want=$(sha256sum "$here/pyproject.toml" | cut -d' ' -f1)
  if [ -x "$venv/bin/vmbisect" ] && [ "$(cat "$stamp_dir/venv" 2>/dev/null)" = "$want" ]; then
    return 0
  fi
  say "creating the virtualenv in $venv"
  [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip >/dev/null
  "$venv/bin/pip" install -q -e "$here[test]" >/dev/null
  echo "$want" >"$stamp_dir/venv"
}

install_packages
start_libvirt
build_agent
make_venv
say "ready (venv: $venv)"
