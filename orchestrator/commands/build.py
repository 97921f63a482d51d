"""`vmbisect build`: build a kernel at a commit (cached), or register a prebuilt one."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from orchestrator.errors import UserError


def add_parser(sub: Any) -> None:
    build = sub.add_parser("build", help="build a kernel at a commit (cached), or register a prebuilt bzImage",
                           description="Recipe items (--config, repeatable, docs/kernel-builds.md): "
                           "tinyconfig | defconfig | base=PATH (first only), a fragment name from kconfigs/ "
                           "or a fragment path, CONFIG_X=VALUE, cc=COMPILER. Default: guest-base.")
    build.add_argument("--repo", type=Path, help="the kernel git repository (only read, never changed)")
    build.add_argument("--commit", help="commit, tag or branch to build")
    build.add_argument("--config", action="append", default=[], metavar="ITEM",
                       help="recipe item; repeat for more (default: guest-base on tinyconfig)")
    build.add_argument("--register", type=Path, metavar="BZIMAGE", help="store this prebuilt bzImage instead")
    build.add_argument("--modules", type=Path, metavar="DIR", help="with --register: its lib/modules/<release> dir")
    build.add_argument("--name", help="with --register: a name to refer to the image by")


def run(a: argparse.Namespace) -> int:
    from orchestrator.kbuild.builder import default_builder
    from orchestrator.kbuild.kernelstore import KernelStore
    from orchestrator.kbuild.recipe import parse_recipe

    if a.register is not None:
        if a.repo or a.commit or a.config:
            raise UserError("register: --repo, --commit and --config do not apply to a prebuilt bzImage")
        image = KernelStore().register(a.register, a.modules, a.name)
    else:
        if a.modules or a.name:
            raise UserError("modules/name: only with --register")
        if a.repo is None or a.commit is None:
            raise UserError("build: --repo and --commit are required (or --register BZIMAGE)")
        recipe = parse_recipe(a.config)
        from orchestrator.wiring import machine_build_lease

        builder = default_builder(machine_build_lease(),
                                  progress=lambda msg: print(f"vmbisect: {msg}", file=sys.stderr, flush=True))
        image = builder.build(a.repo, a.commit, recipe)
    print(f"image    {image.path}")
    print(f"sha256   {image.sha256}")
    print(f"release  {image.release or 'unknown'}")
    print(f"modules  {image.modules_dir or 'none'}")
    print(f"took     {image.duration_s:.2f} s ({'cache hit' if image.from_cache else 'built'})")
    return 0
