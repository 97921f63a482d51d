"""Kernel builds: recipes, a vmbisect-owned checkout, cached out-of-tree builds, failure classes.

`KernelBuilder.build(repo, commit, recipe) -> KernelImage` is the entry point
(orchestrator/kbuild/builder.py); docs/kernel-builds.md describes the whole path.
"""
