"""Each variant's kernel from the one kernel source (orchestrator/measure/kernels.py): a commit built
with the comparison's recipe, a bzImage path, or a kernel stored by `vmbisect build`."""

from __future__ import annotations

from pathlib import Path

from orchestrator.compare.variant import Variant
from orchestrator.errors import UserError
from orchestrator.measure.kernels import Kernels
from orchestrator.ports import KernelArtifact


class VariantKernels:
    def __init__(self, source: Kernels) -> None:
        self.source = source

    def kernel(self, variant: Variant) -> KernelArtifact:
        if variant.commit is not None:
            return self.source.build(variant.commit, variant.modules).kernel
        assert variant.kernel is not None
        path = Path(variant.kernel)
        if path.is_file():
            return self.source.file(path, variant.modules)
        if "/" in variant.kernel:
            raise UserError(f"variant {variant.name}: kernel {variant.kernel} is not a file")
        return self.source.stored(variant.kernel, variant.modules)
