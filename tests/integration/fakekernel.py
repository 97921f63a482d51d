"""A tiny fake kernel tree: a git repository whose Makefile behaves like kbuild where the
builder cares (O=, tinyconfig/defconfig/olddefconfig, merge_config.sh, bzImage, modules),
in milliseconds.

- olddefconfig drops every option not declared in the tree's Kconfig (as real Kconfig drops
  unknown symbols), so "did not stick" is testable.
- drivers/*.c are "compiled" one object each (a log line "  CC  <object>" per compile), so
  incremental rebuilds are visible; a source containing `#error` fails like gcc does.
- a file `needs-tool` names a program bzImage runs, so a missing host tool is testable.
- bzImage is .config + objects + the KBUILD_BUILD_* stamp, so reproducibility is testable.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

RELEASE = "6.99.0-fake"

MAKEFILE = r"""
O ?= $(CURDIR)
SRCS := $(sort $(wildcard drivers/*.c))
OBJS := $(patsubst %.c,$(O)/%.o,$(SRCS))
IMAGE := $(O)/arch/x86/boot/bzImage

.PHONY: tinyconfig defconfig olddefconfig bzImage modules modules_install

tinyconfig:
	@mkdir -p $(O)
	@printf 'CONFIG_64BIT=y\n# CONFIG_MODULES is not set\n' > $(O)/.config

defconfig:
	@mkdir -p $(O)
	@printf 'CONFIG_64BIT=y\nCONFIG_MODULES=y\nCONFIG_FOO=m\n' > $(O)/.config

olddefconfig:
	@sh scripts/kconfig/olddefconfig.sh $(O)/.config Kconfig

$(O)/%.o: %.c $(O)/.config
	@mkdir -p $(dir $@)
	@if grep -q '^#error' $<; then echo "$<:3:2: error: #error this commit does not compile"; \
	echo "make[2]: *** [scripts/Makefile.build:250: $@] Error 1"; exit 1; fi
	@echo "  CC      $@"
	@cp $< $@

bzImage: $(OBJS)
	@if [ -f needs-tool ]; then $$(cat needs-tool) --version; fi
	@mkdir -p $(O)/arch/x86/boot $(O)/include/config
	@echo $(RELEASE) > $(O)/include/config/kernel.release
	@cat $(O)/.config $(OBJS) > $(IMAGE)
	@echo "$$KBUILD_BUILD_TIMESTAMP $$KBUILD_BUILD_USER@$$KBUILD_BUILD_HOST #$$KBUILD_BUILD_VERSION" >> $(IMAGE)

modules:
	@printf 'module\n' > $(O)/foo.ko

modules_install:
	@mkdir -p $(INSTALL_MOD_PATH)/lib/modules/$(RELEASE)/kernel
	@cp $(O)/foo.ko $(INSTALL_MOD_PATH)/lib/modules/$(RELEASE)/kernel/
	@ln -sfn $(O) $(INSTALL_MOD_PATH)/lib/modules/$(RELEASE)/build
""".replace("$(RELEASE)", RELEASE)

# Last value of each option wins; options keep the order they first appeared in.
MERGE = r"""#!/bin/sh
while [ $# -gt 0 ]; do
  case $1 in -m) shift ;; -O) out=$2; shift 2 ;; *) break ;; esac
done
cat "$@" | awk '
  /^CONFIG_[A-Za-z0-9_]+=/ { sym = substr($0, 1, index($0, "=") - 1) }
  /^# CONFIG_[A-Za-z0-9_]+ is not set$/ { sym = $2 }
  sym != "" { if (!(sym in val)) order[n++] = sym; val[sym] = $0; sym = "" }
  END { for (i = 0; i < n; i++) print val[order[i]] }' > "$out/.config.merged"
mv "$out/.config.merged" "$out/.config"
"""

OLDDEFCONFIG = r"""#!/bin/sh
cfg=$1; kconfig=$2
{
  echo "# fake kernel configuration"
  while IFS= read -r line; do
    case $line in
      "# CONFIG_"*) sym=${line#"# CONFIG_"}; sym=${sym%% *} ;;
      CONFIG_*) sym=${line#CONFIG_}; sym=${sym%%=*} ;;
      *) continue ;;
    esac
    grep -qx "config $sym" "$kconfig" && echo "$line"
  done < "$cfg"
} > "$cfg.new"
mv "$cfg.new" "$cfg"
"""

KCONFIG = "config 64BIT\nconfig MODULES\nconfig FOO\nconfig KVM_GUEST\nconfig PRINTK\nconfig VIRTIO\n"

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_AUTHOR_DATE": "2020-01-01T00:00:00+0000",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t", "GIT_COMMITTER_DATE": "2020-01-01T00:00:00+0000",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV, "HOME": str(repo)}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def make_tree(repo: Path) -> str:
    """Create the fake tree as a git repository at `repo`; returns the first commit."""
    files = {
        "Makefile": MAKEFILE,
        "Kconfig": KCONFIG,
        "scripts/kconfig/merge_config.sh": MERGE,
        "scripts/kconfig/olddefconfig.sh": OLDDEFCONFIG,
        "kernel/configs/kvm_guest.config": "CONFIG_KVM_GUEST=y\n",
        "drivers/a.c": "int a;\n",
        "drivers/b.c": "int b;\n",
    }
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (repo / "scripts/kconfig/merge_config.sh").chmod(0o755)
    git(repo, "init", "--quiet", "--initial-branch=main")
    return commit_all(repo, "fake kernel")


def commit_all(repo: Path, message: str, allow_empty: bool = False) -> str:
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", message, *(["--allow-empty"] if allow_empty else []))
    return git(repo, "rev-parse", "HEAD")
