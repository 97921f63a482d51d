"""The one kernel source: a KernelArtifact from a commit built with a recipe, a bzImage file, or
a kernel stored by `vmbisect build` (registered name or sha256 prefix). A built kernel's
modules (a recipe's `=m` drivers) go into the guest with it; a file or stored kernel takes the
modules of the release the caller names (the host's /lib/modules), if any."""

from __future__ import annotations

import subprocess
from pathlib import Path

from orchestrator.errors import InfraError, UserError
from orchestrator.kbuild.builder import KernelBuilder
from orchestrator.kbuild.recipe import Recipe
from orchestrator.kbuild.store import KernelImage, KernelStore, sha256_file
from orchestrator.ports import Build, KernelArtifact


def artifact(image: KernelImage, description: str, commit: str = "", modules: str | None = None) -> KernelArtifact:
    """The stored image as an artifact: its own modules when it has some, else `modules`."""
    if image.modules_dir is not None and image.release:
        return KernelArtifact(image.path, image.sha256, image.release, image.modules_dir.parent, description, commit)
    return KernelArtifact(image.path, image.sha256, modules, None, description, commit)


class Kernels:
    """Kernels of one campaign. `build(commit)` builds a commit of the user's repository `repo`,
    or one the engine made in its own clone `clone` (a revert: fetched into the builder's
    checkout; the user's repository is only read) with `recipe`."""

    def __init__(self, builder: KernelBuilder | None = None, repo: Path | None = None, recipe: Recipe | None = None,
                 timeout_s: float | None = None, clone: Path | None = None, store: KernelStore | None = None) -> None:
        self.builder, self.repo, self.recipe, self.timeout_s, self.clone = builder, repo, recipe, timeout_s, clone
        self._store = store

    @property
    def store(self) -> KernelStore:
        if self._store is None:
            self._store = KernelStore()
        return self._store

    def build(self, commit: str, modules: str | None = None) -> Build:
        """Raises BuildFailed (the commit's fault) or InfraError (the host's)."""
        assert self.builder is not None and self.repo is not None and self.recipe is not None
        if not (self.repo / ".git").exists() and not (self.repo / "HEAD").exists():
            # checked before the campaign started: it went away under it (deleted, moved). Not
            # the commit's fault: the campaign pauses, and resumes once the repository is back
            raise InfraError(f"repository: {self.repo} is gone (deleted or moved during the campaign); "
                             "restore it to resume")
        theirs = subprocess.run(["git", "-C", str(self.repo), "cat-file", "-e", f"{commit}^{{commit}}"],
                                capture_output=True).returncode == 0
        objects = None if theirs or self.clone is None else self.clone
        image = self.builder.build(self.repo, commit, self.recipe, self.timeout_s, objects)
        described = f"commit {commit}, bzImage {image.sha256[:12]}"
        return Build(artifact(image, described, commit, modules), image.from_cache, image.duration_s)

    def file(self, path: Path, modules: str | None = None) -> KernelArtifact:
        if not path.is_file():
            raise UserError(f"kernel: {path} is not a file")
        return KernelArtifact(path, sha256_file(path), modules, None, f"kernel {path}")

    def stored(self, name: str, modules: str | None = None) -> KernelArtifact:
        image = self.store.resolve(name)
        return artifact(image, f"kernel {name}, bzImage {image.sha256[:12]}", modules=modules)
