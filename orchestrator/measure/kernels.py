"""The one kernel source: a KernelArtifact from a commit built with a recipe, a bzImage file, or
a kernel stored by `vmbisect build` (registered name or sha256 prefix), or a commit built with a
whole .config (a config bisection's candidate, `build_config`). A built kernel's
modules (a recipe's `=m` drivers) go into the guest with it; a file or stored kernel takes the
modules of the release the caller names (the host's /lib/modules), if any."""

from __future__ import annotations

import subprocess
from pathlib import Path

from orchestrator.errors import InfraError, UserError
from orchestrator.kbuild import gitrepo
from orchestrator.kbuild.builder import KernelBuilder
from orchestrator.kbuild.configdiff import config_sha, definitions
from orchestrator.kbuild.kernelstore import KernelImage, KernelStore, sha256_file
from orchestrator.kbuild.recipe import DEFAULT_CC, Recipe
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
        self._normalised: dict[tuple[str, str], str] = {}  # (commit, sha256 of a .config) -> olddefconfig's

    @property
    def store(self) -> KernelStore:
        if self._store is None:
            self._store = KernelStore()
        return self._store

    def build(self, commit: str, modules: str | None = None) -> Build:
        """Raises BuildFailed (the commit's fault) or InfraError (the host's)."""
        assert self.builder is not None and self.repo is not None and self.recipe is not None
        self._repository_present()
        theirs = subprocess.run(["git", "-C", str(self.repo), "cat-file", "-e", f"{commit}^{{commit}}"],
                                capture_output=True).returncode == 0
        objects = None if theirs or self.clone is None else self.clone
        image = self.builder.build(self.repo, commit, self.recipe, self.timeout_s, objects)
        described = f"commit {commit}, bzImage {image.sha256[:12]}"
        return Build(artifact(image, described, commit, modules), image.from_cache, image.duration_s, image.how)

    def _repository_present(self) -> None:
        assert self.repo is not None
        if not (self.repo / ".git").exists() and not (self.repo / "HEAD").exists():
            # checked before the campaign started: it went away under it (deleted, moved). Not
            # the commit's fault: the campaign pauses, and resumes once the repository is back
            raise InfraError(f"repository: {self.repo} is gone (deleted or moved during the campaign); "
                             "restore it to resume")

    @property
    def cc(self) -> str:
        return self.recipe.cc if self.recipe is not None else DEFAULT_CC

    def olddefconfig(self, commit: str, config_text: str) -> str:
        """`config_text` normalised by `make olddefconfig` at `commit` (remembered per text)."""
        assert self.builder is not None and self.repo is not None
        key = (commit, config_sha(config_text))
        if key not in self._normalised:
            self._repository_present()
            self._normalised[key] = self.builder.olddefconfig(self.repo, commit, config_text, self.cc)
        return self._normalised[key]

    def configured(self, commit: str, recipe: Recipe) -> str:
        """The .config `recipe` gives at `commit` (configured, not built)."""
        assert self.builder is not None and self.repo is not None
        self._repository_present()
        return self.builder.configured(self.repo, commit, recipe)

    def definitions(self, commit: str) -> dict[str, str]:
        """Option -> the Kconfig file defining it at `commit` (a resolved commit id)."""
        assert self.repo is not None
        return definitions(gitrepo.kconfig_definitions(self.repo, commit))

    def build_config(self, commit: str, config_text: str, modules: str | None = None,
                     slot: str | None = None) -> Build:
        """`commit` built with a whole .config (a config bisection's candidate, normalised by
        `olddefconfig`): the same store, cache, records and faults as `build`. `slot`: the one
        build directory the campaign's candidates share (KernelBuilder.build)."""
        assert self.builder is not None and self.repo is not None
        self._repository_present()
        recipe = Recipe(base="file", base_text=config_text, cc=self.cc)
        image = self.builder.build(self.repo, commit, recipe, self.timeout_s, slot=slot)
        described = f"commit {commit}, config {config_sha(config_text)[:12]}, bzImage {image.sha256[:12]}"
        return Build(artifact(image, described, commit, modules), image.from_cache, image.duration_s, image.how)

    def file(self, path: Path, modules: str | None = None) -> KernelArtifact:
        if not path.is_file():
            raise UserError(f"kernel: {path} is not a file")
        return KernelArtifact(path, sha256_file(path), modules, None, f"kernel {path}")

    def stored(self, name: str, modules: str | None = None) -> KernelArtifact:
        image = self.store.resolve(name)
        return artifact(image, f"kernel {name}, bzImage {image.sha256[:12]}", modules=modules)
