"""Each variant's kernel: a commit built by the kernel builder, a bzImage path, or a kernel
stored by `vmbisect build` (registered name or sha256 prefix)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.compare.runner import Kernel
from orchestrator.compare.variant import Variant
from orchestrator.errors import UserError
from orchestrator.kbuild.builder import KernelBuilder
from orchestrator.kbuild.recipe import Recipe
from orchestrator.kbuild.store import KernelStore


class RealKernels:
    def __init__(self, builder: KernelBuilder | None, repo: Path | None, recipe: Recipe | None,
                 store: KernelStore | None = None) -> None:
        self.builder, self.repo, self.recipe = builder, repo, recipe
        self.store = store or KernelStore()

    def kernel(self, variant: Variant) -> Kernel:
        if variant.commit is not None:
            assert self.builder is not None and self.repo is not None and self.recipe is not None
            image = self.builder.build(self.repo, variant.commit, self.recipe)
            return Kernel(image.path, variant.modules, f"commit {variant.commit}, bzImage {image.sha256[:12]}")
        assert variant.kernel is not None
        path = Path(variant.kernel)
        if path.is_file():
            return Kernel(path, variant.modules, f"kernel {path}")
        if "/" in variant.kernel:
            raise UserError(f"variant {variant.name}: kernel {variant.kernel} is not a file")
        image = self.store.resolve(variant.kernel)
        return Kernel(image.path, variant.modules, f"kernel {variant.kernel}, bzImage {image.sha256[:12]}")
